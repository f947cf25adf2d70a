// Which container (if any) a cgroup v2 path belongs to. Pure string work: the
// engine feeds it paths that sources read from cgroupfs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

struct ContainerRef {
  std::string id;      // full container id (views shorten); a bare pod's uid for "kubernetes"
  std::string runtime; // "docker", "containerd", "cri-o", "podman" or "kubernetes"
  std::string pod_uid; // Kubernetes pod uid with dashes, "" outside Kubernetes
  // From the runtime's files (Engine::set_container_name), "" until found.
  std::string name = {};          // the runtime's name for it (Kubernetes: the container's name)
  std::string pod = {};           // Kubernetes pod name
  std::string pod_namespace = {}; // Kubernetes namespace
  bool operator==(const ContainerRef &) const = default;
};

// Recognises, anywhere in the path (the innermost match wins):
//   docker-<64hex>.scope, /docker/<64hex>           -> docker
//   cri-containerd-<64hex>.scope                    -> containerd
//   crio-<64hex>.scope (not crio-conmon-*)          -> cri-o
//   libpod-<64hex>.scope (not libpod-conmon-*)      -> podman
// and the pod uid of kubepods paths, systemd style
// (kubepods-<qos>-pod<uid_with_underscores>.slice) or cgroupfs style
// (/kubepods/<qos>/pod<uid>/<64hex>). A pod with no recognised runtime scope
// gives runtime "kubernetes" with the bare container id if there is one, else
// the pod uid as id. Anything else is the host: nullopt.
std::optional<ContainerRef> container_from_cgroup_path(std::string_view path);

// The container's id as Kubernetes writes it in a pod's status
// (containerID) and kube-state-metrics in its container_id label:
// "<runtime>://<id>", the runtime as the CRI names itself ("docker",
// "containerd", "cri-o"; "podman" alike). The bare id where the cgroup path
// does not name the runtime (the cgroupfs driver's pods: runtime
// "kubernetes"); "" for the host and for a pod with no container (id is
// then its uid).
std::string runtime_container_id(const ContainerRef &c);

// id with a leading "<runtime>://" of the ones above taken off, so that a
// container_id label's value works where an id is asked for.
std::string_view without_runtime_scheme(std::string_view id);

// The pod uid of a Kubernetes emptyDir volume as the host mounts it:
// <kubelet root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name> (a
// memory-backed one is a tmpfs). nullopt for any other path.
std::optional<std::string> pod_uid_of_volume(std::string_view mountpoint);

} // namespace shmbpf
