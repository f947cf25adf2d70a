// The audit's rules from hand-made scans: each rule raised by what it is
// about and not by the defaults next to it, and the views' text and JSON.
#include "model/audit.hpp"
#include "views/audit_view.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using nlohmann::json;

constexpr uint32_t kHostMnt = 4026531841;
constexpr uint32_t kHostIpc = 4026531839;
constexpr uint32_t kHostShmDev = (0u << 20) | 25;
const std::string kIdA(64, 'a');
const std::string kIdB(64, 'b');

MountInfo tmpfs_mount(uint32_t id, uint32_t dev, std::string mp, std::string opts,
                      std::string super = "rw") {
  MountInfo m;
  m.mnt_id = id;
  m.parent_id = 1;
  m.dev = dev;
  m.root = "/";
  m.mountpoint = std::move(mp);
  m.fstype = "tmpfs";
  m.source = "tmpfs";
  m.mount_options = std::move(opts);
  m.super_options = std::move(super);
  return m;
}

// A host with a hardened /dev/shm and processes to add containers to.
class AuditScanBuilder {
public:
  AuditScanBuilder() {
    scan_.host = {1, kHostMnt, kHostIpc};
    MountNamespace host;
    host.mntns = kHostMnt;
    host.pid = 1;
    host.mounts.push_back(tmpfs_mount(30, kHostShmDev, "/dev/shm", "rw,nosuid,nodev,noexec"));
    scan_.system.namespaces.push_back(host);
    process(1, "systemd", "/init.scope", kHostMnt, kHostIpc);
  }

  ScannedProcess &process(uint32_t pid, std::string comm, std::string cgroup, uint32_t mntns,
                          uint32_t ipcns) {
    ScannedProcess p;
    p.id.pid = pid;
    p.id.comm = std::move(comm);
    p.id.cgroup_path = std::move(cgroup);
    p.id.mntns = mntns;
    p.id.ipcns = ipcns;
    scan_.system.processes.push_back(p);
    return scan_.system.processes.back();
  }

  // A Docker container with Docker's defaults: its own namespaces and a
  // 64 MiB /dev/shm with nosuid, nodev, noexec.
  ScannedProcess &container(uint32_t pid, const std::string &id, std::string name, uint32_t mntns,
                            uint32_t ipcns, uint32_t shm_dev) {
    scan_.names.emplace_back(id, ContainerName{std::move(name), "", "", ""});
    MountNamespace ns;
    ns.mntns = mntns;
    ns.pid = static_cast<int>(pid);
    ns.mounts.push_back(tmpfs_mount(40 + pid, shm_dev, "/dev/shm",
                                    "rw,nosuid,nodev,noexec,relatime", "rw,size=65536k"));
    scan_.system.namespaces.push_back(ns);
    return process(pid, "sh", "/docker/" + id, mntns, ipcns);
  }

  MountNamespace &ns(uint32_t mntns) {
    for (MountNamespace &n : scan_.system.namespaces)
      if (n.mntns == mntns)
        return n;
    throw std::runtime_error("no such namespace");
  }

  AuditScan &scan() { return scan_; }

private:
  AuditScan scan_;
};

std::vector<Finding> of_rule(const std::vector<Finding> &all, std::string_view rule) {
  std::vector<Finding> out;
  for (const Finding &f : all)
    if (f.rule == rule)
      out.push_back(f);
  return out;
}

TEST(Audit, DockersDefaultsRaiseNothing) {
  AuditScanBuilder b;
  b.container(100, kIdA, "web-1", 5001, 6001, (0u << 20) | 60);
  b.scan().memory_limits.emplace_back(kIdA, MemoryLimit{});
  EXPECT_TRUE(audit_snapshot(b.scan()).empty());
}

TEST(Audit, AContainerInTheHostsIpcNamespace) {
  AuditScanBuilder b;
  b.container(100, kIdA, "web-1", 5001, kHostIpc, (0u << 20) | 60);
  b.process(101, "worker", "/docker/" + kIdA, 5001, kHostIpc);
  const auto f = of_rule(audit_snapshot(b.scan()), "host-ipc-namespace");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::high);
  ASSERT_TRUE(f[0].container);
  EXPECT_EQ(f[0].container->id, kIdA);
  EXPECT_EQ(f[0].container->name, "web-1");
  EXPECT_EQ(f[0].evidence.ipcns, kHostIpc);
  ASSERT_EQ(f[0].evidence.processes.size(), 2u);
  EXPECT_EQ(f[0].evidence.processes[0].pid, 100u);
  EXPECT_EQ(f[0].evidence.processes[1].pid, 101u);
}

TEST(Audit, TwoContainersShareAnIpcNamespaceButAPodsContainersMay) {
  AuditScanBuilder b;
  b.container(100, kIdA, "a", 5001, 6001, (0u << 20) | 60);
  b.container(200, kIdB, "b", 5002, 6001, (0u << 20) | 61);
  auto f = of_rule(audit_snapshot(b.scan()), "shared-ipc-namespace");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].container->name, "a");
  ASSERT_EQ(f[0].evidence.others.size(), 1u);
  EXPECT_EQ(f[0].evidence.others[0].name, "b");
  EXPECT_EQ(f[1].container->name, "b");
  EXPECT_EQ(f[0].evidence.ipcns, 6001u);

  // The same two as containers of one pod: by design.
  AuditScanBuilder pod;
  const std::string uid = "0f0e0d0c-1111-2222-3333-444455556666";
  std::string uid_ = uid;
  std::replace(uid_.begin(), uid_.end(), '-', '_');
  pod.process(100, "app", "/kubepods/burstable/pod" + uid + "/" + kIdA, 5001, 6001);
  pod.process(200, "sidecar", "/kubepods/burstable/pod" + uid + "/" + kIdB, 5002, 6001);
  EXPECT_TRUE(of_rule(audit_snapshot(pod.scan()), "shared-ipc-namespace").empty());
}

TEST(Audit, TheHostsDevShmMountedInAContainer) {
  AuditScanBuilder b;
  b.container(100, kIdA, "web-1", 5001, 6001, (0u << 20) | 60);
  b.ns(5001).mounts.push_back(tmpfs_mount(77, kHostShmDev, "/host-shm", "rw,nosuid,nodev,noexec"));
  const auto f = of_rule(audit_snapshot(b.scan()), "host-shm-mounted");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].container->id, kIdA);
  EXPECT_EQ(f[0].evidence.mountpoint, "/host-shm");
  EXPECT_EQ(f[0].evidence.dev, kHostShmDev);
  EXPECT_EQ(f[0].evidence.mntns, 5001u);
}

TEST(Audit, ASegmentHeldByAContainerAndTheHost) {
  AuditScanBuilder b;
  const uint32_t shm_a = (0u << 20) | 60;
  ScannedProcess &in = b.container(100, kIdA, "web-1", 5001, 6001, shm_a);
  HeldFile h;
  h.dev = shm_a;
  h.ino = 42;
  h.path = "/dev/shm/shared";
  h.via_fd = true;
  in.holdings.push_back(h);
  ScannedProcess &host = b.process(300, "backup", "/system.slice/x.service", kHostMnt, kHostIpc);
  h.path = "/proc/100/root/dev/shm/shared";
  host.holdings.push_back(h);
  // A SysV segment attached in two containers sharing an IPC namespace.
  HeldFile sv;
  sv.kind = HeldKind::sysv;
  sv.dev = 1;
  sv.ino = 7;
  sv.path = "/SYSV00000000";
  sv.via_map = true;
  b.container(200, kIdB, "b", 5002, 6002, (0u << 20) | 61).holdings.push_back(sv);
  b.process(201, "b2", "/docker/" + kIdB, 5002, 6002).holdings.push_back(sv);
  // The same shmid in another IPC namespace is another segment.
  b.process(301, "other", "/", kHostMnt, kHostIpc).holdings.push_back(sv);

  const auto f = of_rule(audit_snapshot(b.scan()), "cross-container-segment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].container->id, kIdA);
  EXPECT_EQ(f[0].evidence.segments, 1u);
  EXPECT_EQ(f[0].evidence.paths, std::vector<std::string>{"/dev/shm/shared"});
  ASSERT_EQ(f[0].evidence.processes.size(), 2u);
  EXPECT_EQ(f[0].evidence.processes[1].pid, 300u);
  EXPECT_FALSE(f[0].evidence.processes[1].container);
  EXPECT_NE(f[0].summary.find("the host"), std::string::npos);
}

TEST(Audit, ASysvSegmentHeldByTwoContainers) {
  AuditScanBuilder b;
  HeldFile sv;
  sv.kind = HeldKind::sysv;
  sv.ino = 7;
  sv.path = "/SYSV00000000";
  b.container(100, kIdA, "a", 5001, 6001, (0u << 20) | 60).holdings.push_back(sv);
  b.container(200, kIdB, "b", 5002, 6001, (0u << 20) | 61).holdings.push_back(sv);
  const auto f = of_rule(audit_snapshot(b.scan()), "cross-container-segment");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].evidence.shmids, std::vector<int32_t>{7});
  EXPECT_EQ(f[0].evidence.others.at(0).name, "b");
  EXPECT_EQ(f[1].evidence.others.at(0).name, "a");
}

TEST(Audit, ShmMountsWithoutABoundOrLargerThanTheMemoryLimit) {
  AuditScanBuilder b;
  b.container(100, kIdA, "nolimit", 5001, 6001, (0u << 20) | 60);
  b.ns(5001).mounts[0].super_options = "rw"; // --tmpfs /dev/shm: the kernel's default size
  b.container(200, kIdB, "big", 5002, 6002, (0u << 20) | 61);
  b.ns(5002).mounts[0].super_options = "rw,size=262144k";
  b.scan().memory_limits.emplace_back(kIdB, MemoryLimit{64u << 20});
  const std::string kIdC(64, 'c');
  b.container(300, kIdC, "fits", 5003, 6003, (0u << 20) | 62);
  b.scan().memory_limits.emplace_back(kIdC, MemoryLimit{128u << 20});

  const auto f = of_rule(audit_snapshot(b.scan()), "unbounded-shm-mount");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].container->name, "nolimit");
  EXPECT_EQ(f[0].evidence.size_limit, std::nullopt);
  EXPECT_EQ(f[1].container->name, "big");
  EXPECT_EQ(f[1].evidence.size_limit, uint64_t{256} << 20);
  EXPECT_EQ(f[1].evidence.memory_limit, uint64_t{64} << 20);
  EXPECT_EQ(f[1].evidence.mountpoint, "/dev/shm");
}

TEST(Audit, AMemoryBackedEmptyDirIsAShmMount) {
  AuditScanBuilder b;
  const uint32_t vol = (0u << 20) | 90;
  b.ns(kHostMnt).mounts.push_back(
      tmpfs_mount(50, vol,
                  "/var/lib/kubelet/pods/0f0e0d0c-1111-2222-3333-444455556666/volumes/"
                  "kubernetes.io~empty-dir/cache",
                  "rw,relatime"));
  b.container(100, kIdA, "trainer", 5001, 6001, (0u << 20) | 60);
  b.ns(5001).mounts.push_back(tmpfs_mount(51, vol, "/cache", "rw,relatime"));
  const auto f = of_rule(audit_snapshot(b.scan()), "unbounded-shm-mount");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence.mountpoint, "/cache");
  // Not a /dev/shm: its options are not judged.
  EXPECT_TRUE(of_rule(audit_snapshot(b.scan()), "shm-mount-options").empty());
}

TEST(Audit, DevShmWithoutNoexecOncePerOwner) {
  AuditScanBuilder b;
  b.ns(kHostMnt).mounts[0].mount_options = "rw,nosuid,nodev,relatime";
  // A service's private namespace shows the same host /dev/shm.
  MountNamespace service = b.ns(kHostMnt);
  service.mntns = 4026532500;
  b.scan().system.namespaces.push_back(service);
  b.process(50, "svc", "/system.slice/svc.service", 4026532500, kHostIpc);
  b.container(100, kIdA, "exec-shm", 5001, 6001, (0u << 20) | 60);
  b.ns(5001).mounts[0].mount_options = "rw,nosuid,nodev,relatime";

  const auto f = of_rule(audit_snapshot(b.scan()), "shm-mount-options");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::low);
  EXPECT_FALSE(f[0].container);
  EXPECT_EQ(f[1].container->name, "exec-shm");
  EXPECT_EQ(f[1].summary, "/dev/shm is mounted without noexec");
}

TEST(Audit, ProgramsFromShmAndFromMemfds) {
  AuditScanBuilder b;
  const uint32_t shm_a = (0u << 20) | 60;
  const uint32_t tmp = (0u << 20) | 70;
  b.container(100, kIdA, "web-1", 5001, 6001, shm_a);
  b.ns(5001).mounts.push_back(tmpfs_mount(90, tmp, "/tmp", "rw"));
  b.process(101, "payload", "/docker/" + kIdA, 5001, 6001);
  b.process(102, "payload", "/docker/" + kIdA, 5001, 6001);
  b.process(103, "tool", "/docker/" + kIdA, 5001, 6001);
  b.process(104, "kworker", "", kHostMnt, kHostIpc);
  b.process(105, "x", "/", kHostMnt, kHostIpc);
  auto &exes = b.scan().exes;
  exes.push_back({101, shm_a, 9, "/dev/shm/payload", true, true});
  exes.push_back({102, shm_a, 9, "/dev/shm/payload", true, true});
  exes.push_back({103, tmp, 10, "/tmp/tool", false, true}); // a tmpfs, but not shared memory
  exes.push_back({100, (8u << 20) | 1, 11, "/bin/busybox", false, false});
  exes.push_back({105, 1, 12, "/memfd:x", true, true});

  const auto all = audit_snapshot(b.scan());
  const auto shm = of_rule(all, "exec-from-shm");
  ASSERT_EQ(shm.size(), 1u);
  EXPECT_EQ(shm[0].container->name, "web-1");
  EXPECT_EQ(shm[0].evidence.paths, std::vector<std::string>{"/dev/shm/payload"});
  EXPECT_EQ(shm[0].evidence.processes.size(), 2u);
  EXPECT_EQ(shm[0].evidence.ino, 9u);
  EXPECT_NE(shm[0].summary.find("(deleted)"), std::string::npos);
  const auto memfd = of_rule(all, "fileless-exec");
  ASSERT_EQ(memfd.size(), 1u);
  EXPECT_FALSE(memfd[0].container);
  EXPECT_EQ(memfd[0].evidence.processes.at(0).pid, 105u);

  const ExecJudge judge(b.scan());
  const auto w = judge.judge(
      {{107, "payload", std::nullopt}, {107, shm_a, 9, "/dev/shm/payload", false, true}});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->rule, "exec-from-shm");
  EXPECT_TRUE(w->watched);
  EXPECT_FALSE(judge.judge({{108, "ls", std::nullopt}, {108, 1, 2, "/bin/ls", false, false}}));
}

TEST(Audit, TheProgramOfAnExecEvent) {
  AuditScanBuilder b;
  const ExecJudge judge(b.scan());
  Event e;
  e.type = EventType::exec;
  e.pid = 9;
  e.fs = 1;
  e.dev = 1; // the kernel's own shm mount: no table shows it
  e.ino = 77;
  e.name = "memfd:payload";
  e.filename = "/proc/self/fd/3";
  ExeFile exe = judge.exe_of(e, std::nullopt);
  EXPECT_EQ(exe.path, "/memfd:payload");
  EXPECT_TRUE(exe.deleted);
  ASSERT_TRUE(judge.judge({{9, "x", std::nullopt}, exe}));
  EXPECT_EQ(judge.judge({{9, "x", std::nullopt}, exe})->rule, "fileless-exec");

  // A file named like a memfd on a mounted tmpfs is a file.
  e.dev = kHostShmDev;
  e.name = "memfd:payload";
  e.filename = "./memfd:payload";
  exe = judge.exe_of(e, ExeFile{9, kHostShmDev, 77, "/dev/shm/memfd:payload", false, true});
  EXPECT_EQ(exe.path, "/dev/shm/memfd:payload");
  EXPECT_EQ(judge.judge({{9, "x", std::nullopt}, exe})->rule, "exec-from-shm");
  // Gone before /proc was read (or another inode there now): the exec's path.
  exe = judge.exe_of(e, ExeFile{9, kHostShmDev, 78, "/bin/other", false, true});
  EXPECT_EQ(exe.path, "./memfd:payload");
}

TEST(Audit, AnExecFromAShmMountMadeAfterTheSnapshot) {
  AuditScanBuilder b;
  ExecJudge judge(b.scan());
  const uint32_t fresh = (0u << 20) | 99;
  const ExecSeen exec{{9, "x", std::nullopt}, {9, fresh, 5, "/dev/shm/x", false, true}};
  EXPECT_FALSE(judge.knows_mount(5009, fresh));
  EXPECT_FALSE(judge.judge(exec));
  MountNamespace ns;
  ns.mntns = 5009;
  ns.mounts.push_back(tmpfs_mount(1, fresh, "/dev/shm", "rw"));
  judge.learn_mounts({ns});
  EXPECT_TRUE(judge.knows_mount(5009, fresh));
  EXPECT_FALSE(judge.knows_mount(kHostMnt, fresh));
  const auto f = judge.judge(exec);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "exec-from-shm");
  EXPECT_EQ(f->evidence.mountpoint, "/dev/shm");
}

// A device number the snapshot showed on a plain tmpfs goes, once that
// mount ends, to a /dev/shm mounted in a new namespace: an exec there is
// not known by its device alone, and the fresh tables replace the old.
TEST(Audit, AnExecFromAShmMountThatReusesAnEndedMountsDevice) {
  AuditScanBuilder b;
  const uint32_t reused = (0u << 20) | 77;
  b.ns(kHostMnt).mounts.push_back(tmpfs_mount(31, reused, "/tmp/scratch", "rw"));
  ExecJudge judge(b.scan());
  EXPECT_TRUE(judge.knows_mount(kHostMnt, reused));
  EXPECT_FALSE(judge.knows_mount(5010, reused));
  const ExecSeen exec{{9, "x", std::nullopt}, {9, reused, 5, "/dev/shm/x", false, true}};
  EXPECT_FALSE(judge.judge(exec)); // a plain tmpfs, as far as the snapshot knew

  MountNamespace host = b.ns(kHostMnt);
  host.mounts.pop_back(); // /tmp/scratch ended
  MountNamespace fresh;
  fresh.mntns = 5010;
  fresh.mounts.push_back(tmpfs_mount(2, reused, "/dev/shm", "rw"));
  judge.learn_mounts({host, fresh});
  EXPECT_TRUE(judge.knows_mount(5010, reused));
  const auto f = judge.judge(exec);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "exec-from-shm");
  EXPECT_EQ(f->evidence.mountpoint, "/dev/shm");

  // And back: the tables show the device on a plain tmpfs again.
  fresh.mounts.back().mountpoint = "/tmp/other";
  judge.learn_mounts({host, fresh});
  EXPECT_FALSE(judge.judge(exec));
}

TEST(Audit, WorldWritableFilesAndSegmentsCappedEvidence) {
  AuditScanBuilder b;
  const uint32_t shm_a = (0u << 20) | 60;
  b.container(100, kIdA, "web-1", 5001, 6001, shm_a);
  ScannedFs fs;
  fs.dev = shm_a;
  fs.mountpoint = "/dev/shm";
  for (uint64_t i = 0; i < 100; ++i) {
    TmpfsFile f;
    f.dev = shm_a;
    f.ino = 1000 + i;
    f.path = "/dev/shm/f" + std::to_string(i);
    f.mode = i < 40 ? 0666 : 0644;
    fs.files.push_back(f);
  }
  b.scan().system.filesystems.push_back(fs);
  ScannedIpc ipc;
  ipc.ipcns = 6001;
  SysvEntry e;
  e.shmid = 5;
  e.mode = 0666;
  ipc.segments.push_back(e);
  e.shmid = 6;
  e.mode = 0600;
  ipc.segments.push_back(e);
  b.scan().system.ipc.push_back(ipc);

  const auto f = of_rule(audit_snapshot(b.scan()), "world-writable-segment");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].container->name, "web-1");
  EXPECT_EQ(f[0].evidence.segments, 40u);
  EXPECT_EQ(f[0].evidence.paths.size(), kEvidenceItems);
  EXPECT_EQ(f[0].evidence.mode, 0666u);
  EXPECT_EQ(f[1].container->name, "web-1");
  EXPECT_EQ(f[1].evidence.shmids, std::vector<int32_t>{5});
  EXPECT_EQ(f[1].evidence.ipcns, 6001u);
  const std::string text = audit_finding_text(f[0]);
  EXPECT_NE(text.find("8 not listed"), std::string::npos) << text;
}

TEST(Audit, OrderedBySeverityThenRule) {
  AuditScanBuilder b;
  b.ns(kHostMnt).mounts[0].mount_options = "rw";
  b.container(100, kIdA, "web-1", 5001, kHostIpc, (0u << 20) | 60);
  const auto all = audit_snapshot(b.scan());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].rule, "host-ipc-namespace");
  EXPECT_EQ(all[1].rule, "shm-mount-options");
}

TEST(Audit, SelectsFindingsByContainer) {
  Finding f;
  f.container = ContainerRef{kIdA, "docker", "", "web-1"};
  EXPECT_TRUE(finding_is_about(f, "web-1"));
  EXPECT_TRUE(finding_is_about(f, kIdA));
  EXPECT_TRUE(finding_is_about(f, "aaaa"));
  EXPECT_FALSE(finding_is_about(f, "aaa")); // too short a prefix
  EXPECT_FALSE(finding_is_about(f, "host"));
  EXPECT_FALSE(finding_is_about(f, "web"));
  f.container.reset();
  EXPECT_TRUE(finding_is_about(f, "host"));
  EXPECT_EQ(parse_severity("medium"), Severity::medium);
  EXPECT_EQ(parse_severity("urgent"), std::nullopt);
}

TEST(AuditView, EscapesWhatAContainerControlsAndWritesTheDocumentedJson) {
  AuditScanBuilder b;
  b.container(100, kIdA, "evil\n\x1b[2Jname", 5001, kHostIpc, (0u << 20) | 60);
  b.scan().system.processes.back().id.comm = "a\x1b]0;t\x07";
  const auto all = audit_snapshot(b.scan());
  const std::string text = audit_text(all);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("HIGH   host-ipc-namespace  evil"), std::string::npos) << text;
  EXPECT_NE(text.find("1 finding: 1 high, 0 medium, 0 low"), std::string::npos) << text;

  const json j = json::parse(audit_json(all, 30.0));
  ASSERT_EQ(j["findings"].size(), 1u);
  const json &f = j["findings"][0];
  EXPECT_EQ(f["rule"], "host-ipc-namespace");
  EXPECT_EQ(f["severity"], "high");
  EXPECT_EQ(f["source"], "snapshot");
  EXPECT_EQ(f["container"]["id"], kIdA);
  // JSON carries the same escaped text as the terminal (views/escape.hpp).
  EXPECT_EQ(f["container"]["name"], "evil\\n\\x1b[2Jname");
  EXPECT_EQ(f["container"]["runtime"], "docker");
  EXPECT_EQ(f["evidence"]["ipcns"], kHostIpc);
  EXPECT_EQ(f["evidence"]["processes"][0]["pid"], 100);
  EXPECT_EQ(f["evidence"]["processes"][0]["container"]["id"], kIdA);
  EXPECT_FALSE(f["evidence"].contains("paths"));
  EXPECT_EQ(j["counts"]["high"], 1);
  EXPECT_EQ(j["counts"]["low"], 0);
  EXPECT_EQ(j["watch_seconds"], 30.0);
  EXPECT_TRUE(json::parse(audit_json({}, std::nullopt))["watch_seconds"].is_null());
  EXPECT_EQ(audit_text({}), "no findings\n");
}

} // namespace
} // namespace shmbpf
