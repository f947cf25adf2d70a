// /proc/<pid>/mountinfo: which filesystems a process sees and where.
// Used at bootstrap to find tmpfs mounts to scan, the cgroup2 hierarchy, and
// to turn a path seen from a superblock root into a path under a mountpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// One line of mountinfo (see proc(5)). root, mountpoint, source and fstype
// are unescaped; the option strings are kept as the kernel printed them.
struct MountInfo {
  uint32_t mnt_id = 0;
  uint32_t parent_id = 0;
  uint32_t dev = 0; // kernel encoding: major << 20 | minor
  std::string root;
  std::string mountpoint;
  std::string fstype;
  std::string source;
  std::string mount_options;
  std::string super_options;

  // tmpfs or hugetlbfs: the filesystems whose files are shared memory.
  bool is_tmpfs() const;
  // The size= superblock option in bytes (tmpfs prints kibibytes, "size=65536k";
  // k/m/g/t suffixes of either case and plain bytes are accepted). nullopt when
  // absent (unlimited tmpfs) or unparsable (e.g. a percentage).
  std::optional<uint64_t> size_limit() const;
};

// True when another mount of the table sits on m's mount point on top of
// it: m is hidden, and a path lookup (statfs, a scan) reaches the other one.
bool is_overmounted(const std::vector<MountInfo> &table, const MountInfo &m);

// Parses mountinfo text. Malformed lines are skipped, never fatal.
std::vector<MountInfo> parse_mountinfo(std::string_view text);

// Reads /proc/<pid>/mountinfo (pid <= 0 means /proc/self). Empty on error.
std::vector<MountInfo> read_mountinfo(int pid);

// Mountpoint of the first cgroup2 mount: /sys/fs/cgroup on unified hosts,
// /sys/fs/cgroup/unified on hybrid ones, anywhere at all in principle.
std::optional<std::string> find_cgroup2_mount(const std::vector<MountInfo> &mounts);

// The entry with this mount id, or nullptr.
const MountInfo *find_by_id(const std::vector<MountInfo> &mounts, uint32_t mnt_id);

// Maps a path relative to the filesystem's root ("/dir/leaf", as a dentry walk
// up to the superblock root yields) to the absolute path under the mountpoint,
// honouring bind mounts of a subtree (root "/sub"). nullopt when the path lies
// outside the mounted subtree. A missing leading '/' is tolerated.
std::optional<std::string> join_mount_path(const MountInfo &mount, std::string_view in_mount_path);
// The same into out (replacing its contents, so a caller can reuse one
// buffer); false, with out unspecified, when the path is outside the mount.
bool join_mount_path_into(std::string &out, const MountInfo &mount, std::string_view in_mount_path);

} // namespace shmbpf
