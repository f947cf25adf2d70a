// The shmbpf binary running in the background for end-to-end tests:
// stdout and stderr captured as they come, bounded waits, signals.
#pragma once

#include "support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

using namespace std::chrono_literals;

inline std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// For a child between fork and exec: a mount namespace of its own, private,
// with debugfs' tracing directory (which libbpf would prefer) hidden; then
// with nothing mounted where tracefs goes (fake false), or a tmpfs with an
// events/ directory in it that only looks like tracefs (fake true). The
// machine's mounts are not touched. Exits 125 when it cannot.
inline void tracefs_setup_in_own_namespace(bool fake) {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
    _exit(125);
  // Not debugfs either: its tracing directory is another tracefs mount.
  while (umount2("/sys/kernel/debug", MNT_DETACH) == 0) {
  }
  mount("tmpfs", "/sys/kernel/debug", "tmpfs", 0, nullptr);
  if (fake) {
    if (mount("tmpfs", "/sys/kernel/tracing", "tmpfs", 0, nullptr) != 0 ||
        mkdir("/sys/kernel/tracing/events", 0755) != 0)
      _exit(125);
    return;
  }
  while (umount2("/sys/kernel/tracing", 0) == 0) {
  }
  struct stat st {};
  if (stat("/sys/kernel/tracing/events", &st) == 0)
    _exit(125);
}

// Asserts a wait status: exited (not killed, not timed out) with code.
inline void expect_exit_code(const std::optional<int> &st, int code) {
  ASSERT_TRUE(st.has_value()) << "timed out";
  ASSERT_TRUE(WIFEXITED(*st)) << "wait status " << *st;
  EXPECT_EQ(WEXITSTATUS(*st), code);
}

// A program running in a child, stdout and stderr captured by a reader
// thread.
class ChildProcess {
public:
  // before_exec runs in the child between fork and exec (e.g. to drop root).
  ChildProcess(const std::string &program, const std::vector<std::string> &args,
               const std::function<void()> &before_exec = {}) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
      std::abort();
    pid_ = ForkGuard::fork();
    if (pid_ < 0)
      std::abort();
    if (pid_ == 0) {
      int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      if (before_exec)
        before_exec();
      std::vector<char *> argv;
      argv.push_back(const_cast<char *>(program.c_str()));
      for (const auto &a : args)
        argv.push_back(const_cast<char *>(a.c_str()));
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    reader_ = ForkGuard::thread([this, o = out[0], e = err[0]] { read_loop(o, e); });
  }

  ~ChildProcess() {
    if (!status_) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
    stop_ = true;
    reader_.join();
  }

  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;

  pid_t pid() const { return pid_; }

  std::string out() {
    std::lock_guard lk(mu_);
    return out_;
  }
  std::string err() {
    std::lock_guard lk(mu_);
    return err_;
  }

  // Waits until pred(stdout so far) holds; false after timeout.
  bool wait_output(const std::function<bool(const std::string &)> &pred,
                   std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return pred(out_) || eof_; }) && pred(out_);
  }
  bool wait_output(const std::string &needle, std::chrono::milliseconds timeout) {
    return wait_output([&](const std::string &s) { return s.find(needle) != std::string::npos; },
                       timeout);
  }

  // The wait status, or nothing if the process did not exit in time (it
  // is then killed). Also waits for the output to be complete.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    if (status_)
      return status_;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int st = 0;
    while (waitpid(pid_, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &st, 0);
        status_ = st;
        return std::nullopt;
      }
      std::this_thread::sleep_for(10ms);
    }
    status_ = st;
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, 5s, [&] { return eof_; });
    return st;
  }

  void signal(int sig) { kill(pid_, sig); }

  // Has it exited (reaped now if so)?
  bool exited() {
    if (status_)
      return true;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_)
      status_ = st;
    return status_.has_value();
  }
  std::optional<int> status() const { return status_; }

private:
  void read_loop(int out_fd, int err_fd) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0 && !stop_) {
      if (poll(fds, 2, 100) <= 0)
        continue;
      for (int i = 0; i < 2; i++) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
          continue;
        ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        ForkGuard::busy([&] {
          std::lock_guard lk(mu_);
          if (n > 0) {
            (i == 0 ? out_ : err_).append(buf, static_cast<size_t>(n));
          } else {
            close(fds[i].fd);
            fds[i].fd = -1;
            open_fds--;
          }
          cv_.notify_all();
        });
      }
    }
    for (auto &f : fds)
      if (f.fd >= 0)
        close(f.fd);
    std::lock_guard lk(mu_);
    eof_ = true;
    cv_.notify_all();
  }

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string out_, err_;
  bool eof_ = false;
};

// The shmbpf binary under test, running in a child.
class ShmbpfProcess : public ChildProcess {
public:
  explicit ShmbpfProcess(const std::vector<std::string> &args,
                         const std::function<void()> &before_exec = {})
      : ChildProcess(SHMBPF_BINARY, args, before_exec) {}
};

} // namespace shmbpf::test
