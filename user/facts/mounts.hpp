// Mounts as the scanners find them and every later stage reads them: one
// line of /proc/<pid>/mountinfo, a mount namespace with its table, and a
// tmpfs mount's size and usage. Plus the pure queries over a mount table
// that the scanners and the path resolver share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
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

// Every mount namespace that has a live process: one of its processes and
// its mount table, so that every container's /dev/shm is visible.
struct MountNamespace {
  uint32_t mntns = 0; // inode number of /proc/<pid>/ns/mnt
  int pid = 0;        // a process inside it
  std::vector<MountInfo> mounts;
  // Owned by a user namespace other than shmbpf's own: any user may have
  // made it (unshare -Urm), and its mounts name what they like.
  bool foreign = false;
  // A foreign namespace's user namespace's owner (the uid that made it);
  // kUnknownOwner when it cannot be read.
  uint32_t owner_uid = 0;
  static constexpr uint32_t kUnknownOwner = 0xffffffffu;
};

// One tmpfs mount as the mountinfo and statfs scanners see it.
struct MountState {
  uint32_t mnt_id = 0;
  uint32_t mntns = 0;
  std::string mountpoint;
  uint32_t dev = 0;        // kernel encoding
  uint64_t size_limit = 0; // bytes, 0 = unlimited
  uint64_t used_bytes = 0; // statfs: (f_blocks - f_bfree) * f_bsize
  // False when statfs could not reach the mount this time (the process
  // whose root led there exited): the last measurement stands.
  bool used_known = true;
  // The filesystem's identity, random per tmpfs superblock, so it tells a
  // filesystem from a later one given the same device number: statfs's
  // f_fsid (Linux 6.7 and later), else the generation of its root directory
  // (from a mount of the whole filesystem). 0 when neither is known.
  uint64_t fsid = 0;
  // Mounted in a foreign namespace (MountNamespace::foreign), by owner_uid:
  // its series are the user's doing, and capped (views/metrics.hpp).
  bool foreign = false;
  uint32_t owner_uid = 0;
};

// True when another mount of the table sits on m's mount point on top of
// it: m is hidden, and a path lookup (statfs, a scan) reaches the other one.
bool is_overmounted(const std::vector<MountInfo> &table, const MountInfo &m);

// A mountpoint where processes look for shared memory: /dev/shm, also below
// another root ("/srv/jail/dev/shm"), and hugetlbfs' /dev/hugepages*.
bool is_shared_memory_mountpoint(std::string_view mountpoint);

// Whether shmbpf leaves a mountpoint out of everything (series, scans,
// labels), as node_exporter does by default, /dev kept: the masks a
// container runtime lays over /proc and /sys, cgroup filesystems'
// tmpfs (/sys/fs/cgroup), systemd's credentials (/run/credentials/...) and
// a runtime's storage (/var/lib/docker/..., /var/lib/containers/storage/...).
bool is_excluded_mountpoint(std::string_view mountpoint);

// The tmpfs and hugetlbfs mounts of one namespace's table that shmbpf
// reports: not overmounted, not at an excluded mountpoint, and not inside a
// container's root seen from outside it (below an overlay mounted anywhere
// but at /, <data root>/overlay2/<id>/merged/dev/shm, or below a tmpfs /dev
// mounted anywhere but at /dev, <root>/dev/shm of a container whose root is
// a plain directory), which the container's own namespace shows at the path
// its processes use.
std::vector<const MountInfo *> reported_tmpfs_mounts(const std::vector<MountInfo> &table);

// One mount of one namespace's table.
struct NamespaceMount {
  const MountNamespace *ns = nullptr;
  const MountInfo *mount = nullptr;
};

// The reported tmpfs mounts (reported_tmpfs_mounts) of every namespace that
// may name their filesystems: in a foreign namespace, a mount of a
// filesystem that a namespace of shmbpf's own user namespace reports is
// left out. Its owner chose where it goes (a root-only directory of /run
// bound at /dev/shm), and the host's mounts name that filesystem. A
// filesystem only foreign namespaces mount (a rootless container's own
// /dev/shm) is named by them.
std::vector<NamespaceMount> naming_tmpfs_mounts(const std::vector<MountNamespace> &namespaces);

// The devices of the filesystems that namespaces of shmbpf's own user
// namespace report (reported_tmpfs_mounts): those a foreign namespace's
// mount does not name.
std::unordered_set<uint32_t> host_reported_devices(const std::vector<MountNamespace> &namespaces);

// The naming tmpfs and hugetlbfs mounts (naming_tmpfs_mounts) of every
// namespace, in the order a scan reads them. A filesystem mounted more than
// once is read through the first of its mounts, whose path, namespace and
// so container its files get: mounts at a shared-memory mountpoint come
// first, so that a container's /dev/shm wins over the mount of the same
// tmpfs that dockerd keeps on the host for --ipc=shareable
// (containers/<id>/mounts/shm); otherwise the namespaces' and tables' order.
std::vector<NamespaceMount>
tmpfs_mounts_in_scan_order(const std::vector<MountNamespace> &namespaces);

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
