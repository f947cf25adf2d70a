#include "facts/mounts.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

namespace shmbpf {

namespace {

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
    return std::nullopt;
  return value;
}

// Strips trailing slashes except for "/" itself.
std::string_view trim_trailing_slashes(std::string_view s) {
  while (s.size() > 1 && s.back() == '/')
    s.remove_suffix(1);
  return s;
}

} // namespace

bool MountInfo::is_tmpfs() const { return fstype == "tmpfs" || fstype == "hugetlbfs"; }

std::optional<uint64_t> MountInfo::size_limit() const {
  std::string_view opts = super_options;
  while (!opts.empty()) {
    size_t comma = opts.find(',');
    std::string_view opt = opts.substr(0, comma);
    opts = comma == std::string_view::npos ? std::string_view{} : opts.substr(comma + 1);
    if (!opt.starts_with("size="))
      continue;
    std::string_view value = opt.substr(5);
    unsigned shift = 0;
    if (!value.empty()) {
      switch (value.back()) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        break;
      }
      if (shift != 0)
        value.remove_suffix(1);
    }
    auto n = parse_u64(value);
    if (!n || (shift != 0 && *n > (UINT64_MAX >> shift)))
      return std::nullopt;
    return *n << shift;
  }
  return std::nullopt;
}

std::optional<std::string> find_cgroup2_mount(const std::vector<MountInfo> &mounts) {
  for (const auto &m : mounts)
    if (m.fstype == "cgroup2")
      return m.mountpoint;
  return std::nullopt;
}

const MountInfo *find_by_id(const std::vector<MountInfo> &mounts, uint32_t mnt_id) {
  for (const auto &m : mounts)
    if (m.mnt_id == mnt_id)
      return &m;
  return nullptr;
}

bool join_mount_path_into(std::string &out, const MountInfo &mount,
                          std::string_view in_mount_path) {
  std::string slashed; // only for a path without its leading '/' (rare)
  if (in_mount_path.empty() || in_mount_path.front() != '/') {
    slashed.reserve(in_mount_path.size() + 1);
    slashed.push_back('/');
    slashed.append(in_mount_path);
    in_mount_path = slashed;
  }

  // The part of the path below the mount's root, "" or "/...".
  std::string_view root = trim_trailing_slashes(mount.root);
  std::string_view rest = in_mount_path;
  if (root != "/") {
    if (!rest.starts_with(root))
      return false;
    rest.remove_prefix(root.size());
    if (!rest.empty() && rest.front() != '/')
      return false; // "/subdir" is not under root "/sub"
  }
  if (rest == "/")
    rest = {};

  std::string_view mp = trim_trailing_slashes(mount.mountpoint);
  if (rest.empty())
    out.assign(mp);
  else if (mp == "/")
    out.assign(rest);
  else {
    out.assign(mp);
    out.append(rest);
  }
  return true;
}

std::optional<std::string> join_mount_path(const MountInfo &mount, std::string_view in_mount_path) {
  std::string out;
  if (!join_mount_path_into(out, mount, in_mount_path))
    return std::nullopt;
  return out;
}

bool is_overmounted(const std::vector<MountInfo> &table, const MountInfo &m) {
  for (const MountInfo &other : table)
    if (other.parent_id == m.mnt_id && other.mountpoint == m.mountpoint && other.mnt_id != m.mnt_id)
      return true;
  return false;
}

bool is_shared_memory_mountpoint(std::string_view mountpoint) {
  return mountpoint.ends_with("/dev/shm") || mountpoint.starts_with("/dev/hugepages");
}

bool is_excluded_mountpoint(std::string_view mp) {
  auto at_or_under = [&](std::string_view root) {
    return mp == root ||
           (mp.starts_with(root) && mp.size() > root.size() && mp[root.size()] == '/');
  };
  auto strictly_under = [&](std::string_view root) {
    return mp.size() > root.size() + 1 && mp.starts_with(root) && mp[root.size()] == '/';
  };
  return at_or_under("/proc") || at_or_under("/sys") || strictly_under("/run/credentials") ||
         strictly_under("/var/lib/docker") || strictly_under("/var/lib/containers/storage");
}

std::vector<const MountInfo *> reported_tmpfs_mounts(const std::vector<MountInfo> &table) {
  std::unordered_map<uint32_t, const MountInfo *> by_id;
  for (const MountInfo &m : table)
    by_id.emplace(m.mnt_id, &m);
  // Below an overlay that is not this namespace's root, or below a tmpfs
  // /dev that is not at /dev: a container's root, or its /dev (which a
  // runtime mounts whatever the root's storage), seen from outside.
  // Ancestors are few; a cycle (a corrupt table) is cut by the depth.
  auto outside_dev = [](const MountInfo &m) {
    const std::string_view mp = m.mountpoint;
    return m.is_tmpfs() && mp != "/dev" && mp.ends_with("/dev");
  };
  auto in_outside_root = [&](const MountInfo &m) {
    if (outside_dev(m))
      return true;
    const MountInfo *at = &m;
    for (int depth = 0; depth < 64; ++depth) {
      auto p = by_id.find(at->parent_id);
      if (p == by_id.end() || p->second == at)
        return false;
      at = p->second;
      if ((at->fstype == "overlay" && at->mountpoint != "/") || outside_dev(*at))
        return true;
    }
    return false;
  };
  std::vector<const MountInfo *> out;
  for (const MountInfo &m : table)
    if (m.is_tmpfs() && !is_excluded_mountpoint(m.mountpoint) && !is_overmounted(table, m) &&
        !in_outside_root(m))
      out.push_back(&m);
  return out;
}

std::unordered_set<uint32_t> host_reported_devices(const std::vector<MountNamespace> &namespaces) {
  std::unordered_set<uint32_t> out;
  for (const MountNamespace &ns : namespaces)
    if (!ns.foreign)
      for (const MountInfo *m : reported_tmpfs_mounts(ns.mounts))
        out.insert(m->dev);
  return out;
}

std::vector<NamespaceMount> naming_tmpfs_mounts(const std::vector<MountNamespace> &namespaces) {
  std::vector<NamespaceMount> out;
  const std::unordered_set<uint32_t> hosts = host_reported_devices(namespaces);
  for (const MountNamespace &ns : namespaces)
    if (!ns.foreign)
      for (const MountInfo *m : reported_tmpfs_mounts(ns.mounts))
        out.push_back({&ns, m});
  for (const MountNamespace &ns : namespaces)
    if (ns.foreign)
      for (const MountInfo *m : reported_tmpfs_mounts(ns.mounts))
        if (!hosts.count(m->dev))
          out.push_back({&ns, m});
  return out;
}

std::vector<NamespaceMount>
tmpfs_mounts_in_scan_order(const std::vector<MountNamespace> &namespaces) {
  std::vector<NamespaceMount> out = naming_tmpfs_mounts(namespaces);
  std::stable_partition(out.begin(), out.end(), [](const NamespaceMount &r) {
    return is_shared_memory_mountpoint(r.mount->mountpoint);
  });
  return out;
}

} // namespace shmbpf
