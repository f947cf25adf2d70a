// Several shmbpf processes on one machine, as on a node where the agent
// runs while an admin looks with top or trace: started at the same moment
// on a machine with no tracefs mounted, every one attaches and runs, and
// the mount table is the same afterwards. The machine is a mount namespace
// of the test's own (tracefs and debugfs taken away), shared by all of them.
#include "background.hpp"
#include "export_records.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>

#include <fstream>
#include <memory>
#include <sstream>

namespace shmbpf::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A process that holds a mount namespace with no tracefs for the others to
// join: sleep, started in one made by tracefs_setup_in_own_namespace.
class NamespaceHolder {
public:
  NamespaceHolder() : p_("/bin/sleep", {"600"}, [] { tracefs_setup_in_own_namespace(false); }) {}
  // Once the holder has made its namespace (it runs sleep then).
  bool ready() {
    for (auto deadline = Clock::now() + 10s; Clock::now() < deadline;) {
      if (p_.exited())
        return false;
      if (read_text("/proc/" + std::to_string(p_.pid()) + "/comm") == "sleep\n")
        return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  std::string mountinfo() const {
    return read_text("/proc/" + std::to_string(p_.pid()) + "/mountinfo");
  }
  // For a child between fork and exec: join the namespace.
  std::function<void()> join() const {
    const std::string ns = "/proc/" + std::to_string(p_.pid()) + "/ns/mnt";
    return [ns] {
      const int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNS) != 0)
        _exit(125);
      close(fd);
    };
  }

private:
  ChildProcess p_;
};

TEST(Instances, EightStartedTogetherWithoutTracefsAllRun) {
  SHMBPF_REQUIRE_ROOT();
  NamespaceHolder holder;
  ASSERT_TRUE(holder.ready()) << "a mount namespace without tracefs could not be made";
  const std::string before = holder.mountinfo();
  ASSERT_EQ(before.find(" - tracefs "), std::string::npos) << before;

  const TempDir dir;
  const int port1 = free_port(), port2 = free_port();
  const std::vector<std::vector<std::string>> commands = {
      {"serve", "--listen", "127.0.0.1:" + std::to_string(port1), "--socket",
       (dir.path / "s1").string(), "--no-state"},
      {"serve", "--listen", "127.0.0.1:" + std::to_string(port2), "--socket",
       (dir.path / "s2").string(), "--no-state", "--hooks", "full"},
      {"top", "-b", "-n", "2", "-d", "1"},
      {"top", "-b", "-n", "2", "-d", "1", "--hooks", "light"},
      {"trace", "--duration", "4"},
      {"trace", "--duration", "4", "--hooks", "light"},
      {"doctor"},
      {"doctor", "--hooks", "light"},
  };
  // Every child waits at the gate (EOF on it) until all are forked.
  int gate[2];
  ASSERT_EQ(pipe2(gate, O_CLOEXEC), 0);
  const std::function<void()> join = holder.join();
  std::vector<std::unique_ptr<ShmbpfProcess>> procs;
  for (const auto &args : commands)
    procs.push_back(std::make_unique<ShmbpfProcess>(args, [&] {
      join();
      close(gate[1]);
      char c;
      if (read(gate[0], &c, 1) != 0)
        _exit(126);
    }));
  close(gate[0]);
  close(gate[1]);

  auto serve_ready = [&](ShmbpfProcess &serve, int port) { SHMBPF_SERVE_READY(serve, port); };
  serve_ready(*procs[0], port1);
  serve_ready(*procs[1], port2);
  for (int i : {0, 1})
    procs[i]->signal(SIGTERM);
  for (size_t i = 0; i < procs.size(); ++i) {
    SCOPED_TRACE(commands[i][0] + " #" + std::to_string(i));
    expect_exit_code(procs[i]->wait(120s), 0);
    EXPECT_EQ(procs[i]->err().find("tracefs"), std::string::npos) << procs[i]->err();
    EXPECT_EQ(procs[i]->err().find("failed"), std::string::npos) << procs[i]->err();
  }
  EXPECT_NE(procs[2]->out().find("PID"), std::string::npos) << procs[2]->out();
  EXPECT_TRUE(procs[6]->out().starts_with("shmbpf can run here")) << procs[6]->out();
  // Nothing mounted: every line now was there before. (A test beside this
  // one may remove a directory that was a mount point when the namespace
  // was copied, which unmounts its copy here: lines may go.)
  const std::string after = holder.mountinfo();
  for (const std::string &line : lines_of(after))
    EXPECT_NE(before.find(line + "\n"), std::string::npos) << "mounted meanwhile: " << line;
  EXPECT_EQ(after.find(" - tracefs "), std::string::npos) << after;
}

} // namespace
} // namespace shmbpf::test
