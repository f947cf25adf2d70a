// Who lives where: which container's processes are in which mount
// namespace, which mount stands for each filesystem, and whose /dev/shm a
// container sees. Several columns (a mount's owner, a container's /dev/shm)
// and top's rows need these; they are derived once per table or frame.
#pragma once

#include "model/engine.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shmbpf {

// The container a segment belongs to: the engine's verdict, else its
// creator's.
std::string_view segment_container(const SegmentInfo &s);

// Does a container id match what --container asked for (an id or a prefix
// of one; "" for the host)?
bool container_matches(std::string_view id, const std::string &want);

// One mount per filesystem, in the order first seen (a filesystem is often
// mounted in many namespaces): of a filesystem's mounts the one named
// /dev/shm, the host's copy first, so that each container's /dev/shm shows
// as such and the host's as the host's. Points into mounts.
std::vector<const MountUsage *> one_mount_per_filesystem(const std::vector<MountUsage> &mounts,
                                                         uint32_t host_mntns);

// Refers into the processes and mounts it was built from: they must outlive
// it and stay unchanged.
class Relations {
public:
  // host_mntns labels the host's mounts.
  Relations(const std::vector<ProcessInfo> &processes, const std::vector<MountUsage> &mounts,
            uint32_t host_mntns);

  uint32_t host_mntns() const { return host_mntns_; }
  const ProcessInfo *process(uint32_t pid) const;
  // Container id -> the mount namespaces of its processes.
  const std::map<std::string, std::set<uint32_t>> &container_namespaces() const {
    return container_ns_;
  }
  // one_mount_per_filesystem of the mounts.
  const std::vector<const MountUsage *> &filesystems() const { return fs_; }

  // "host", a container's short id, or "mntns:N" when nothing known runs there.
  std::string mount_owner(const MountUsage &m) const;
  // The /dev/shm a container's processes see (the fullest, if several).
  const MountUsage *shm_of(const std::string &container_id) const;

private:
  uint32_t host_mntns_;
  std::unordered_map<uint32_t, const ProcessInfo *> by_pid_;
  std::unordered_map<uint32_t, std::string> ns_container_; // mntns -> container id
  std::map<std::string, std::set<uint32_t>> container_ns_;
  std::vector<const MountUsage *> fs_;
};

} // namespace shmbpf
