// A simulated container, built the way a runtime builds one, for tests that
// need shmbpf to see a real container without docker:
//
//   test process
//    `- shim  (host namespaces, host cgroup; like a runtime's shim)
//        `- init  pid 1 of a new PID namespace, in new mount and IPC
//                 namespaces, private mounts without the host's tmpfs
//                 mounts, its own tmpfs on /dev/shm (size=64m) and /proc,
//                 inside <cgroup2>/.../docker-<id>.scope
//
// Code runs inside it like `docker exec`: a helper process joins the cgroup
// and init's IPC, mount and PID namespaces, then forks the process that runs
// the code. Pids are always the host's view. Teardown (the destructor) kills
// init, which takes every process of the PID namespace with it, and removes
// the cgroup directory.
#pragma once

#include "docker_cgroup.hpp"
#include "sources/mountinfo.hpp"
#include "support.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace shmbpf::test {

// Creates path (O_EXCL) holding `bytes` bytes of non-zero data, so that every
// page is resident. Returns the fd (kept open by the caller to hold the file,
// or closed), -1 on error.
inline int write_shm_file(const std::string &path, size_t bytes) {
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  std::string chunk(64 * 1024, '\x5a');
  size_t done = 0;
  while (done < bytes) {
    size_t n = std::min(chunk.size(), bytes - done);
    ssize_t w = write(fd, chunk.data(), n);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    done += static_cast<size_t>(w);
  }
  return fd;
}

// A System V segment of `bytes` bytes with every page touched, left attached
// when `attach` (the caller holds it) and detached otherwise. Returns the
// shmid, -1 on error.
inline int make_sysv_segment(key_t key, size_t bytes, bool attach) {
  int id = shmget(key, bytes, IPC_CREAT | IPC_EXCL | 0600);
  if (id < 0)
    return -1;
  void *p = shmat(id, nullptr, 0);
  if (p == reinterpret_cast<void *>(-1))
    return -1;
  std::memset(p, 0x5a, bytes);
  if (!attach)
    shmdt(p);
  return id;
}

class ContainerSim {
public:
  // slice: the cgroup2 directory that holds the container's scope.
  explicit ContainerSim(std::string slice = "shmbpf-e2e.slice") : cgroup_(std::move(slice)) {}
  ContainerSim(const ContainerSim &) = delete;
  ContainerSim &operator=(const ContainerSim &) = delete;
  ~ContainerSim() { stop(); }

  // Builds the container; "" on success, else what failed.
  std::string start() {
    if (std::string err = cgroup_.create(); !err.empty())
      return err;

    int report[2], gate[2], ready[2];
    if (pipe2(report, O_CLOEXEC) || pipe2(gate, O_CLOEXEC) || pipe2(ready, O_CLOEXEC))
      return std::string("pipe: ") + std::strerror(errno);
    shim_ = ForkGuard::fork();
    if (shim_ < 0)
      return std::string("fork: ") + std::strerror(errno);
    if (shim_ == 0) {
      close(report[0]);
      close(gate[1]);
      close(ready[0]);
      prctl(PR_SET_NAME, "shmbpf-shim");
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (unshare(CLONE_NEWPID) != 0)
        _exit(10);
      pid_t init = fork();
      if (init == 0)
        container_init(gate[0], ready[1]);
      if (init < 0 || write(report[1], &init, sizeof init) != sizeof init)
        _exit(11);
      close(report[1]);
      close(gate[0]);
      close(ready[1]);
      int st = 0;
      waitpid(init, &st, 0);
      _exit(0);
    }
    close(report[1]);
    close(gate[0]);
    close(ready[1]);
    std::string err;
    if (read(report[0], &init_, sizeof init_) != sizeof init_) {
      init_ = -1;
      err = "the shim could not create a PID namespace";
    } else if (!cgroup_.add(init_)) {
      err = "cannot move init into " + cgroup_.dir() + ": " + std::strerror(errno);
    } else {
      char c = 1;
      if (write(gate[1], &c, 1) != 1)
        err = "gate";
      else if (read(ready[0], &c, 1) != 1 || c != 'k')
        err = "container init failed to unshare/mount (code " + std::to_string(c) + ")";
    }
    close(report[0]);
    close(gate[1]);
    close(ready[0]);
    if (!err.empty())
      return err;
    mntns_ = ns_ino("mnt");
    ipcns_ = ns_ino("ipc");
    pidns_ = ns_ino("pid");
    return "";
  }

  // Runs fn in a new process inside the container and waits for it: its
  // exit code, 128 + signal if killed, -1 if it could not enter.
  int run(const std::function<int()> &fn) {
    int status = -1;
    pid_t helper = enter(fn, /*wait=*/true, nullptr);
    if (helper < 0)
      return -1;
    waitpid(helper, &status, 0);
    if (WIFEXITED(status))
      return WEXITSTATUS(status) == 120 ? -1 : WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  }

  // Starts a long-lived process inside the container: it runs setup (which
  // may open files, map segments, ...) and, if that returns true, stays
  // alive holding whatever setup left open until it is killed. Returns its
  // host pid once setup is done, -1 if setup failed.
  pid_t spawn(const std::function<bool()> &setup) {
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
      return -1;
    pid_t inner = -1;
    pid_t helper = enter(
        [&] {
          close(ready[0]);
          char c = setup() ? 'k' : 'f';
          if (write(ready[1], &c, 1) != 1 || c != 'k')
            return 1;
          close(ready[1]);
          for (;;)
            pause();
        },
        /*wait=*/false, &inner);
    close(ready[1]);
    char c = 0;
    bool ok = helper > 0 && read(ready[0], &c, 1) == 1 && c == 'k';
    close(ready[0]);
    int st = 0;
    if (helper > 0)
      waitpid(helper, &st, 0);
    ok = ok && inner > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
      if (inner > 0)
        ::kill(inner, SIGKILL);
      return -1;
    }
    return inner;
  }

  // SIGKILLs a process of the container and waits until init has reaped it.
  bool kill(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const {
    if (::kill(pid, SIGKILL) != 0)
      return false;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (::kill(pid, 0) == 0) {
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  // Host pids of every process in the container's cgroup.
  std::vector<pid_t> pids() const { return cgroup_.pids(); }

  const std::string &id() const { return cgroup_.id(); }
  const std::string &cgroup_dir() const { return cgroup_.dir(); }
  pid_t init_pid() const { return init_; }
  uint64_t mntns() const { return mntns_; }
  uint64_t ipcns() const { return ipcns_; }
  uint64_t pidns() const { return pidns_; }
  // The host path of a path inside the container's mount namespace.
  std::string host_path(const std::string &inside) const {
    return "/proc/" + std::to_string(init_) + "/root" + inside;
  }

  void stop() {
    if (init_ > 0)
      ::kill(init_, SIGKILL); // pid 1 dying kills the whole PID namespace
    if (shim_ > 0) {
      // The shim reaps init and exits; only a stuck one is killed.
      bool reaped = false;
      for (int i = 0; i < 500 && !reaped; ++i) {
        reaped = waitpid(shim_, nullptr, WNOHANG) != 0;
        if (!reaped)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!reaped && ::kill(shim_, SIGKILL) == 0)
        waitpid(shim_, nullptr, 0);
    }
    init_ = shim_ = -1;
    cgroup_.remove();
  }

private:
  uint64_t ns_ino(const char *ns) const {
    struct stat st {};
    std::string p = "/proc/" + std::to_string(init_) + "/ns/" + ns;
    return stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
  }

  // pid 1: waits for the cgroup move, builds its mounts, then idles. With
  // SIGCHLD ignored the kernel reaps its children (orphans reparented to it)
  // at once, so a killed process disappears from /proc immediately.
  [[noreturn]] static void container_init(int gate_fd, int ready_fd) {
    prctl(PR_SET_NAME, "shmbpf-init");
    char c;
    if (read(gate_fd, &c, 1) != 1)
      _exit(99);
    char code = 'k';
    if (unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0)
      code = 1;
    else if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      code = 2;
    else if (!detach_host_tmpfs())
      code = 5;
    else if (mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=64m,mode=1777") != 0)
      code = 3;
    else if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      code = 4;
    if (write(ready_fd, &code, 1) != 1 || code != 'k')
      _exit(1);
    close(ready_fd);
    close(gate_fd);
    signal(SIGCHLD, SIG_IGN);
    for (;;)
      pause();
  }

  // A runtime's container never sees the host's tmpfs mounts: it moves to
  // its own root and detaches the old one. The private copies that unshare
  // made would otherwise keep alive, and reachable only from here, any
  // tmpfs the host unmounts meanwhile (another container's /dev/shm, which
  // docker mounts on the host), and shmbpf rightly counts what only this
  // namespace reaches as this container's. /dev and /sys stay: the /dev/shm
  // mounted next hides the host's, and cgroupfs needs /sys/fs/cgroup.
  static bool detach_host_tmpfs() {
    std::vector<MountInfo> mounts = read_mountinfo(0);
    if (mounts.empty())
      return false;
    // Deepest first; one under a mount already detached went with it.
    for (auto m = mounts.rbegin(); m != mounts.rend(); ++m) {
      const std::string &p = m->mountpoint;
      if (!m->is_tmpfs() || p == "/dev" || p.starts_with("/dev/") || p == "/sys" ||
          p.starts_with("/sys/"))
        continue;
      if (umount2(p.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
        return false;
    }
    return true;
  }

  // The host pid of the container process whose pid inside it is ns_pid:
  // the last NSpid field of /proc/<pid>/status is the innermost pid.
  pid_t host_pid_of(pid_t ns_pid) const {
    for (pid_t p : pids()) {
      std::ifstream st("/proc/" + std::to_string(p) + "/status");
      for (std::string line; std::getline(st, line);) {
        if (!line.starts_with("NSpid:"))
          continue;
        auto last = line.find_last_of(" \t");
        if (last != std::string::npos && std::atoi(line.c_str() + last + 1) == ns_pid)
          return p;
      }
    }
    return -1;
  }

  // Like `docker exec`: forks a helper that joins the cgroup and init's IPC,
  // mount and PID namespaces; only its children are in the PID namespace.
  // With wait, its child runs fn and the helper exits with fn's code (120
  // when it could not enter). Detached, its child forks fn's process and
  // exits at once: orphans go to the reaper of their parent's PID namespace,
  // so the container's init adopts it, as it would a daemonized process.
  // *inner gets fn's process's host pid.
  pid_t enter(const std::function<int()> &fn, bool wait, pid_t *inner) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
      return -1;
    std::string base = "/proc/" + std::to_string(init_) + "/ns/";
    pid_t helper = ForkGuard::fork();
    if (helper < 0)
      return -1;
    if (helper == 0) {
      close(report[0]);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      int ipc = open((base + "ipc").c_str(), O_RDONLY | O_CLOEXEC);
      int mnt = open((base + "mnt").c_str(), O_RDONLY | O_CLOEXEC);
      int pid = open((base + "pid").c_str(), O_RDONLY | O_CLOEXEC);
      if (ipc < 0 || mnt < 0 || pid < 0 || !cgroup_.enter() || setns(ipc, CLONE_NEWIPC) != 0 ||
          setns(mnt, CLONE_NEWNS) != 0 || setns(pid, CLONE_NEWPID) != 0 || chdir("/") != 0)
        _exit(120);
      pid_t child = fork();
      if (child == 0) {
        pid_t worker = wait ? 0 : fork();
        if (worker == 0) {
          close(report[1]);
          prctl(PR_SET_NAME, "shmbpf-ctr-proc");
          _exit(fn());
        }
        // worker is a pid inside the container: this process lives there.
        _exit(worker > 0 && write(report[1], &worker, sizeof worker) == sizeof worker ? 0 : 120);
      }
      close(report[1]);
      int st = 0;
      waitpid(child, &st, 0);
      _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    close(report[1]);
    pid_t ns_pid = -1;
    if (read(report[0], &ns_pid, sizeof ns_pid) != sizeof ns_pid)
      ns_pid = -1;
    close(report[0]);
    if (inner)
      *inner = ns_pid > 0 ? host_pid_of(ns_pid) : -1;
    return helper;
  }

  DockerCgroup cgroup_;
  pid_t shim_ = -1;
  pid_t init_ = -1;
  uint64_t mntns_ = 0;
  uint64_t ipcns_ = 0;
  uint64_t pidns_ = 0;
};

} // namespace shmbpf::test
