// A cgroup v2 directory named as docker names its scopes,
// <cgroup2>/<slice>/docker-<64 hex digits>.scope, for tests that need a
// process in a container's cgroup: the kernel tests put a child in one, the
// e2e ContainerSim its whole container.
#pragma once

#include "container_cgroups.hpp"
#include "sources/mountinfo.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

class DockerCgroup {
public:
  // slice: the directory under the cgroup2 mount that holds the scope.
  explicit DockerCgroup(std::string slice) : slice_name_(std::move(slice)) {}
  DockerCgroup(const DockerCgroup &) = delete;
  DockerCgroup &operator=(const DockerCgroup &) = delete;
  ~DockerCgroup() { remove(); }

  // Makes the directory under a new random id; "" on success, else what failed.
  std::string create() {
    auto cg2 = find_cgroup2_mount(read_mountinfo(0));
    if (!cg2)
      return "no cgroup2 mount in /proc/self/mountinfo";
    id_ = ContainerCgroups::random_id();
    slice_ = *cg2 + "/" + slice_name_;
    const std::string dir = slice_ + "/docker-" + id_ + ".scope";
    // Another scope's removal may remove the shared slice between the two
    // mkdirs: try again.
    for (int i = 0;; ++i) {
      if (mkdir(slice_.c_str(), 0755) != 0 && errno != EEXIST)
        return "mkdir " + slice_ + ": " + std::strerror(errno);
      if (mkdir(dir.c_str(), 0755) == 0)
        break;
      if (errno != ENOENT || i == 10)
        return "mkdir " + dir + ": " + std::strerror(errno);
    }
    dir_ = dir;
    procs_ = dir_ + "/cgroup.procs";
    return "";
  }

  // Moves pid in; 0 is the calling process (safe in a forked child: no
  // allocation).
  bool add(pid_t pid) const {
    char text[16];
    int n = snprintf(text, sizeof text, "%d", static_cast<int>(pid));
    int fd = open(procs_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return false;
    bool ok = write(fd, text, static_cast<size_t>(n)) == n;
    close(fd);
    return ok;
  }
  bool enter() const { return add(0); }

  // Host pids of every process in it.
  std::vector<pid_t> pids() const {
    std::vector<pid_t> out;
    std::ifstream in(procs_);
    for (pid_t p; in >> p;)
      out.push_back(p);
    return out;
  }

  // Removes the directory, and the slice unless another scope uses it. A
  // populated cgroup cannot go: what a failed test left inside is killed
  // (and reaped when it is our child), and members of a dead PID namespace
  // are given a moment to leave.
  void remove() {
    if (dir_.empty())
      return;
    for (int i = 0; i < 500 && rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
      for (pid_t p : pids()) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0); // at once unless it is our child
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    rmdir(slice_.c_str()); // EBUSY while another scope uses it: fine
    dir_.clear();
    procs_.clear();
  }

  const std::string &id() const { return id_; }
  const std::string &dir() const { return dir_; }

private:
  std::string slice_name_;
  std::string id_;
  std::string slice_;
  std::string dir_;
  std::string procs_;
};

} // namespace shmbpf::test
