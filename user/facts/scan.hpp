// What a scan of the machine finds, as plain data: the files of every tmpfs
// filesystem, every process with the shared memory it holds, every IPC
// namespace's System V segments. The scanners (sources/) produce it; the
// model's bootstrap and reconcile rules apply it to the engine.
#pragma once

#include "facts/mounts.hpp"
#include "facts/names.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmbpf {

// One regular file on a tmpfs.
struct TmpfsFile {
  uint32_t dev = 0; // kernel encoding (facts/dev.hpp)
  uint64_t ino = 0;
  std::string path; // absolute as seen via the scanned root
  std::string leaf; // last path component
  uint64_t size = 0;
  uint64_t bytes = 0; // st_blocks * 512: memory actually allocated
  uint32_t uid = 0;
  uint32_t mode = 0; // permission bits (st_mode & 07777)
  uint32_t nlink = 0;
  int64_t mtime_s = 0;
  // Birth time (statx STATX_BTIME), ns since the epoch; 0 where the kernel
  // does not give one for tmpfs. Tells the file from a later one that
  // reuses its inode number.
  uint64_t btime_ns = 0;
  // Where there is no btime: a hash of the file's handle (name_to_handle_at),
  // which holds the inode's generation, so differs as well for a later file
  // at the same inode number; 0 when not looked up or not given (hugetlbfs).
  uint64_t handle_id = 0;
  bool memfd = false; // a memfd (path "memfd:<name>"), found through a holder
};

// What a held file is, decided by the filesystem its inode lives on, never
// by its name: a file on a mounted tmpfs or hugetlbfs, or one of the
// kernel's own shm mount (memfds, and SysV segments, whose ino is the shmid).
enum class HeldKind : uint8_t { tmpfs, memfd, sysv };

// A shared-memory file a process holds open or mapped, one per (dev, ino).
struct HeldFile {
  uint32_t dev = 0; // kernel encoding
  uint64_t ino = 0;
  HeldKind kind = HeldKind::tmpfs;
  bool via_fd = false;
  bool via_map = false;
  // Unlinked: no name left (st_nlink 0, when the inode could be stat'ed;
  // else the kernel's " (deleted)" mark). memfds and SysV segments have
  // none ever.
  bool deleted = false;
  // As the process sees it, without the kernel's " (deleted)" mark: a
  // tmpfs path, "/memfd:<name>" or "/SYSV<key in 8 hex>".
  std::string path;
  // From stat of the fd or map_files link; for unlinked files nothing else
  // can tell their size. stat_ok false: unknown (map_files needs root).
  bool stat_ok = false;
  uint64_t size = 0;
  uint64_t bytes = 0; // st_blocks * 512
  uint32_t uid = 0;
  int64_t mtime_s = 0;
};

// Who a process is.
struct ProcIdentity {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t uid = 0;        // real uid
  uint64_t start_time = 0; // clock ticks after boot (stat field 22): a reused pid has another
  std::string comm;
  uint32_t mntns = 0; // inode numbers of /proc/<pid>/ns/{mnt,ipc}
  uint32_t ipcns = 0;
  // The cgroup path that tells its container: the v2 ("0::") line's, or a
  // v1 line's where v2 says "/" or nothing (sources/cgroup.hpp,
  // process_cgroup_path); "" when unknown.
  std::string cgroup_path;
};

// One line of /proc/sysvipc/shm.
struct SysvEntry {
  int32_t shmid = -1;
  uint32_t key = 0;
  uint64_t size = 0;
  uint64_t rss_bytes = 0;
  uint32_t cpid = 0;
  uint32_t lpid = 0; // last shmat/shmdt
  uint32_t nattch = 0;
  uint32_t mode = 0;    // permission bits of the perms column (0777), without SHM_DEST
  uint32_t uid = 0;     // owner
  uint32_t cuid = 0;    // creator
  int64_t ctime_s = 0;  // shm_ctim: creation, or the last IPC_SET; 0 unknown
  bool removed = false; // SHM_DEST set: IPC_RMID done, waiting for the last detach
};

// What a directory scan left out because it hit a limit: none of it by
// default on a real /dev/shm, and reported when it is not.
struct ScanShortfall {
  uint64_t dirs_too_deep = 0; // directories at the depth limit, not entered
  bool file_limit = false;    // stopped at the most files it lists
  bool any() const { return dirs_too_deep != 0 || file_limit; }
};

// One tmpfs filesystem, scanned once through one of its mounts.
struct ScannedFs {
  uint32_t dev = 0;
  uint32_t mnt_id = 0;
  std::string mountpoint;       // as the namespace's processes see it
  std::vector<TmpfsFile> files; // paths as that namespace's processes see them
  std::string scanned_from;     // the directory read (via /proc/PID/root if need be)
  ScanShortfall shortfall;
};

// A filesystem whose last scan left something out, as the model keeps it.
struct ScanGap {
  uint32_t dev = 0;
  std::string mountpoint;
  ScanShortfall shortfall;
};

// A cgroup named by its path where no cgroup v2 id names it: on hosts with
// cgroup v1 only (no cgroup2 mount), a scan gives each process an id made
// from the v1 path that tells its container, with the top bit set, which
// the kernel's ids (inode numbers) never have. The kernel's v2 id that
// events carry says nothing there (the v2 root's), so the engine keeps an
// id of this kind against it.
constexpr uint64_t kPathCgroupIdBit = uint64_t{1} << 63;
inline bool is_path_cgroup_id(uint64_t id) { return (id & kPathCgroupIdBit) != 0; }
inline uint64_t path_cgroup_id(std::string_view path) {
  return kPathCgroupIdBit | (shm_name_hash(path) >> 1);
}

struct ScannedProcess {
  ProcIdentity id;
  uint64_t cgroup_id = 0; // 0: unknown; else the v2 id, or a path_cgroup_id
  std::vector<HeldFile> holdings;
};

struct ScannedIpc {
  uint32_t ipcns = 0;
  std::vector<SysvEntry> segments;
};

struct SystemScan {
  std::vector<MountNamespace> namespaces;
  std::vector<MountState> mounts; // every tmpfs mount of every namespace
  std::vector<ScannedFs> filesystems;
  std::vector<ScannedProcess> processes;
  std::vector<ScannedIpc> ipc; // namespaces we could not enter are missing
  std::vector<std::pair<uint64_t, std::string>> cgroups; // id -> path
};

} // namespace shmbpf
