// A real Docker for end-to-end tests, of the test's own: a dockerd (and the
// containerd it starts) with its own data root, exec root and socket in a
// fresh directory under /tmp, no iptables, no bridge, vfs storage (works on
// any filesystem, overlay or not), and images imported offline from a root
// of busybox-static plus whatever static programs a test adds: no registry,
// no network. The destructor removes every container, stops the daemon,
// unmounts what it left below the directory and deletes it, whatever the
// test did.
#pragma once

#include "e2e/background.hpp"
#include "support.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace shmbpf::test {

inline std::string find_program(const std::vector<std::string> &candidates) {
  for (const std::string &p : candidates)
    if (access(p.c_str(), X_OK) == 0)
      return p;
  return {};
}

struct Ran {
  int code = -1;
  std::string out;
};

// A shell command's status and stdout (stderr joined to it, for messages).
inline Ran sh(const std::string &cmd) {
  Ran r;
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p)
    return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// What a Docker test runs: empty paths for what this machine lacks.
struct DockerPrograms {
  std::string dockerd = find_program({"/usr/sbin/dockerd", "/usr/bin/dockerd"});
  std::string docker = find_program({"/usr/bin/docker", "/usr/local/bin/docker"});
  std::string busybox = find_program({"/bin/busybox", "/usr/bin/busybox"});
  bool complete() const { return !dockerd.empty() && !docker.empty() && !busybox.empty(); }
};

// Skips the test when docker or busybox is missing; fails instead under
// CI=true, which must run it.
#define SHMBPF_REQUIRE_DOCKER(programs)                                                            \
  do {                                                                                             \
    if (!(programs).complete()) {                                                                  \
      if (::shmbpf::test::in_ci())                                                                 \
        FAIL() << "needs dockerd, docker and busybox (bash scripts/deps.sh --tests)";              \
      GTEST_SKIP() << "needs dockerd, docker and busybox";                                         \
    }                                                                                              \
  } while (0)

// Mounts a daemon made below dir (containers' /dev/shm, their roots),
// innermost first.
inline void unmount_below(const std::string &dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::vector<std::string> points;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    if (point.starts_with(dir + "/"))
      points.push_back(point);
  }
  std::sort(points.rbegin(), points.rend());
  for (const std::string &p : points)
    umount2(p.c_str(), MNT_DETACH);
}

// Where a test's dockerd is told its data root: a flag, or its daemon.json
// (--config-file), as cloud images move it to a data disk.
enum class DataRootIn { flag, daemon_json };

class Dockerd {
public:
  explicit Dockerd(const DockerPrograms &programs, DataRootIn where = DataRootIn::flag)
      : busybox_(programs.busybox) {
    char tmpl[] = "/tmp/shmbpf-docker-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    dir_ = tmpl;
    cli_ = programs.docker + " -H unix://" + dir_ + "/docker.sock";
    std::vector<std::string> args = {
        "--iptables=false", "--ip6tables=false", "--bridge=none", "--storage-driver=vfs",
        "--exec-root",      dir_ + "/exec",      "--host",        "unix://" + dir_ + "/docker.sock",
        "--pidfile",        dir_ + "/docker.pid"};
    if (where == DataRootIn::flag) {
      args.insert(args.end(), {"--data-root", data_root()});
    } else {
      std::ofstream(dir_ + "/daemon.json") << "{\"data-root\": \"" << data_root() << "\"}\n";
      args.insert(args.end(), {"--config-file", dir_ + "/daemon.json"});
    }
    daemon_ = std::make_unique<ChildProcess>(programs.dockerd, std::move(args));
  }
  ~Dockerd() {
    if (daemon_) {
      // Every container, whatever state it is in; dockerd stops its shims.
      const Ran ids = docker("ps -aq");
      if (ids.code == 0 && !ids.out.empty())
        sh(cli_ + " rm -f " + flatten(ids.out));
      kill(daemon_->pid(), SIGTERM);
      daemon_->wait(std::chrono::seconds(15)); // kills it when it takes longer
      daemon_.reset();
    }
    unmount_below(dir_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Dockerd(const Dockerd &) = delete;
  Dockerd &operator=(const Dockerd &) = delete;

  const std::string &dir() const { return dir_; }
  // What `--runtime-root docker=` takes: where this daemon keeps containers.
  std::string data_root() const { return dir_ + "/data"; }
  const std::string &cli() const { return cli_; }
  Ran docker(const std::string &args) const { return sh(cli_ + " " + args); }
  std::string log() const { return daemon_ ? daemon_->err() + daemon_->out() : ""; }

  bool wait_ready(std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (docker("version").code == 0)
        return true;
      if (daemon_->exited())
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }

  // Imports image `tag` from a root holding busybox, a link to it per
  // applet, an empty /dev/shm, and the given files (host path, path in the
  // image), which must run without a libc: linked statically.
  Ran import_image(const std::string &tag, const std::vector<std::string> &applets,
                   const std::vector<std::pair<std::string, std::string>> &files = {}) const {
    namespace fs = std::filesystem;
    const std::string root = dir_ + "/rootfs-" + std::to_string(roots_++);
    fs::create_directories(root + "/bin");
    fs::create_directories(root + "/dev/shm");
    fs::copy_file(busybox_, root + "/bin/busybox");
    for (const std::string &applet : applets)
      fs::create_symlink("busybox", root + "/bin/" + applet);
    for (const auto &[from, to] : files) {
      fs::create_directories(fs::path(root + to).parent_path());
      fs::copy_file(from, root + to);
    }
    return sh("tar -C " + root + " -c . | " + cli_ + " import - " + tag);
  }

  // A container's full id and its first process's host pid, from `docker
  // inspect`: "" and 0 when it has none.
  std::string id_of(const std::string &name) const {
    const Ran r = docker("inspect -f '{{.Id}}' " + name);
    return r.code == 0 && r.out.size() >= 64 ? r.out.substr(0, 64) : "";
  }
  pid_t pid_of(const std::string &name) const {
    const Ran r = docker("inspect -f '{{.State.Pid}}' " + name);
    return r.code == 0 ? static_cast<pid_t>(std::atoi(r.out.c_str())) : 0;
  }

private:
  std::string dir_;
  std::string cli_;
  std::string busybox_;
  std::unique_ptr<ChildProcess> daemon_;
  mutable int roots_ = 0;

  static std::string flatten(const std::string &lines) {
    std::string s = lines;
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
  }
};

} // namespace shmbpf::test
