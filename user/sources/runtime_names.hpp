// Container names from what the runtimes keep on disk, without asking a
// daemon or an API server: Docker's config.v2.json, the OCI config.json
// that containerd (CRI) and CRI-O write per task with Kubernetes'
// annotations, containers/storage's containers.json (Podman, CRI-O) and
// kubelet's /var/log/pods/<namespace>_<pod>_<uid> directories.
//
// Everything read here is under a container owner's control (names,
// labels, annotations, even the files themselves): parsers are pure and
// bounded, and the reader opens files without following symlinks, refuses
// anything but a regular file of at most kRuntimeFileMaxBytes, and reads
// only below the configured roots.
#pragma once

#include "facts/container_name.hpp"
#include "facts/result.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

constexpr size_t kRuntimeFileMaxBytes = 1 << 20;

// A runtime's state directory as a running daemon tells it
// (sources/runtime_discovery).
struct FoundRoot {
  std::string runtime; // as --runtime-root names it: docker, containerd, cri-o, podman, pod-logs
  std::string dir;     // where it is read from
  std::string how;     // what said so: "dockerd (pid 812) /etc/docker/daemon.json data-root"
  bool operator==(const FoundRoot &) const = default;
};

// Where each runtime keeps its state: its default, or what `--runtime-root
// RUNTIME=DIR` gave; and what the running daemons told, which is looked in
// first for a runtime --runtime-root did not set.
struct RuntimeRoots {
  std::string docker = "/var/lib/docker";     // containers/<id>/config.v2.json
  std::string containerd = "/run/containerd"; // io.containerd.runtime.v2.task/<ns>/<id>/config.json
  std::string crio = "/run/containers/storage"; // overlay-containers/<id>/userdata/config.json
  std::string podman = "/var/lib/containers/storage"; // overlay-containers/containers.json
  std::string pod_logs = "/var/log/pods";             // <namespace>_<pod>_<uid>/
  std::vector<std::string> given;                     // the runtimes --runtime-root set
  std::vector<FoundRoot> found;

  // Every directory to look in for runtime, in order: those found (unless
  // given), then the default or the given one; each once.
  std::vector<std::string> dirs(std::string_view runtime) const;
};

// The names --runtime-root accepts, for its help text and errors.
constexpr std::string_view kRuntimeRootNames = "docker, containerd, cri-o, podman, pod-logs";

// Applies one "RUNTIME=DIR" to roots; an error names what is wrong.
Result<void> set_runtime_root(RuntimeRoots &roots, std::string_view spec);

// Docker's containers/<id>/config.v2.json: "Name" without its leading '/',
// and the io.kubernetes.* labels dockershim set.
std::optional<ContainerName> parse_docker_config(std::string_view text);
// An OCI runtime config.json's annotations, as containerd's CRI plugin
// (io.kubernetes.cri.*) and CRI-O (io.kubernetes.{container,pod}.*) write them.
std::optional<ContainerName> parse_oci_annotations(std::string_view text);
// containers/storage's containers.json: the first of the names of the entry
// whose id is id.
std::optional<ContainerName> parse_storage_containers(std::string_view text, std::string_view id);
// kubelet's pod log directory name "<namespace>_<pod>_<uid>", if it is
// the pod uid's.
std::optional<ContainerName> parse_pod_log_dir(std::string_view dir, std::string_view pod_uid);

// What the files say about a container the cgroup path named (runtime and
// id as ContainerRef has them); empty when nothing was found. Runtime
// "kubernetes" (a cgroupfs-driver pod, runtime not in the path) tries every
// runtime. A pod whose files gave no pod name falls back to the pod log
// directories.
ContainerName read_container_name(const RuntimeRoots &roots, std::string_view runtime,
                                  std::string_view id, std::string_view pod_uid);

// The file at root/rel (rel: '/'-separated names, none "." or ".."),
// opened component by component with O_NOFOLLOW: nullopt for a symlink
// anywhere below root, anything but a regular file, or more than max bytes.
std::optional<std::string> read_file_below(const std::string &root, std::string_view rel,
                                           size_t max = kRuntimeFileMaxBytes);

} // namespace shmbpf
