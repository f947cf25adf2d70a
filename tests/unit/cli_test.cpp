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
  EXPECT_EQ(o.trace.pids, (std::vector<uint32_t>{12, 13}));
  EXPECT_EQ(o.trace.comms, (std::vector<std::string>{"python3"}));
  EXPECT_EQ(o.trace.kinds, (std::vector<std::string>{"memfd"}));
  EXPECT_EQ(o.trace.events, (std::vector<std::string>{"create", "unlink"}));
  EXPECT_DOUBLE_EQ(o.trace.duration_s, 2.5);
  EXPECT_EQ(o.trace.ring_buffer_bytes, 65536u);
  EXPECT_TRUE(o.trace.json);
  EXPECT_TRUE(o.trace.verbose);
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

TEST(Cli, FiltersMatch) {
  TraceOptions t;
  Event e;
  e.type = EventType::create;
  e.kind = Kind::tmpfs;
  e.pid = 10;
  e.comm = "python3";
  EXPECT_TRUE(t.matches(e));
  t.pids = {11};
  EXPECT_FALSE(t.matches(e));
  t.pids = {10};
  t.comms = {"python3"};
  t.kinds = {"tmpfs"};
  t.events = {"create"};
  EXPECT_TRUE(t.matches(e));
  t.kinds = {"sysv"};
  EXPECT_FALSE(t.matches(e));
  t.kinds.clear();
  t.events = {"unlink"};
  EXPECT_FALSE(t.matches(e));

  // A SIGBUS sent to a filtered process matches even when raised elsewhere.
  TraceOptions s;
  s.pids = {20};
  Event b;
  b.type = EventType::sigbus;
  b.pid = 99;
  b.target_pid = 20;
  EXPECT_TRUE(s.matches(b));
}

} // namespace
} // namespace shmbpf
