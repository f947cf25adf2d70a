#include "views/relations.hpp"

#include "views/format.hpp"

namespace shmbpf {

std::string_view segment_container(const SegmentInfo &s) {
  return s.container.id.empty() ? std::string_view(s.creator.container_id)
                                : std::string_view(s.container.id);
}

bool container_matches(std::string_view id, const std::string &want) {
  if (want.empty())
    return id.empty();
  return !id.empty() && id.starts_with(want);
}

std::vector<const MountUsage *> one_mount_per_filesystem(const std::vector<MountUsage> &mounts,
                                                         uint32_t host_mntns) {
  std::vector<const MountUsage *> out;
  std::unordered_map<uint32_t, std::size_t> best;
  auto score = [&](const MountUsage &m) {
    return (m.mount.mountpoint == "/dev/shm" ? 2 : 0) + (m.mount.mntns == host_mntns ? 1 : 0);
  };
  for (const MountUsage &m : mounts) {
    auto [it, fresh] = best.emplace(m.mount.dev, out.size());
    if (fresh)
      out.push_back(&m);
    else if (score(m) > score(*out[it->second]))
      out[it->second] = &m;
  }
  return out;
}

Relations::Relations(const std::vector<ProcessInfo> &processes,
                     const std::vector<MountUsage> &mounts, uint32_t host_mntns)
    : host_mntns_(host_mntns), fs_(one_mount_per_filesystem(mounts, host_mntns)) {
  for (const ProcessInfo &p : processes) {
    by_pid_[p.pid] = &p;
    container_ns_[p.container_id].insert(p.mntns);
    if (!p.container_id.empty())
      ns_container_.emplace(p.mntns, p.container_id);
  }
}

const ProcessInfo *Relations::process(uint32_t pid) const {
  auto it = by_pid_.find(pid);
  return it == by_pid_.end() ? nullptr : it->second;
}

std::string Relations::mount_owner(const MountUsage &m) const {
  if (m.mount.mntns == host_mntns_)
    return "host";
  auto it = ns_container_.find(m.mount.mntns);
  if (it != ns_container_.end())
    return short_id(it->second);
  return "mntns:" + std::to_string(m.mount.mntns);
}

const MountUsage *Relations::shm_of(const std::string &container_id) const {
  auto it = container_ns_.find(container_id);
  if (it == container_ns_.end())
    return nullptr;
  const MountUsage *found = nullptr;
  for (const MountUsage *m : fs_)
    if (m->mount.mountpoint == "/dev/shm" && it->second.count(m->mount.mntns))
      if (!found || (m->percent.value_or(0) > found->percent.value_or(0)))
        found = m;
  return found;
}

} // namespace shmbpf
