// End-to-end tests of `shmbpf trace`: the real binary, run as a child with
// its output captured, driven by real processes and signals. Every wait is
// bounded; a binary that hangs is killed and the test fails.
#include "background.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto load_timeout = 20s; // loading BPF takes about a second

std::string last_line(const std::string &s) {
  auto lines = lines_of(s);
  return lines.empty() ? std::string() : lines.back();
}

using Shmbpf = ShmbpfProcess;

// Text mode prints its header once the programs are attached and the
// signal handlers installed.
::testing::AssertionResult wait_loaded_text(Shmbpf &p) {
  if (p.wait_output("PATH/NAME", load_timeout))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no header from shmbpf trace; stderr: " << p.err();
}

// JSON mode prints nothing of its own: make memfds until one shows up.
::testing::AssertionResult wait_loaded_json(Shmbpf &p) {
  const std::string marker = "e2e-ready-" + std::to_string(getpid());
  auto deadline = Clock::now() + load_timeout;
  while (Clock::now() < deadline) {
    int fd = memfd_create(marker.c_str(), MFD_CLOEXEC);
    if (fd >= 0)
      close(fd);
    if (p.wait_output(marker, 100ms))
      return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "shmbpf trace --json never showed a memfd; stderr: " << p.err();
}

// A child named comm that runs fn once released, so that its pid is known
// before it does anything.
class GatedChild {
public:
  GatedChild(const std::string &comm, const std::function<int()> &fn) {
    GatedFork f = fork_gated(comm, fn);
    pid_ = f.pid;
    gate_ = f.gate_fd;
  }
  ~GatedChild() {
    if (gate_ >= 0)
      close(gate_); // the child reads EOF and exits
    if (!status_)
      wait(5s);
    if (!status_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  GatedChild(const GatedChild &) = delete;
  GatedChild &operator=(const GatedChild &) = delete;

  pid_t pid() const { return pid_; }
  void release() {
    char c = 1;
    EXPECT_EQ(write(gate_, &c, 1), 1);
    close(gate_);
    gate_ = -1;
  }
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    int st = 0;
    while (waitpid(pid_, &st, WNOHANG) == 0) {
      if (Clock::now() >= deadline)
        return std::nullopt;
      std::this_thread::sleep_for(5ms);
    }
    status_ = st;
    return st;
  }

private:
  pid_t pid_ = -1;
  int gate_ = -1;
  std::optional<int> status_;
};

// Creates path, grows it to size, and unlinks it.
int create_resize_unlink(const std::string &path, off_t size, struct stat *st = nullptr) {
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    return 1;
  int rc = 0;
  if (ftruncate(fd, size) != 0)
    rc = 2;
  if (st && fstat(fd, st) != 0)
    rc = 3;
  close(fd);
  if (unlink(path.c_str()) != 0)
    rc = 4;
  return rc;
}

const std::regex summary_re(R"(^shmbpf: (\d+) events, 0 lost$)");

TEST(TraceCli, JsonStreamCarriesEveryField) {
  Shmbpf p({"trace", "--json", "--duration", "3"});
  ASSERT_TRUE(wait_loaded_json(p));

  Shared<struct stat> st;
  const std::string comm = "e2e-json";
  GatedChild c(comm, [&] {
    return create_resize_unlink("/dev/shm/e2e-" + std::to_string(getpid()), 8192, st.operator->());
  });
  const std::string path = "/dev/shm/e2e-" + std::to_string(c.pid());
  c.release();
  expect_exit_code(c.wait(5s), 0);

  // --duration ends it; well within the bound.
  expect_exit_code(p.wait(15s), 0);

  auto lines = lines_of(p.out());
  std::vector<json> mine;
  for (const auto &line : lines) {
    json j;
    ASSERT_NO_THROW(j = json::parse(line)) << line;
    ASSERT_TRUE(j.is_object()) << line;
    if (j.value("pid", 0u) == uint32_t(c.pid()) && j.value("path", "") == path)
      mine.push_back(j);
  }
  ASSERT_EQ(mine.size(), 3u) << p.out();
  const std::vector<std::string> want_events = {"create", "resize", "unlink"};
  const std::string dev =
      std::to_string(major(st->st_dev)) + ":" + std::to_string(minor(st->st_dev));
  for (size_t i = 0; i < mine.size(); i++) {
    const json &j = mine[i];
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(j["event"], want_events[i]);
    for (const char *k : {"event", "kind", "ts_ns", "pid", "tid", "ppid", "uid", "comm",
                          "cgroup_id", "mntns", "ipcns", "dev", "ino", "path", "errno"})
      EXPECT_TRUE(j.contains(k)) << k;
    if (j["event"] != "unlink") {
      EXPECT_TRUE(j.contains("size"));
    }
    EXPECT_EQ(j["kind"], "tmpfs");
    EXPECT_TRUE(j["ts_ns"].is_number_unsigned());
    EXPECT_EQ(j["tid"], c.pid());
    EXPECT_EQ(j["ppid"], getpid());
    EXPECT_EQ(j["uid"], getuid());
    EXPECT_EQ(j["comm"], comm);
    EXPECT_NE(j["cgroup_id"], 0);
    EXPECT_EQ(j["mntns"], ns_inode("/proc/self/ns/mnt"));
    EXPECT_EQ(j["ipcns"], ns_inode("/proc/self/ns/ipc"));
    EXPECT_EQ(j["dev"], dev);
    EXPECT_EQ(j["ino"], st->st_ino);
    EXPECT_EQ(j["errno"], 0);
  }
  EXPECT_EQ(mine[0]["size"], 0);
  EXPECT_EQ(mine[1]["size"], 8192);
  EXPECT_EQ(mine[1]["path_from_model"], false); // the kernel named the file
  EXPECT_LT(mine[0]["ts_ns"], mine[1]["ts_ns"]);
  EXPECT_LT(mine[1]["ts_ns"], mine[2]["ts_ns"]);

  std::smatch m;
  const std::string summary = last_line(p.err());
  ASSERT_TRUE(std::regex_match(summary, m, summary_re)) << p.err();
  // No filter: every delivered event is a line.
  EXPECT_EQ(std::stoull(m[1].str()), lines.size());
}

// A hard link: trace --json shows the link with both paths and the inode,
// and the unlink of each name, the second one too.
TEST(TraceCli, JsonShowsAHardLinkAndEachNamesUnlink) {
  Shmbpf p({"trace", "--json"});
  ASSERT_TRUE(wait_loaded_json(p));

  Shared<struct stat> st;
  auto names = [](pid_t pid) {
    const std::string base = "/dev/shm/e2e-link-" + std::to_string(pid);
    return std::pair{base + "-1", base + "-2"};
  };
  GatedChild c("e2e-link", [&] {
    const auto [l1, l2] = names(getpid());
    int fd = open(l1.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || fstat(fd, st.operator->()) != 0)
      return 1;
    close(fd);
    if (link(l1.c_str(), l2.c_str()) != 0)
      return 2;
    return unlink(l1.c_str()) == 0 && unlink(l2.c_str()) == 0 ? 0 : 3;
  });
  const auto [l1, l2] = names(c.pid());
  c.release();
  expect_exit_code(c.wait(5s), 0);
  // The child's last event on a name: the unlink of the second one.
  EXPECT_TRUE(p.wait_output("\"path\":\"" + l2 + "\"", 10s)) << p.out();
  p.signal(SIGINT);
  expect_exit_code(p.wait(10s), 0);

  std::vector<json> mine;
  for (const auto &line : lines_of(p.out())) {
    json j;
    ASSERT_NO_THROW(j = json::parse(line)) << line;
    if (j.value("pid", 0u) == uint32_t(c.pid()) && j["event"] != "exit")
      mine.push_back(j);
  }
  ASSERT_EQ(mine.size(), 4u) << p.out();
  const std::string dev =
      std::to_string(major(st->st_dev)) + ":" + std::to_string(minor(st->st_dev));
  const std::vector<std::pair<std::string, std::string>> want = {
      {"create", l1}, {"link", l1}, {"unlink", l1}, {"unlink", l2}};
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(mine[i].dump());
    EXPECT_EQ(mine[i]["event"], want[i].first);
    EXPECT_EQ(mine[i]["path"], want[i].second);
    EXPECT_EQ(mine[i]["dev"], dev);
    EXPECT_EQ(mine[i]["ino"], st->st_ino);
    EXPECT_EQ(mine[i]["kind"], "tmpfs");
    EXPECT_EQ(mine[i]["comm"], "e2e-link");
    EXPECT_EQ(mine[i]["errno"], 0);
  }
  const json &ln = mine[1];
  EXPECT_EQ(ln["path_arg"], l1);
  EXPECT_EQ(ln["newpath"], l2);
  EXPECT_EQ(ln["newpath_arg"], l2);
  EXPECT_EQ(ln["dirfd"], -100);
  EXPECT_EQ(ln["newdirfd"], -100);
  EXPECT_EQ(ln["flags"], 0);
#if defined(__aarch64__) // the C library's link() is linkat there
  EXPECT_EQ(ln["origin"], "linkat");
#else
  EXPECT_EQ(ln["origin"], "link");
#endif
  EXPECT_EQ(ln["ret"], 0);
  EXPECT_EQ(ln["truncated"], false);
}

// --stats: after the summary, the time in the BPF programs, a row per hook
// that ran (the syscalls this test made among them), and the hook set.
TEST(TraceCli, StatsReportsTheProgramsRunTime) {
  Shmbpf p({"trace", "--stats"});
  ASSERT_TRUE(wait_loaded_text(p));
  constexpr int kCycles = 20;
  for (int i = 0; i < kCycles; i++)
    ASSERT_EQ(create_resize_unlink("/dev/shm/e2e-stats-" + std::to_string(getpid()), 4096, nullptr),
              0);
  p.signal(SIGINT);
  expect_exit_code(p.wait(10s), 0);

  const auto err = lines_of(p.err());
  auto summary = std::find_if(err.begin(), err.end(),
                              [](const std::string &l) { return std::regex_match(l, summary_re); });
  ASSERT_NE(summary, err.end()) << p.err();
  const std::regex total_re(
      R"(^shmbpf: [0-9.]+ ms in BPF programs over [0-9.]+ s \([0-9.]+% of one CPU\), (\d+) runs$)");
  std::smatch m;
  ASSERT_TRUE(summary + 1 != err.end() && std::regex_match(summary[1], m, total_re)) << p.err();
  EXPECT_GE(std::stoull(m[1].str()), uint64_t{3 * kCycles});
  const std::regex row_re(R"(^  (\S+) +(\d+) +(\d+) +[0-9.]+$)");
  std::map<std::string, uint64_t> runs;
  // The rows, then the set and its hooks.
  ASSERT_GE(err.end() - summary, 4) << p.err();
  for (auto it = summary + 3; it < err.end() - 1; ++it) {
    ASSERT_TRUE(std::regex_match(*it, m, row_re)) << *it;
    runs[m[1].str()] = std::stoull(m[2].str());
  }
  EXPECT_TRUE(err.back().starts_with("shmbpf: full hooks: sched/sched_process_exit, ")) << p.err();
  EXPECT_NE(err.back().find(", syscalls/sys_exit_openat, "), std::string::npos) << p.err();
  for (const char *hook :
       {"syscalls/sys_exit_openat", "syscalls/sys_exit_ftruncate", "syscalls/sys_exit_unlink"})
    EXPECT_GE(runs[hook], uint64_t{kCycles}) << hook << "\n" << p.err();
}

TEST(TraceCli, NoStatsWithoutTheFlag) {
  Shmbpf p({"trace", "--duration", "0.5"});
  expect_exit_code(p.wait(load_timeout), 0);
  EXPECT_TRUE(std::regex_match(last_line(p.err()), summary_re)) << p.err();
  EXPECT_EQ(p.err().find("in BPF programs"), std::string::npos) << p.err();
}

class TraceSignal : public ::testing::TestWithParam<int> {};

TEST_P(TraceSignal, StopsCleanlyWithSummary) {
  Shmbpf p({"trace"});
  ASSERT_TRUE(wait_loaded_text(p));
  std::this_thread::sleep_for(500ms);
  p.signal(GetParam());
  auto st = p.wait(2s);
  expect_exit_code(st, 0);
  EXPECT_TRUE(std::regex_match(last_line(p.err()), summary_re)) << p.err();
}

INSTANTIATE_TEST_SUITE_P(Signals, TraceSignal, ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGQUIT),
                         [](const auto &info) { return std::string(sigabbrev_np(info.param)); });

// Something mounted where tracefs should be (a tmpfs with an events/
// directory) is refused, instead of a trace that attaches no hook and
// exits 0. In a mount namespace of the child's own: the machine's tracefs
// is not touched.
TEST(TraceCli, RefusesAFakeTracefs) {
  Shmbpf p({"trace", "--duration", "1"}, [] { tracefs_setup_in_own_namespace(true); });
  expect_exit_code(p.wait(load_timeout), 2);
  EXPECT_NE(p.err().find("is not tracefs"), std::string::npos) << p.err();
  EXPECT_EQ(lines_of(p.err()).size(), 1u) << p.err();
}

// A tracefs that shmbpf had to mount is gone again once the programs are
// attached, and tracing goes on. In a mount namespace of the child's own,
// where nothing else mounts tracefs meanwhile.
TEST(TraceCli, UnmountsTheTracefsItMounted) {
  Shmbpf p({"trace", "--duration", "20"}, [] { tracefs_setup_in_own_namespace(false); });
  ASSERT_TRUE(wait_loaded_text(p));
  std::stringstream mountinfo;
  mountinfo << std::ifstream("/proc/" + std::to_string(p.pid()) + "/mountinfo").rdbuf();
  EXPECT_EQ(mountinfo.str().find(" - tracefs "), std::string::npos) << mountinfo.str();

  const std::string name = "/shmbpf-e2e-tracefs-" + std::to_string(getpid());
  int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  shm_unlink(name.c_str());
  EXPECT_TRUE(p.wait_output(name.substr(1), 5s)) << p.out();
  p.signal(SIGINT);
  expect_exit_code(p.wait(5s), 0);
}

TEST(TraceCli, NotRootIsToldToUseSudo) {
  Shmbpf p({"trace"}, [] {
    const uid_t nobody = 65534;
    if (setgroups(0, nullptr) != 0 || setgid(nobody) != 0 || setuid(nobody) != 0)
      _exit(126);
  });
  expect_exit_code(p.wait(10s), 2);
  bool one_line = false;
  for (const auto &line : lines_of(p.err()))
    one_line = one_line || (line.starts_with("shmbpf: ") &&
                            line.find("sudo shmbpf trace") != std::string::npos);
  EXPECT_TRUE(one_line) << p.err();
  EXPECT_EQ(p.out(), "");
}

TEST(TraceCli, RejectsUnknownKind) {
  Shmbpf p({"trace", "--kind", "bogus"});
  auto st = p.wait(10s);
  ASSERT_TRUE(st.has_value());
  ASSERT_TRUE(WIFEXITED(*st));
  EXPECT_NE(WEXITSTATUS(*st), 0);
  EXPECT_NE(p.err().find("--kind"), std::string::npos) << p.err();
  EXPECT_NE(p.err().find("bogus"), std::string::npos) << p.err();
  EXPECT_EQ(p.out(), "");
}

TEST(TraceCli, RejectsRingBufferSizeNotAPowerOfTwo) {
  Shmbpf p({"trace", "--ring-buffer-size", "5000"});
  expect_exit_code(p.wait(10s), 2);
  const std::string err = p.err();
  EXPECT_NE(err.find("--ring-buffer-size"), std::string::npos) << err;
  EXPECT_NE(err.find("power of two"), std::string::npos) << err;
  EXPECT_EQ(lines_of(err).size(), 1u) << err;
  EXPECT_EQ(p.out(), "");
}

// Usage errors read like every other error: one line, "shmbpf: ...", the
// value named, exit status 2.
TEST(TraceCli, UsageErrorsAreOneShortLine) {
  const std::vector<std::vector<std::string>> cases = {
      {"bogus"}, {"trace", "-p", "abc"}, {"ls", "-p", "0"}, {"top", "-d", "nan"}, {}};
  for (const auto &args : cases) {
    Shmbpf p(args);
    expect_exit_code(p.wait(10s), 2);
    const std::string err = p.err();
    ASSERT_EQ(lines_of(err).size(), 1u) << err;
    EXPECT_EQ(err.rfind("shmbpf: ", 0), 0u) << err;
    EXPECT_LT(err.size(), 200u) << err; // no 300-digit range
    EXPECT_EQ(p.out(), "");
  }
  Shmbpf unknown({"bogus"});
  unknown.wait(10s);
  EXPECT_NE(unknown.err().find("unknown command 'bogus'"), std::string::npos) << unknown.err();
}

TEST(TraceCli, HelpListsSubcommandAndEveryFlag) {
  {
    Shmbpf p({"--help"});
    expect_exit_code(p.wait(10s), 0);
    // The top level lists subcommands; their flags are in their own help.
    EXPECT_NE(p.out().find("trace"), std::string::npos) << p.out();
  }
  Shmbpf p({"trace", "--help"});
  expect_exit_code(p.wait(10s), 0);
  const std::string out = p.out();
  for (const char *flag : {"-p,--pid", "--comm", "--kind", "--event", "--duration",
                           "--ring-buffer-size", "--json", "--stats", "-v,--verbose"})
    EXPECT_NE(out.find(flag), std::string::npos) << flag << " missing from:\n" << out;
}

class TraceEscaping : public ::testing::TestWithParam<bool> {};

TEST_P(TraceEscaping, HostileFileNameStaysOnOneLine) {
  const bool as_json = GetParam();
  std::vector<std::string> args = {"trace"};
  if (as_json)
    args.push_back("--json");
  Shmbpf p(args);
  ASSERT_TRUE(as_json ? wait_loaded_json(p) : wait_loaded_text(p));

  const std::string stem = "e2e-esc-" + std::to_string(getpid());
  const std::string path = "/dev/shm/" + stem + "\x1b[31mred\nx";
  GatedChild c("e2e-escape", [&] { return create_resize_unlink(path, 4096); });
  c.release();
  expect_exit_code(c.wait(5s), 0);
  const std::string escaped = "/dev/shm/" + stem + "\\x1b[31mred\\nx";
  // create, resize and unlink: three records naming the file.
  auto records_of = [&](const std::string &s) {
    auto lines = lines_of(s);
    return std::count_if(lines.begin(), lines.end(),
                         [&](const std::string &l) { return l.find(stem) != std::string::npos; });
  };
  ASSERT_TRUE(p.wait_output([&](const std::string &s) { return records_of(s) >= 3; }, 10s))
      << p.out();
  p.signal(SIGINT);
  expect_exit_code(p.wait(5s), 0);

  const std::string out = p.out();
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  for (const auto &line : lines_of(out)) {
    if (line.find(stem) == std::string::npos) {
      // What follows the newline in the name must not start a line.
      EXPECT_FALSE(line.starts_with("x")) << line;
      continue;
    }
    if (as_json) {
      json j;
      ASSERT_NO_THROW(j = json::parse(line)) << line;
      EXPECT_EQ(j["path"], escaped) << line;
    } else {
      EXPECT_NE(line.find(escaped), std::string::npos) << line;
    }
  }
  EXPECT_EQ(records_of(out), 3) << out;
}

INSTANTIATE_TEST_SUITE_P(Modes, TraceEscaping, ::testing::Values(false, true),
                         [](const auto &info) { return info.param ? "json" : "text"; });

TEST(TraceCli, PidFilterShowsOnlyThatProcess) {
  auto job = [](const std::string &tag) {
    return [tag] {
      return create_resize_unlink("/dev/shm/e2e-pid-" + tag + "-" + std::to_string(getpid()), 4096);
    };
  };
  GatedChild first("e2e-pid-first", job("first"));
  GatedChild second("e2e-pid-second", job("second"));
  Shmbpf p({"trace", "-p", std::to_string(first.pid())});
  ASSERT_TRUE(wait_loaded_text(p));
  first.release();
  second.release();
  expect_exit_code(first.wait(5s), 0);
  expect_exit_code(second.wait(5s), 0);
  const std::string first_file = "/dev/shm/e2e-pid-first-" + std::to_string(first.pid());
  // The exit is the first process's last event.
  ASSERT_TRUE(p.wait_output(
      [&](const std::string &s) {
        return s.find(first_file) != std::string::npos && s.find(" exit ") != std::string::npos;
      },
      10s))
      << p.out();
  // Stopping drains everything the kernel still holds.
  p.signal(SIGINT);
  expect_exit_code(p.wait(5s), 0);

  const std::string out = p.out();
  EXPECT_EQ(out.find("e2e-pid-second"), std::string::npos) << out;
  auto lines = lines_of(out);
  ASSERT_GE(lines.size(), 5u) << out; // header, create, resize, unlink, exit
  std::vector<std::string> events;
  for (size_t i = 1; i < lines.size(); i++) {
    std::istringstream words(lines[i]);
    std::string time, pid, comm, event;
    words >> time >> pid >> comm >> event;
    EXPECT_EQ(pid, std::to_string(first.pid())) << lines[i];
    EXPECT_EQ(comm, "e2e-pid-first") << lines[i];
    events.push_back(event);
  }
  EXPECT_EQ(events, (std::vector<std::string>{"create", "resize", "unlink", "exit"})) << out;
}

} // namespace
} // namespace shmbpf::test
