// The VM layer's check of shmbpf on a cgroup v1-only host: a guest whose
// init mounted v1 hierarchies and no cgroup2 (SHMBPF_VM_CGROUP=v1, see
// guest/init). It lays out a container as Docker's cgroupfs driver does on
// such a host (/sys/fs/cgroup/<hierarchy>/docker/<id> in every hierarchy, a
// memory limit, a mount namespace with its own /dev/shm larger than that
// limit), then asks the real binary: `ls` and `ls --by container` must name
// the container (runtime docker) for its files, `leaks` its orphan,
// `audit` its unbounded /dev/shm with the v1 memory limit, and `top` the
// files made while it watched, by the container's process and by a child
// forked after top's scan (events carry the v2 root's cgroup id there; only
// the v1 path tells the container). One line per check: ok or FAIL.
//
//   shmbpf_vm_cgroup_v1_check SHMBPF   exit 0: every check ok; 1: one failed;
//                                      2: the guest is not what the check needs
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kId = "5f0c3a9e61b24d7c8e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f";
constexpr uint64_t kMemoryLimit = 48ull << 20;
constexpr uint64_t kShmSize = 256ull << 20; // more than the memory limit
constexpr size_t kFileBytes = 1 << 20;
const std::string kHeld = "/dev/shm/shmbpf-v1-held";
const std::string kOrphan = "/dev/shm/shmbpf-v1-orphan";
const std::string kLive = "/dev/shm/shmbpf-v1-live";
const std::string kLiveChild = "/dev/shm/shmbpf-v1-live-child";
// Loading the programs under emulation takes many times what it takes on
// hardware.
constexpr auto kLoadTimeout = 300s;

int failures = 0;

void check(bool ok, const std::string &what, const std::string &otherwise = "") {
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), ok ? "" : ": ",
              ok ? "" : otherwise.c_str());
  std::fflush(stdout);
  if (!ok)
    ++failures;
}

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "shmbpf_vm_cgroup_v1_check: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(2);
}

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_file(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return out.good();
}

// The mount points of every cgroup v1 hierarchy, and whether cgroup2 is
// mounted anywhere.
std::vector<std::string> v1_hierarchies(bool &cgroup2) {
  std::vector<std::string> out;
  std::istringstream in(read_file("/proc/self/mounts"));
  cgroup2 = false;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string src, dir, type;
    f >> src >> dir >> type;
    if (type == "cgroup")
      out.push_back(dir);
    cgroup2 = cgroup2 || type == "cgroup2";
  }
  return out;
}

// A file of kFileBytes written through; the open descriptor is returned.
int make_file(const std::string &path) {
  const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  const std::string chunk(64 * 1024, 'v');
  for (size_t done = 0; done < kFileBytes; done += chunk.size())
    if (write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) {
      close(fd);
      return -1;
    }
  return fd;
}

// A child that makes PATH and exits, leaving the file to nobody; its pid.
pid_t orphan_maker(const std::string &path) {
  const pid_t pid = fork();
  if (pid == 0)
    _exit(make_file(path) < 0 ? 1 : 0);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return -1;
  return pid;
}

void report(int fd, const std::string &line) {
  const std::string text = line + "\n";
  if (write(fd, text.data(), text.size()) < 0)
    _exit(3);
}

// The container's first process: joins its cgroup in every hierarchy,
// gets a mount namespace with its own /dev/shm (as runc makes one), makes
// a file it keeps open and one a child leaves behind, then waits for the
// order to make the live check's files. Reports "ready", "live PID" or
// "error WHAT" on `reports`.
[[noreturn]] void container(const std::vector<std::string> &hierarchies, int orders, int reports) {
  for (const std::string &h : hierarchies)
    if (!write_file(h + "/docker/" + kId + "/cgroup.procs", std::to_string(getpid()))) {
      report(reports, "error joining " + h + "/docker/" + kId);
      _exit(1);
    }
  const std::string size = "size=" + std::to_string(kShmSize) + ",mode=1777";
  if (unshare(CLONE_NEWNS) != 0 ||
      mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, size.c_str()) != 0) {
    report(reports, std::string("error making the mount namespace: ") + std::strerror(errno));
    _exit(1);
  }
  const int held = make_file(kHeld);
  if (held < 0 || orphan_maker(kOrphan) < 0) {
    report(reports, "error making the files");
    _exit(1);
  }
  report(reports, "ready");
  char order = 0;
  while (read(orders, &order, 1) == 1) {
    if (order != 'l')
      continue;
    const int live = make_file(kLive);
    const pid_t child = orphan_maker(kLiveChild);
    if (live < 0 || child < 0)
      report(reports, "error making the live files");
    else
      report(reports, "live " + std::to_string(child));
  }
  _exit(0);
}

// Reads one line from fd (unbuffered: the pipe is shared with no one).
std::string read_line(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n')
    line += c;
  return line;
}

struct Run {
  int status = -1; // exit status; -1 when killed
  std::string out, err;
};

// Runs SHMBPF with ARGS, its output in files of DIR; waits for it.
Run run(const std::string &shmbpf, const std::string &dir, std::vector<std::string> args) {
  const std::string out = dir + "/out", err = dir + "/err";
  const pid_t pid = fork();
  if (pid < 0)
    die("fork");
  if (pid == 0) {
    dup2(open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 1);
    dup2(open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 2);
    std::vector<char *> argv{const_cast<char *>(shmbpf.c_str())};
    for (std::string &a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
}

std::optional<json> parse(const Run &r, const std::string &what) {
  try {
    return json::parse(r.out);
  } catch (const json::exception &e) {
    check(false, what + " prints JSON",
          std::string(e.what()) + " (status " + std::to_string(r.status) + ")\n" + r.err);
    return std::nullopt;
  }
}

const json *find(const json &array, const std::function<bool(const json &)> &pred) {
  if (!array.is_array())
    return nullptr;
  for (const json &j : array)
    if (pred(j))
      return &j;
  return nullptr;
}

bool in_container(const json &segment_or_finding) {
  const json &c = segment_or_finding.value("container", json());
  return c.is_object() && c.value("id", "") == kId && c.value("runtime", "") == "docker";
}

const json *segment(const json &array, const std::string &path) {
  return find(array, [&](const json &s) { return s.value("path", "") == path; });
}

std::string shown(const json *j) { return j ? j->dump() : "absent"; }

void check_segment(const json &array, const std::string &path, const std::string &what) {
  const json *s = segment(array, path);
  check(s && in_container(*s), what + ": " + path + " in docker " + kId.substr(0, 12), shown(s));
}

void check_snapshot(const std::string &shmbpf, const std::string &dir) {
  Run r = run(shmbpf, dir, {"ls", "--json"});
  check(r.status == 0, "ls exits 0", std::to_string(r.status) + "\n" + r.err);
  if (auto ls = parse(r, "ls")) {
    check_segment((*ls)["segments"], kHeld, "ls");
    check_segment((*ls)["segments"], kOrphan, "ls");
  }

  r = run(shmbpf, dir, {"ls", "--by", "container", "--json"});
  if (auto ls = parse(r, "ls --by container")) {
    const json *c =
        find((*ls)["containers"], [](const json &c) { return c.value("id", "") == kId; });
    check(c && c->value("runtime", "") == "docker" && c->value("processes", 0) >= 1 &&
              c->value("segments", 0) >= 2,
          "ls --by container: docker " + kId.substr(0, 12) + " with its process and both files",
          shown(c));
  }

  r = run(shmbpf, dir, {"leaks", "--min-age", "0", "--json"});
  check(r.status == 1, "leaks exits 1 (a leak found)", std::to_string(r.status) + "\n" + r.err);
  if (auto leaks = parse(r, "leaks")) {
    check_segment((*leaks)["orphans"], kOrphan, "leaks: the orphan");
    check(!segment((*leaks)["orphans"], kHeld), "leaks: the held file is no orphan");
    const json *by = find((*leaks)["by_container"], [](const json &b) { return in_container(b); });
    check(by && by->value("count", 0) >= 1, "leaks: by_container names the container",
          (*leaks)["by_container"].dump());
  }

  r = run(shmbpf, dir, {"audit", "--json"});
  if (auto audit = parse(r, "audit")) {
    const json *f = find((*audit)["findings"], [](const json &f) {
      return f.value("rule", "") == "unbounded-shm-mount" && in_container(f);
    });
    const json ev = f ? f->value("evidence", json::object()) : json::object();
    check(f && ev.value("memory_limit", json()) == kMemoryLimit &&
              ev.value("size_limit", json()) == kShmSize,
          "audit: unbounded-shm-mount for the container, size " + std::to_string(kShmSize) +
              " over the v1 memory limit " + std::to_string(kMemoryLimit),
          f ? f->dump() : (*audit)["findings"].dump());
  }
}

// top's first frame comes after its scan with the programs attached; the
// container makes its live files then, and the second frame must name the
// container for both: the one its scanned process made and the one a child
// made that no scan has seen.
void check_live(const std::string &shmbpf, const std::string &dir, pid_t in_container_pid,
                int orders, int reports) {
  const std::string out = dir + "/top.ndjson", err = dir + "/top.err";
  const pid_t top = fork();
  if (top < 0)
    die("fork");
  if (top == 0) {
    dup2(open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 1);
    dup2(open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600), 2);
    execl(shmbpf.c_str(), shmbpf.c_str(), "top", "-b", "--json", "--by", "segments", "-n", "2",
          "-d", "5", static_cast<char *>(nullptr));
    _exit(127);
  }
  int status = 0;
  bool exited = false;
  auto lines = [&] {
    const std::string text = read_file(out);
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  };
  for (auto deadline = Clock::now() + kLoadTimeout; Clock::now() < deadline && lines() == 0;
       std::this_thread::sleep_for(100ms))
    if (waitpid(top, &status, WNOHANG) == top) {
      exited = true;
      break;
    }
  if (lines() == 0) {
    if (!exited)
      kill(top, SIGKILL);
    check(false, "top -b prints its first frame", read_file(err));
    return;
  }
  if (write(orders, "l", 1) != 1)
    die("write to the container");
  const std::string answer = read_line(reports);
  check(answer.starts_with("live "), "the container makes its live files", answer);
  const std::string child = answer.starts_with("live ") ? answer.substr(5) : "";
  for (auto deadline = Clock::now() + 120s; !exited && Clock::now() < deadline;
       std::this_thread::sleep_for(100ms))
    exited = waitpid(top, &status, WNOHANG) == top;
  if (!exited) {
    kill(top, SIGKILL);
    waitpid(top, &status, 0);
  }
  check(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0, "top -b -n 2 exits 0",
        read_file(err));
  std::istringstream in(read_file(out));
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  json frame;
  try {
    frame = json::parse(second);
  } catch (const json::exception &e) {
    check(false, "top's second frame is JSON", e.what() + std::string(": ") + second);
    return;
  }
  const json &rows = frame["rows"];
  const auto made_by = [&](const std::string &path, const std::string &pid, const char *who) {
    const json *s = segment(rows, path);
    const bool creator =
        s && (*s)["creator"].is_object() && std::to_string((*s)["creator"].value("pid", 0)) == pid;
    check(s && creator && in_container(*s),
          std::string("top: ") + path + ", made by " + who + " " + pid + ", in docker " +
              kId.substr(0, 12),
          shown(s));
  };
  made_by(kLive, std::to_string(in_container_pid), "the container's scanned process");
  made_by(kLiveChild, child, "a child forked after the scan");
  check_segment(rows, kHeld, "top");
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: shmbpf_vm_cgroup_v1_check SHMBPF\n");
    return 2;
  }
  const std::string shmbpf = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  bool cgroup2 = false;
  const std::vector<std::string> hierarchies = v1_hierarchies(cgroup2);
  const std::string self = read_file("/proc/self/cgroup");
  std::printf("=== /proc/self/cgroup\n%s", self.c_str());
  if (cgroup2 || hierarchies.empty() || self.find("\n0::") != std::string::npos ||
      self.starts_with("0::")) {
    std::fprintf(stderr, "shmbpf_vm_cgroup_v1_check: not a cgroup v1-only host (boot the guest "
                         "with SHMBPF_VM_CGROUP=v1)\n");
    return 2;
  }
  for (const std::string &h : hierarchies) {
    const std::string dir = h + "/docker/" + kId;
    if (mkdir((h + "/docker").c_str(), 0755) != 0 && errno != EEXIST)
      die("mkdir " + h + "/docker");
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      die("mkdir " + dir);
    if (access((dir + "/memory.limit_in_bytes").c_str(), F_OK) == 0 &&
        !write_file(dir + "/memory.limit_in_bytes", std::to_string(kMemoryLimit)))
      die("setting " + dir + "/memory.limit_in_bytes");
  }

  int orders[2], reports[2];
  if (pipe(orders) != 0 || pipe(reports) != 0)
    die("pipe");
  const pid_t pid = fork();
  if (pid < 0)
    die("fork");
  if (pid == 0) {
    close(orders[1]);
    close(reports[0]);
    container(hierarchies, orders[0], reports[1]);
  }
  close(orders[0]);
  close(reports[1]);
  const std::string ready = read_line(reports[0]);
  check(ready == "ready", "the container is set up", ready);
  if (ready != "ready")
    return 1;
  std::printf("=== /proc/%d/cgroup (the container)\n%s", pid,
              read_file("/proc/" + std::to_string(pid) + "/cgroup").c_str());

  char dir[] = "/tmp/shmbpf-v1-check.XXXXXX";
  if (!mkdtemp(dir))
    die("mkdtemp");
  check_snapshot(shmbpf, dir);
  check_live(shmbpf, dir, pid, orders[1], reports[0]);

  close(orders[1]); // the container ends at the end of its orders
  waitpid(pid, nullptr, 0);
  std::printf("=== %d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
