// A container's cgroups as a runtime lays them out, for tests with real
// cgroups: a path of levels (kubepods/besteffort/pod<uid>/<id>, the
// systemd driver's slices and scope, or simply a limited cgroup and one
// inside it) below a directory of the test's own,
// shmbpf-<tag>-<pid>. The path is made in the cgroup v2 hierarchy, whose
// cgroup id names the container, and in the hierarchy that has the memory
// controller: the same levels under the v1 memory mount on a hybrid host,
// or the v2 directories themselves with memory handed down to each level.
// One level takes a memory limit (the pod's, or the container's own).
// Everything is removed when this goes, whatever is left inside killed.
#pragma once

#include "sources/cgroup.hpp"
#include "sources/mountinfo.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

class ContainerCgroups {
public:
  ContainerCgroups() = default;
  ContainerCgroups(const ContainerCgroups &) = delete;
  ContainerCgroups &operator=(const ContainerCgroups &) = delete;
  ~ContainerCgroups() { remove(); }

  // 64 random hex digits: a container id.
  static std::string random_id() {
    std::random_device rd;
    static constexpr char hex[] = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < 64; ++i)
      s += hex[rd() % 16];
    return s;
  }

  // "" on success, else what failed. levels: the path below the test's
  // directory, outermost first; the limit goes on levels[limit_level].
  std::string create(const std::string &tag, const std::vector<std::string> &levels,
                     size_t limit_level, uint64_t limit) {
    const auto mounts = read_mountinfo(0);
    std::ifstream in("/proc/self/cgroup");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    v1_ = false;
    for (const CgroupLine &l : parse_cgroup_lines(text))
      v1_ = v1_ || (!l.v2() && l.has("memory"));
    std::string v2_base, memory_base;
    for (const MountInfo &m : mounts) {
      if (m.root != "/")
        continue;
      if (m.fstype == "cgroup2" && v2_base.empty())
        v2_base = m.mountpoint;
      if (v1_ && m.fstype == "cgroup" && memory_base.empty() &&
          ("," + m.super_options + ",").find(",memory,") != std::string::npos)
        memory_base = m.mountpoint;
    }
    if (v2_base.empty())
      return "no cgroup2 mount";
    if (!v1_) {
      memory_base = v2_base;
      std::ifstream sub(v2_base + "/cgroup.subtree_control");
      std::string controllers;
      std::getline(sub, controllers);
      if ((" " + controllers + " ").find(" memory ") == std::string::npos)
        return "cgroup v2 without the memory controller at its root";
    } else if (memory_base.empty()) {
      return "no mount of the v1 memory hierarchy";
    }
    std::vector<std::string> path = {"shmbpf-" + tag + "-" + std::to_string(::getpid())};
    path.insert(path.end(), levels.begin(), levels.end());
    if (const std::string failed = make(v2_base, path, !v1_, v2_dirs_); !failed.empty())
      return failed;
    if (v1_)
      if (const std::string failed = make(memory_base, path, false, memory_dirs_); !failed.empty())
        return failed;
    const std::vector<std::string> &memory = v1_ ? memory_dirs_ : v2_dirs_;
    const std::string limited = memory[limit_level + 1];
    const char *file = v1_ ? "/memory.limit_in_bytes" : "/memory.max";
    if (!write_text(limited + file, std::to_string(limit)))
      return std::string("cannot set ") + limited + file;
    // Pages go nowhere but the cgroup: over the limit means an OOM kill.
    write_text(limited + (v1_ ? "/memory.swappiness" : "/memory.swap.max"), "0");
    procs_.push_back(v2_dirs_.back() + "/cgroup.procs");
    if (v1_)
      procs_.push_back(memory_dirs_.back() + "/cgroup.procs");
    return "";
  }

  bool v1() const { return v1_; }
  // A limit of its own on levels[level].
  bool set_limit(size_t level, uint64_t bytes) const {
    return write_text(memory_dir(level) + (v1_ ? "/memory.limit_in_bytes" : "/memory.max"),
                      std::to_string(bytes));
  }
  // The directory of levels[level] in the hierarchy with the memory
  // controller.
  const std::string &memory_dir(size_t level) const {
    return (v1_ ? memory_dirs_ : v2_dirs_)[level + 1];
  }

  // Moves pid into the container's cgroups; 0 is the calling process (safe
  // in a forked child: no allocation).
  bool add(pid_t pid) const {
    char text[16];
    const int n = std::snprintf(text, sizeof text, "%d", static_cast<int>(pid));
    for (const std::string &procs : procs_) {
      const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0)
        return false;
      const bool ok = ::write(fd, text, static_cast<size_t>(n)) == n;
      ::close(fd);
      if (!ok)
        return false;
    }
    return true;
  }
  bool enter() const { return add(0); }

  // Innermost first; what is left inside is killed (and reaped when ours).
  void remove() {
    for (std::vector<std::string> *dirs : {&v2_dirs_, &memory_dirs_}) {
      for (auto dir = dirs->rbegin(); dir != dirs->rend(); ++dir)
        for (int i = 0; i < 200 && ::rmdir(dir->c_str()) != 0 && errno == EBUSY; ++i) {
          std::ifstream in(*dir + "/cgroup.procs");
          for (pid_t p; in >> p;) {
            ::kill(p, SIGKILL);
            ::waitpid(p, nullptr, WNOHANG);
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      dirs->clear();
    }
    procs_.clear();
  }

  static bool write_text(const std::string &path, const std::string &text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  }

private:
  // Makes base/path[0]/path[1]/..., keeping each directory in dirs; with
  // memory, hands the controller down to each level but the last.
  static std::string make(const std::string &base, const std::vector<std::string> &path,
                          bool memory, std::vector<std::string> &dirs) {
    std::string dir = base;
    for (size_t i = 0; i < path.size(); ++i) {
      dir += "/" + path[i];
      if (::mkdir(dir.c_str(), 0755) != 0)
        return "mkdir " + dir + ": " + std::strerror(errno);
      dirs.push_back(dir);
      if (memory && i + 1 < path.size() && !write_text(dir + "/cgroup.subtree_control", "+memory"))
        return "cannot enable memory below " + dir;
    }
    return "";
  }

  bool v1_ = false;
  std::vector<std::string> v2_dirs_, memory_dirs_, procs_;
};

} // namespace shmbpf::test
