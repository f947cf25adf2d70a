// The VM layer's end-to-end check of `shmbpf trace --json` on the kernel it
// runs under (a guest's, or the host's): start the real binary, run a
// workload whose every step it knows the pid, path, inode or shmid of, stop
// trace with SIGINT and look for each step in the NDJSON. One line per event
// says what was seen. An event whose hook shmbpf named as missing on this
// kernel counts as told, not as lost. Where /sys/fs/cgroup is cgroup v2 with
// the memory controller (the guests), a child in a cgroup with memory.max
// 32 MiB then fills a /dev/shm file until the kernel OOM-kills it: trace's
// oom record must name it, with its cgroup's limit and shared memory.
//
//   shmbpf_vm_trace_check SHMBPF     the check (exit 0: every event seen or told)
//   shmbpf_vm_trace_check --workload FACTS
//                                   the workload, run by the check through
//                                   exec; writes what it did to FACTS as JSON
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr size_t kFileBytes = 64 * 1024;
// Loading under emulation takes many times what it takes on hardware.
constexpr auto kLoadTimeout = 300s;

std::string dev_text(dev_t d) { return std::to_string(major(d)) + ":" + std::to_string(minor(d)); }

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "shmbpf_vm_trace_check: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(2);
}

// Every kind of shared memory shmbpf follows, once, by this process.
int workload(const char *facts_path) {
  json facts;
  facts["pid"] = getpid();

  const std::string path = "/dev/shm/shmbpf-vm-" + std::to_string(getpid());
  int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    die("open " + path);
  if (ftruncate(fd, kFileBytes) != 0)
    die("ftruncate");
  // Pages to free: the free event needs the file to hold some.
  std::vector<char> bytes(kFileBytes, 'x');
  if (pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
    die("pwrite");
  struct stat st {};
  if (fstat(fd, &st) != 0)
    die("fstat");
  facts["path"] = path;
  facts["dev"] = dev_text(st.st_dev);
  facts["ino"] = st.st_ino;
  // A second name: unlinking the first leaves the file, the second ends it.
  const std::string link_path = path + "-link";
  if (link(path.c_str(), link_path.c_str()) != 0)
    die("link");
  facts["link_path"] = link_path;
  if (unlink(path.c_str()) != 0)
    die("unlink");
  if (unlink(link_path.c_str()) != 0)
    die("unlink " + link_path);
  close(fd); // the last reference: the pages leave the page cache here

  int mfd = memfd_create("shmbpf-vm", MFD_CLOEXEC);
  if (mfd < 0 || fstat(mfd, &st) != 0)
    die("memfd_create");
  facts["memfd_ino"] = st.st_ino;
  close(mfd);

  int shmid = shmget(IPC_PRIVATE, kFileBytes, IPC_CREAT | 0600);
  if (shmid < 0)
    die("shmget");
  void *addr = shmat(shmid, nullptr, 0);
  if (addr == reinterpret_cast<void *>(-1))
    die("shmat");
  if (shmctl(shmid, IPC_RMID, nullptr) != 0)
    die("shmctl IPC_RMID");
  if (shmdt(addr) != 0)
    die("shmdt");
  facts["shmid"] = shmid;
  facts["addr"] = reinterpret_cast<uintptr_t>(addr);

  std::ofstream(facts_path) << facts.dump() << "\n";
  return 0;
}

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The OOM phase's victim: its pid, or why there was none.
struct OomRun {
  pid_t pid = 0;
  std::string skipped;
};

constexpr uint64_t kOomLimit = 32 << 20;

bool write_text(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

OomRun oom_victim() {
  const std::string root = "/sys/fs/cgroup";
  if (read_file(root + "/cgroup.controllers").find("memory") == std::string::npos)
    return {0, "no cgroup v2 memory controller at " + root};
  if (!write_text(root + "/cgroup.subtree_control", "+memory"))
    return {0, "cannot hand the memory controller down from " + root};
  const std::string cg = root + "/shmbpf-vm-oom", file = "/dev/shm/shmbpf-vm-oom";
  if (mkdir(cg.c_str(), 0755) != 0 && errno != EEXIST)
    die(("mkdir " + cg).c_str());
  if (!write_text(cg + "/memory.max", std::to_string(kOomLimit)))
    die("memory.max");
  write_text(cg + "/memory.swap.max", "0"); // no swap to spill to, if the kernel has it
  const std::string procs = cg + "/cgroup.procs";
  const pid_t c = fork();
  if (c < 0)
    die("fork");
  if (c == 0) {
    const int pfd = open(procs.c_str(), O_WRONLY);
    if (pfd < 0 || write(pfd, "0", 1) != 1)
      _exit(1);
    close(pfd);
    const size_t size = 2 * kOomLimit;
    const int fd = open(file.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0)
      _exit(2);
    auto *p = static_cast<volatile char *>(
        mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
      _exit(3);
    for (size_t off = 0; off < size; off += 4096)
      p[off] = 1;
    _exit(4); // not killed
  }
  int st = 0;
  waitpid(c, &st, 0);
  unlink(file.c_str());
  for (int i = 0; i < 100 && rmdir(cg.c_str()) != 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
    return {c, "the victim was not killed (wait status " + std::to_string(st) + ")"};
  return {c, ""};
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n < 0)
    die("readlink /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

// `shmbpf trace --json -v` with its output in files: what it printed stays
// whole for the report, however it ended.
class Trace {
public:
  Trace(const std::string &shmbpf, const std::string &dir)
      : out_(dir + "/trace.ndjson"), err_(dir + "/trace.err") {
    pid_ = fork();
    if (pid_ < 0)
      die("fork");
    if (pid_ == 0) {
      int o = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int e = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(o, 1);
      dup2(e, 2);
      execl(shmbpf.c_str(), shmbpf.c_str(), "trace", "--json", "-v", static_cast<char *>(nullptr));
      _exit(127);
    }
  }
  ~Trace() {
    if (!exited()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
    }
  }

  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }
  bool exited() {
    if (!done_ && waitpid(pid_, &status_, WNOHANG) == pid_)
      done_ = true;
    return done_;
  }
  std::string status_text() const {
    if (!done_)
      return "still running";
    if (WIFEXITED(status_))
      return "exit status " + std::to_string(WEXITSTATUS(status_));
    return "killed by signal " + std::to_string(WTERMSIG(status_));
  }
  // SIGINT, then the wait for its summary; false if it did not end in time.
  bool stop(std::chrono::seconds timeout) {
    kill(pid_, SIGINT);
    for (auto deadline = Clock::now() + timeout; Clock::now() < deadline;
         std::this_thread::sleep_for(20ms))
      if (exited())
        return true;
    return false;
  }

private:
  std::string out_, err_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool done_ = false;
};

// Waits until pred holds, polling every 100 ms; false on timeout.
bool wait_until(const std::function<bool()> &pred, std::chrono::seconds timeout) {
  for (auto deadline = Clock::now() + timeout; Clock::now() < deadline;
       std::this_thread::sleep_for(100ms))
    if (pred())
      return true;
  return pred();
}

// trace --json prints nothing of its own: memfds are made until one shows.
bool wait_ready(Trace &t) {
  const std::string marker = "shmbpf-vm-ready-" + std::to_string(getpid());
  return wait_until(
      [&] {
        if (int fd = memfd_create(marker.c_str(), MFD_CLOEXEC); fd >= 0)
          close(fd);
        return t.out().find(marker) != std::string::npos || t.exited();
      },
      kLoadTimeout);
}

// libbpf's -v log less what reads the same on every kernel or went well:
// the lines on the object itself (ELF sections, maps, programs, externs,
// relocations against its own maps) and the CO-RE relocations that found
// their target. What is left is what failed here: the ksyms, the CO-RE
// relocations without a target (each after the line saying which field it
// wanted), the verifier's log and the errors.
void print_load_log(const std::string &log) {
  static const std::regex same_everywhere(
      R"(^libbpf: (elf: |map \d+ is |looking for externs|collected \d+ externs|extern \(ksym\) #|)"
      R"(map '[^']*': (at sec_idx|found |created successfully)|)"
      R"(sec '[^']*': (found program |collecting relocation|found \d+ CO-RE relocations|)"
      R"(relo #\d+: insn #\d+ against )|)"
      R"(prog '[^']*': found (data map|map|extern) |)"
      R"(CO-RE relocating |prog '[^']*': relo #\d+: (matching candidate|patched insn) ))");
  static const std::regex wanted(R"(^libbpf: prog '[^']*': relo #\d+: (<|non-matching candidate))");
  std::istringstream in(log);
  size_t left_out = 0;
  // Which field a relocation wanted and the candidates that did not fit:
  // shown only when it found no target.
  std::vector<std::string> held;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, wanted)) {
      if (line.find(": <") != std::string::npos) {
        left_out += held.size();
        held.clear();
      }
      held.push_back(line);
      continue;
    }
    if (std::regex_search(line, same_everywhere)) {
      ++left_out;
      continue;
    }
    if (line.find("no matching targets") != std::string::npos)
      for (const auto &h : held)
        std::printf("  | %s\n", h.c_str());
    else
      left_out += held.size();
    held.clear();
    std::printf("  | %s\n", line.c_str());
  }
  std::printf("  (%zu lines on the object itself or on what went well left out)\n", left_out);
}

std::vector<json> parse_ndjson(const std::string &text, int &bad) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    try {
      out.push_back(json::parse(line));
    } catch (const json::exception &) {
      ++bad;
      std::printf("  unparseable line: %s\n", line.c_str());
    }
  }
  return out;
}

// One event the workload caused, what identifies it, and the hook shmbpf
// reads it from (named in shmbpf's warning when this kernel lacks it).
struct Expect {
  std::string event;
  std::string hook;
  json want; // fields that must be equal
};

bool matches(const json &e, const json &want) {
  for (const auto &[k, v] : want.items())
    if (!e.contains(k) || e[k] != v)
      return false;
  return true;
}

// Which of fields a seen event has, for the report.
std::string brief(const json &e, const json &want) {
  std::string s;
  for (const auto &[k, v] : want.items())
    if (k != "event")
      s += " " + k + "=" + (e.contains(k) ? e[k].dump() : "(absent)");
  return s;
}

// The OOM phase's record: the victim, the task that ran out (the victim
// itself), its cgroup's limit and shared memory. 1 when it is wrong or
// missing.
int check_oom(const OomRun &oom, const std::vector<json> &events,
              const std::vector<std::string> &missing_hooks) {
  if (oom.pid == 0) {
    std::printf("skipped   oom          %s\n", oom.skipped.c_str());
    return 0;
  }
  if (!oom.skipped.empty()) {
    std::printf("FAILED    oom          %s\n", oom.skipped.c_str());
    return 1;
  }
  for (const json &e : events) {
    if (e.value("event", "") != "oom" || e.value("victim_pid", 0) != oom.pid)
      continue;
    const json &m = e["cgroup_memory"];
    const bool ok = e.value("pid", 0) == oom.pid && m.is_object() &&
                    m.value("limit", uint64_t{0}) == kOomLimit &&
                    m.value("shmem", uint64_t{0}) >= kOomLimit / 2 &&
                    m.value("shmem", uint64_t{0}) <= kOomLimit;
    std::printf("%s oom          %s\n", ok ? "ok       " : "WRONG    ", e.dump().c_str());
    return ok ? 0 : 1;
  }
  for (const auto &h : missing_hooks)
    if (h == "mark_victim") {
      std::printf("told      oom          shmbpf says this kernel lacks mark_victim\n");
      return 0;
    }
  std::printf("MISSING   oom          victim_pid %d\n", static_cast<int>(oom.pid));
  return 1;
}

int check(const std::string &shmbpf) {
  char tmpl[] = "/tmp/shmbpf-vm-check-XXXXXX";
  if (!mkdtemp(tmpl))
    die("mkdtemp");
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  const auto t0 = Clock::now();
  auto secs = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };

  Trace trace(shmbpf, dir);
  if (!wait_ready(trace) || trace.exited()) {
    std::printf("FAIL shmbpf trace did not start (%s after %.1f s); its stderr (-v):\n",
                trace.status_text().c_str(), secs());
    print_load_log(trace.err());
    return 1;
  }
  std::printf("shmbpf trace ready after %.1f s\n", secs());

  // The workload is a child that execs: its exec and exit are events too.
  const std::string exe = self_exe(), facts_path = dir + "/facts.json";
  pid_t w = fork();
  if (w < 0)
    die("fork");
  if (w == 0) {
    execl(exe.c_str(), exe.c_str(), "--workload", facts_path.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  int st = 0;
  waitpid(w, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::printf("FAIL the workload failed (wait status %d)\n", st);
    return 1;
  }
  const json facts = json::parse(read_file(facts_path));
  const OomRun oom = oom_victim();

  // The exit comes last from the workload; pending frees are flushed within
  // 200 ms (userspace's flush), so a second more brings them in.
  const std::string exit_needle = "\"event\":\"exit\"";
  wait_until([&] { return trace.out().find(exit_needle) != std::string::npos; }, 30s);
  if (oom.pid != 0)
    wait_until([&] { return trace.out().find("\"event\":\"oom\"") != std::string::npos; }, 30s);
  std::this_thread::sleep_for(1s);
  if (!trace.stop(120s)) {
    std::printf("FAIL shmbpf trace did not stop within 120 s of SIGINT\n");
    return 1;
  }

  int bad = 0;
  const std::vector<json> events = parse_ndjson(trace.out(), bad);
  const std::string err = trace.err();
  // "shmbpf: warning: hook not available: syscalls/sys_exit_openat2: no
  // such tracepoint" names the hook sys_exit_openat2.
  std::vector<std::string> warnings, missing_hooks;
  {
    std::istringstream in(err);
    const std::string tag = "hook not available: ";
    for (std::string line; std::getline(in, line);)
      if (auto at = line.find(tag); at != std::string::npos) {
        std::string hook = line.substr(at + tag.size());
        warnings.push_back(hook);
        hook = hook.substr(0, hook.find(':'));
        missing_hooks.push_back(hook.substr(hook.find_last_of('/') + 1));
      }
  }

  const json pid = facts["pid"];
  // The C library's link() and unlink(): their *at calls on arm64, which
  // has no others.
#if defined(__aarch64__)
  const std::string link_hook = "sys_exit_linkat", unlink_hook = "sys_exit_unlinkat";
#else
  const std::string link_hook = "sys_exit_link", unlink_hook = "sys_exit_unlink";
#endif
  const std::vector<Expect> expects = {
      {"exec", "sched_process_exec", {{"event", "exec"}, {"pid", pid}, {"filename", exe}}},
      {"create",
       "sys_exit_openat",
       {{"event", "create"},
        {"pid", pid},
        {"path", facts["path"]},
        {"dev", facts["dev"]},
        {"ino", facts["ino"]},
        {"new", true}}},
      {"resize",
       "sys_exit_ftruncate",
       {{"event", "resize"},
        {"pid", pid},
        {"path", facts["path"]},
        {"ino", facts["ino"]},
        {"size", kFileBytes}}},
      {"link",
       link_hook,
       {{"event", "link"},
        {"pid", pid},
        {"path", facts["path"]},
        {"newpath", facts["link_path"]},
        {"dev", facts["dev"]},
        {"ino", facts["ino"]}}},
      {"unlink",
       unlink_hook,
       {{"event", "unlink"}, {"pid", pid}, {"path", facts["path"]}, {"ino", facts["ino"]}}},
      {"unlink",
       unlink_hook,
       {{"event", "unlink"}, {"pid", pid}, {"path", facts["link_path"]}, {"ino", facts["ino"]}}},
      {"free",
       "mm_filemap_delete_from_page_cache",
       {{"event", "free"},
        {"pid", pid},
        {"path", facts["path"]},
        {"dev", facts["dev"]},
        {"ino", facts["ino"]},
        {"bytes", kFileBytes}}},
      {"memfd_create",
       "sys_exit_memfd_create",
       {{"event", "memfd_create"},
        {"pid", pid},
        {"path", "memfd:shmbpf-vm"},
        {"ino", facts["memfd_ino"]}}},
      {"shmget",
       "sys_exit_shmget",
       {{"event", "shmget"}, {"pid", pid}, {"shmid", facts["shmid"]}, {"created", true}}},
      {"shmat",
       "sys_exit_shmat",
       {{"event", "shmat"}, {"pid", pid}, {"shmid", facts["shmid"]}, {"addr", facts["addr"]}}},
      {"shm_rmid",
       "sys_exit_shmctl",
       {{"event", "shm_rmid"}, {"pid", pid}, {"shmid", facts["shmid"]}}},
      {"shmdt", "sys_exit_shmdt", {{"event", "shmdt"}, {"pid", pid}, {"addr", facts["addr"]}}},
      {"exit", "sched_process_exit", {{"event", "exit"}, {"pid", pid}, {"exit_status", 0}}},
  };

  std::printf("workload pid %s, file %s (dev %s, ino %s), memfd ino %s, shmid %s\n",
              pid.dump().c_str(), facts["path"].get<std::string>().c_str(),
              facts["dev"].get<std::string>().c_str(), facts["ino"].dump().c_str(),
              facts["memfd_ino"].dump().c_str(), facts["shmid"].dump().c_str());
  int failed = bad;
  for (const Expect &x : expects) {
    std::vector<const json *> same_kind;
    const json *hit = nullptr;
    for (const json &e : events) {
      if (e.value("event", "") != x.event)
        continue;
      same_kind.push_back(&e);
      if (!hit && matches(e, x.want))
        hit = &e;
    }
    bool told = false;
    for (const auto &h : missing_hooks)
      told = told || h == x.hook;
    if (hit) {
      std::printf("ok        %-13s%s\n", x.event.c_str(), brief(*hit, x.want).c_str());
    } else if (told) {
      std::printf("told      %-13s shmbpf says this kernel lacks %s\n", x.event.c_str(),
                  x.hook.c_str());
    } else {
      ++failed;
      std::printf("MISSING   %-13s want%s; %zu %s events seen\n", x.event.c_str(),
                  brief(x.want, x.want).c_str(), same_kind.size(), x.event.c_str());
      for (size_t i = 0; i < same_kind.size() && i < 5; ++i)
        std::printf("            seen%s\n", brief(*same_kind[i], x.want).c_str());
    }
  }
  failed += check_oom(oom, events, missing_hooks);
  for (const auto &w : warnings)
    std::printf("hook not available here: %s\n", w.c_str());
  // The summary is trace's last line on stderr.
  std::string summary = err.substr(err.find_last_of('\n', err.size() - 2) + 1);
  std::printf("shmbpf trace: %s after SIGINT; %s", trace.status_text().c_str(), summary.c_str());
  std::printf("%s: %d of %zu events not seen, %d unparseable lines (%.1f s)\n",
              failed ? "FAIL" : "PASS", failed - bad, expects.size(), bad, secs());
  return failed ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "--workload")
    return workload(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SHMBPF | --workload FACTS\n", argv[0]);
    return 2;
  }
  return check(argv[1]);
}
