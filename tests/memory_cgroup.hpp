// A cgroup with a memory limit for tests, made under the hierarchy that has
// the memory controller (v1 where a v1 line of ours names it, else v2 where
// the root hands the controller down), with a cgroup "inner" inside it that
// has no limit of its own: processes go there. Removed when this goes,
// whatever is left inside killed first.
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
#include <string>
#include <thread>

namespace shmbpf::test {

class MemoryCgroup {
public:
  MemoryCgroup() = default;
  MemoryCgroup(const MemoryCgroup &) = delete;
  MemoryCgroup &operator=(const MemoryCgroup &) = delete;
  ~MemoryCgroup() { remove(); }

  // "" on success, else what failed. tag names it: shmbpf-<tag>-<pid>.
  std::string create(const std::string &tag, uint64_t limit) {
    const auto mounts = read_mountinfo(0);
    std::ifstream in("/proc/self/cgroup");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    v1_ = false;
    for (const CgroupLine &l : parse_cgroup_lines(text))
      v1_ = v1_ || (!l.v2() && l.has("memory"));
    std::string base;
    for (const MountInfo &m : mounts) {
      const bool fits =
          v1_ ? m.fstype == "cgroup" && m.root == "/" &&
                    ("," + m.super_options + ",").find(",memory,") != std::string::npos
              : m.fstype == "cgroup2" && m.root == "/";
      if (fits) {
        base = m.mountpoint;
        break;
      }
    }
    if (base.empty())
      return "no mount of the hierarchy with the memory controller";
    file_ = v1_ ? "memory.limit_in_bytes" : "memory.max";
    if (!v1_) {
      std::ifstream sub(base + "/cgroup.subtree_control");
      std::string controllers;
      std::getline(sub, controllers);
      if ((" " + controllers + " ").find(" memory ") == std::string::npos)
        return "cgroup v2 without the memory controller at its root";
    }
    outer_ = base + "/shmbpf-" + tag + "-" + std::to_string(::getpid());
    if (::mkdir(outer_.c_str(), 0755) != 0) {
      outer_.clear();
      return "mkdir under " + base + ": " + std::strerror(errno);
    }
    if (!v1_ && !write_text(outer_ + "/cgroup.subtree_control", "+memory"))
      return "cannot enable memory below " + outer_;
    inner_ = outer_ + "/inner";
    if (::mkdir(inner_.c_str(), 0755) != 0) {
      inner_.clear();
      return "mkdir " + outer_ + "/inner: " + std::strerror(errno);
    }
    procs_ = inner_ + "/cgroup.procs";
    if (!write_text(outer_ + "/" + file_, std::to_string(limit)))
      return "cannot set " + outer_ + "/" + file_;
    // Pages go nowhere but the cgroup: over the limit means an OOM kill.
    if (v1_)
      write_text(outer_ + "/memory.swappiness", "0");
    else
      write_text(outer_ + "/memory.swap.max", "0");
    return "";
  }

  bool v1() const { return v1_; }
  const std::string &inner() const { return inner_; }
  bool set_inner_limit(uint64_t bytes) const {
    return write_text(inner_ + "/" + file_, std::to_string(bytes));
  }
  // Moves pid into the inner cgroup; 0 is the calling process (safe in a
  // forked child: no allocation).
  bool add(pid_t pid) const {
    char text[16];
    const int n = std::snprintf(text, sizeof text, "%d", static_cast<int>(pid));
    const int fd = ::open(procs_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return false;
    const bool ok = ::write(fd, text, static_cast<size_t>(n)) == n;
    ::close(fd);
    return ok;
  }
  bool enter() const { return add(0); }

  // What is left inside is killed (and reaped when it is ours); an empty
  // cgroup goes at once, or after a moment while the kernel lets go of an
  // exited task.
  void remove() {
    for (const std::string &dir : {inner_, outer_}) {
      if (dir.empty())
        continue;
      for (int i = 0; i < 200 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) {
        std::ifstream in(dir + "/cgroup.procs");
        for (pid_t p; in >> p;) {
          ::kill(p, SIGKILL);
          ::waitpid(p, nullptr, WNOHANG);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    inner_.clear();
    outer_.clear();
  }

  static bool write_text(const std::string &path, const std::string &text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  }

private:
  bool v1_ = false;
  std::string file_, outer_, inner_, procs_;
};

} // namespace shmbpf::test
