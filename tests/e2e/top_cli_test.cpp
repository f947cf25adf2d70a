// End-to-end tests of `shmbpf top`: batch frames (text and JSON) read from a
// pipe while real processes create segments, a simulated container, and the
// interactive screen driven through tmux (keys in, screen captured). Every
// wait is bounded; a hung binary is killed and the test fails.
#include "background.hpp"
#include "container_sim.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"
#include "unit/text_checks.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto start_timeout = 30s; // loading BPF and the first scan take a second or two

using Top = ShmbpfProcess;

// Waits for the first frame. A machine where BPF cannot load (exit status 2,
// the "cannot run here" status) skips, except under CI=true where it fails.
#define SHMBPF_TOP_STARTED(top, marker)                                                            \
  do {                                                                                             \
    if (!(top).wait_output(                                                                        \
            [](const std::string &o) { return o.find(marker) != std::string::npos; },              \
            start_timeout)) {                                                                      \
      (top).wait(2s);                                                                              \
      const auto st_ = (top).status();                                                             \
      if (!in_ci() && st_ && WIFEXITED(*st_) && WEXITSTATUS(*st_) == 2)                            \
        GTEST_SKIP() << "shmbpf top cannot run here: " << (top).err();                             \
      FAIL() << "no frame from shmbpf top; stderr: " << (top).err();                               \
    }                                                                                              \
  } while (0)

// Creates `count` files of `bytes` resident bytes each under /dev/shm (names
// prefix-0, prefix-1, ...) and keeps them open until killed.
struct Holder {
  GatedFork fork;
  std::vector<std::string> paths;
  Shared<int> ready;

  Holder(const std::string &comm, const std::string &prefix, int count, size_t bytes) {
    for (int i = 0; i < count; ++i)
      paths.push_back(prefix + "-" + std::to_string(i));
    fork = fork_gated(comm, [this, bytes] {
      std::string data(bytes, 'x');
      for (const auto &p : paths) {
        int fd = open(p.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size()))
          return 1;
      }
      *ready = 1;
      for (;;)
        pause();
    });
  }
  ~Holder() {
    kill(fork.pid, SIGKILL);
    waitpid(fork.pid, nullptr, 0);
    if (fork.gate_fd >= 0)
      close(fork.gate_fd);
    for (const auto &p : paths)
      unlink(p.c_str());
  }
  Holder(const Holder &) = delete;
  Holder &operator=(const Holder &) = delete;

  ::testing::AssertionResult release() {
    char c = 1;
    if (write(fork.gate_fd, &c, 1) != 1)
      return ::testing::AssertionFailure() << "gate";
    close(fork.gate_fd);
    fork.gate_fd = -1;
    const auto deadline = Clock::now() + 5s;
    while (!*ready) {
      if (Clock::now() >= deadline)
        return ::testing::AssertionFailure() << "the child did not create its files";
      std::this_thread::sleep_for(5ms);
    }
    return ::testing::AssertionSuccess();
  }
};

// The processes-view row of pid in the latest text frame, split in fields.
std::optional<std::vector<std::string>> process_row(const std::string &out, pid_t pid) {
  std::optional<std::vector<std::string>> row;
  for (const auto &line : lines_of(out)) {
    auto f = fields_of(line);
    if (!f.empty() && f[0] == std::to_string(pid))
      row = f;
  }
  return row;
}

TEST(TopCli, BatchFrameListsAProcessWithItsSegmentsAndBytes) {
  Top top({"top", "-b", "-d", "0.3"});
  SHMBPF_TOP_STARTED(top, "shmbpf top - ");
  const std::string comm = "e2e-top-batch";
  Holder h(comm, "/dev/shm/shmbpf-e2e-top-" + std::to_string(getpid()), 3, 64 * 1024);
  ASSERT_TRUE(h.release());

  // PID USER COMM CONTAINER SEGS BYTES HELD CREATE/s UNHELD
  const pid_t pid = h.fork.pid;
  auto want = [&](const std::string &out) {
    auto f = process_row(out, pid);
    return f && f->size() == 9 && (*f)[4] == "3" && (*f)[5] == "192K";
  };
  EXPECT_TRUE(top.wait_output(want, 10s)) << top.out();
  auto f = process_row(top.out(), pid);
  ASSERT_TRUE(f);
  EXPECT_EQ((*f)[1], "root");
  EXPECT_EQ((*f)[2], comm);
  EXPECT_EQ((*f)[3], "-");    // the host
  EXPECT_EQ((*f)[6], "192K"); // it still holds all three
  EXPECT_EQ((*f)[8], "0");    // none left unheld

  // Plain text only: no escape sequence, no control character.
  for (unsigned char c : top.out())
    ASSERT_TRUE(c == '\n' || (c >= 0x20 && c != 0x7f)) << "control byte " << int(c);
  EXPECT_NE(top.out().find("Segments: "), std::string::npos);
  EXPECT_NE(top.out().find("/dev/shm (host"), std::string::npos) << top.out();

  top.signal(SIGTERM);
  expect_exit_code(top.wait(5s), 0);
}

TEST(TopCli, BatchStopsAfterNFrames) {
  Top top({"top", "-b", "-n", "3", "-d", "0.2", "--by", "mount"});
  auto st = top.wait(start_timeout);
  if (!in_ci() && st && WIFEXITED(*st) && WEXITSTATUS(*st) == 2)
    GTEST_SKIP() << "shmbpf top cannot run here: " << top.err();
  expect_exit_code(st, 0);
  size_t frames = 0, mount_tables = 0;
  for (const auto &line : lines_of(top.out())) {
    frames += line.starts_with("shmbpf top - ");
    mount_tables += line.starts_with("MOUNTPOINT ");
  }
  EXPECT_EQ(frames, 3u) << top.out();
  EXPECT_EQ(mount_tables, 3u);
}

// A tree deeper than the scan goes hides files from every table: top says
// so in its header and its JSON. On a tmpfs of the test's own, so that no
// other test's /dev/shm report meets the deep tree.
TEST(TopCli, SaysWhereAScanCouldNotReach) {
  char dir[] = "/tmp/e2e-top-deep-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  ASSERT_EQ(mount("tmpfs", dir, "tmpfs", 0, "size=1m"), 0) << strerror(errno);
  std::string path = dir;
  for (int depth = 0; depth < 70; ++depth) {
    path += "/d";
    ASSERT_EQ(mkdir(path.c_str(), 0700), 0) << path;
  }
  ASSERT_EQ(close(open((path + "/hidden").c_str(), O_CREAT | O_WRONLY, 0600)), 0);

  Top text({"top", "-b", "-n", "1"});
  Top js({"top", "-b", "-n", "1", "--json"});
  const auto text_st = text.wait(start_timeout);
  const auto js_st = js.wait(start_timeout);
  umount2(dir, MNT_DETACH);
  rmdir(dir);
  if (!in_ci() && text_st && WIFEXITED(*text_st) && WEXITSTATUS(*text_st) == 2)
    GTEST_SKIP() << "shmbpf top cannot run here: " << text.err();
  expect_exit_code(text_st, 0);
  expect_exit_code(js_st, 0);
  const std::string told = std::string("Scan: ") + dir + ": not every file was scanned";
  EXPECT_NE(text.out().find(told), std::string::npos) << text.out();
  const json j = json::parse(js.out(), nullptr, false);
  ASSERT_TRUE(j.is_object()) << js.out();
  bool found = false;
  for (const json &g : j["scan_gaps"])
    found = found || (g["mountpoint"] == dir && g["dirs_too_deep"].get<uint64_t>() > 0);
  EXPECT_TRUE(found) << j["scan_gaps"].dump();
}

TEST(TopCli, JsonFramesOnePerLine) {
  const std::string comm = "e2e-top-json";
  Holder h(comm, "/dev/shm/shmbpf-e2e-topjson-" + std::to_string(getpid()), 2, 8192);
  const pid_t pid = h.fork.pid;
  Top top({"top", "-b", "--json", "-d", "0.3", "-p", std::to_string(pid)});
  SHMBPF_TOP_STARTED(top, "\n");
  ASSERT_TRUE(h.release());

  auto mine = [&](const json &j) {
    return j["rows"].size() == 1 && j["rows"][0]["pid"] == pid &&
           j["rows"][0]["segments_created"] == 2 && j["rows"][0]["bytes_created"] == 16384;
  };
  auto found = [&](const std::string &out) {
    for (const auto &line : lines_of(out)) {
      auto j = json::parse(line, nullptr, false);
      if (!j.is_discarded() && mine(j))
        return true;
    }
    return false;
  };
  EXPECT_TRUE(top.wait_output(found, 10s)) << top.out() << top.err();
  top.signal(SIGINT);
  expect_exit_code(top.wait(5s), 0);

  auto lines = lines_of(top.out());
  ASSERT_GE(lines.size(), 2u);
  for (const auto &line : lines) {
    json j;
    ASSERT_NO_THROW(j = json::parse(line)) << line;
    EXPECT_EQ(j["view"], "processes");
    for (const char *k : {"tmpfs", "memfd", "sysv", "orphans", "create_rate", "lost", "sigbus"})
      EXPECT_TRUE(j["totals"].contains(k)) << k;
    EXPECT_TRUE(j["mounts"].is_array());
    EXPECT_LE(j["rows"].size(), 1u); // -p: only that process
  }
}

TEST(TopCli, EscapeSequenceInAFileNameIsPrintedEscaped) {
  const std::string prefix =
      "/dev/shm/shmbpf-e2e-\x1b[31mred\x1b]0;title\x07-" + std::to_string(getpid());
  Holder h("e2e-top-esc", prefix, 1, 4096);
  ASSERT_TRUE(h.release());
  Top top({"top", "-b", "-n", "1", "--by", "segments"});
  auto st = top.wait(start_timeout);
  if (!in_ci() && st && WIFEXITED(*st) && WEXITSTATUS(*st) == 2)
    GTEST_SKIP() << "shmbpf top cannot run here: " << top.err();
  expect_exit_code(st, 0);
  const std::string shown = "shmbpf-e2e-\\x1b[31mred\\x1b]0;title\\x07-" + std::to_string(getpid());
  EXPECT_NE(top.out().find(shown), std::string::npos) << top.out();
  EXPECT_EQ(top.out().find('\x1b'), std::string::npos);
  EXPECT_EQ(top.out().find('\x07'), std::string::npos);
}

TEST(TopCli, ContainersViewListsASimulatedContainer) {
  if (geteuid() != 0) {
    if (in_ci())
      FAIL() << "needs root under CI=true";
    GTEST_SKIP() << "needs root";
  }
  ContainerSim ctr;
  const std::string why = ctr.start();
  if (!why.empty()) {
    if (in_ci())
      FAIL() << "cannot build the simulated container: " << why;
    GTEST_SKIP() << "cannot build the simulated container: " << why;
  }
  const pid_t inner = ctr.spawn([] {
    int fd = open("/dev/shm/e2e-top-ctr", O_CREAT | O_EXCL | O_RDWR, 0600);
    std::string data(1 << 20, 'y');
    return fd >= 0 && write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  });
  ASSERT_GT(inner, 0);

  Top top({"top", "-b", "-d", "0.3", "--by", "container"});
  SHMBPF_TOP_STARTED(top, "SHM MOUNT %");
  // ID NAME RUNTIME PROCS SEGS BYTES SHMEM LIMIT SHM MOUNT % (no pod: no POD,
  // NAMESPACE)
  const std::string short_id = ctr.id().substr(0, 12);
  std::vector<std::string> row;
  auto want = [&](const std::string &out) {
    for (const auto &line : lines_of(out)) {
      auto f = fields_of(line);
      if (f.size() == 9 && f[0] == short_id && f[4] != "0") {
        row = f;
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(top.wait_output(want, 10s)) << top.out() << top.err();
  ASSERT_EQ(row.size(), 9u);
  EXPECT_EQ(row[1], "-"); // no docker files name the simulated container
  EXPECT_EQ(row[2], "docker");
  EXPECT_EQ(row[3], "2");    // PROCS: init and the process holding the file
  EXPECT_EQ(row[4], "1");    // SEGS
  EXPECT_EQ(row[5], "1.0M"); // BYTES
  // SHM MOUNT %: what statfs says of its 64 MiB /dev/shm (the 1 MiB file).
  struct statvfs vfs {};
  ASSERT_EQ(statvfs(ctr.host_path("/dev/shm").c_str(), &vfs), 0);
  const double used = static_cast<double>(vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * used / (64.0 * 1024 * 1024));
  EXPECT_EQ(row[8], pct) << top.out();
  // The header has a line for the container's own /dev/shm.
  EXPECT_NE(top.out().find("/dev/shm (" + short_id + ")"), std::string::npos) << top.out();
  top.signal(SIGTERM);
  expect_exit_code(top.wait(5s), 0);
}

TEST(TopCli, RefusesWithoutATerminalAndPointsToBatchMode) {
  Top top({"top"}); // stdout is a pipe
  expect_exit_code(top.wait(10s), 2);
  EXPECT_EQ(top.out(), "");
  EXPECT_NE(top.err().find("not a terminal"), std::string::npos) << top.err();
  EXPECT_NE(top.err().find("-b"), std::string::npos) << top.err();
}

TEST(TopCli, NotRootIsToldToUseSudo) {
  Top top({"top", "-b"}, [] {
    const uid_t nobody = 65534;
    if (setgroups(0, nullptr) != 0 || setgid(nobody) != 0 || setuid(nobody) != 0)
      _exit(126);
  });
  expect_exit_code(top.wait(10s), 2);
  EXPECT_NE(top.err().find("sudo shmbpf top"), std::string::npos) << top.err();
  EXPECT_EQ(top.out(), "");
}

// ---- the interactive screen, in tmux -------------------------------------------

// A private tmux server (its own socket) with one 160x50 window running a
// plain shell whose prompt is a known marker.
class Tmux {
public:
  // capture-pane drops trailing blanks: match the prompt without its space.
  static constexpr const char *prompt = "top-e2e-prompt$";

  Tmux() : socket_("shmbpf-e2e-" + std::to_string(getpid())) {}
  ~Tmux() {
    if (started_)
      run("kill-server");
  }
  Tmux(const Tmux &) = delete;
  Tmux &operator=(const Tmux &) = delete;

  static bool available() { return std::system("tmux -V >/dev/null 2>&1") == 0; }

  bool start() {
    started_ = run(std::string("new-session -d -s top -x 160 -y 50 \"env PS1='") + prompt +
                   " ' TERM=xterm-256color bash --norc --noprofile\"") == 0;
    return started_ &&
           wait_screen([](const std::string &s) { return s.find(prompt) != std::string::npos; });
  }
  // Keys as tmux send-keys takes them (-l: literally).
  void keys(const std::string &k, bool literal = false) {
    run("send-keys -t top " + std::string(literal ? "-l " : "") + quote(k));
  }
  std::string screen() {
    std::string out;
    FILE *p = popen(("tmux -L " + socket_ + " capture-pane -p -t top 2>/dev/null").c_str(), "r");
    if (!p)
      return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
      out.append(buf, n);
    pclose(p);
    return out;
  }
  bool wait_screen(const std::function<bool(const std::string &)> &pred,
                   std::chrono::milliseconds timeout = 10s) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (pred(screen()))
        return true;
      std::this_thread::sleep_for(50ms);
    }
    return pred(screen());
  }
  bool wait_text(const std::string &needle, std::chrono::milliseconds timeout = 10s) {
    return wait_screen([&](const std::string &s) { return s.find(needle) != std::string::npos; },
                       timeout);
  }
  pid_t pane_pid() {
    FILE *p = popen(("tmux -L " + socket_ + " display -p -t top '#{pane_pid}'").c_str(), "r");
    char buf[64] = {};
    if (p) {
      if (!fgets(buf, sizeof buf, p))
        buf[0] = 0;
      pclose(p);
    }
    return static_cast<pid_t>(std::atoi(buf));
  }

private:
  static std::string quote(const std::string &s) {
    std::string q = "'";
    for (char c : s)
      q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  }
  int run(const std::string &cmd) {
    return std::system(("tmux -L " + socket_ + " " + cmd + " >/dev/null 2>&1").c_str());
  }

  std::string socket_;
  bool started_ = false;
};

// The pid of the child of parent whose command is comm, 0 when none.
pid_t child_named(pid_t parent, const std::string &comm) {
  DIR *d = opendir("/proc");
  pid_t found = 0;
  while (dirent *e = d ? readdir(d) : nullptr) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0)
      continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close_paren = line.rfind(')');
    const auto open_paren = line.find('(');
    if (close_paren == std::string::npos || open_paren == std::string::npos)
      continue;
    auto f = fields_of(line.substr(close_paren + 1));
    if (f.size() > 1 && std::atoi(f[1].c_str()) == parent &&
        line.substr(open_paren + 1, close_paren - open_paren - 1) == comm)
      found = pid;
  }
  if (d)
    closedir(d);
  return found;
}

class TopInteractive : public ::testing::Test {
protected:
  void SetUp() override {
    if (!Tmux::available()) {
      if (in_ci())
        FAIL() << "tmux is missing (scripts/deps.sh installs it)";
      GTEST_SKIP() << "tmux is missing";
    }
    ASSERT_TRUE(tmux_.start()) << tmux_.screen();
  }

  // Starts shmbpf top in the pane and waits for its screen.
  void start_top(const std::string &args = "-d 0.3") {
    tmux_.keys(std::string(SHMBPF_BINARY) + " top " + args, true);
    tmux_.keys("Enter");
    const bool up = tmux_.wait_screen(
        [](const std::string &s) {
          return s.find("q quit") != std::string::npos || s.find("shmbpf: ") != std::string::npos;
        },
        start_timeout);
    const std::string s = tmux_.screen();
    if (s.find("q quit") == std::string::npos) {
      if (!in_ci() && s.find("shmbpf: ") != std::string::npos)
        GTEST_SKIP() << "shmbpf top cannot run here:\n" << s;
      FAIL() << "no top screen (" << up << "):\n" << s;
    }
  }

  Tmux tmux_;
};

TEST_F(TopInteractive, KeysSwitchViewsFilterAndQuitRestoresTheTerminal) {
  const std::string tag = "e2e-top-tmux-" + std::to_string(getpid());
  Holder h("e2e-top-tmux", "/dev/shm/" + tag, 2, 16384);
  start_top();
  if (HasFatalFailure() || IsSkipped())
    return;
  ASSERT_TRUE(h.release()); // created while top watches: the creator is known
  std::string s = tmux_.screen();
  EXPECT_NE(s.find("view: processes"), std::string::npos) << s;
  for (const char *c : {"PID", "USER", "COMM", "CONTAINER", "SEGS", "BYTES", "HELD", "CREATE/s",
                        "UNHELD", "Segments: ", "Activity: ", "Lost events: "})
    EXPECT_NE(s.find(c), std::string::npos) << c << "\n" << s;

  tmux_.keys("c");
  EXPECT_TRUE(tmux_.wait_text("SHM MOUNT %")) << tmux_.screen();
  s = tmux_.screen();
  EXPECT_NE(s.find("view: containers"), std::string::npos) << s;
  EXPECT_NE(s.find("RUNTIME"), std::string::npos);
  EXPECT_NE(s.find("\nhost "), std::string::npos) << s;

  tmux_.keys("s");
  EXPECT_TRUE(tmux_.wait_text("PATH/NAME")) << tmux_.screen();
  EXPECT_TRUE(tmux_.wait_text("/dev/shm/" + tag + "-0")) << tmux_.screen();
  s = tmux_.screen();
  for (const char *c : {"KIND", "STATE", "CREATOR", "HOLDERS", "AGE"})
    EXPECT_NE(s.find(c), std::string::npos) << c << "\n" << s;

  // Filter to one file: the other disappears.
  tmux_.keys("/");
  EXPECT_TRUE(tmux_.wait_text("Filter: _")) << tmux_.screen();
  tmux_.keys(tag + "-1", true);
  tmux_.keys("Enter");
  EXPECT_TRUE(tmux_.wait_text("filter: " + tag + "-1")) << tmux_.screen();
  EXPECT_TRUE(tmux_.wait_screen([&](const std::string &sc) {
    return sc.find("/dev/shm/" + tag + "-1") != std::string::npos &&
           sc.find("/dev/shm/" + tag + "-0") == std::string::npos;
  })) << tmux_.screen();

  // Details of the (only, selected) row: creator, holders, full path.
  tmux_.keys("Enter");
  EXPECT_TRUE(tmux_.wait_text("Details (Esc: back)")) << tmux_.screen();
  s = tmux_.screen();
  EXPECT_NE(s.find("path:          /dev/shm/" + tag + "-1"), std::string::npos) << s;
  EXPECT_NE(s.find("creator:       " + std::to_string(h.fork.pid) + "/e2e-top-tmux"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  " + std::to_string(h.fork.pid) + "  e2e-top-tmux"), std::string::npos) << s;
  tmux_.keys("Escape");
  EXPECT_TRUE(tmux_.wait_text("PATH/NAME")) << tmux_.screen();

  // Sort by age, then help.
  tmux_.keys("a");
  EXPECT_TRUE(tmux_.wait_text("sort: age")) << tmux_.screen();
  tmux_.keys("h");
  EXPECT_TRUE(tmux_.wait_text("filter by name")) << tmux_.screen();
  tmux_.keys("x");
  EXPECT_TRUE(tmux_.wait_text("PATH/NAME")) << tmux_.screen();

  // q: the alternate screen is left, the shell prompt is back and usable.
  tmux_.keys("q");
  EXPECT_TRUE(tmux_.wait_screen([](const std::string &sc) {
    return sc.find("PATH/NAME") == std::string::npos && sc.find(Tmux::prompt) != std::string::npos;
  })) << tmux_.screen();
  tmux_.keys("echo \"top exited $?\"", true);
  tmux_.keys("Enter");
  EXPECT_TRUE(tmux_.wait_text("top exited 0")) << tmux_.screen();
  // Echo works again (ncurses' noecho undone): the typed command is visible.
  EXPECT_NE(tmux_.screen().find("echo \"top exited $?\""), std::string::npos);
}

TEST_F(TopInteractive, EscapeSequenceInAFileNameIsShownEscaped) {
  const std::string tag = "e2e-top-esc-" + std::to_string(getpid());
  // ESC [ 2 J would clear the screen, ESC [ 41m paint it red.
  Holder h("e2e-top-escn", "/dev/shm/" + tag + "\x1b[2J\x1b[41m", 1, 4096);
  ASSERT_TRUE(h.release());
  start_top("-d 0.3 --by segments");
  if (HasFatalFailure() || IsSkipped())
    return;
  tmux_.keys("/");
  tmux_.keys(tag, true);
  tmux_.keys("Enter");
  const std::string shown = "/dev/shm/" + tag + "\\x1b[2J\\x1b[41m-0";
  EXPECT_TRUE(tmux_.wait_text(shown)) << tmux_.screen();
  // The header survived: nothing cleared the screen.
  EXPECT_NE(tmux_.screen().find("shmbpf top - "), std::string::npos) << tmux_.screen();
  tmux_.keys("q");
  EXPECT_TRUE(tmux_.wait_text(Tmux::prompt)) << tmux_.screen();
}

// A signal ends top as q does: the terminal is given back, status 0. SIGHUP
// is the ssh session or terminal window closing, SIGQUIT Ctrl-\.
class TopSignal : public TopInteractive, public ::testing::WithParamInterface<int> {};

TEST_P(TopSignal, RestoresTheTerminal) {
  start_top();
  if (HasFatalFailure() || IsSkipped())
    return;
  const pid_t top = child_named(tmux_.pane_pid(), "shmbpf");
  ASSERT_GT(top, 0);
  kill(top, GetParam());
  EXPECT_TRUE(tmux_.wait_screen([](const std::string &sc) {
    return sc.find("q quit") == std::string::npos && sc.find(Tmux::prompt) != std::string::npos;
  })) << tmux_.screen();
  tmux_.keys("echo \"top exited $?\"", true);
  tmux_.keys("Enter");
  EXPECT_TRUE(tmux_.wait_text("top exited 0")) << tmux_.screen();
}

INSTANTIATE_TEST_SUITE_P(Signals, TopSignal, ::testing::Values(SIGTERM, SIGHUP, SIGQUIT),
                         [](const auto &info) { return std::string(sigabbrev_np(info.param)); });

TEST_F(TopInteractive, ResizeRedrawsToTheNewWidth) {
  start_top("-d 5"); // no refresh due: only the resize redraws
  if (HasFatalFailure() || IsSkipped())
    return;
  ASSERT_EQ(std::system(("tmux -L shmbpf-e2e-" + std::to_string(getpid()) +
                         " resize-window -t top -x 60 -y 20 >/dev/null 2>&1")
                            .c_str()),
            0);
  // Redrawn for 60x20: the key help moved from row 50 to row 20, cut to 60.
  EXPECT_TRUE(tmux_.wait_screen([](const std::string &sc) {
    auto lines = lines_of(sc);
    while (!lines.empty() && lines.back().empty())
      lines.pop_back();
    return lines.size() == 20 && lines.back().starts_with("p/c/m/s/w view") &&
           lines.back().find("q quit") == std::string::npos &&
           lines.front().starts_with("shmbpf top");
  })) << tmux_.screen();
  tmux_.keys("q");
  EXPECT_TRUE(tmux_.wait_text(Tmux::prompt)) << tmux_.screen();
}

// top --server: the same screen and keys, each frame built by a running
// shmbpf serve from its model (which saw the files created), no BPF here.
TEST_F(TopInteractive, ServerFramesComeFromTheDaemonsModel) {
  SHMBPF_REQUIRE_ROOT();
  char tmpl[] = "/tmp/shmbpf-e2e-topsock-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  struct RemoveDir {
    std::string path;
    ~RemoveDir() { std::filesystem::remove_all(path); }
  } dir{tmpl};
  const std::string sock = dir.path + "/shmbpf.sock";
  const int port = free_port();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port), "--socket", sock});
  SHMBPF_SERVE_READY(serve, port);
  const std::string tag = "e2e-top-server-" + std::to_string(getpid());
  Holder h("e2e-top-served", "/dev/shm/" + tag, 2, 8192);
  start_top("--server " + sock + " -d 0.3");
  if (HasFatalFailure() || IsSkipped())
    return;
  ASSERT_TRUE(h.release()); // created while the daemon watches: the creator is known
  EXPECT_NE(tmux_.screen().find("view: processes"), std::string::npos) << tmux_.screen();

  tmux_.keys("s");
  EXPECT_TRUE(tmux_.wait_text("/dev/shm/" + tag + "-0")) << tmux_.screen();
  tmux_.keys("/");
  EXPECT_TRUE(tmux_.wait_text("Filter: _")) << tmux_.screen();
  tmux_.keys(tag + "-1", true);
  tmux_.keys("Enter");
  EXPECT_TRUE(tmux_.wait_screen([&](const std::string &sc) {
    return sc.find("/dev/shm/" + tag + "-1") != std::string::npos &&
           sc.find("/dev/shm/" + tag + "-0") == std::string::npos;
  })) << tmux_.screen();
  tmux_.keys("Enter");
  EXPECT_TRUE(tmux_.wait_text("Details (Esc: back)")) << tmux_.screen();
  EXPECT_TRUE(tmux_.wait_text("creator:       " + std::to_string(h.fork.pid) + "/e2e-top-served"))
      << tmux_.screen();

  tmux_.keys("q");
  EXPECT_TRUE(tmux_.wait_screen([](const std::string &sc) {
    return sc.find("PATH/NAME") == std::string::npos && sc.find(Tmux::prompt) != std::string::npos;
  })) << tmux_.screen();
  tmux_.keys("echo \"top exited $?\"", true);
  tmux_.keys("Enter");
  EXPECT_TRUE(tmux_.wait_text("top exited 0")) << tmux_.screen();
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
}

} // namespace
} // namespace shmbpf::test
