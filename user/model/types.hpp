// The engine's public data: segment keys and states, and the plain structs
// its queries return (segments, processes, containers, mounts, totals).
// Views, exporters and tests read these without seeing the engine's storage.
#pragma once

#include "decode/event.hpp"
#include "facts/memory_cgroup.hpp"
#include "facts/mounts.hpp"
#include "model/bus_errors.hpp"
#include "model/containers.hpp"
#include "model/oom_kills.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// a - b, stopping at zero: counts and byte totals must not wrap when an
// event was lost.
inline uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// linked: the segment has a name (a tmpfs path, a SysV key not yet
// IPC_RMID'ed). unlinked: nameless but alive while held (unlinked files,
// every memfd, SysV segments marked for destruction). gone: destroyed; gone
// segments leave the table, so queries never return this state.
enum class SegmentState : uint8_t { linked, unlinked, gone };
std::string_view to_string(SegmentState s);

// Well-known naming schemes of segment creators: who made a segment, from
// its name alone (docs/LEAKS.md lists each scheme's source).
enum class NamePattern : uint8_t {
  none,
  torch,      // torch_<pid>_<rand>_<n>: PyTorch file_system sharing strategy
  psm,        // psm_*: Python multiprocessing.shared_memory (vLLM's, SGLang's rings)
  sem,        // sem.*: POSIX named semaphores (sem.mp-* from multiprocessing)
  nccl,       // nccl-*: NVIDIA NCCL's shared-memory transport
  sglang,     // sgl_shm_*, sglang_*: SGLang
  vllm,       // VLLM_OBJECT_STORAGE_SHM_BUFFER*: vLLM's multimodal object store
  postgres,   // PostgreSQL.<n>: PostgreSQL's dynamic shared memory
  ray,        // plasma<6 chars>: Ray's (and Arrow's) plasma object store
  dali,       // nvidia_dali_*: NVIDIA DALI
  mpi,        // vader_segment.*, sm_segment.* (Open MPI), mpich_shar_tmp* (MPICH)
  joblib,     // files below joblib_memmapping_folder_*: joblib's memmapped arrays
  pulseaudio, // pulse-shm-<n>: PulseAudio's memory pools
  chromium,   // .org.chromium.Chromium.*, .com.google.Chrome.*: Chromium, Chrome
};
std::string_view to_string(NamePattern p);
// A scheme's name as views group by it: to_string, and "other" for none.
std::string_view producer_name(NamePattern p);
// Who names segments so, in a few words ("PyTorch, file_system sharing").
std::string_view producer_text(NamePattern p);

struct NameClass {
  NamePattern pattern = NamePattern::none;
  uint32_t pid = 0; // the creator pid embedded in a torch name, else 0
};
// Classifies the last component of a path or name.
NameClass classify_shm_name(std::string_view path);

// Whether a segment is shared memory, the first rule of an orphan
// (docs/LEAKS.md): memfds, System V, files on a /dev/shm or hugetlbfs
// mount, files named by a known scheme anywhere, and unlinked files found
// through their holders. Other tmpfs files (/run's pid files, /tmp) are
// kept by nobody by design: never orphans, whoever asks.
// served_shared_memory: the file's filesystem has been mounted where shared
// memory is (MountTable::served_shared_memory), whatever mount it is seen
// through now.
bool is_shared_memory(Kind kind, NamePattern pattern, SegmentState state,
                      std::string_view mountpoint, bool served_shared_memory = false);
// Where orphans are looked for: shared memory (the definition, for every
// table, metric and record), or files on any tmpfs as well (leaks and
// reap with --all-mounts, asked for by name).
enum class OrphanScope : uint8_t { shared_memory, all_mounts };

// tmpfs files and memfds are keyed by inode (dev, ino), SysV segments by
// (ipcns, shmid). tmpfs and memfd keys share one space: a file's identity is
// its inode, and events (free) or /proc scans cannot always tell the two
// apart, so SegmentKey{Kind::memfd, d, i} == SegmentKey{Kind::tmpfs, d, i}.
struct SegmentKey {
  Kind kind = Kind::tmpfs;
  uint32_t dev_or_ipcns = 0;
  uint64_t ino_or_shmid = 0;

  bool is_sysv() const { return kind == Kind::sysv; }
  static SegmentKey file(uint32_t dev, uint64_t ino) { return {Kind::tmpfs, dev, ino}; }
  static SegmentKey sysv(uint32_t ipcns, int32_t shmid) {
    return {Kind::sysv, ipcns, static_cast<uint64_t>(static_cast<uint32_t>(shmid))};
  }
  friend bool operator==(const SegmentKey &a, const SegmentKey &b) {
    return a.is_sysv() == b.is_sysv() && a.dev_or_ipcns == b.dev_or_ipcns &&
           a.ino_or_shmid == b.ino_or_shmid;
  }
  friend bool operator<(const SegmentKey &a, const SegmentKey &b) {
    if (a.is_sysv() != b.is_sysv())
      return !a.is_sysv();
    if (a.dev_or_ipcns != b.dev_or_ipcns)
      return a.dev_or_ipcns < b.dev_or_ipcns;
    return a.ino_or_shmid < b.ino_or_shmid;
  }
};

// A SysV segment's name as the kernel's shm mount gives it: "SYSV" and its
// key in eight hex digits.
std::string sysv_name(uint32_t key);

struct SegmentKeyHash {
  size_t operator()(const SegmentKey &k) const noexcept;
};

struct CreatorInfo {
  uint32_t pid = 0; // 0: unknown (the segment predates shmbpf or its creation was lost)
  uint32_t uid = 0; // for unknown creators of files: the file owner
  std::string comm;
  uint64_t cgroup_id = 0;
  std::string container_id; // "" = host
  bool known = false;
  bool exited = false;
};

struct SegmentInfo {
  SegmentKey key;
  Kind kind = Kind::tmpfs;
  std::string path; // absolute path, memfd:<name>, SYSV<key in 8 hex>, or as passed if unresolved
  uint32_t mnt_id = 0;
  std::string mountpoint;
  uint64_t size = 0;  // logical size
  uint64_t bytes = 0; // resident: i_blocks * 512, or SysV rss
  SegmentState state = SegmentState::linked;
  CreatorInfo creator;
  uint64_t created_ns = 0; // 0: existed before shmbpf started (or creation not seen)
  bool existed_before = false;
  int64_t mtime_s = 0;           // pre-existing files: mtime from the scan, else 0
  std::vector<uint32_t> holders; // pids with an fd or mapping, sorted
  uint32_t nattch = 0;           // SysV attach count
  // A tmpfs file's names (st_nlink, as far as shmbpf saw them made and
  // removed): 0 once unlinked, and for memfds and SysV segments.
  uint32_t nlink = 0;
  // A linked file's other names besides path (hard links), as far as known.
  std::vector<std::string> other_paths;
  uint32_t sysv_key = 0;
  uint64_t changed_ns = 0;
  NamePattern pattern = NamePattern::none;
  uint32_t inferred_pid = 0; // torch name of a segment with an unknown creator
  // The container the segment belongs to: its creator's, else (creator
  // unknown) the one whose processes own the mount namespace of its mount.
  // Empty id: the host.
  ContainerRef container;
  // Set by queries given a time: age (creation, else mtime for pre-existing
  // files, else time since shmbpf started) and the orphan verdict.
  std::optional<uint64_t> age_ns;
  bool orphan = false;
  // An orphan made by an earlier container of a pod that runs another now
  // (Engine::left_by_restart): what a restarted container finds in its
  // pod's emptyDir.
  bool restart_orphan = false;
};

// Every set field must match. pid matches the creator or a holder; container
// (an id or a prefix of one, "" for the host) matches the creator's or a
// holder's container; mount is a mountpoint; path_glob is fnmatch(3) without
// flags, so '*' also matches '/'.
struct SegmentFilter {
  std::optional<uint32_t> pid;
  std::optional<std::string> container;
  std::optional<std::string> mount;
  std::optional<Kind> kind;
  std::optional<std::string> path_glob;
  std::optional<SegmentState> state;
};

struct Orphan {
  SegmentInfo segment;
  uint64_t age_ns = 0;
};

struct ProcessInfo {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t uid = 0;
  uint32_t mntns = 0;
  std::string comm;
  uint64_t cgroup_id = 0;
  std::string container_id; // "" = host
  std::string runtime;
  std::string pod_uid;
  std::string container_name; // as ContainerRef's name, pod and pod_namespace
  std::string pod;
  std::string pod_namespace;
  uint64_t segments_created = 0; // live segments this process created
  uint64_t bytes_created = 0;
  uint64_t segments_held = 0;
  uint64_t bytes_held = 0;
  uint64_t segments_unheld = 0; // live segments it created that nobody holds now
  uint64_t sysv_attachments = 0;
  uint64_t creates = 0;   // files, memfds and SysV segments created since start
  uint64_t unlinks = 0;   // unlinks and IPC_RMIDs since start
  double create_rate = 0; // per second, exponentially decayed over ~10 s
  double unlink_rate = 0;
  uint64_t last_create_ns = 0;
  uint64_t last_unlink_ns = 0;
  uint64_t sigbus = 0; // SIGBUS faults (kernel-generated, si_code > 0)
};

struct ContainerInfo {
  std::string id; // "" = host
  // A row of one of the host's top-level cgroups (ls --by container): its
  // path, "/system.slice"; "" for the host's and the containers' rows.
  std::string cgroup = {};
  std::string runtime;
  std::string pod_uid;
  std::string name; // as ContainerRef's, "" until known
  std::string pod;
  std::string pod_namespace;
  uint64_t processes = 0;
  uint64_t segments = 0; // live segments created from this container
  uint64_t bytes = 0;
  uint64_t creates = 0; // summed over live processes
  uint64_t unlinks = 0;
  double create_rate = 0;
  uint64_t sigbus = 0;                  // SIGBUS faults of its processes since start
  std::optional<BusError> last_sigbus;  // the latest of them
  uint64_t oom_kills = 0;               // its processes the OOM killer killed since start
  std::optional<OomKill> last_oom_kill; // the latest of them still remembered
  // Its memory cgroup as last read (the host: the machine's memory); none
  // until read, or when it cannot be.
  std::optional<CgroupMemory> memory;
};

// Live segments by who made them, as their names tell (NamePattern): what
// top's producers view shows.
struct ProducerInfo {
  NamePattern pattern = NamePattern::none; // none: every segment of no known scheme
  uint64_t segments = 0;
  uint64_t bytes = 0; // resident
  uint64_t orphans = 0;
  uint64_t orphan_bytes = 0;
  uint64_t restart_orphans = 0; // of the orphans, left by a restart
  uint64_t creators = 0;        // live processes that created some of them
};

struct MountUsage {
  MountState mount;           // used_bytes: statfs value moved by the events since
  uint64_t tracked_bytes = 0; // resident bytes of the segments shmbpf knows on this fs
  uint64_t segments = 0;
  std::optional<double> percent;         // nullopt when unlimited
  double growth_bytes_per_s = 0;         // least-squares slope over the sample window
  std::optional<double> seconds_to_full; // nullopt unless growing towards a limit
  uint64_t enospc = 0; // writes, resizes and creates that found no space (ENOSPC, EDQUOT)
  uint64_t sigbus = 0; // SIGBUS faults on a file of this filesystem
  std::optional<BusError> last_sigbus; // the latest of them
  // The container whose processes own the mount's namespace (a container's
  // own /dev/shm), by the rule that gives a segment of unknown creator its
  // container; id "" for the host or a namespace no one container owns.
  ContainerRef container;
  // The most it held since shmbpf first measured it.
  uint64_t peak_used_bytes = 0;
  // That container's memory cgroup: the room left under its limit (limit -
  // usage) and, at this mount's growth (its pages are charged there), the
  // seconds until the limit; nullopt while its memory or limit is unknown.
  std::optional<uint64_t> memory_room;
  std::optional<double> seconds_to_memory_limit;
};

// Live segments counted by what an exporter may label them with: their
// container, kind, state and mount, orphans apart. Never a pid, a path or a
// name, so the number of groups is bounded by containers and mounts
// whatever the number of segments.
struct SegmentGroup {
  ContainerRef container; // as SegmentInfo::container; id "" = host
  Kind kind = Kind::tmpfs;
  SegmentState state = SegmentState::linked;
  std::string mountpoint;      // as SegmentInfo::mountpoint; "" for SysV and unknown mounts
  bool orphan = false;         // as orphans(now_ns, min_age_ns)
  bool restart_orphan = false; // an orphan, as SegmentInfo::restart_orphan
  uint64_t segments = 0;
  uint64_t bytes = 0; // resident
};

struct KindTotals {
  uint64_t segments = 0;
  uint64_t bytes = 0;
};

// Host-wide figures for headers (top) and exporters.
struct EngineTotals {
  KindTotals tmpfs, memfd, sysv;
  uint64_t orphans = 0; // as orphans(now_ns, min_age_ns)
  uint64_t orphan_bytes = 0;
  uint64_t creates = 0; // since start, exited processes included
  uint64_t unlinks = 0;
  double create_rate = 0; // per second, decayed like ProcessInfo's
  double unlink_rate = 0;
  uint64_t sigbus = 0; // kernel-generated SIGBUS since start
  std::optional<BusError> last_sigbus;
  uint64_t oom_kills = 0; // since start
  std::optional<OomKill> last_oom_kill;
};

struct EngineStats {
  uint64_t events = 0;
  uint64_t ignored = 0; // failed calls, unknown segments, unmatched shmdt
  uint64_t segments = 0;
  uint64_t processes = 0;
  uint64_t gone = 0; // segments destroyed since start
};

struct EngineConfig {
  uint64_t start_ns = 0; // CLOCK_BOOTTIME when shmbpf started
  // CLOCK_REALTIME - CLOCK_BOOTTIME, to age pre-existing files by mtime.
  std::optional<int64_t> realtime_offset_ns;
  size_t expected_segments = 0; // reserved up front
  uint64_t growth_window_ns = 60'000'000'000;
  size_t max_samples = 240;
};

} // namespace shmbpf

template <> struct std::hash<shmbpf::SegmentKey> {
  size_t operator()(const shmbpf::SegmentKey &k) const noexcept {
    return shmbpf::SegmentKeyHash{}(k);
  }
};
