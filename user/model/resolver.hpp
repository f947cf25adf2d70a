// Turns the kernel's partial view of a path (mount id + in-mount path, or a
// path as passed plus its start directory) into the absolute path a user
// knows, and decides whether an unlink/rename candidate really concerns a
// tmpfs file. Pure: fed with mount tables by the caller.
#pragma once

#include "decode/event.hpp"
#include "sources/mountinfo.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace shmbpf {

class PathResolver {
public:
  enum class Outcome {
    resolved,       // full_path filled in (or nothing to resolve)
    unknown_mount,  // a mount id or namespace is not known: refresh and retry
    not_shared_mem, // an unlink/rename candidate that is not on tmpfs: drop it
  };

  // Replace the mount table of one mount namespace.
  void set_namespace(uint32_t mntns, std::vector<MountInfo> mounts);
  bool knows_namespace(uint32_t mntns) const { return by_ns_.count(mntns) != 0; }
  bool knows_mount(uint32_t mnt_id) const { return by_id_.count(mnt_id) != 0; }

  Outcome resolve(Event &e);

  // "/a/./b//../c" -> "/a/c"; "" for a relative input.
  static std::string normalize(std::string_view absolute);

private:
  struct InodeKey {
    uint32_t dev;
    uint64_t ino;
    bool operator==(const InodeKey &) const = default;
  };
  struct InodeKeyHash {
    size_t operator()(const InodeKey &k) const { return k.ino * 31 + k.dev; }
  };
  struct Known {
    std::string path;
    Kind kind;
  };

  const MountInfo *mount_for_path(uint32_t mntns, const std::string &abs) const;

  std::unordered_map<uint32_t, std::vector<MountInfo>> by_ns_;
  std::unordered_map<uint32_t, MountInfo> by_id_;
  std::unordered_map<InodeKey, Known, InodeKeyHash> inodes_;
  std::unordered_map<std::string, InodeKey> paths_; // "<mntns>:<abs path>"
};

} // namespace shmbpf
