#include "cli/app.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace shmbpf {
namespace {

// Parses args after "shmbpf"; returns CLI11's exit code (0 on success).
int parse(CliOptions &opts, std::vector<std::string> args) {
  auto app = make_app(opts);
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app->parse(rev);
  } catch (const CLI::ParseError &e) {
    return e.get_exit_code() == 0 ? -1 : e.get_exit_code();
  }
  return 0;
}

TEST(Cli, TraceFlags) {
  CliOptions o;
  ASSERT_EQ(parse(o, {"trace", "-p", "12", "--pid", "13", "--comm", "python3", "--kind", "memfd",
                      "--event", "create", "--event", "unlink", "--duration", "2.5",
                      "--ring-buffer-size", "65536", "--json", "-v"}),
            0);
  EXPECT_EQ(o.trace.filter.pids, (std::vector<uint32_t>{12, 13}));
  EXPECT_EQ(o.trace.filter.comms, (std::vector<std::string>{"python3"}));
  EXPECT_EQ(o.trace.filter.kinds, (std::vector<std::string>{"memfd"}));
  EXPECT_EQ(o.trace.filter.events, (std::vector<std::string>{"create", "unlink"}));
  EXPECT_DOUBLE_EQ(o.trace.duration_s, 2.5);
  EXPECT_EQ(o.trace.ring_buffer_bytes, 65536u);
  EXPECT_TRUE(o.trace.json);
  EXPECT_TRUE(o.trace.verbose);
}

// Every event type trace can print is one --event can choose.
TEST(Cli, TraceEventFilterNamesEveryEvent) {
  for (uint8_t t = 1; to_string(static_cast<EventType>(t)) != "unknown"; ++t) {
    const std::string name(to_string(static_cast<EventType>(t)));
    CliOptions o;
    EXPECT_EQ(parse(o, {"trace", "--event", name}), 0) << name;
    Event e;
    e.type = static_cast<EventType>(t);
    EXPECT_TRUE(o.trace.filter.matches(e)) << name;
  }
  EXPECT_EQ(parse_event_type("link"), EventType::link);
}

TEST(Cli, RejectsBadValues) {
  CliOptions o;
  EXPECT_NE(parse(o, {"trace", "--kind", "bogus"}), 0);
  EXPECT_NE(parse(o, {"trace", "--event", "mmap"}), 0);
  EXPECT_NE(parse(o, {"trace", "-p", "abc"}), 0);
  EXPECT_NE(parse(o, {"trace", "-p", "0"}), 0);
  EXPECT_NE(parse(o, {"trace", "--duration", "-1"}), 0);
  EXPECT_NE(parse(o, {"trace", "--ring-buffer-size", "10"}), 0);
  EXPECT_NE(parse(o, {"trace", "--no-such-flag"}), 0);
  EXPECT_NE(parse(o, {}), 0); // a subcommand is required
}

// nan passes every range check, inf most: a number must be finite.
TEST(Cli, RuntimeRootsRepeatableOnEveryCommandThatNamesContainers) {
  CliOptions o;
  ASSERT_EQ(parse(o, {"ls", "--runtime-root", "docker=/srv/docker", "--runtime-root",
                      "pod-logs=/data/pods"}),
            0);
  EXPECT_EQ(o.ls.runtime_roots.docker, "/srv/docker");
  EXPECT_EQ(o.ls.runtime_roots.pod_logs, "/data/pods");
  EXPECT_EQ(o.ls.runtime_roots.containerd, RuntimeRoots{}.containerd);
  for (const char *cmd : {"leaks", "top", "serve"}) {
    CliOptions p;
    EXPECT_EQ(parse(p, {cmd, "--runtime-root", "containerd=/x"}), 0) << cmd;
  }
  EXPECT_NE(parse(o, {"ls", "--runtime-root", "rkt=/var/lib/rkt"}), 0);
  EXPECT_NE(parse(o, {"ls", "--runtime-root", "docker"}), 0);
  EXPECT_NE(parse(o, {"ls", "--runtime-root", "docker=relative"}), 0);
  EXPECT_NE(parse(o, {"trace", "--runtime-root", "docker=/x"}), 0);
  // A daemon's model is named by the daemon's roots.
  for (const char *cmd : {"ls", "leaks", "top"}) {
    CliOptions p;
    EXPECT_NE(parse(p, {cmd, "--server", "/run/x.sock", "--runtime-root", "docker=/x"}), 0) << cmd;
  }
}

TEST(Cli, RejectsNonFiniteNumbers) {
  CliOptions o;
  EXPECT_NE(parse(o, {"trace", "--duration", "nan"}), 0);
  EXPECT_NE(parse(o, {"trace", "--duration", "inf"}), 0);
  EXPECT_NE(parse(o, {"top", "-d", "nan"}), 0);
  EXPECT_NE(parse(o, {"leaks", "--min-age", "nan"}), 0);
  EXPECT_NE(parse(o, {"leaks", "--min-age", "-inf"}), 0);
  EXPECT_NE(parse(o, {"leaks", "--window", "inf"}), 0);
  EXPECT_EQ(parse(o, {"leaks", "--min-age", "0.5", "--window", "2"}), 0);
  EXPECT_DOUBLE_EQ(o.leaks.query.min_age_s, 0.5);
}

// A glob fnmatch would take for one that matches nothing is refused.
TEST(Cli, RejectsGlobsThatCannotMatch) {
  CliOptions o;
  EXPECT_NE(parse(o, {"ls", "--match", "["}), 0);
  EXPECT_NE(parse(o, {"leaks", "--match", "/dev/shm/torch_[0-9*"}), 0);
  for (const char *ok : {"/dev/shm/torch_*", "/dev/shm/[!.]*", "[]]", "a\\[b", "[[:digit:]]x"})
    EXPECT_EQ(parse(o, {"ls", "--match", ok}), 0) << ok;
}

// One setting, one rule: the ring buffer's size is checked the same way by
// every command, and the probe's own check agrees with the CLI's.
TEST(Cli, RingBufferSizeOneRule) {
  for (const char *cmd : {"trace", "top"}) {
    CliOptions o;
    EXPECT_EQ(parse(o, {cmd, "--ring-buffer-size", "4096"}), 0) << cmd;
    for (const char *bad : {"10", "4097", "12288", "2147483648", "0"}) {
      EXPECT_NE(parse(o, {cmd, "--ring-buffer-size", bad}), 0) << cmd << " " << bad;
      EXPECT_FALSE(RingBufferSetting::problem(std::stoull(bad)).empty()) << bad;
    }
  }
  CliOptions defaults;
  ASSERT_EQ(parse(defaults, {"trace"}), 0);
  EXPECT_EQ(defaults.trace.ring_buffer_bytes, RingBufferSetting::kDefault);
  EXPECT_TRUE(RingBufferSetting::problem(RingBufferSetting::kDefault).empty());
  // The help shows the default, from the one constant.
  auto app = make_app(defaults);
  const std::string help = app->get_subcommand("top")->help();
  EXPECT_NE(help.find(std::to_string(RingBufferSetting::kDefault)), std::string::npos) << help;
}

} // namespace
} // namespace shmbpf
