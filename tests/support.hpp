// Helpers shared by the kernel and e2e tests.
#pragma once

#include "sources/mountinfo.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unistd.h>

namespace shmbpf::test {

// A T in a shared anonymous mapping: what a child writes, the parent reads.
template <class T> class Shared {
  static_assert(std::is_trivially_destructible_v<T>);

public:
  Shared() {
    void *p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      std::abort();
    p_ = new (p) T{};
  }
  Shared(const Shared &) = delete;
  Shared &operator=(const Shared &) = delete;
  ~Shared() { munmap(p_, sizeof(T)); }
  T *operator->() const { return p_; }
  T &operator*() const { return *p_; }

private:
  T *p_;
};

// Inode number of a namespace file such as "/proc/self/ns/mnt"; 0 if absent.
// Under CI=true a test that cannot run (no BPF, no root, no tool) fails;
// elsewhere it skips with the reason.
inline bool in_ci() {
  const char *ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

inline uint32_t ns_inode(const char *path) {
  struct stat st {};
  return stat(path, &st) == 0 ? static_cast<uint32_t>(st.st_ino) : 0;
}

// The cgroup v2 id of the calling process, as bpf_get_current_cgroup_id()
// reports it: the inode of its directory on the cgroup2 mount, found from
// mountinfo (never assumed to be /sys/fs/cgroup). 0 without cgroup v2.
inline uint64_t own_cgroup_id() {
  std::string rel;
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);)
    if (line.starts_with("0::"))
      rel = line.substr(3);
  auto mnt = find_cgroup2_mount(read_mountinfo(0));
  struct stat st {};
  if (rel.empty() || !mnt || stat((*mnt + (rel == "/" ? "" : rel)).c_str(), &st) != 0)
    return 0;
  return st.st_ino;
}

// Forks while another thread of the test allocates. glibc's malloc resets
// its locks in the child, but the ASan runtime of clang 14 takes no lock of
// its allocator around fork(): a child forked while another thread was
// inside malloc inherits that lock held and hangs at its first allocation
// (seen in the ASan layer: a child starting a thread, stuck in free() for
// good). So the tests' own threads (the kernel tests' collector, the e2e
// tests' output reader) start through ForkGuard::thread() and do their work
// inside ForkGuard::busy(), and a test that has such threads forks through
// ForkGuard::fork(), which waits until none of them is inside.
class ForkGuard {
public:
  // A new thread, returned once it runs f: ASan sets a thread up with
  // allocations of its own, which a fork must not cut in half either.
  template <class F> static std::thread thread(F f) {
    std::atomic<bool> running{false};
    std::thread t([&running, f = std::move(f)]() mutable {
      running = true; // the last use of `running`, which thread() owns
      f();
    });
    while (!running)
      std::this_thread::yield();
    return t;
  }
  template <class F> static void busy(F &&f) {
    // A fork that waits goes first: the busy threads would otherwise keep
    // the shared lock taken between them.
    while (waiting().load() > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::shared_lock lk(mu());
    f();
  }
  static pid_t fork() {
    ++waiting();
    pid_t pid;
    {
      std::unique_lock lk(mu());
      pid = ::fork();
    }
    --waiting();
    return pid;
  }

private:
  static std::shared_mutex &mu() {
    static std::shared_mutex m;
    return m;
  }
  static std::atomic<int> &waiting() {
    static std::atomic<int> n{0};
    return n;
  }
};

struct GatedFork {
  pid_t pid = -1;
  int gate_fd = -1;
};

// Forks a child named comm (prctl) that waits until a byte arrives on the
// returned gate fd, then runs fn and exits with its result; EOF on the gate
// makes it exit 99 without running fn. Lets the parent learn the pid first.
inline GatedFork fork_gated(const std::string &comm, const std::function<int()> &fn) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    std::abort();
  pid_t pid = ForkGuard::fork();
  if (pid < 0)
    std::abort();
  if (pid == 0) {
    close(p[1]);
    prctl(PR_SET_NAME, comm.c_str());
    char c;
    if (read(p[0], &c, 1) != 1)
      _exit(99);
    _exit(fn());
  }
  close(p[0]);
  return {pid, p[1]};
}

// In a child about to fault: the kernel's own SIGBUS death, without a core
// dump (slow, litter) and even under AddressSanitizer, whose handler would
// report the fault and exit 1.
inline void die_of_sigbus_plainly() {
  prctl(PR_SET_DUMPABLE, 0);
  signal(SIGBUS, SIG_DFL);
}

// In a child: creates path, bytes long, maps it shared and writes a byte
// of every page. On a tmpfs with less room it dies of SIGBUS where the
// mount runs out; otherwise the exit status says which step failed (1, 2),
// or 3 when everything fit.
inline int map_and_touch(const std::string &path, size_t bytes) {
  die_of_sigbus_plainly();
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0)
    return 1;
  auto *p =
      static_cast<volatile char *>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED)
    return 2;
  for (size_t off = 0; off < bytes; off += 4096)
    p[off] = 1;
  return 3;
}

// A tmpfs of one test on a new directory /tmp/<stem>-<pid>, unmounted and
// removed when this goes. ASSERT_EQ(mount(options), "") once.
class TestTmpfs {
public:
  explicit TestTmpfs(const std::string &stem)
      : dir_("/tmp/" + stem + "-" + std::to_string(getpid())) {}
  TestTmpfs(const TestTmpfs &) = delete;
  TestTmpfs &operator=(const TestTmpfs &) = delete;
  ~TestTmpfs() {
    if (mounted_)
      umount2(dir_.c_str(), MNT_DETACH);
    if (made_)
      rmdir(dir_.c_str());
  }
  std::string mount(const char *options) {
    if (mkdir(dir_.c_str(), 0700) != 0)
      return "mkdir " + dir_ + ": " + std::strerror(errno);
    made_ = true;
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options) != 0)
      return "mount tmpfs on " + dir_ + ": " + std::strerror(errno);
    mounted_ = true;
    return {};
  }
  const std::string &dir() const { return dir_; }

private:
  std::string dir_;
  bool made_ = false, mounted_ = false;
};

} // namespace shmbpf::test
