// The state engine: every shared-memory segment (tmpfs file, memfd, System V
// segment), who created and holds it, and what it costs, built from decoded
// events plus bootstrap/reconcile scans. Pure: no I/O and no clock reads;
// time comes from event timestamps and explicit now_ns arguments, all
// CLOCK_BOOTTIME nanoseconds. The model behind `shmbpf ls`, `leaks` and `top`.
#pragma once

#include "decode/event.hpp"
#include "facts/container_name.hpp"
#include "facts/mounts.hpp"
#include "facts/scan.hpp"
#include "model/bus_errors.hpp"
#include "model/container_table.hpp"
#include "model/containers.hpp"
#include "model/failure_log.hpp"
#include "model/mount_table.hpp"
#include "model/process_table.hpp"
#include "model/rate_counter.hpp"
#include "model/seg_table.hpp"
#include "model/segment_table.hpp"
#include "model/types.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shmbpf {

class SegmentScan;

class Engine {
public:
  explicit Engine(EngineConfig config = {});

  // Lifecycle rules: creates, opens, memfd_create, resizes and shmat make the
  // caller a holder; exit (and exec, for mappings and close-on-exec fds)
  // drops its holds. A link gives a file one more name, an unlink takes one:
  // a file is unlinked when it has none left, and gone when it is unlinked
  // and unheld: at once on unlink if it has no bytes left, on the free that
  // evicts it, or on its last holder's exit. A SysV segment is gone at IPC_RMID with no
  // attachment left, or at its last detach after IPC_RMID. Failed calls,
  // and frees or unlinks of unknown segments, change nothing.
  void apply(const Event &e);

  // --- bootstrap and reconcile (scanner outputs) ---------------------------
  // A file that existed before shmbpf started; updates sizes if known.
  void add_existing_file(const TmpfsFile &f, uint32_t mnt_id_or_0, std::string mountpoint);
  // From /proc/*/fd and /proc/*/maps. False when the segment is unknown.
  bool add_holder(uint32_t pid, SegmentKey key);
  bool set_holders(SegmentKey key, std::vector<uint32_t> pids);
  void add_process(uint32_t pid, uint32_t ppid, uint32_t uid, std::string comm, uint64_t cgroup_id,
                   uint32_t mntns, uint32_t ipcns = 0);
  // One line of an IPC namespace's /proc/sysvipc/shm, marked for
  // destruction or not.
  void add_sysv(uint32_t ipcns, const SysvEntry &entry);
  void set_cgroup_path(uint64_t cgroup_id, std::string path);
  // What the runtime's files call container id (read once per id, when it
  // first shows up: an empty name is remembered too, so that a container
  // without files is not looked up again).
  void set_container_name(const std::string &id, const ContainerName &name);
  // Size and resident bytes of a file measured by stat: writes and page
  // faults raise them without any event. False when the segment is unknown.
  bool set_file_usage(SegmentKey key, uint64_t size, uint64_t bytes, uint64_t now_ns);
  void set_mount(MountState m);
  // Every tmpfs mount that exists: set_mount for each, and mounts missing
  // from the list (unmounted, a container that stopped) are forgotten. A
  // device whose fsid changed is another filesystem's now (the old one
  // ended: a live one keeps its number): with seen_ns, when the list was
  // read, the old one's files are forgotten (forget_filesystem). Returns
  // how many.
  size_t reconcile_mounts(std::vector<MountState> mounts, uint64_t seen_ns = 0);
  void sample_mounts(uint64_t now_ns);
  // A mount's peak as an earlier run measured it (MountTable::restore_peak).
  bool restore_mount_peak(const MountState &same, uint64_t peak) {
    return mounts_.restore_peak(same, peak);
  }
  // The devices of the filesystems tmpfs and hugetlbfs segments are on
  // (memfds' included), each once.
  std::vector<uint32_t> file_devs() const;
  // Filesystem dev has ended (its last mount gone, nothing holding a file
  // of it): its files are forgotten with its name, unless held (then the
  // filesystem lives on) or changed at or after since_ns (a file of a
  // filesystem found after that look). memfds stay. Returns how many went.
  size_t forget_filesystem(uint32_t dev, uint64_t since_ns);

  // Makes the linked files of filesystem dev equal to truth, a full scan of
  // it (paths as users see them): missing files are added as pre-existing,
  // vanished ones become unlinked if held and gone if not, sizes and paths are
  // refreshed. Unlinked files nobody holds are dropped too (their final free
  // was lost).
  void reconcile_tmpfs(uint32_t dev, const std::vector<TmpfsFile> &truth, uint64_t now_ns);
  // The same for one IPC namespace; segments missing from truth are gone.
  // now_ns == 0: the latest event time.
  void reconcile_sysv(uint32_t ipcns, const std::vector<SysvEntry> &truth, uint64_t now_ns = 0);
  // Known processes missing from live_pids exited without an event.
  void reconcile_processes(const std::vector<uint32_t> &live_pids);
  // Every (pid, segment) hold that exists, from a full /proc scan: holds
  // not listed are dropped (fds closed, munmaps: no event tells), listed
  // ones added. Unknown segments are skipped.
  void reconcile_holders(const std::vector<std::pair<uint32_t, SegmentKey>> &holdings);
  // The same for the files (not SysV) of one process, from a scan of its
  // fds and maps. Returns false when the process is unknown.
  bool reconcile_process_files(uint32_t pid, std::vector<SegmentKey> files);
  // fn(pid) for each pid holding key; no allocation.
  template <class Fn> void for_each_holder(const SegmentKey &key, Fn &&fn) const {
    if (auto it = segs_.find(key); it != segs_.end())
      for (uint32_t pid : it->second.holders)
        fn(pid);
  }

  // --- what a restart keeps (model/state) -----------------------------------
  // What tells a segment from a later one that reuses its key
  // (model/segment_table.hpp).
  using Birth = SegmentBirth;
  // Kept only for segments whose creation was observed or restored; ignored
  // for others, unknown keys and unknown births.
  void note_birth(const SegmentKey &key, Birth birth) { segs_.note_birth(key, birth); }
  std::optional<Birth> birth(const SegmentKey &key) const { return segs_.birth(key); }
  // fn(key, birth) for every segment note_birth kept.
  template <class Fn> void for_each_birth(Fn &&fn) const {
    for (const auto &[key, b] : segs_.births())
      fn(key, b);
  }
  // What a previous run observed of a segment's creation.
  struct Creation {
    uint32_t pid = 0;
    uint32_t uid = 0;
    std::string comm;
    uint64_t cgroup_id = 0;
    std::string cgroup_path; // to name its container once the cgroup is gone
    uint64_t created_ns = 0;
  };
  // Gives a segment whose creation this run did not see (a pre-existing
  // one) that creation, and keeps its birth. The creator counts as alive
  // only if a known process has its pid, comm and cgroup. False when the
  // segment is unknown or its creation was observed.
  bool restore_creation(const SegmentKey &key, const Creation &c, Birth birth);
  // The cgroup path set_cgroup_path gave an id ("" if none).
  std::string cgroup_path(uint64_t cgroup_id) const;

  // --- queries (sorted, deterministic) -------------------------------------
  std::optional<SegmentInfo> segment(const SegmentKey &key) const;
  bool contains(const SegmentKey &key) const { return segs_.contains(key); }
  // A file's holders and, while it is linked under a resolved path, that
  // path (else empty; valid until the engine next changes). Cheap, unlike
  // segment(); nullopt when the file is unknown.
  struct FileState {
    bool held = false;
    std::string_view path;
  };
  std::optional<FileState> file_state(const SegmentKey &key) const {
    auto it = segs_.find(key);
    if (it == segs_.end())
      return std::nullopt;
    const Segment &s = it->second;
    const bool named = s.state == SegmentState::linked && (s.flags & kPathFull);
    return FileState{!s.holders.empty(), named ? s.path.view() : std::string_view{}};
  }
  std::vector<SegmentInfo> segments(const SegmentFilter &filter = {}) const; // by path, key
  // The same with age_ns and orphan filled in (orphan as orphans()).
  std::vector<SegmentInfo> segments(const SegmentFilter &filter, uint64_t now_ns,
                                    uint64_t orphan_min_age_ns) const;
  // The same segments in the same order, handed to fn one at a time (fn
  // may keep them) and never all held at once: for views that write rows
  // as they go (ls --json).
  void for_each_segment(const SegmentFilter &filter, uint64_t now_ns, uint64_t orphan_min_age_ns,
                        const std::function<void(SegmentInfo &&)> &fn) const;
  // The slots of the table one part of a query in parts takes
  // (model/engine_parts.hpp).
  static constexpr size_t kPartSlots = 4096;
  // segments(filter, now_ns, orphan_min_age_ns)'s segments in the table's
  // slots [from, from + slots), unsorted (sort_segments), appended to out;
  // returns where the next part begins, nullopt after the last.
  std::optional<size_t> segments_part(const SegmentFilter &filter, uint64_t now_ns,
                                      uint64_t orphan_min_age_ns, size_t from,
                                      std::vector<SegmentInfo> &out,
                                      size_t slots = kPartSlots) const;
  // The same for orphans(now_ns, min_age_ns, scope), unsorted (sort_orphans).
  std::optional<size_t> orphans_part(uint64_t now_ns, uint64_t min_age_ns, OrphanScope scope,
                                     size_t from, std::vector<Orphan> &out,
                                     size_t slots = kPartSlots) const;
  std::vector<ProcessInfo> processes(uint64_t now_ns = 0) const; // by pid
  std::optional<ProcessInfo> process(uint32_t pid, uint64_t now_ns = 0) const;
  std::vector<ContainerInfo> containers(uint64_t now_ns = 0) const; // by id, host ("") first
  // containers(), then a row for each of the host's top-level cgroups
  // (ContainerInfo::cgroup; their memory only).
  std::vector<ContainerInfo> containers_and_host_cgroups(uint64_t now_ns) const;
  // The segments filter lets through, by producer (NamePattern order, none
  // first), with the orphans as orphans(now_ns, min_age_ns) counts them;
  // only producers with a segment.
  std::vector<ProducerInfo> producers(const SegmentFilter &filter, uint64_t now_ns,
                                      uint64_t orphan_min_age_ns) const;
  std::vector<MountUsage> mounts() const; // by mountpoint, mntns, mnt_id
  // Segments of shared memory (is_shared_memory; with all_mounts, on any
  // tmpfs too) pinning memory or a name with no live holder whose creator
  // is gone or unknown, at least min_age_ns old; largest first. Every other
  // query's orphan is this one's, in the shared_memory scope.
  std::vector<Orphan> orphans(uint64_t now_ns, uint64_t min_age_ns,
                              OrphanScope scope = OrphanScope::shared_memory) const;
  // What a cgroup id is known to be: nullopt while set_cgroup_path has not
  // described it (a new cgroup is resolved soon after its first event),
  // else its container, nullptr for the host. One lookup.
  std::optional<const ContainerRef *> cgroup_container(uint64_t cgroup_id) const {
    return containers_.cgroup_container(cgroup_id);
  }
  // Containers that set_cgroup_path found and set_container_name has not
  // named yet, by id.
  std::vector<ContainerRef> unnamed_containers() const;
  // Each container's memory cgroup as read (id "": the host's memory);
  // nullopt forgets it. containers() reports it.
  void set_container_memory(const std::string &id, std::optional<CgroupMemory> memory) {
    containers_.set_memory(id, std::move(memory));
  }
  std::vector<std::pair<ContainerRef, CgroupMemory>> container_memory() const {
    return containers_.memory_by_container();
  }
  // Each pod's own memory cgroup, by pod uid (mounts() gives a pod's
  // emptyDir its room to the pod's limit), and the host's top-level
  // cgroups; each call replaces what was.
  void set_pod_memory(std::unordered_map<std::string, CgroupMemory> pods) {
    containers_.set_pod_memory(std::move(pods));
  }
  void set_host_cgroups(std::vector<NamedCgroupMemory> cgroups) {
    containers_.set_host_cgroups(std::move(cgroups));
  }
  const std::vector<NamedCgroupMemory> &host_cgroups() const { return containers_.host_cgroups(); }
  // A live process of each container the engine knows, by container id
  // (the lowest pid): where its memory cgroup is found.
  std::vector<std::pair<std::string, uint32_t>> container_pids() const;
  // cgroup ids in use that set_cgroup_path has not described yet.
  std::vector<uint64_t> unknown_cgroups() const;
  EngineStats stats() const;
  // Every live segment in one group per (container, kind, state, mount,
  // orphan), sorted by container id, mountpoint, kind, state, orphan: one
  // pass, no SegmentInfo.
  std::vector<SegmentGroup> segment_groups(uint64_t now_ns, uint64_t orphan_min_age_ns) const;
  EngineTotals totals(uint64_t now_ns, uint64_t orphan_min_age_ns) const;
  // What the last full scan could not cover (apply_scan sets it): files
  // there are missing from every table until a scan reaches them.
  void set_scan_gaps(std::vector<ScanGap> gaps) { mounts_.set_scan_gaps(std::move(gaps)); }
  const std::vector<ScanGap> &scan_gaps() const { return mounts_.scan_gaps(); }
  // totals().sigbus without a walk over the segments.
  uint64_t sigbus() const { return failures_.bus_errors().total(); }
  // SIGBUS faults: the recent ones, and by mount (device) and cgroup.
  const BusErrorLog &bus_errors() const { return failures_.bus_errors(); }
  // The remembered faults at or after since_ns, oldest first, each with
  // its container.
  std::vector<BusError> sigbus_since(uint64_t since_ns) const;
  // Every fault since start by (container, mountpoint), sorted by container
  // id and mountpoint; the host with no mountpoint always has a group.
  std::vector<FailureGroup> sigbus_groups() const;
  // Writes, resizes and creates that found no space (ENOSPC, EDQUOT) since
  // start, grouped as sigbus_groups().
  std::vector<FailureGroup> nospace_groups() const;

  // OOM kills seen since start (totals without a walk).
  uint64_t oom_kills() const { return failures_.oom_kills().total(); }
  // The remembered kills at or after since_ns, oldest first, each with its
  // container.
  std::vector<OomKill> oom_kills_since(uint64_t since_ns) const;
  // How long the kills of a container that ended are still reported (by
  // oom_groups, last_oom_kills and containers()): long enough for scrapes
  // and alerts over the last minutes to see them, since an OOM kill often
  // ends its container.
  static constexpr uint64_t kOomShownNs = 15ull * 60 * 1'000'000'000;
  // How long a kill in a cgroup not described yet waits to be reported.
  static constexpr uint64_t kOomUnknownWaitNs = 30'000'000'000;
  // Every kill since start by container (mountpoint ""), as sigbus_groups(),
  // but for containers that ended more than kOomShownNs after their last.
  std::vector<FailureGroup> oom_groups(uint64_t now_ns) const;
  // Each of those containers' latest remembered kill, by container id.
  std::vector<OomKill> last_oom_kills(uint64_t now_ns) const;
  // Before an oom event is applied: the linked files charged to its cgroup
  // (oom_cgroup), at most n, the victim's then the largest by size first,
  // whose pages the caller may count again (set_file_usage), since faults
  // fill files unseen.
  std::vector<SegmentKey> oom_candidates(const Event &e, size_t n) const;

  size_t segment_count() const { return segs_.size(); }

private:
  friend class SegmentScan;

  using Segment = SegmentTable::Segment;
  using Slot = SegmentTable::Slot;
  using SegIt = SegmentTable::iterator;
  static constexpr uint8_t kPathFull = SegmentTable::kPathFull;
  static constexpr uint8_t kExistedBefore = SegmentTable::kExistedBefore;
  using Process = ProcessTable::Process;
  using Held = ProcessTable::Held;
  using Attachment = ProcessTable::Attachment;

  // What an event tells about an fd's fate at exec.
  enum class ExecHint : uint8_t { cloexec, survives, unknown };

  // Events, one handler each.
  void on_open(const Event &e); // create and open
  void on_memfd_create(const Event &e);
  void on_resize(const Event &e);
  void on_unlink(const Event &e);
  void on_rename(const Event &e);
  void on_link(const Event &e);
  void on_free(const Event &e);
  void on_shmget(const Event &e);
  void on_shmat(const Event &e);
  void on_shmdt(const Event &e);
  void on_shm_rmid(const Event &e);
  void on_exit(const Event &e);
  void on_exec(const Event &e);
  void on_sigbus(const Event &e);
  void on_nospace(const Event &e);
  void on_oom(const Event &e);
  // The cgroup an OOM kill is counted in: the victim's where known, else
  // the charging task's.
  uint64_t oom_cgroup(const Event &e) const;
  // fn(key, segment, mine) for each segment charged to a cgroup as far as
  // shmbpf can tell: created by a process of it, in its container, or
  // created or held by the victim (mine).
  template <class Fn> void for_each_charged(uint64_t cgroup_id, uint32_t victim, Fn &&fn) const;
  // The largest (resident) of them, the victim's first, at most
  // OomKillLog::kLargest.
  std::vector<OomFile> largest_charged(uint64_t cgroup_id, uint32_t victim) const;
  // The containers with a live process; whether a cgroup's kills are still
  // reported (a live container's, the host's, or recent).
  std::set<std::string> live_containers() const;
  bool oom_shown(uint64_t cgroup_id, uint64_t last_ns, uint64_t now_ns,
                 const std::set<std::string> &live) const;
  // A failure for lack of space on e's filesystem, by mount and cgroup.
  void count_nospace(const Event &e);
  // The mountpoint of the file a sigbus or nospace event names.
  std::string failure_mountpoint(const Event &e) const;
  std::vector<FailureGroup> groups_of(const FailureCounts &counts) const;

  Process &touch_process(const Event &e) { return procs_.touch(e); }
  Process &process_entry(uint32_t pid) { return procs_.entry(pid); }
  SegIt insert_segment(const SegmentKey &key, Kind kind);
  SegIt created_or_known(const SegmentKey &key, Kind kind, bool created, const Event &e,
                         Process &p);
  void erase_segment(SegIt it);
  // One of a file's names is gone: it shows another, or it is unlinked.
  void drop_name(SegIt it, std::string_view path);
  void set_bytes(SegIt it, uint64_t bytes);
  void set_creator(Segment &s, uint32_t pid, const Process &p);
  // A creator's comm, cut to the segment's 15 characters.
  static void set_creator_comm(Segment &s, std::string_view comm);
  void hold(SegIt it, uint32_t pid, Process &p, ExecHint hint);
  void unhold(SegIt it, uint32_t pid);
  // Drops a process's holds (all, or only those exec closes) and attachments.
  void release(uint32_t pid, Process &p, bool exec_only, uint64_t ts);
  // Destroys the segment when nothing keeps it any more.
  bool collect_if_unused(SegIt it);
  SegIt find_linked_by_name(const Event &e);
  void upsert_sysv(uint32_t ipcns, const SysvEntry &t, uint64_t now_ns);
  // One scanned inode of reconcile_tmpfs and every name the scan found it under.
  void reconcile_inode(std::span<const TmpfsFile *const> names, uint64_t now_ns);

  bool creator_alive(const Segment &s) const;
  bool is_orphan(const SegmentKey &key, const Segment &s, uint64_t now_ns, uint64_t min_age_ns,
                 OrphanScope scope = OrphanScope::shared_memory) const;
  // What the live processes tell of containers: mntns and ipcns -> the one
  // container all their known processes are in, and the containers that
  // have a live process, by pod uid.
  struct LiveView {
    std::unordered_map<uint32_t, const ContainerRef *> mnt, ipc;
    std::unordered_map<std::string_view, std::vector<const ContainerRef *>> by_pod;
  };
  LiveView live_view() const;
  // Whether a segment was made by an earlier container of a pod that runs
  // another now (a restart, docs/LEAKS.md): its creator's container has no
  // live process, and a live container of the same pod has its name (any
  // other of the pod's, while its name is not known).
  bool left_by_restart(const Segment &s, const LiveView &live) const;
  const ContainerRef *segment_container(const SegmentKey &key, const Segment &s,
                                        const LiveView &ns) const;
  uint64_t age_ns(const Segment &s, uint64_t now_ns) const;
  const ContainerRef *container_of(uint64_t cgroup_id) const {
    return containers_.container_of(cgroup_id);
  }
  // The memory cgroup a mount's pages are charged to, when mounts() can
  // tell: a container's /dev/shm, a pod's emptyDir seen from the host.
  const CgroupMemory *mount_charged_to(const MountUsage &u) const;
  // A failure's record (BusError, OomKill) with its cgroup's container.
  template <class Failure> Failure with_container(Failure f) const {
    if (const ContainerRef *c = container_of(f.cgroup_id))
      f.container = *c;
    return f;
  }
  std::string mountpoint_of(const SegmentKey &key, const Segment &s) const;
  std::string mountpoint_of(bool sysv, uint32_t mnt_id, uint32_t dev) const;
  std::string_view mountpoint_view(bool sysv, uint32_t mnt_id, uint32_t dev) const;
  SegmentInfo info(const SegmentKey &key, const Segment &s, const LiveView *ns = nullptr) const;
  // info() as a list shows it: with its age and orphan verdict at now_ns
  // (none when now_ns is 0).
  SegmentInfo listed(const SegmentKey &key, const Segment &s, const LiveView &ns, uint64_t now_ns,
                     uint64_t orphan_min_age_ns) const;
  bool matches(const SegmentKey &key, const Segment &s, const SegmentFilter &f,
               const LiveView &ns) const;
  // count_held: walk p.held for segments_held/bytes_held (else left 0).
  ProcessInfo process_info(uint32_t pid, const Process &p, uint64_t now_ns,
                           bool count_held = true) const;
  uint64_t now_or_last(uint64_t now_ns) const { return now_ns ? now_ns : last_ts_; }
  // fn(key, segment) for each live segment in the table's slots
  // [from, from + slots); where the next part begins, nullopt after the
  // last (segments_part, orphans_part).
  template <class Fn>
  std::optional<size_t> for_each_in_part(size_t from, size_t slots, Fn &&fn) const {
    const size_t last = segs_.slot_end();
    const size_t end = from >= last || last - from <= slots ? last : from + slots;
    for (auto it = segs_.from(from); it != segs_.end() && it.index() < end; ++it)
      fn(it->first, it->second);
    return end < last ? std::optional<size_t>(end) : std::nullopt;
  }

  EngineConfig config_;
  SegmentTable segs_;
  ProcessTable procs_;
  ContainerTable containers_;
  MountTable mounts_;
  RateCounter creates_; // host-wide, outlives the processes
  RateCounter unlinks_;
  FailureLog failures_;
  uint64_t last_ts_ = 0;
  EngineStats stats_;
};

// In the order of Engine::segments(): by path, then key.
void sort_segments(std::vector<SegmentInfo> &segments);
// In the order of Engine::orphans(): largest first, then by path and key.
void sort_orphans(std::vector<Orphan> &orphans);

// Every live segment read in place, for views that filter and sort many
// segments but show a few (top's segments view): no SegmentInfo, no
// allocation per segment. Valid while the engine does not change.
class SegmentScan {
public:
  // What filtering and sorting need, as SegmentInfo has it.
  struct Item {
    SegmentKey key; // kind set as in SegmentInfo::key
    std::string_view path;
    std::string_view creator_comm;
    uint32_t creator_pid = 0; // 0: unknown
    uint64_t size = 0;
    uint64_t bytes = 0;
    uint64_t changed_ns = 0;
    uint64_t age_ns = 0;                     // as SegmentInfo::age_ns at the scan's now_ns
    const uint32_t *holders_begin = nullptr; // unsorted
    const uint32_t *holders_end = nullptr;
    uint32_t slot = 0;
    size_t holder_count() const { return static_cast<size_t>(holders_end - holders_begin); }
  };

  // now_ns and orphan_min_age_ns as Engine::segments(filter, now_ns, ...).
  SegmentScan(const Engine &engine, uint64_t now_ns, uint64_t orphan_min_age_ns);
  void for_each(const std::function<void(const Item &)> &f) const;
  // The container a view shows for the segment: SegmentInfo::container's
  // id, else its creator's container id ("" = host).
  std::string_view container_id(const Item &item) const;
  // The segment in full, as Engine::segments(filter, now_ns, min_age) gives
  // it. Only item.slot is read: an item may be kept as its slot alone.
  SegmentInfo info(const Item &item) const;

private:
  const Engine &engine_;
  Engine::LiveView ns_;
  uint64_t now_ns_;
  uint64_t orphan_min_age_ns_;
  mutable std::deque<std::string> names_; // SysV names the items point to
};

} // namespace shmbpf
