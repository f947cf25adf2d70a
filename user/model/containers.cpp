#include "model/containers.hpp"

#include <algorithm>

namespace shmbpf {
namespace {

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool is_container_id(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), is_lower_hex);
}

// systemd escapes the uid's dashes as underscores in slice names. Pod uids
// are UUIDs, or 32-hex config hashes for static pods.
std::optional<std::string> pod_uid(std::string_view s) {
  std::string out;
  size_t digits = 0;
  for (char c : s) {
    if (c == '_' || c == '-') {
      out += '-';
    } else if (is_lower_hex(c)) {
      out += c;
      ++digits;
    } else {
      return std::nullopt;
    }
  }
  if (digits != 32)
    return std::nullopt;
  return out;
}

struct RuntimeScope {
  std::string_view prefix;
  std::string_view runtime;
};

// The conmon scopes (crio-conmon-*, libpod-conmon-*) fail the 64-hex test.
constexpr RuntimeScope kScopes[] = {
    {"docker-", "docker"},
    {"cri-containerd-", "containerd"},
    {"crio-", "cri-o"},
    {"libpod-", "podman"},
};

std::string_view without_suffix(std::string_view s, std::string_view suffix) {
  return s.ends_with(suffix) ? s.substr(0, s.size() - suffix.size()) : s;
}

} // namespace

std::optional<ContainerRef> container_from_cgroup_path(std::string_view path) {
  std::string id, runtime, pod;
  bool in_kubepods = false; // below a "kubepods*" component
  bool after_pod = false;   // the previous component was a cgroupfs "pod<uid>"
  std::string_view prev;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos)
      j = path.size();
    std::string_view c = path.substr(i, j - i);
    i = j + 1;
    if (c.empty())
      continue;
    bool parent_is_pod = after_pod;
    after_pod = false;

    // A pod found below an earlier match (Kubernetes inside a container, as
    // kind does it) is the more specific answer: forget the outer container.
    auto set_pod = [&](std::string uid) {
      pod = std::move(uid);
      id.clear();
      runtime.clear();
    };

    if (c.starts_with("kubepods")) {
      in_kubepods = true;
      std::string_view body = without_suffix(c, ".slice");
      if (size_t p = body.find("-pod"); body.size() != c.size() && p != std::string_view::npos)
        if (auto uid = pod_uid(body.substr(p + 4)))
          set_pod(std::move(*uid));
    } else if (in_kubepods && c.starts_with("pod") && !c.ends_with(".slice")) {
      if (auto uid = pod_uid(c.substr(3))) {
        set_pod(std::move(*uid));
        after_pod = true;
      }
    } else if (parent_is_pod && is_container_id(c)) {
      id = c; // cgroupfs driver: the runtime is not named in the path
      runtime = "kubernetes";
    } else if (prev == "docker" && is_container_id(c)) {
      id = c;
      runtime = "docker";
    } else {
      for (const auto &scope : kScopes) {
        if (!c.starts_with(scope.prefix))
          continue;
        std::string_view rest = without_suffix(c.substr(scope.prefix.size()), ".scope");
        if (is_container_id(rest)) {
          id = rest;
          runtime = scope.runtime;
        }
        break;
      }
    }
    prev = c;
  }
  if (!id.empty())
    return ContainerRef{std::move(id), std::move(runtime), std::move(pod)};
  if (!pod.empty())
    return ContainerRef{pod, "kubernetes", pod};
  return std::nullopt;
}

std::optional<std::string> pod_uid_of_volume(std::string_view mountpoint) {
  constexpr std::string_view pods = "/pods/";
  constexpr std::string_view volume = "/volumes/kubernetes.io~empty-dir/";
  const size_t p = mountpoint.rfind(pods);
  if (p == std::string_view::npos)
    return std::nullopt;
  const std::string_view rest = mountpoint.substr(p + pods.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || !rest.substr(slash).starts_with(volume))
    return std::nullopt;
  const std::string_view name = rest.substr(slash + volume.size());
  if (name.empty() || name.find('/') != std::string_view::npos)
    return std::nullopt;
  // Dashes only: a uid spelt with underscores is a slice name, not a path.
  if (rest.substr(0, slash).find('_') != std::string_view::npos)
    return std::nullopt;
  return pod_uid(rest.substr(0, slash));
}

namespace {
constexpr std::string_view kRuntimeSchemes[] = {"docker", "containerd", "cri-o", "podman"};
} // namespace

std::string runtime_container_id(const ContainerRef &c) {
  if (c.id.empty() || (c.runtime == "kubernetes" && c.id == c.pod_uid))
    return "";
  for (std::string_view scheme : kRuntimeSchemes)
    if (c.runtime == scheme)
      return std::string(scheme) + "://" + c.id;
  return c.id;
}

std::string_view without_runtime_scheme(std::string_view id) {
  for (std::string_view scheme : kRuntimeSchemes)
    if (id.size() > scheme.size() + 3 && id.starts_with(scheme) &&
        id.substr(scheme.size(), 3) == "://")
      return id.substr(scheme.size() + 3);
  return id;
}

} // namespace shmbpf
