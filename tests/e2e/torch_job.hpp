// A PyTorch job for the end-to-end tests: tests/e2e/py/torch_pool.py run
// with Debian's python3-torch, every process of it found and killed the way
// an OOM kill ends a job, and its /dev/shm files measured as du does.
#pragma once

#include "run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

inline constexpr const char *python = "/usr/bin/python3"; // Debian's, where python3-torch lives
inline constexpr const char *tag_var = "SHMBPF_E2E_TORCH_TAG";

inline bool torch_importable() {
  std::string cmd = std::string(python) + " -c 'import torch' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

inline std::string read_text(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string comm_of(pid_t pid) {
  std::string c = read_text("/proc/" + std::to_string(pid) + "/comm");
  if (!c.empty() && c.back() == '\n')
    c.pop_back();
  return c;
}

// A torch_pool.py run. Every process of it (the parent, the Pool workers and
// the torch_shm_manager daemons they start, which call setsid) carries a
// unique tag in its environment, and all of them are descendants of a small
// reaper process (a child subreaper), so that teardown finds every one and
// nothing is left as an unreaped zombie that would still look alive.
class TorchJob {
public:
  TorchJob()
      : tag_(std::to_string(getpid()) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())) {}
  TorchJob(const TorchJob &) = delete;
  TorchJob &operator=(const TorchJob &) = delete;
  ~TorchJob() {
    kill_all();
    if (stdin_fd_ >= 0)
      close(stdin_fd_);
    if (stdout_fd_ >= 0)
      close(stdout_fd_);
    remove_files();
  }

  // Starts the script and waits for its JSON line; "" on success. setup
  // runs in the child that all of the job's processes descend from (e.g. to
  // enter a cgroup); the job does not start when it returns false.
  std::string start(const std::string &strategy, int tensors, int numel,
                    const std::function<bool()> &setup = {}) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
      return "pipe";
    const std::string script = std::string(SHMBPF_SOURCE_DIR) + "/tests/e2e/py/torch_pool.py";
    const std::string tensors_s = std::to_string(tensors), numel_s = std::to_string(numel);
    reaper_ = ForkGuard::fork();
    if (reaper_ < 0)
      return "fork";
    if (reaper_ == 0) {
      prctl(PR_SET_CHILD_SUBREAPER, 1);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (setup && !setup())
        _exit(3);
      pid_t py = fork();
      if (py == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        setenv(tag_var, tag_.c_str(), 1);
        execl(python, python, script.c_str(), "--strategy", strategy.c_str(), "--tensors",
              tensors_s.c_str(), "--numel", numel_s.c_str(), static_cast<char *>(nullptr));
        _exit(127);
      }
      close(in[0]);
      close(in[1]);
      close(out[0]);
      close(out[1]);
      // Reap the script and everything reparented here until none is left.
      while (wait(nullptr) > 0 || errno == EINTR) {
      }
      _exit(0);
    }
    close(in[0]);
    close(out[1]);
    stdin_fd_ = in[1];
    stdout_fd_ = out[0];

    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (line.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0)
        return "no JSON line from torch_pool.py within 60 s";
      pollfd p{stdout_fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0)
        continue;
      char buf[4096];
      ssize_t n = read(stdout_fd_, buf, sizeof buf);
      if (n <= 0)
        return "torch_pool.py exited early: " + line;
      line.append(buf, static_cast<size_t>(n));
    }
    info_ = nlohmann::json::parse(line.substr(0, line.find('\n')), nullptr, false);
    if (info_.is_discarded() || info_.contains("error"))
      return "bad line from torch_pool.py: " + line;
    parent_ = info_["parent"].get<pid_t>();
    for (const auto &w : info_["workers"])
      workers_.insert(w.get<pid_t>());
    return "";
  }

  // Live processes carrying our tag.
  std::vector<pid_t> processes() const {
    std::vector<pid_t> out;
    const std::string needle = std::string(tag_var) + "=" + tag_;
    DIR *d = opendir("/proc");
    if (!d)
      return out;
    while (dirent *e = readdir(d)) {
      char *end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end)
        continue;
      std::string env = read_text("/proc/" + std::string(e->d_name) + "/environ");
      for (size_t i = 0; i < env.size();) {
        size_t z = env.find('\0', i);
        if (z == std::string::npos)
          z = env.size();
        if (env.compare(i, z - i, needle) == 0) {
          out.push_back(static_cast<pid_t>(pid));
          break;
        }
        i = z + 1;
      }
    }
    closedir(d);
    return out;
  }

  std::vector<pid_t> shm_managers() const {
    std::vector<pid_t> out;
    for (pid_t p : processes())
      if (comm_of(p).starts_with("torch_shm_man"))
        out.push_back(p);
    return out;
  }

  // SIGKILL, the way an OOM kill or a crash ends a job: the shm managers
  // first (they would unlink the files once their clients are gone), then
  // the script's process group (the parent and the Pool workers). Returns
  // once every process has been reaped.
  bool kill_all() {
    if (reaper_ <= 0)
      return true;
    for (pid_t p : shm_managers())
      kill(p, SIGKILL);
    if (parent_ > 0)
      kill(-parent_, SIGKILL);
    for (pid_t p : processes())
      kill(p, SIGKILL);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      pid_t r = waitpid(reaper_, &st, WNOHANG);
      if (r == reaper_ || (r < 0 && errno == ECHILD)) {
        reaper_ = -1;
        return true;
      }
      for (pid_t p : processes()) // started while we were killing
        kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(reaper_, SIGKILL);
    waitpid(reaper_, nullptr, 0);
    reaper_ = -1;
    return false;
  }

  // /dev/shm/torch_<worker>_* files of this run.
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    DIR *d = opendir("/dev/shm");
    if (!d)
      return out;
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      for (pid_t w : workers_)
        if (n.starts_with("torch_" + std::to_string(w) + "_"))
          out.push_back("/dev/shm/" + n);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }

  void remove_files() const {
    for (const auto &f : files())
      unlink(f.c_str());
  }

  const nlohmann::json &info() const { return info_; }
  pid_t parent() const { return parent_; }
  const std::set<pid_t> &workers() const { return workers_; }

private:
  std::string tag_;
  pid_t reaper_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  nlohmann::json info_;
  pid_t parent_ = -1;
  std::set<pid_t> workers_;
};

// The worker pid in a torch_<pid>_<rand>_<n> path, 0 if none.
inline pid_t torch_pid(const std::string &path) {
  auto slash = path.rfind('/');
  std::string leaf = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (!leaf.starts_with("torch_"))
    return 0;
  return static_cast<pid_t>(std::strtol(leaf.c_str() + 6, nullptr, 10));
}

inline bool has_pid(const nlohmann::json &pids, pid_t pid) {
  return pids.is_array() && std::find(pids.begin(), pids.end(), nlohmann::json(pid)) != pids.end();
}

// Sum of st_blocks * 512 over paths, and the same total as `du -B1` prints it.
inline uint64_t resident_bytes(const std::vector<std::string> &paths) {
  uint64_t sum = 0;
  for (const auto &p : paths) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0)
      sum += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return sum;
}

inline uint64_t du_total(const std::vector<std::string> &paths) {
  std::string cmd = "du -B1 -c";
  for (const auto &p : paths)
    cmd += " '" + p + "'";
  FILE *f = popen((cmd + " | tail -n1").c_str(), "r");
  if (!f)
    return 0;
  unsigned long long total = 0;
  if (std::fscanf(f, "%llu", &total) != 1)
    total = 0;
  pclose(f);
  return total;
}

#define SHMBPF_REQUIRE_TORCH()                                                                     \
  do {                                                                                             \
    SHMBPF_REQUIRE_ROOT();                                                                         \
    if (!torch_importable()) {                                                                     \
      if (in_ci())                                                                                 \
        FAIL() << python << " cannot import torch (scripts/deps.sh installs python3-torch)";       \
      GTEST_SKIP() << python << " cannot import torch";                                            \
    }                                                                                              \
  } while (0)

} // namespace shmbpf::test
