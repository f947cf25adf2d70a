// The audit on what Docker cannot produce here: Kubernetes pods under
// containerd (systemd cgroup driver) and CRI-O (cgroupfs driver), their
// runtimes' files laid out in a directory as on a node, and a memory-backed
// emptyDir. gather_audit reads the names from those files; the findings
// must carry the pod, its namespace and the container's name, and two
// containers of one pod sharing their IPC namespace must not be a finding.
#include "live/audit_gather.hpp"
#include "model/audit.hpp"
#include "sources/namespaces.hpp"

#include "unit/runtime_dir.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shmbpf {
namespace {

namespace fs = std::filesystem;

const std::string kPodA = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
const std::string kPodB = "11111111-2222-3333-4444-555555555555";
const std::string kApp(64, 'a');
const std::string kSidecar(64, 'b');
const std::string kAgent(64, 'c');

std::string underscored(std::string uid) {
  std::replace(uid.begin(), uid.end(), '-', '_');
  return uid;
}

// containerd's CRI plugin writes the pod's names into each task's bundle.
std::string containerd_config(const std::string &name, const std::string &pod,
                              const std::string &ns, const std::string &uid) {
  return R"({"ociVersion":"1.1.0","annotations":{"io.kubernetes.cri.container-type":"container",)"
         R"("io.kubernetes.cri.container-name":")" +
         name + R"(","io.kubernetes.cri.sandbox-name":")" + pod +
         R"(","io.kubernetes.cri.sandbox-namespace":")" + ns +
         R"(","io.kubernetes.cri.sandbox-uid":")" + uid + R"("}})";
}

std::string crio_config(const std::string &name, const std::string &pod, const std::string &ns,
                        const std::string &uid) {
  return R"({"ociVersion":"1.0.2","annotations":{"io.kubernetes.container.name":")" + name +
         R"(","io.kubernetes.pod.name":")" + pod + R"(","io.kubernetes.pod.namespace":")" + ns +
         R"(","io.kubernetes.pod.uid":")" + uid + R"("}})";
}

using Node = RuntimeDir;

MountInfo tmpfs(uint32_t id, uint32_t dev, std::string mp, std::string super) {
  MountInfo m;
  m.mnt_id = id;
  m.dev = dev;
  m.root = "/";
  m.mountpoint = std::move(mp);
  m.fstype = "tmpfs";
  m.source = "tmpfs";
  m.mount_options = "rw,nosuid,nodev,noexec,relatime";
  m.super_options = std::move(super);
  return m;
}

// Processes that do not exist (pids above any pid_max): gather_audit reads
// no program or memory limit for them, only the runtimes' files.
ScannedProcess process(uint32_t pid, const std::string &cgroup, uint32_t mntns, uint32_t ipcns) {
  ScannedProcess p;
  p.id.pid = pid;
  p.id.comm = "app";
  p.id.cgroup_path = cgroup;
  p.id.mntns = mntns;
  p.id.ipcns = ipcns;
  return p;
}

TEST(AuditLayouts, KubernetesPodsUnderContainerdAndCrio) {
  Node node;
  node.write(node.root / "containerd/io.containerd.runtime.v2.task/k8s.io" / kApp / "config.json",
             containerd_config("app", "trainer-0", "ml", kPodA));
  node.write(node.root / "containerd/io.containerd.runtime.v2.task/k8s.io" / kSidecar /
                 "config.json",
             containerd_config("sidecar", "trainer-0", "ml", kPodA));
  node.write(node.root / "crio/overlay-containers" / kAgent / "userdata/config.json",
             crio_config("agent", "node-agent-x7", "kube-system", kPodB));

  const HostNamespaces host = read_host_namespaces();
  ASSERT_NE(host.ipcns, 0u);
  const std::string pod_a = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                            underscored(kPodA) + ".slice/cri-containerd-";
  SystemScan sys;
  // The pod's two containers: one IPC namespace (the pod's), one mount
  // namespace each, and a memory-backed emptyDir the kubelet mounted
  // without a size.
  const uint32_t empty_dir = (0u << 20) | 300;
  MountNamespace host_ns;
  host_ns.mntns = host.mntns;
  host_ns.mounts.push_back(
      tmpfs(10, empty_dir,
            "/var/lib/kubelet/pods/" + kPodA + "/volumes/kubernetes.io~empty-dir/cache", "rw"));
  sys.namespaces.push_back(host_ns);
  for (uint32_t ns : {7001u, 7002u}) {
    MountNamespace c;
    c.mntns = ns;
    c.mounts.push_back(tmpfs(20 + ns, (0u << 20) | (ns - 6700), "/dev/shm", "rw,size=65536k"));
    c.mounts.push_back(tmpfs(40 + ns, empty_dir, "/cache", "rw"));
    sys.namespaces.push_back(c);
  }
  sys.processes.push_back(process(4000001, pod_a + kApp + ".scope", 7001, 8001));
  sys.processes.push_back(process(4000002, pod_a + kSidecar + ".scope", 7002, 8001));
  // A node agent with hostIPC, cgroupfs driver: the path names no runtime.
  sys.processes.push_back(
      process(4000003, "/kubepods/besteffort/pod" + kPodB + "/" + kAgent, 7003, host.ipcns));

  const AuditScan scan = gather_audit(node.roots, sys);
  const std::vector<Finding> findings = audit_snapshot(scan);

  auto find = [&](std::string_view rule, const std::string &id) -> const Finding * {
    for (const Finding &f : findings)
      if (f.rule == rule && f.container && f.container->id == id)
        return &f;
    return nullptr;
  };
  for (const Finding &f : findings)
    EXPECT_NE(f.rule, "shared-ipc-namespace") << "one pod's containers: " << f.summary;

  const Finding *host_ipc = find("host-ipc-namespace", kAgent);
  ASSERT_NE(host_ipc, nullptr);
  EXPECT_EQ(host_ipc->container->name, "agent");
  EXPECT_EQ(host_ipc->container->pod, "node-agent-x7");
  EXPECT_EQ(host_ipc->container->pod_namespace, "kube-system");
  EXPECT_EQ(host_ipc->container->pod_uid, kPodB);

  for (const std::string &id : {kApp, kSidecar}) {
    const Finding *f = find("unbounded-shm-mount", id);
    ASSERT_NE(f, nullptr) << id;
    EXPECT_EQ(f->evidence.mountpoint, "/cache");
    EXPECT_EQ(f->container->pod, "trainer-0");
    EXPECT_EQ(f->container->pod_namespace, "ml");
    EXPECT_EQ(f->container->runtime, "containerd");
  }
  EXPECT_EQ(find("unbounded-shm-mount", kApp)->container->name, "app");
  EXPECT_EQ(find("unbounded-shm-mount", kSidecar)->container->name, "sidecar");
  // Their own /dev/shm has a size and the hardened options: nothing there.
  EXPECT_EQ(find("shm-mount-options", kApp), nullptr);
}

} // namespace
} // namespace shmbpf
