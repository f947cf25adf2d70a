// `shmbpf audit` against real Docker containers (a dockerd of the test's
// own, tests/e2e/dockerd.hpp): one container per way Docker lets shared
// memory break a container's isolation, each started the way a user would
// (`--ipc=host`, `-v /dev/shm:/dev/shm`, `--tmpfs /dev/shm:exec`, ...), and
// one with Docker's defaults. Every rule Docker can produce must be raised
// about the right container, named as Docker names it, with the evidence
// the test reads from the host itself (pids, namespace inodes, inodes,
// shmids); the default container must raise nothing.
//
// The containers start once, in parallel, and every check runs against the
// same few audits: one test, a SCOPED_TRACE per scenario.
#include "e2e/background.hpp"
#include "e2e/dockerd.hpp"
#include "e2e/run_cli.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const char *const kImage = "shmbpf-audit:test";

// A container as the host sees it.
struct Box {
  std::string name;
  std::string id;
  pid_t pid = 0; // its first process, in the host's pid namespace
  uint32_t mntns = 0;
  uint32_t ipcns = 0;
  std::string log; // what its process printed (shm_actor says what it made)
};

// How each container is started: `docker run` options, the command, and
// what its log shows once it has set up what the audit must find.
struct Spec {
  std::string name;
  std::string options;
  std::string command;
  std::string ready_log; // "" when running is enough
  std::string ready_exe; // a prefix of /proc/PID/exe once it runs the program
};

const std::vector<Spec> &first_wave() {
  static const std::vector<Spec> specs = {
      {"audit-default", "", "/bin/shm_actor sleep", "", ""},
      {"audit-hostipc", "--ipc=host", "/bin/shm_actor sleep", "", ""},
      {"audit-ipc-a", "--ipc=shareable", "/bin/shm_actor hold /dev/shm/audit-shared 0600", "held",
       ""},
      {"audit-hostshm", "-v /dev/shm:/dev/shm", "/bin/shm_actor sleep", "", ""},
      // Docker's --tmpfs mounts nosuid,nodev,noexec and no size unless told.
      {"audit-execshm", "--tmpfs /dev/shm:exec",
       "/bin/sh -c 'cp /bin/shm_actor /dev/shm/shm-program && exec /dev/shm/shm-program sleep'", "",
       "/dev/shm/shm-program"},
      {"audit-fileless", "", "/bin/shm_actor memfd-exec audit-fileless", "",
       "/memfd:audit-fileless"},
      {"audit-sysv", "", "/bin/shm_actor sysv 0 0666", "shmid", ""},
      {"audit-worldfile", "", "/bin/shm_actor hold /dev/shm/audit-open 0666", "held", ""},
      {"audit-smallmem", "--shm-size 256m --memory 64m", "/bin/shm_actor sleep", "", ""},
  };
  return specs;
}

// B joins A's IPC namespace (and with it A's /dev/shm), so it starts after A.
const Spec &second_wave() {
  static const Spec spec = {"audit-ipc-b", "--ipc=container:audit-ipc-a",
                            "/bin/shm_actor hold /dev/shm/audit-shared 0600", "held", ""};
  return spec;
}

std::string exe_of(pid_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

// The containers, started and set up; error says what did not.
struct Fleet {
  explicit Fleet(const DockerPrograms &programs) : docker(programs) {}
  Dockerd docker;
  std::map<std::string, Box> boxes;
  std::string error;

  const Box &operator[](const std::string &name) const { return boxes.at(name); }

  // Starts the specs' containers together; "" or what failed.
  std::string run(const std::vector<Spec> &specs) {
    std::string cmd;
    for (const Spec &s : specs)
      cmd += docker.cli() + " run -d --network none --name " + s.name + " " + s.options + " " +
             kImage + " " + s.command + " >/dev/null 2>" + docker.dir() + "/run-" + s.name +
             ".err & ";
    const Ran r = sh(cmd + "wait");
    for (const Spec &s : specs) {
      const Ran started = sh("cat " + docker.dir() + "/run-" + s.name + ".err");
      if (docker.id_of(s.name).empty())
        return s.name + " did not start: " + started.out + r.out;
    }
    return "";
  }

  std::string wait_ready(const Spec &s, std::chrono::seconds timeout) {
    Box b;
    b.name = s.name;
    b.id = docker.id_of(s.name);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      b.pid = docker.pid_of(s.name);
      b.log = docker.docker("logs " + s.name).out;
      const bool logged = s.ready_log.empty() || b.log.find(s.ready_log) != std::string::npos;
      const bool runs = s.ready_exe.empty() || exe_of(b.pid).starts_with(s.ready_exe);
      if (b.pid > 0 && logged && runs)
        break;
      if (std::chrono::steady_clock::now() > deadline)
        return s.name + " not ready: pid " + std::to_string(b.pid) + ", exe " + exe_of(b.pid) +
               ", log: " + b.log;
      std::this_thread::sleep_for(100ms);
    }
    const std::string ns = "/proc/" + std::to_string(b.pid) + "/ns/";
    b.mntns = ns_inode((ns + "mnt").c_str());
    b.ipcns = ns_inode((ns + "ipc").c_str());
    boxes[s.name] = b;
    return "";
  }

  std::string start() {
    if (!docker.wait_ready(30s))
      return "dockerd did not start: " + docker.log();
    const Ran imported =
        docker.import_image(kImage, {"sh", "cp", "sleep"}, {{SHMBPF_SHM_ACTOR, "/bin/shm_actor"}});
    if (imported.code != 0)
      return "docker import: " + imported.out;
    if (std::string e = run(first_wave()); !e.empty())
      return e;
    for (const Spec &s : first_wave())
      if (std::string e = wait_ready(s, 20s); !e.empty())
        return e;
    if (std::string e = run({second_wave()}); !e.empty())
      return e;
    return wait_ready(second_wave(), 20s);
  }
};

// --- reading the audit's JSON --------------------------------------------

std::vector<const json *> findings_of(const json &audit, const std::string &rule,
                                      const std::string &container_id) {
  std::vector<const json *> out;
  for (const json &f : audit["findings"])
    if (f["rule"] == rule && f["container"].is_object() && f["container"]["id"] == container_id)
      out.push_back(&f);
  return out;
}

std::set<std::string> rules_of(const json &audit, const std::string &container_id) {
  std::set<std::string> out;
  for (const json &f : audit["findings"])
    if (f["container"].is_object() && f["container"]["id"] == container_id)
      out.insert(f["rule"].get<std::string>());
  return out;
}

std::set<pid_t> pids_in(const json &evidence) {
  std::set<pid_t> out;
  if (evidence.contains("processes"))
    for (const json &p : evidence["processes"])
      out.insert(p["pid"].get<pid_t>());
  return out;
}

std::set<std::string> strings_in(const json &evidence, const char *key) {
  std::set<std::string> out;
  if (evidence.contains(key))
    for (const json &v : evidence[key])
      out.insert(v.get<std::string>());
  return out;
}

std::set<std::string> other_ids(const json &evidence) {
  std::set<std::string> out;
  if (evidence.contains("containers"))
    for (const json &c : evidence["containers"])
      out.insert(c["id"].get<std::string>());
  return out;
}

// The one finding of rule about b, its container object and severity
// checked; nullptr (and a failure) when there is not exactly one.
const json *one_finding(const json &audit, const std::string &rule, const Box &b,
                        const std::string &severity) {
  const auto found = findings_of(audit, rule, b.id);
  EXPECT_EQ(found.size(), 1u) << rule << " about " << b.name << ":\n" << audit.dump(2);
  if (found.size() != 1)
    return nullptr;
  const json &f = *found[0];
  EXPECT_EQ(f["severity"], severity) << f.dump(2);
  EXPECT_EQ(f["source"], "snapshot") << f.dump(2);
  EXPECT_EQ(f["container"]["name"], b.name) << f.dump(2);
  EXPECT_EQ(f["container"]["runtime"], "docker") << f.dump(2);
  EXPECT_TRUE(f["summary"].is_string() && !f["summary"].get<std::string>().empty()) << f.dump(2);
  return &f;
}

// A process of b named in the evidence: its host pid and the comm the
// kernel shows for it, and b's id as its container.
void expect_process(const json &evidence, const Box &b) {
  ASSERT_TRUE(evidence.contains("processes")) << evidence.dump(2);
  const json *row = nullptr;
  for (const json &p : evidence["processes"])
    if (p["pid"] == b.pid)
      row = &p;
  ASSERT_NE(row, nullptr) << b.name << " pid " << b.pid << " not in " << evidence.dump(2);
  std::string comm = sh("cat /proc/" + std::to_string(b.pid) + "/comm").out;
  if (!comm.empty() && comm.back() == '\n')
    comm.pop_back();
  EXPECT_EQ((*row)["comm"], comm) << row->dump();
  ASSERT_TRUE((*row)["container"].is_object()) << row->dump();
  EXPECT_EQ((*row)["container"]["id"], b.id) << row->dump();
}

std::string dev_of(const std::string &path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return "";
  return std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
}

uint64_t ino_of(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::string root_of(const Box &b) { return "/proc/" + std::to_string(b.pid) + "/root"; }

// The host's IPC namespace as the audit takes it: pid 1's, or the test's
// own where pid 1's cannot be read (a sandbox that hides it).
uint32_t host_ipcns() {
  const uint32_t init = ns_inode("/proc/1/ns/ipc");
  return init ? init : ns_inode("/proc/self/ns/ipc");
}

// The /dev/shm mount a process sees: its per-mount and superblock options.
std::string shm_mount_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/mountinfo");
  for (std::string line; std::getline(in, line);)
    if (line.find(" /dev/shm ") != std::string::npos)
      return line;
  return "";
}

// A process's memory limit from its cgroup: v1's memory.limit_in_bytes or
// v2's memory.max, as text; "" when neither can be read.
std::string memory_limit_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string file;
  for (std::string line; std::getline(in, line);) {
    if (const auto at = line.find(":memory:"); at != std::string::npos)
      file = "/sys/fs/cgroup/memory" + line.substr(at + 8) + "/memory.limit_in_bytes";
    else if (line.starts_with("0::") && file.empty())
      file = "/sys/fs/cgroup" + line.substr(3) + "/memory.max";
  }
  std::ifstream limit(file);
  std::string text;
  limit >> text;
  return text;
}

// Docker did what each scenario needs, as the host sees it: what follows
// checks the audit, not Docker.
void check_fleet(const Fleet &fleet) {
  EXPECT_EQ(fleet["audit-hostipc"].ipcns, host_ipcns());
  EXPECT_NE(fleet["audit-default"].ipcns, host_ipcns());
  EXPECT_EQ(fleet["audit-ipc-a"].ipcns, fleet["audit-ipc-b"].ipcns);
  EXPECT_EQ(dev_of(root_of(fleet["audit-ipc-a"]) + "/dev/shm"),
            dev_of(root_of(fleet["audit-ipc-b"]) + "/dev/shm"));
  for (const char *name : {"audit-hostshm", "audit-hostipc"})
    EXPECT_EQ(dev_of(root_of(fleet[name]) + "/dev/shm"), dev_of("/dev/shm")) << name;
  const std::string dflt = shm_mount_of(fleet["audit-default"].pid);
  EXPECT_NE(dflt.find("nosuid,nodev,noexec"), std::string::npos) << dflt;
  EXPECT_NE(dflt.find("size=65536k"), std::string::npos) << dflt;
  const std::string exec = shm_mount_of(fleet["audit-execshm"].pid);
  EXPECT_EQ(exec.find("noexec"), std::string::npos) << exec;
  EXPECT_EQ(exec.find("size="), std::string::npos) << exec;
  EXPECT_NE(shm_mount_of(fleet["audit-smallmem"].pid).find("size=262144k"), std::string::npos);
  EXPECT_EQ(memory_limit_of(fleet["audit-smallmem"].pid), std::to_string(64 << 20));
  EXPECT_EQ(exe_of(fleet["audit-execshm"].pid), "/dev/shm/shm-program");
  EXPECT_EQ(exe_of(fleet["audit-fileless"].pid), "/memfd:audit-fileless (deleted)");
  struct stat st {};
  ASSERT_EQ(stat((root_of(fleet["audit-worldfile"]) + "/dev/shm/audit-open").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_NE(fleet["audit-sysv"].log.find("shmid "), std::string::npos);
}

// --- the scenarios ----------------------------------------------------------

void check_host_ipc(const json &audit, const Fleet &fleet) {
  const Box &b = fleet["audit-hostipc"];
  const json *f = one_finding(audit, "host-ipc-namespace", b, "high");
  if (!f)
    return;
  const json &e = (*f)["evidence"];
  expect_process(e, b);
  EXPECT_EQ(b.ipcns, host_ipcns());
  EXPECT_EQ(e["ipcns"], b.ipcns) << e.dump(2);
}

void check_shared_ipc(const json &audit, const Fleet &fleet) {
  const Box &a = fleet["audit-ipc-a"], &b = fleet["audit-ipc-b"];
  ASSERT_EQ(a.ipcns, b.ipcns);
  auto found = findings_of(audit, "shared-ipc-namespace", a.id);
  for (const json *f : findings_of(audit, "shared-ipc-namespace", b.id))
    found.push_back(f);
  // One finding per container, naming the other (docs/AUDIT.md).
  ASSERT_EQ(found.size(), 2u) << audit.dump(2);
  for (const json *f : found) {
    const bool about_a = (*f)["container"]["id"] == a.id;
    const Box &self = about_a ? a : b, &other = about_a ? b : a;
    SCOPED_TRACE(self.name);
    const json *one = one_finding(audit, "shared-ipc-namespace", self, "medium");
    if (!one)
      continue;
    const json &e = (*f)["evidence"];
    EXPECT_EQ(e["ipcns"], a.ipcns) << e.dump(2);
    EXPECT_EQ(other_ids(e), std::set<std::string>{other.id}) << e.dump(2);
    EXPECT_EQ(e["containers"][0]["name"], other.name) << e.dump(2);
    expect_process(e, a);
    expect_process(e, b);
  }
}

void check_host_shm(const json &audit, const Fleet &fleet) {
  // -v /dev/shm:/dev/shm, and --ipc=host, which mounts the host's too.
  for (const char *name : {"audit-hostshm", "audit-hostipc"}) {
    SCOPED_TRACE(name);
    const Box &b = fleet[name];
    const json *f = one_finding(audit, "host-shm-mounted", b, "high");
    if (!f)
      continue;
    const json &e = (*f)["evidence"];
    EXPECT_EQ(e["mountpoint"], "/dev/shm") << e.dump(2);
    EXPECT_EQ(e["dev"], dev_of("/dev/shm")) << e.dump(2);
    EXPECT_EQ(dev_of(root_of(b) + "/dev/shm"), dev_of("/dev/shm"));
    EXPECT_EQ(e["mntns"], b.mntns) << e.dump(2);
    expect_process(e, b);
  }
}

void check_exec_mount(const json &audit, const Fleet &fleet) {
  const Box &b = fleet["audit-execshm"];
  if (const json *f = one_finding(audit, "shm-mount-options", b, "low")) {
    const json &e = (*f)["evidence"];
    EXPECT_EQ(e["mountpoint"], "/dev/shm") << e.dump(2);
    EXPECT_EQ(e["dev"], dev_of(root_of(b) + "/dev/shm")) << e.dump(2);
    EXPECT_EQ(e["mntns"], b.mntns) << e.dump(2);
    const std::string options = e["mount_options"].get<std::string>();
    EXPECT_EQ(options.find("noexec"), std::string::npos) << options;
    EXPECT_NE(options.find("nosuid"), std::string::npos) << options;
  }
  if (const json *f = one_finding(audit, "unbounded-shm-mount", b, "medium")) {
    const json &e = (*f)["evidence"];
    EXPECT_EQ(e["mountpoint"], "/dev/shm") << e.dump(2);
    EXPECT_TRUE(e["size_limit"].is_null()) << e.dump(2);
    EXPECT_TRUE(e["memory_limit"].is_null()) << e.dump(2);
  }
  if (const json *f = one_finding(audit, "exec-from-shm", b, "high")) {
    const json &e = (*f)["evidence"];
    expect_process(e, b);
    EXPECT_EQ(e["mountpoint"], "/dev/shm") << e.dump(2);
    EXPECT_EQ(strings_in(e, "paths"), std::set<std::string>{"/dev/shm/shm-program"}) << e.dump(2);
    EXPECT_EQ(e["ino"], ino_of(root_of(b) + "/dev/shm/shm-program")) << e.dump(2);
    EXPECT_EQ(e["dev"], dev_of(root_of(b) + "/dev/shm")) << e.dump(2);
  }
}

void check_fileless(const json &audit, const Fleet &fleet) {
  const Box &b = fleet["audit-fileless"];
  const json *f = one_finding(audit, "fileless-exec", b, "high");
  if (!f)
    return;
  const json &e = (*f)["evidence"];
  expect_process(e, b);
  EXPECT_EQ(strings_in(e, "paths"), std::set<std::string>{"/memfd:audit-fileless"}) << e.dump(2);
  EXPECT_EQ(e["ino"], ino_of("/proc/" + std::to_string(b.pid) + "/exe")) << e.dump(2);
}

void check_world_writable(const json &audit, const Fleet &fleet) {
  {
    SCOPED_TRACE("SysV");
    const Box &b = fleet["audit-sysv"];
    const auto at = b.log.find("shmid ");
    ASSERT_NE(at, std::string::npos) << b.log;
    const int shmid = std::stoi(b.log.substr(at + 6));
    if (const json *f = one_finding(audit, "world-writable-segment", b, "medium")) {
      const json &e = (*f)["evidence"];
      EXPECT_EQ(e["shmids"], json::array({shmid})) << e.dump(2);
      EXPECT_EQ(e["segments"], 1) << e.dump(2);
      EXPECT_EQ(e["mode"], "0666") << e.dump(2);
      EXPECT_EQ(e["ipcns"], b.ipcns) << e.dump(2);
    }
  }
  {
    SCOPED_TRACE("file");
    const Box &b = fleet["audit-worldfile"];
    if (const json *f = one_finding(audit, "world-writable-segment", b, "medium")) {
      const json &e = (*f)["evidence"];
      EXPECT_EQ(strings_in(e, "paths"), std::set<std::string>{"/dev/shm/audit-open"}) << e.dump(2);
      EXPECT_EQ(e["segments"], 1) << e.dump(2);
      EXPECT_EQ(e["mode"], "0666") << e.dump(2);
      EXPECT_EQ(e["mountpoint"], "/dev/shm") << e.dump(2);
      EXPECT_EQ(e["ino"], ino_of(root_of(b) + "/dev/shm/audit-open")) << e.dump(2);
      EXPECT_EQ(e["dev"], dev_of(root_of(b) + "/dev/shm")) << e.dump(2);
    }
  }
}

void check_cross_container(const json &audit, const Fleet &fleet) {
  const Box &a = fleet["audit-ipc-a"], &b = fleet["audit-ipc-b"];
  const std::string path = root_of(a) + "/dev/shm/audit-shared";
  ASSERT_EQ(ino_of(path), ino_of(root_of(b) + "/dev/shm/audit-shared"));
  auto found = findings_of(audit, "cross-container-segment", a.id);
  for (const json *f : findings_of(audit, "cross-container-segment", b.id))
    found.push_back(f);
  // One finding per container, naming the other (docs/AUDIT.md).
  ASSERT_EQ(found.size(), 2u) << audit.dump(2);
  for (const json *f : found) {
    const bool about_a = (*f)["container"]["id"] == a.id;
    const Box &self = about_a ? a : b, &other = about_a ? b : a;
    SCOPED_TRACE(self.name);
    if (!one_finding(audit, "cross-container-segment", self, "medium"))
      continue;
    const json &e = (*f)["evidence"];
    EXPECT_EQ(strings_in(e, "paths"), std::set<std::string>{"/dev/shm/audit-shared"}) << e.dump(2);
    EXPECT_EQ(e["segments"], 1) << e.dump(2);
    EXPECT_EQ(other_ids(e), std::set<std::string>{other.id}) << e.dump(2);
    EXPECT_EQ(pids_in(e), (std::set<pid_t>{a.pid, b.pid})) << e.dump(2);
    expect_process(e, a);
    expect_process(e, b);
  }
}

void check_small_memory(const json &audit, const Fleet &fleet) {
  const Box &b = fleet["audit-smallmem"];
  const json *f = one_finding(audit, "unbounded-shm-mount", b, "medium");
  if (!f)
    return;
  const json &e = (*f)["evidence"];
  EXPECT_EQ(e["mountpoint"], "/dev/shm") << e.dump(2);
  EXPECT_EQ(e["size_limit"], 256u << 20) << e.dump(2);
  EXPECT_EQ(e["memory_limit"], 64u << 20) << e.dump(2);
  EXPECT_EQ(e["mntns"], b.mntns) << e.dump(2);
}

// The containers that share nothing with the host raise their rules and no
// other; the default one raises nothing, and no finding names it.
void check_nothing_else(const json &audit, const Fleet &fleet) {
  using Rules = std::set<std::string>;
  const std::map<std::string, Rules> expected = {
      {"audit-default", {}},
      {"audit-smallmem", {"unbounded-shm-mount"}},
      {"audit-sysv", {"world-writable-segment"}},
      {"audit-worldfile", {"world-writable-segment"}},
      {"audit-fileless", {"fileless-exec"}},
      {"audit-execshm", {"shm-mount-options", "unbounded-shm-mount", "exec-from-shm"}},
  };
  for (const auto &[name, rules] : expected)
    EXPECT_EQ(rules_of(audit, fleet[name].id), rules) << name;
  for (const char *name : {"audit-ipc-a", "audit-ipc-b"}) {
    const Rules got = rules_of(audit, fleet[name].id);
    for (const std::string &r : got)
      EXPECT_TRUE(r == "shared-ipc-namespace" || r == "cross-container-segment")
          << name << ": " << r;
  }
  const std::string quiet = fleet["audit-default"].id;
  for (const json &f : audit["findings"])
    EXPECT_EQ(other_ids(f["evidence"]).count(quiet), 0u) << f.dump(2);
}

TEST(AuditDocker, EveryRuleDockerCanRaise) {
  SHMBPF_REQUIRE_ROOT();
  const DockerPrograms programs;
  SHMBPF_REQUIRE_DOCKER(programs);

  const auto t0 = std::chrono::steady_clock::now();
  Fleet fleet(programs);
  const std::string error = fleet.start();
  ASSERT_EQ(error, "") << fleet.docker.log();
  const auto started = std::chrono::steady_clock::now();
  {
    SCOPED_TRACE("the containers");
    check_fleet(fleet);
  }

  const std::string roots = " --runtime-root docker=" + fleet.docker.data_root();
  const CliResult all = run_shmbpf("audit --json --fail-on none" + roots);
  ASSERT_EQ(all.code, 0) << all.err;
  const json audit = all.json();
  ASSERT_TRUE(audit.is_object() && audit["findings"].is_array()) << all.out;
  EXPECT_TRUE(audit["watch_seconds"].is_null());

  {
    SCOPED_TRACE("host-ipc-namespace");
    check_host_ipc(audit, fleet);
  }
  {
    SCOPED_TRACE("shared-ipc-namespace");
    check_shared_ipc(audit, fleet);
  }
  {
    SCOPED_TRACE("host-shm-mounted");
    check_host_shm(audit, fleet);
  }
  {
    SCOPED_TRACE("--tmpfs /dev/shm:exec");
    check_exec_mount(audit, fleet);
  }
  {
    SCOPED_TRACE("fileless-exec");
    check_fileless(audit, fleet);
  }
  {
    SCOPED_TRACE("world-writable-segment");
    check_world_writable(audit, fleet);
  }
  {
    SCOPED_TRACE("cross-container-segment");
    check_cross_container(audit, fleet);
  }
  {
    SCOPED_TRACE("--shm-size 256m --memory 64m");
    check_small_memory(audit, fleet);
  }
  {
    SCOPED_TRACE("nothing else");
    check_nothing_else(audit, fleet);
  }

  // The counts are the findings'.
  std::map<std::string, int> counted;
  for (const json &f : audit["findings"])
    ++counted[f["severity"].get<std::string>()];
  for (const char *s : {"high", "medium", "low"})
    EXPECT_EQ(audit["counts"][s], counted[s]) << s;

  // Default --fail-on medium: these findings make the status 1; the text
  // names the containers as Docker does.
  const CliResult text = run_shmbpf("audit" + roots);
  EXPECT_EQ(text.code, 1) << text.err;
  for (const char *name : {"audit-hostipc", "audit-hostshm", "audit-execshm", "audit-fileless",
                           "audit-sysv", "audit-worldfile", "audit-smallmem", "audit-ipc-a"})
    EXPECT_NE(text.out.find(name), std::string::npos) << name << " not in:\n" << text.out;
  EXPECT_NE(text.out.find("host-ipc-namespace"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("audit-default"), std::string::npos) << text.out;

  // Filters: a container by Docker's name and a rule; a container with
  // only a medium finding under --fail-on high; the quiet container.
  const CliResult one = run_shmbpf("audit --json --container audit-hostipc --rule "
                                   "host-ipc-namespace" +
                                   roots);
  EXPECT_EQ(one.code, 1) << one.err;
  const json only = one.json();
  ASSERT_EQ(only["findings"].size(), 1u) << one.out;
  EXPECT_EQ(only["findings"][0]["container"]["id"], fleet["audit-hostipc"].id);
  const CliResult medium = run_shmbpf("audit --fail-on high --container audit-smallmem" + roots);
  EXPECT_EQ(medium.code, 0) << medium.out << medium.err;
  const CliResult quiet = run_shmbpf("audit --json --container audit-default" + roots);
  EXPECT_EQ(quiet.code, 0) << quiet.out << quiet.err;
  EXPECT_EQ(quiet.json()["findings"], json::array()) << quiet.out;

  const auto done = std::chrono::steady_clock::now();
  const auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  std::printf("audit-docker: containers ready in %lld ms, audits in %lld ms\n",
              static_cast<long long>(ms(started - t0)), static_cast<long long>(ms(done - started)));
}

} // namespace
} // namespace shmbpf::test
