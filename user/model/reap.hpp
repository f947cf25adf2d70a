// What `shmbpf reap` may free and how each removal went: the choice of
// orphans from the engine's model (pure), and the verdicts of the checks
// made again at the moment of removal, from what those checks observed
// (pure too). The removal itself is the actions layer's; docs/REAP.md
// explains the rules.
#pragma once

#include "model/engine.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// Reaping is less forgiving than reporting: an orphan must be this old.
constexpr double kReapMinAgeS = 600;

struct ReapFilter {
  double min_age_s = kReapMinAgeS;
  std::optional<std::string> match;     // fnmatch(3) glob on the path, no flags
  std::optional<std::string> container; // id, id prefix or name; "" = the host
  std::optional<std::string> mount;     // a mountpoint, as segments show it
  std::optional<Kind> kind;             // tmpfs or sysv
  bool all_mounts = false;              // also files on tmpfs mounts that are not shared memory
};

// One orphan chosen to be freed, with what the removal needs to find it
// again and to tell it from anything that took its place.
struct ReapTarget {
  SegmentInfo segment; // as judged: key (dev and ino, or IPC namespace and shmid), path, bytes
  uint64_t age_ns = 0;
  // Files: the mount namespace of the mount the file was seen on, and the
  // path below that mount's root ("a/b" for /dev/shm/a/b).
  uint32_t mntns = 0;
  std::string relative_path;
  // The process that created it, as far as the model knows: its creator,
  // else the pid a PyTorch name carries; 0 when unknown. For SysV the
  // removal reads the creator and last attacher from the kernel itself.
  uint32_t creator_pid = 0;
};

// Segments the filters selected that reap will not touch, and why.
struct ReapHeld {
  SegmentInfo segment; // an unlinked file or a memfd, with its holders
};

struct ReapPlan {
  std::vector<ReapTarget> targets; // largest first, as orphans()
  // Unlinked files and memfds the filters match that someone still holds:
  // there is no name to remove; their memory goes when the holders close
  // them.
  std::vector<ReapHeld> held;
};

// The orphans of the model that the filter selects: linked tmpfs and
// hugetlbfs files and System V segments not yet removed. Unlinked files and
// memfds are never targets.
ReapPlan plan_reap(const Engine &engine, uint64_t now_ns, const ReapFilter &filter);

// The path of a file below its mount's root, "" when path is not below
// mountpoint (or is the mountpoint itself), or has an empty, "." or ".."
// component.
std::string path_below_mount(std::string_view path, std::string_view mountpoint);

enum class ReapStatus : uint8_t {
  would_free, // dry run: every check passed
  freed,      // removed
  skipped,    // a check failed; reason says which
  gone,       // someone else removed it first: nothing left to free
};
std::string_view to_string(ReapStatus s);

// Why a target was skipped (or found gone). Each is named in docs/REAP.md.
enum class ReapSkip : uint8_t {
  none,
  namespace_gone,      // no process is left in its mount or IPC namespace
  mount_changed,       // the mount is not the one the file was seen on
  unsafe_path,         // a directory on the way is a symlink or another mount
  replaced,            // the name now names another file (device or inode differ)
  other_names,         // the file has more names (hard links): one unlink frees nothing
  not_regular,         // the name is now a symlink, a directory or a device
  not_shm_filesystem,  // the file is not on a tmpfs or hugetlbfs superblock
  held,                // a process holds it open or mapped right now
  attached,            // a System V segment with attachments
  creator_alive,       // a process has the creator's pid
  last_attacher_alive, // System V: a process has the last attacher's pid
  vanished,            // no longer there (status gone)
  failed,              // the removal itself failed (detail has the error)
};
std::string_view to_string(ReapSkip s);

struct ReapOutcome {
  ReapTarget target;
  ReapStatus status = ReapStatus::skipped;
  ReapSkip reason = ReapSkip::none;
  std::string detail;            // a sentence for the user, "" when freed
  std::vector<uint32_t> holders; // held: the pids that hold it
  uint64_t bytes = 0;            // resident bytes as checked at removal (freed or would be)
};

// What the removal saw of the name, checked against the target.
struct FileLook {
  bool exists = false;
  uint32_t mode = 0; // st_mode (type and permissions)
  uint32_t dev = 0;  // kernel encoding
  uint64_t ino = 0;
  long fs_magic = 0;  // statfs f_type of the file's filesystem
  uint64_t links = 1; // st_nlink
};
// none when the name is still the judged file: a regular file of the same
// device and inode on a tmpfs or hugetlbfs superblock, with no other name.
ReapSkip judge_file(const ReapTarget &target, const FileLook &look);

// What IPC_STAT said of a segment, checked against the target.
struct SysvLook {
  bool exists = false; // EINVAL/EIDRM: no segment with that id
  uint32_t key = 0;
  uint64_t size = 0;
  uint32_t cpid = 0, lpid = 0;
  uint32_t nattch = 0;
  bool removed = false; // SHM_DEST: IPC_RMID already done
  bool cpid_alive = false, lpid_alive = false;
};
ReapSkip judge_sysv(const ReapTarget &target, const SysvLook &look);

// A sentence saying why, for the text and JSON reports.
std::string describe_skip(ReapSkip reason, const ReapTarget &target);

struct ReapTotals {
  uint64_t selected = 0, freed = 0, would_free = 0, skipped = 0, gone = 0;
  uint64_t bytes_freed = 0, bytes_would_free = 0, bytes_skipped = 0;
};
ReapTotals reap_totals(const std::vector<ReapOutcome> &outcomes);

} // namespace shmbpf
