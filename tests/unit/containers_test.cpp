#include "model/containers.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

const std::string kId = "4f6b1c8a2d3e5f7091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7a8";
const std::string kPodUnderscores = "1234abcd_5678_90ab_cdef_1234567890ab";
const std::string kPod = "1234abcd-5678-90ab-cdef-1234567890ab";

void expect_container(std::string_view path, const std::string &id, const std::string &runtime,
                      const std::string &pod = "") {
  auto c = container_from_cgroup_path(path);
  ASSERT_TRUE(c.has_value()) << path;
  EXPECT_EQ(c->id, id) << path;
  EXPECT_EQ(c->runtime, runtime) << path;
  EXPECT_EQ(c->pod_uid, pod) << path;
}

TEST(Containers, DockerSystemdScope) {
  expect_container("/system.slice/docker-" + kId + ".scope", kId, "docker");
}

TEST(Containers, DockerCgroupfs) { expect_container("/docker/" + kId, kId, "docker"); }

TEST(Containers, ContainerdInBurstablePod) {
  expect_container("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                       kPodUnderscores + ".slice/cri-containerd-" + kId + ".scope",
                   kId, "containerd", kPod);
}

TEST(Containers, CrioInBestEffortPod) {
  expect_container("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
                       kPodUnderscores + ".slice/crio-" + kId + ".scope",
                   kId, "cri-o", kPod);
}

TEST(Containers, CrioConmonIsNotAContainer) {
  EXPECT_FALSE(container_from_cgroup_path("/system.slice/crio-conmon-" + kId + ".scope"));
  // Inside a pod it is the pod's, not a container's.
  expect_container("/kubepods.slice/kubepods-pod" + kPodUnderscores + ".slice/crio-conmon-" + kId +
                       ".scope",
                   kPod, "kubernetes", kPod);
}

TEST(Containers, Podman) {
  expect_container("/machine.slice/libpod-" + kId + ".scope", kId, "podman");
  expect_container("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId +
                       ".scope/container",
                   kId, "podman");
  EXPECT_FALSE(container_from_cgroup_path("/machine.slice/libpod-conmon-" + kId + ".scope"));
}

TEST(Containers, KubepodsCgroupfsDriver) {
  expect_container("/kubepods/burstable/pod" + kPod + "/" + kId, kId, "kubernetes", kPod);
  expect_container("/kubepods/pod" + kPod + "/" + kId, kId, "kubernetes", kPod);
}

TEST(Containers, PodWithoutRuntimeScope) {
  expect_container("/kubepods.slice/kubepods-pod" + kPodUnderscores + ".slice", kPod, "kubernetes",
                   kPod);
}

TEST(Containers, DockerScopeInsidePodKeepsPodUid) {
  expect_container("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                       kPodUnderscores + ".slice/docker-" + kId + ".scope",
                   kId, "docker", kPod);
}

TEST(Containers, PodNestedInContainerWins) {
  // kind: a Kubernetes node is itself a docker container.
  const std::string inner = std::string(64, 'b');
  expect_container("/system.slice/docker-" + kId + ".scope/kubepods/besteffort/pod" + kPod + "/" +
                       inner,
                   inner, "kubernetes", kPod);
}

TEST(Containers, HostPaths) {
  for (std::string p :
       {"", "/", "/init.scope", "/system.slice/sshd.service", "/system.slice/docker.service",
        "/system.slice/containerd.service", "/user.slice/user-1000.slice/session-3.scope",
        "/system.slice/docker-abc.scope", "/kubepods.slice",
        "/kubepods.slice/kubepods-burstable.slice"})
    EXPECT_FALSE(container_from_cgroup_path(p)) << p;
  EXPECT_FALSE(container_from_cgroup_path("/docker/" + kId.substr(1)));
  std::string upper = kId;
  upper[0] = 'F';
  EXPECT_FALSE(container_from_cgroup_path("/system.slice/docker-" + upper + ".scope"));
}

TEST(Containers, PodUidOfEmptyDirVolume) {
  EXPECT_EQ(
      pod_uid_of_volume("/var/lib/kubelet/pods/" + kPod + "/volumes/kubernetes.io~empty-dir/cache"),
      kPod);
  // A kubelet with another root directory.
  EXPECT_EQ(pod_uid_of_volume("/data/kubelet/pods/" + kPod + "/volumes/kubernetes.io~empty-dir/x"),
            kPod);
  for (const std::string &other :
       {"/var/lib/kubelet/pods/" + kPod + "/volumes/kubernetes.io~secret/token",
        "/var/lib/kubelet/pods/" + kPod + "/volumes/kubernetes.io~empty-dir/",
        "/var/lib/kubelet/pods/" + kPod + "/volumes/kubernetes.io~empty-dir/a/b",
        "/var/lib/kubelet/pods/" + kPodUnderscores + "/volumes/kubernetes.io~empty-dir/a",
        std::string("/var/lib/kubelet/pods/not-a-uid/volumes/kubernetes.io~empty-dir/a"),
        std::string("/dev/shm"), std::string("/run/pods/")})
    EXPECT_FALSE(pod_uid_of_volume(other)) << other;
}

// The container_id label: kube-state-metrics' "<runtime>://<id>".
TEST(Containers, RuntimeContainerIdAsKubernetesWritesIt) {
  const auto of = [](std::string_view path) {
    return runtime_container_id(container_from_cgroup_path(path).value());
  };
  EXPECT_EQ(of("/system.slice/docker-" + kId + ".scope"), "docker://" + kId);
  EXPECT_EQ(of("/kubepods.slice/kubepods-pod" + kPodUnderscores + ".slice/cri-containerd-" + kId +
               ".scope"),
            "containerd://" + kId);
  EXPECT_EQ(of("/kubepods.slice/kubepods-pod" + kPodUnderscores + ".slice/crio-" + kId + ".scope"),
            "cri-o://" + kId);
  EXPECT_EQ(of("/machine.slice/libpod-" + kId + ".scope"), "podman://" + kId);
  // The cgroupfs driver does not name the runtime: the bare id.
  EXPECT_EQ(of("/kubepods/besteffort/pod" + kPod + "/" + kId), kId);
  // A pod with no container (its emptyDir's files): no container id.
  EXPECT_EQ(of("/kubepods/besteffort/pod" + kPod), "");
  EXPECT_EQ(runtime_container_id(ContainerRef{}), "");
}

TEST(Containers, ALabelsSchemeComesOffWhereAnIdIsAsked) {
  EXPECT_EQ(without_runtime_scheme("containerd://" + kId), kId);
  EXPECT_EQ(without_runtime_scheme("cri-o://3f2a"), "3f2a");
  EXPECT_EQ(without_runtime_scheme("docker://"), "docker://"); // nothing after it
  EXPECT_EQ(without_runtime_scheme("rkt://3f2a"), "rkt://3f2a");
  EXPECT_EQ(without_runtime_scheme("web-1"), "web-1");
}

} // namespace
} // namespace shmbpf
