#include "sources/runtime_names.hpp"

#include "sources/fd.hpp"

#include "sources/json_value.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace shmbpf {

Result<void> set_runtime_root(RuntimeRoots &roots, std::string_view spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string_view::npos)
    return Error{"expected RUNTIME=DIR, got '" + std::string(spec) + "'"};
  const std::string_view runtime = spec.substr(0, eq);
  const std::string_view dir = spec.substr(eq + 1);
  if (dir.empty() || dir.front() != '/')
    return Error{"the directory of " + std::string(runtime) + " must be an absolute path"};
  std::string *slot = runtime == "docker"       ? &roots.docker
                      : runtime == "containerd" ? &roots.containerd
                      : runtime == "cri-o"      ? &roots.crio
                      : runtime == "podman"     ? &roots.podman
                      : runtime == "pod-logs"   ? &roots.pod_logs
                                                : nullptr;
  if (!slot)
    return Error{"unknown runtime '" + std::string(runtime) + "' (one of " +
                 std::string(kRuntimeRootNames) + ")"};
  *slot = dir;
  if (std::find(roots.given.begin(), roots.given.end(), runtime) == roots.given.end())
    roots.given.emplace_back(runtime);
  return {};
}

std::vector<std::string> RuntimeRoots::dirs(std::string_view runtime) const {
  const std::string *own = runtime == "docker"       ? &docker
                           : runtime == "containerd" ? &containerd
                           : runtime == "cri-o"      ? &crio
                           : runtime == "podman"     ? &podman
                           : runtime == "pod-logs"   ? &pod_logs
                                                     : nullptr;
  std::vector<std::string> out;
  if (!own)
    return out;
  if (std::find(given.begin(), given.end(), runtime) == given.end())
    for (const FoundRoot &f : found)
      if (f.runtime == runtime && std::find(out.begin(), out.end(), f.dir) == out.end())
        out.push_back(f.dir);
  if (std::find(out.begin(), out.end(), *own) == out.end())
    out.push_back(*own);
  return out;
}

namespace {

std::optional<ContainerName> nonempty(ContainerName n) {
  if (n.empty())
    return std::nullopt;
  return n;
}

// Kubernetes' keys, in labels (dockershim) or annotations (CRI-O).
void kubernetes_keys(const JsonValue &map, ContainerName &n) {
  if (auto v = map.str("io.kubernetes.container.name"); !v.empty())
    n.name = v;
  if (auto v = map.str("io.kubernetes.pod.name"); !v.empty())
    n.pod = v;
  if (auto v = map.str("io.kubernetes.pod.namespace"); !v.empty())
    n.pod_namespace = v;
  if (auto v = map.str("io.kubernetes.pod.uid"); !v.empty())
    n.pod_uid = v;
}

} // namespace

std::optional<ContainerName> parse_docker_config(std::string_view text) {
  auto doc = parse_json(text);
  if (!doc || doc->type != JsonValue::Type::object)
    return std::nullopt;
  ContainerName n;
  n.name = doc->str("Name");
  if (n.name.starts_with('/'))
    n.name.erase(0, 1);
  if (const JsonValue *config = doc->get("Config"))
    if (const JsonValue *labels = config->get("Labels"))
      kubernetes_keys(*labels, n);
  return nonempty(std::move(n));
}

std::optional<ContainerName> parse_oci_annotations(std::string_view text) {
  auto doc = parse_json(text);
  if (!doc || doc->type != JsonValue::Type::object)
    return std::nullopt;
  const JsonValue *a = doc->get("annotations");
  if (!a)
    return std::nullopt;
  ContainerName n;
  kubernetes_keys(*a, n);
  // containerd's CRI plugin; a sandbox (the pod's pause container) has no
  // container name.
  if (auto v = a->str("io.kubernetes.cri.container-name"); !v.empty())
    n.name = v;
  if (auto v = a->str("io.kubernetes.cri.sandbox-name"); !v.empty())
    n.pod = v;
  if (auto v = a->str("io.kubernetes.cri.sandbox-namespace"); !v.empty())
    n.pod_namespace = v;
  if (auto v = a->str("io.kubernetes.cri.sandbox-uid"); !v.empty())
    n.pod_uid = v;
  return nonempty(std::move(n));
}

std::optional<ContainerName> parse_storage_containers(std::string_view text, std::string_view id) {
  auto doc = parse_json(text);
  if (!doc || doc->type != JsonValue::Type::array)
    return std::nullopt;
  for (const JsonValue &c : doc->items) {
    if (c.str("id") != id)
      continue;
    const JsonValue *names = c.get("names");
    if (!names || names->items.empty() || names->items[0].type != JsonValue::Type::string)
      return std::nullopt;
    return nonempty(ContainerName{names->items[0].text, "", "", ""});
  }
  return std::nullopt;
}

std::optional<ContainerName> parse_pod_log_dir(std::string_view dir, std::string_view pod_uid) {
  // Namespaces and pod names are DNS names: no '_' in either.
  if (pod_uid.empty() || dir.size() <= pod_uid.size() + 1 || !dir.ends_with(pod_uid) ||
      dir[dir.size() - pod_uid.size() - 1] != '_')
    return std::nullopt;
  const std::string_view rest = dir.substr(0, dir.size() - pod_uid.size() - 1);
  const size_t sep = rest.find('_');
  if (sep == 0 || sep == std::string_view::npos || sep + 1 == rest.size() ||
      rest.find('_', sep + 1) != std::string_view::npos)
    return std::nullopt;
  return ContainerName{"", std::string(rest.substr(sep + 1)), std::string(rest.substr(0, sep)),
                       std::string(pod_uid)};
}

namespace {

bool plain_name(std::string_view c) {
  return !c.empty() && c != "." && c != ".." && c.find('/') == std::string_view::npos &&
         c.find('\0') == std::string_view::npos;
}

// root (which may itself be a symlink: the administrator chose it), then
// each directory of rel without following symlinks.
int open_dir_below(const std::string &root, std::string_view rel) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool more = !rel.empty();
  while (fd >= 0 && more) {
    const size_t slash = rel.find('/');
    const std::string c(rel.substr(0, slash));
    more = slash != std::string_view::npos; // "a/" has an empty last name: refused
    rel = more ? rel.substr(slash + 1) : std::string_view();
    if (!plain_name(c)) {
      ::close(fd);
      return -1;
    }
    const int next = ::openat(fd, c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    ::close(fd);
    fd = next;
  }
  return fd;
}

// The names in a directory below root, at most max of them.
std::vector<std::string> list_below(const std::string &root, std::string_view rel, size_t max) {
  std::vector<std::string> out;
  const int fd = open_dir_below(root, rel);
  if (fd < 0)
    return out;
  std::unique_ptr<DIR, int (*)(DIR *)> d(::fdopendir(fd), ::closedir);
  if (!d) {
    ::close(fd);
    return out;
  }
  while (out.size() < max) {
    const dirent *e = ::readdir(d.get());
    if (!e)
      break;
    if (plain_name(e->d_name))
      out.emplace_back(e->d_name);
  }
  return out;
}

std::optional<ContainerName> read_docker(const RuntimeRoots &roots, std::string_view id) {
  const std::string rel = "containers/" + std::string(id) + "/config.v2.json";
  for (const std::string &root : roots.dirs("docker"))
    if (auto text = read_file_below(root, rel))
      return parse_docker_config(*text);
  return std::nullopt;
}

// containerd keeps a task's bundle under its namespace ("k8s.io" for CRI,
// "moby" for Docker's tasks, "default" for ctr).
std::optional<ContainerName> read_containerd(const RuntimeRoots &roots, std::string_view id) {
  constexpr std::string_view tasks = "io.containerd.runtime.v2.task";
  for (const std::string &root : roots.dirs("containerd"))
    for (const std::string &ns : list_below(root, tasks, 64)) {
      const std::string rel =
          std::string(tasks) + "/" + ns + "/" + std::string(id) + "/config.json";
      if (auto text = read_file_below(root, rel))
        return parse_oci_annotations(*text);
    }
  return std::nullopt;
}

std::optional<ContainerName> read_crio(const RuntimeRoots &roots, std::string_view id) {
  const std::string rel = "overlay-containers/" + std::string(id) + "/userdata/config.json";
  for (const std::string &root : roots.dirs("cri-o"))
    if (auto text = read_file_below(root, rel))
      return parse_oci_annotations(*text);
  return std::nullopt;
}

std::optional<ContainerName> read_podman(const RuntimeRoots &roots, std::string_view id) {
  for (const std::string &root : roots.dirs("podman"))
    if (auto text = read_file_below(root, "overlay-containers/containers.json"))
      if (auto n = parse_storage_containers(*text, id))
        return n;
  return std::nullopt;
}

std::optional<ContainerName> read_pod_logs(const RuntimeRoots &roots, std::string_view pod_uid) {
  for (const std::string &root : roots.dirs("pod-logs"))
    for (const std::string &dir : list_below(root, "", 4096))
      if (auto n = parse_pod_log_dir(dir, pod_uid))
        return n;
  return std::nullopt;
}

} // namespace

std::optional<std::string> read_file_below(const std::string &root, std::string_view rel,
                                           size_t max) {
  const size_t slash = rel.rfind('/');
  const std::string_view dir = slash == std::string_view::npos ? "" : rel.substr(0, slash);
  const std::string file(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
  if (!plain_name(file))
    return std::nullopt;
  Fd d(open_dir_below(root, dir));
  if (d.get() < 0)
    return std::nullopt;
  // O_NONBLOCK: a FIFO planted in the file's place must not hang the scan.
  Fd f(::openat(d.get(), file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (f.get() < 0 || ::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > max)
    return std::nullopt;
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(f.get(), out.data() + got, out.size() - got);
    if (n < 0)
      return std::nullopt;
    if (n == 0)
      break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

ContainerName read_container_name(const RuntimeRoots &roots, std::string_view runtime,
                                  std::string_view id, std::string_view pod_uid) {
  std::optional<ContainerName> n;
  const bool any = runtime == "kubernetes";
  if (!id.empty() && plain_name(id)) {
    if (runtime == "docker" || any)
      n = read_docker(roots, id);
    if (!n && (runtime == "containerd" || any))
      n = read_containerd(roots, id);
    if (!n && (runtime == "cri-o" || any))
      n = read_crio(roots, id);
    if (!n && (runtime == "podman" || runtime == "cri-o"))
      n = read_podman(roots, id);
  }
  ContainerName out = n.value_or(ContainerName{});
  if (!pod_uid.empty() && plain_name(pod_uid) && (out.pod.empty() || out.pod_namespace.empty()))
    if (auto p = read_pod_logs(roots, pod_uid)) {
      out.pod = p->pod;
      out.pod_namespace = p->pod_namespace;
    }
  return out;
}

} // namespace shmbpf
