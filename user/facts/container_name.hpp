// What a container is called, as its runtime wrote it on disk: plain data
// that sources read and the model attaches to the container's id.
#pragma once

#include <string>

namespace shmbpf {

struct ContainerName {
  std::string name;          // the runtime's name ("web-1"; Kubernetes: the container's name)
  std::string pod;           // Kubernetes pod name, "" outside Kubernetes
  std::string pod_namespace; // Kubernetes namespace
  std::string pod_uid;       // as the runtime recorded it; the cgroup's uid is preferred
  bool empty() const { return name.empty() && pod.empty() && pod_namespace.empty(); }
  bool operator==(const ContainerName &) const = default;
};

} // namespace shmbpf
