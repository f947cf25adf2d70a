// What the end-to-end tests of `shmbpf reap` share: a tmpfs of their own
// that counts as shared memory (its mountpoint ends in /dev/shm), so that
// no reap of theirs can reach another test's files; child processes that
// hold what a test tells them to; and a process made with a chosen pid.
#pragma once

#include "container_sim.hpp"
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace shmbpf::test {

// Each entry of the "segments" of `reap --json` by its path.
inline std::map<std::string, nlohmann::json> by_path(const nlohmann::json &doc) {
  std::map<std::string, nlohmann::json> out;
  for (const auto &s : doc["segments"])
    out.emplace(s["segment"]["path"].get<std::string>(), s);
  return out;
}

// A tmpfs mounted at /tmp/shmbpf-e2e-reap-<pid>-<n>/dev/shm, unmounted
// (with whatever was mounted below it) and removed by the destructor.
class ReapMount {
public:
  explicit ReapMount(const std::string &size = "64m") {
    static int serial = 0;
    base_ = "/tmp/shmbpf-e2e-reap-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
    dir_ = base_ + "/dev/shm";
    if (mkdir(base_.c_str(), 0700) != 0 || mkdir((base_ + "/dev").c_str(), 0755) != 0 ||
        mkdir(dir_.c_str(), 0755) != 0) {
      error_ = "mkdir " + dir_ + ": " + std::strerror(errno);
      return;
    }
    const std::string opts = "size=" + size + ",mode=1777";
    if (mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
      error_ = "mount tmpfs on " + dir_ + ": " + std::strerror(errno);
    else
      mounted_ = true;
  }
  ReapMount(const ReapMount &) = delete;
  ReapMount &operator=(const ReapMount &) = delete;
  ~ReapMount() {
    if (mounted_)
      umount2(dir_.c_str(), MNT_DETACH);
    rmdir(dir_.c_str());
    rmdir((base_ + "/dev").c_str());
    rmdir(base_.c_str());
  }

  const std::string &error() const { return error_; } // "" when mounted
  const std::string &dir() const { return dir_; }
  std::string path(const std::string &name) const { return dir_ + "/" + name; }

  // What statfs says is in use, in bytes.
  uint64_t used_bytes() const {
    struct statfs s {};
    if (statfs(dir_.c_str(), &s) != 0)
      return 0;
    return static_cast<uint64_t>(s.f_blocks - s.f_bfree) * static_cast<uint64_t>(s.f_bsize);
  }

private:
  std::string base_, dir_, error_;
  bool mounted_ = false;
};

// A file of `bytes` bytes of data, closed: an orphan to a scan (nobody
// holds it, its creator unknown). False on error.
inline bool make_orphan(const std::string &path, size_t bytes) {
  const int fd = write_shm_file(path, bytes);
  if (fd < 0)
    return false;
  close(fd);
  return true;
}

inline std::string file_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What a test asserts did not change: the inode and the contents.
struct FileSnap {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
  std::string text;
  bool operator==(const FileSnap &) const = default;
};
inline FileSnap snap(const std::string &path) {
  FileSnap s;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0)
    return s;
  s.exists = true;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  s.mode = st.st_mode;
  if (S_ISREG(st.st_mode))
    s.text = file_text(path);
  return s;
}
inline bool exists(const std::string &path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}
inline uint64_t resident(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

// A child process that runs setup, then stays alive (holding whatever setup
// left open or mapped) until the destructor kills and reaps it.
class Holder {
public:
  explicit Holder(const std::function<bool()> &setup) {
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
      return;
    pid_ = ForkGuard::fork();
    if (pid_ == 0) {
      close(ready[0]);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const char c = setup() ? 'k' : 'f';
      if (write(ready[1], &c, 1) != 1 || c != 'k')
        _exit(1);
      for (;;)
        pause();
    }
    close(ready[1]);
    char c = 0;
    ok_ = pid_ > 0 && read(ready[0], &c, 1) == 1 && c == 'k';
    close(ready[0]);
  }
  Holder(const Holder &) = delete;
  Holder &operator=(const Holder &) = delete;
  ~Holder() { stop(); }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
  }
  bool ok() const { return ok_; }
  pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
  bool ok_ = false;
};

// Runs fn in a child and waits for it: the child's pid, which is free again
// (nothing alive has it) when this returns; -1 when fn failed.
inline pid_t run_child(const std::function<bool()> &fn) {
  const pid_t pid = ForkGuard::fork();
  if (pid == 0)
    _exit(fn() ? 0 : 1);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return -1;
  return pid;
}

// System V keys of the test's own: 0x5e, then the low 16 bits of its pid,
// then n. IPC_PRIVATE when a segment has that key already.
inline std::string sysv_key_prefix() {
  char buf[16];
  std::snprintf(buf, sizeof buf, "5e%04x", static_cast<unsigned>(getpid()) & 0xffffu);
  return buf;
}
inline key_t unique_key(uint8_t n) {
  const auto key =
      static_cast<key_t>(0x5e000000u | ((static_cast<unsigned>(getpid()) & 0xffffu) << 8) | n);
  return shmget(key, 0, 0) < 0 && errno == ENOENT ? key : IPC_PRIVATE;
}

// A segment made (with every page written) and detached by a child that
// then exited: its creator and last attacher are gone. The shmid, -1 on
// error; *creator gets the child's pid.
inline int orphan_segment(key_t key, size_t bytes, pid_t *creator = nullptr) {
  const pid_t pid = run_child([&] { return make_sysv_segment(key, bytes, false) >= 0; });
  if (creator)
    *creator = pid;
  return pid > 0 ? shmget(key, 0, 0) : -1;
}

inline bool segment_exists(int shmid) {
  struct shmid_ds ds {};
  return shmctl(shmid, IPC_STAT, &ds) == 0;
}

// Removes the test's segments, whatever happened.
struct SegmentGuard {
  std::vector<int> ids;
  ~SegmentGuard() {
    for (int id : ids)
      shmctl(id, IPC_RMID, nullptr);
  }
};

// A process made with exactly pid `want` (clone3 with set_tid, which root
// may use in its own PID namespace), idle until the destructor kills it: a
// pid reused by another process. pid() is -1 when the pid was taken, with
// errno in error().
class PidReuser {
public:
  explicit PidReuser(pid_t want) {
    // struct clone_args of <linux/sched.h>, whose definitions clash with
    // <sched.h>'s.
    struct {
      uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
          set_tid_size, cgroup;
    } args{};
    args.exit_signal = SIGCHLD;
    args.set_tid = reinterpret_cast<uintptr_t>(&want);
    args.set_tid_size = 1;
    const long r = syscall(SYS_clone3, &args, sizeof args);
    if (r == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (;;)
        pause();
    }
    if (r < 0)
      error_ = errno;
    else
      pid_ = static_cast<pid_t>(r);
  }
  PidReuser(const PidReuser &) = delete;
  PidReuser &operator=(const PidReuser &) = delete;
  ~PidReuser() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  int error() const { return error_; }

private:
  pid_t pid_ = -1;
  int error_ = 0;
};

// A directory on a filesystem that is neither tmpfs nor hugetlbfs, for a
// bind mount that must not be entered: /var/tmp, /root or the build
// directory (ctest's working directory). "" when none is writable.
inline std::string non_tmpfs_dir(const std::string &name) {
  char cwd[4096];
  const std::string here = getcwd(cwd, sizeof cwd) ? cwd : "";
  for (const std::string &parent : {std::string("/var/tmp"), std::string("/root"), here}) {
    struct statfs s {};
    if (parent.empty() || statfs(parent.c_str(), &s) != 0 || s.f_type == 0x01021994 /* tmpfs */ ||
        s.f_type == 0x958458f6 /* hugetlbfs */)
      continue;
    const std::string dir = parent + "/" + name;
    if (mkdir(dir.c_str(), 0700) == 0)
      return dir;
  }
  return "";
}

} // namespace shmbpf::test
