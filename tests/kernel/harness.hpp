// Kernel-test harness: a real Session (real BPF programs) polled on a
// background thread, children that trigger syscalls, and waiting helpers.
// Under CI=true a Session that cannot load is a failure, never a skip.
#pragma once

#include "facts/result.hpp"
#include "live/session.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

class Collector {
public:
  explicit Collector(ProbeOptions opts = {}) {
    session_ = std::make_unique<Session>(opts);
    thread_ = ForkGuard::thread([this] {
      while (!stop_) {
        ForkGuard::busy([this] {
          session_->poll(50, [this](Event &e) {
            std::lock_guard lk(mu_);
            events_.push_back(e);
            cv_.notify_all();
          });
        });
      }
    });
  }
  ~Collector() {
    stop_ = true;
    thread_.join();
  }

  // Events matching pred, waiting up to timeout for at least `count`.
  std::vector<Event> wait_for(const std::function<bool(const Event &)> &pred, size_t count = 1,
                              std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lk(mu_);
    std::vector<Event> out;
    cv_.wait_for(lk, timeout, [&] {
      out.clear();
      for (const auto &e : events_)
        if (pred(e))
          out.push_back(e);
      return out.size() >= count;
    });
    return out;
  }

  std::vector<Event> of_pid(uint32_t pid) {
    std::lock_guard lk(mu_);
    std::vector<Event> out;
    for (const auto &e : events_)
      if (e.pid == pid)
        out.push_back(e);
    return out;
  }

  uint64_t lost() const { return session_->lost(); }
  const Session &session() const { return *session_; }

private:
  std::unique_ptr<Session> session_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> events_;
};

// Makes a std::unique_ptr<Type> var of something that loads the real
// programs; under CI=true a machine that cannot is a failure, elsewhere a skip.
#define SHMBPF_LOADED(var, Type, ...)                                                              \
  std::unique_ptr<Type> var;                                                                       \
  try {                                                                                            \
    var = std::make_unique<Type>(__VA_ARGS__);                                                     \
  } catch (const ::shmbpf::FatalError &e) {                                                        \
    if (::shmbpf::test::in_ci())                                                                   \
      FAIL() << "BPF could not be loaded under CI=true: " << e.what();                             \
    GTEST_SKIP() << "BPF could not be loaded: " << e.what();                                       \
  }
#define SHMBPF_COLLECTOR(var, ...) SHMBPF_LOADED(var, ::shmbpf::test::Collector, __VA_ARGS__)
#define SHMBPF_SESSION(var, ...) SHMBPF_LOADED(var, ::shmbpf::Session, __VA_ARGS__)

// Forks a child named `comm` that runs fn and exits with its return value.
// The child waits for the parent's go-ahead so its pid is known first.
struct Child {
  pid_t pid = -1;
  int status = 0;
  int go_fd = -1;

  void start() {
    char c = 1;
    EXPECT_EQ(write(go_fd, &c, 1), 1);
    close(go_fd);
  }
  int wait() {
    waitpid(pid, &status, 0);
    return status;
  }
};

inline Child spawn(const std::string &comm, const std::function<int()> &fn) {
  GatedFork f = fork_gated(comm, fn);
  return Child{f.pid, 0, f.gate_fd};
}

// Runs fn in a child named comm and waits for it to exit.
inline Child run_child(const std::string &comm, const std::function<int()> &fn) {
  Child c = spawn(comm, fn);
  c.start();
  c.wait();
  return c;
}

// A fresh tmpfs on a new directory under /tmp, unmounted and removed when
// this goes, however the test ends. Declare it before whatever uses the
// mount, then ASSERT_TRUE(mount(options)) once: a failure says what failed.
class TmpfsMount {
public:
  TmpfsMount() = default;
  TmpfsMount(const TmpfsMount &) = delete;
  TmpfsMount &operator=(const TmpfsMount &) = delete;
  ~TmpfsMount() {
    if (mounted_ && umount2(dir_.c_str(), 0) != 0)
      umount2(dir_.c_str(), MNT_DETACH);
    if (!base_.empty())
      std::filesystem::remove_all(base_);
  }

  // On a new temporary directory, or on the path below it (made), as
  // pods/<uid>/volumes/kubernetes.io~empty-dir/<name> is below kubelet's.
  ::testing::AssertionResult mount(const char *options, const std::string &below = "") {
    char tmpl[] = "/tmp/kt-tmpfs-XXXXXX";
    if (!mkdtemp(tmpl))
      return ::testing::AssertionFailure() << "mkdtemp: " << std::strerror(errno);
    base_ = tmpl;
    dir_ = base_ + below;
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      return ::testing::AssertionFailure() << "mkdir " << dir_ << ": " << ec.message();
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options) != 0)
      return ::testing::AssertionFailure()
             << "mount tmpfs on " << dir_ << ": " << std::strerror(errno);
    mounted_ = true;
    return ::testing::AssertionSuccess();
  }
  const std::string &dir() const { return dir_; }

private:
  std::string base_, dir_;
  bool mounted_ = false;
};

// A directory for one test's files (under /dev/shm, say), removed with all
// it holds when the test ends, however it ends. ASSERT_TRUE(make(path))
// once; remove() is for a test that needs it gone before its end.
//
// file(i) names the i-th of many files in it, f<i>-<pid of the test>. The
// kernel side follows a file by its leaf name alone, the last file created
// under a name winning (bpf/shmbpf_names.h): were the leaf f<i> alone, a
// test running alongside that makes and removes its own f<i> would take
// the name over, and this test's unlink would go unreported.
class ScratchDir {
public:
  ScratchDir() = default;
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;
  ~ScratchDir() { remove(); }

  ::testing::AssertionResult make(const std::string &path) {
    if (mkdir(path.c_str(), 0700) != 0)
      return ::testing::AssertionFailure() << "mkdir " << path << ": " << std::strerror(errno);
    path_ = path;
    owner_ = std::to_string(getpid()); // here, not in the child that makes the files
    return ::testing::AssertionSuccess();
  }
  std::string file(int i) const { return path_ + "/f" + std::to_string(i) + "-" + owner_; }
  void remove() {
    std::error_code ec;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ec);
    path_.clear();
  }
  const std::string &path() const { return path_; }

private:
  std::string path_;
  std::string owner_;
};

inline uint32_t kdev_of(dev_t d) { return (major(d) << 20) | minor(d); }

} // namespace shmbpf::test
