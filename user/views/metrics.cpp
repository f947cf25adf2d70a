#include "views/metrics.hpp"

#include "model/reap.hpp"

#include "facts/dev.hpp"
#include "views/prometheus.hpp"
#include "views/relations.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <utility>

namespace shmbpf {

namespace {

using Type = PrometheusWriter::Type;

// The labels Kubernetes users join on, as kube-state-metrics names them:
// namespace, pod, uid (the pod's), container (the container's name) and
// container_id ("containerd://<id>": runtime_container_id). Names come from
// the runtime's files and are empty until known, and on the host. A name
// belongs to one id, so they add no series.
struct Owner {
  std::string container_id;
  std::string_view name;
  std::string_view pod_uid;
  std::string_view pod;
  std::string_view pod_namespace;
  explicit Owner(const ContainerRef &c)
      : container_id(runtime_container_id(c)), name(c.name), pod_uid(c.pod_uid), pod(c.pod),
        pod_namespace(c.pod_namespace) {}
  auto tie() const { return std::tie(container_id, name, pod_uid, pod, pod_namespace); }
  bool operator<(const Owner &o) const { return tie() < o.tie(); }
};

struct Sum {
  uint64_t segments = 0;
  uint64_t bytes = 0;
};

// The foreign filesystems past kForeignMountSeries, and the mountpoints
// that only they have (a mountpoint the host or a kept filesystem also
// has keeps its label).
struct Folding {
  std::unordered_set<uint32_t> devs;
  std::set<std::string_view> mountpoints;
  uint64_t used_bytes = 0;
  std::string_view label(std::string_view mountpoint) const {
    return mountpoints.count(mountpoint) ? std::string_view(kFoldedMountpoint) : mountpoint;
  }
};

// fs: one mount of each filesystem of all (one_mount_per_filesystem).
Folding fold_foreign(const std::vector<MountUsage> &all,
                     const std::vector<const MountUsage *> &fs) {
  Folding f;
  std::vector<const MountUsage *> foreign;
  for (const MountUsage *m : fs)
    if (m->mount.foreign)
      foreign.push_back(m);
  if (foreign.size() <= kForeignMountSeries)
    return f;
  std::sort(foreign.begin(), foreign.end(), [](const MountUsage *a, const MountUsage *b) {
    return std::tie(b->mount.used_bytes, a->mount.dev) <
           std::tie(a->mount.used_bytes, b->mount.dev);
  });
  for (size_t i = kForeignMountSeries; i < foreign.size(); ++i) {
    f.devs.insert(foreign[i]->mount.dev);
    f.used_bytes += foreign[i]->mount.used_bytes;
  }
  std::set<std::string_view> kept;
  for (const MountUsage &m : all)
    if (!f.devs.count(m.mount.dev))
      kept.insert(m.mount.mountpoint);
  for (const MountUsage &m : all)
    if (f.devs.count(m.mount.dev) && !kept.count(m.mount.mountpoint))
      f.mountpoints.insert(m.mount.mountpoint);
  return f;
}

// A foreign filesystem's user namespace owner, as the label userns_owner
// gives it: "" for the host's user namespace (the host's mounts, rootful
// containers'), else the uid that made the namespace.
std::string userns_owner(const MountState &m) {
  if (!m.foreign)
    return "";
  return m.owner_uid == MountNamespace::kUnknownOwner ? "unknown" : std::to_string(m.owner_uid);
}

void build_info(PrometheusWriter &w, const MetricsCounters &c) {
  w.family("shmbpf_build_info", Type::gauge,
           "shmbpf's version, the commit it was built from and the release of the kernel it "
           "runs on; always 1.");
  w.sample({{"version", c.agent.version}, {"revision", c.agent.revision}, {"kernel", c.kernel}},
           uint64_t{1});
}

// The agent's own process, under the names every Prometheus client library
// gives them, so that the dashboards made for those read it.
void process_metrics(PrometheusWriter &w, const SelfStats &p) {
  w.family("process_cpu_seconds_total", Type::counter,
           "User and system CPU time shmbpf has spent, in seconds.");
  w.sample({}, p.cpu_seconds);
  w.family("process_resident_memory_bytes", Type::gauge, "shmbpf's resident memory in bytes.");
  w.sample({}, p.resident_bytes);
  w.family("process_virtual_memory_bytes", Type::gauge, "shmbpf's virtual memory in bytes.");
  w.sample({}, p.virtual_bytes);
  w.family("process_open_fds", Type::gauge, "File descriptors shmbpf has open.");
  w.sample({}, p.open_fds);
  w.family("process_max_fds", Type::gauge, "The most file descriptors shmbpf may open.");
  w.sample({}, p.max_fds);
  w.family("process_start_time_seconds", Type::gauge,
           "When shmbpf started, in seconds since the epoch.");
  w.sample({}, p.start_time_seconds);
}

// Where segments are, as labels say it.
struct Place {
  Owner owner;
  std::string_view mountpoint;
  Kind kind;
  auto tie() const { return std::tie(owner, mountpoint, kind); }
  bool operator<(const Place &o) const { return tie() < o.tie(); }
};

void segments(PrometheusWriter &w, const std::vector<SegmentGroup> &groups, const Folding &fold) {
  // The engine's groups tell orphans apart; shmbpf_segments does not.
  std::map<std::pair<Place, SegmentState>, Sum> live;
  std::map<Place, Sum> orphaned, restart_orphaned;
  for (const SegmentGroup &g : groups) {
    const Place place{Owner(g.container), fold.label(g.mountpoint), g.kind};
    Sum &s = live[{place, g.state}];
    s.segments += g.segments;
    s.bytes += g.bytes;
    // Every place that has segments has an orphan count, 0 included.
    Sum &o = orphaned[place];
    if (g.orphan) {
      o.segments += g.segments;
      o.bytes += g.bytes;
    }
    // Only a pod restarts its containers: its places have a count, 0 included.
    if (!g.container.pod_uid.empty()) {
      Sum &r = restart_orphaned[place];
      if (g.restart_orphan) {
        r.segments += g.segments;
        r.bytes += g.bytes;
      }
    }
  }
  auto write_live = [&](const char *name, const char *help, bool bytes) {
    w.family(name, Type::gauge, help);
    for (const auto &[key, sum] : live) {
      const auto &[place, state] = key;
      w.sample({{"namespace", place.owner.pod_namespace},
                {"pod", place.owner.pod},
                {"uid", place.owner.pod_uid},
                {"container", place.owner.name},
                {"container_id", place.owner.container_id},
                {"mountpoint", place.mountpoint},
                {"kind", to_string(place.kind)},
                {"state", to_string(state)}},
               bytes ? sum.bytes : sum.segments);
    }
  };
  auto write_orphaned = [&](const char *name, const char *help, bool bytes,
                            const std::map<Place, Sum> &sums) {
    w.family(name, Type::gauge, help);
    for (const auto &[place, sum] : sums)
      w.sample({{"namespace", place.owner.pod_namespace},
                {"pod", place.owner.pod},
                {"uid", place.owner.pod_uid},
                {"container", place.owner.name},
                {"container_id", place.owner.container_id},
                {"mountpoint", place.mountpoint},
                {"kind", to_string(place.kind)}},
               bytes ? sum.bytes : sum.segments);
  };
  write_live("shmbpf_segments",
             "Live shared-memory segments: files on tmpfs (/dev/shm and others), memfds and "
             "System V segments. state linked: it has a name; unlinked: nameless, alive while "
             "held or paged.",
             false);
  write_live("shmbpf_segment_bytes",
             "Resident bytes of the live segments (pages in memory, not the logical size).", true);
  write_orphaned("shmbpf_orphaned_segments",
                 "Shared-memory segments that pin memory or a name while no live process holds "
                 "them and their creator is gone, whatever their age (docs/LEAKS.md).",
                 false, orphaned);
  write_orphaned("shmbpf_orphaned_bytes", "Resident bytes of the orphaned segments.", true,
                 orphaned);
  write_orphaned("shmbpf_restart_orphaned_segments",
                 "Orphaned segments made by an earlier container of a pod that runs a newer one "
                 "(a restart): what each restart finds in the pod's /dev/shm (docs/LEAKS.md).",
                 false, restart_orphaned);
  write_orphaned("shmbpf_restart_orphaned_bytes",
                 "Resident bytes of the orphaned segments left by restarts.", true,
                 restart_orphaned);
}

// One series per filesystem (fs: one mount of each, one_mount_per_filesystem):
// the device keeps two filesystems on one mountpoint (one over the other, or
// in two namespaces) apart.
void mounts(PrometheusWriter &w, std::vector<const MountUsage *> fs, const Folding &fold) {
  std::erase_if(fs, [&](const MountUsage *m) { return fold.devs.count(m->mount.dev) > 0; });
  std::sort(fs.begin(), fs.end(), [](const MountUsage *a, const MountUsage *b) {
    return std::tie(a->container.id, a->mount.mountpoint, a->mount.dev) <
           std::tie(b->container.id, b->mount.mountpoint, b->mount.dev);
  });
  std::vector<std::string> devices, owners, container_ids;
  devices.reserve(fs.size());
  owners.reserve(fs.size());
  container_ids.reserve(fs.size());
  for (const MountUsage *m : fs) {
    devices.push_back(dev_string(m->mount.dev));
    owners.push_back(userns_owner(m->mount));
    container_ids.push_back(runtime_container_id(m->container));
  }
  // One sample per filesystem whose value is known (value gives nullopt
  // for the others).
  auto each = [&](const char *name, const char *help, auto value) {
    w.family(name, Type::gauge, help);
    for (size_t i = 0; i < fs.size(); ++i) {
      const MountUsage &m = *fs[i];
      const std::optional<double> v = value(m);
      if (!v)
        continue;
      w.sample({{"namespace", m.container.pod_namespace},
                {"pod", m.container.pod},
                {"uid", m.container.pod_uid},
                {"container", m.container.name},
                {"container_id", container_ids[i]},
                {"mountpoint", m.mount.mountpoint},
                {"device", devices[i]},
                {"userns_owner", owners[i]}},
               *v);
    }
  };
  each("shmbpf_mount_size_bytes",
       "Size limit of a tmpfs or hugetlbfs filesystem; absent when it has none.",
       [](const MountUsage &m) -> std::optional<double> {
         if (m.mount.size_limit == 0)
           return std::nullopt;
         return static_cast<double>(m.mount.size_limit);
       });
  each("shmbpf_mount_used_bytes",
       "Bytes used on a tmpfs or hugetlbfs filesystem (statfs each second, moved by events "
       "in between).",
       [](const MountUsage &m) { return std::optional(static_cast<double>(m.mount.used_bytes)); });
  each("shmbpf_mount_peak_used_bytes",
       "The most a tmpfs or hugetlbfs filesystem held since shmbpf first measured it: what a "
       "container's --shm-size or an emptyDir's sizeLimit must hold (docs/METRICS.md).",
       [](const MountUsage &m) { return std::optional(static_cast<double>(m.peak_used_bytes)); });
  each("shmbpf_mount_seconds_to_full",
       "Seconds until a size-limited filesystem is full at its growth over the last minute; "
       "absent when it is not growing (or has no size limit).",
       [&](const MountUsage &m) -> std::optional<double> {
         if (m.mount.size_limit == 0)
           return std::nullopt;
         return m.seconds_to_full;
       });
  each("shmbpf_mount_seconds_to_memory_limit",
       "Seconds until the memory cgroup of the container that owns the filesystem reaches its "
       "limit at the filesystem's growth (its pages are charged there: an OOM kill, not a "
       "full mount); absent when it is not growing, and without a known limit.",
       [&](const MountUsage &m) -> std::optional<double> {
         if (!m.memory_room)
           return std::nullopt;
         return m.seconds_to_memory_limit;
       });
  w.family("shmbpf_mounts_folded", Type::gauge,
           "Filesystems mounted only in user namespaces other than shmbpf's (any user can make "
           "them) past the " +
               std::to_string(kForeignMountSeries) +
               " that get series of their own; their segments and failures are labelled "
               "mountpoint=\"(folded)\".");
  w.sample({}, static_cast<uint64_t>(fold.devs.size()));
  w.family("shmbpf_mounts_folded_used_bytes", Type::gauge,
           "Bytes used on the folded filesystems (shmbpf_mounts_folded) together.");
  w.sample({}, fold.used_bytes);
}

// One sample per (container, mountpoint) group of a failure counter.
// Groups on folded filesystems add up under one mountpoint.
void failure_samples(PrometheusWriter &w, const std::vector<FailureGroup> &groups,
                     const Folding &fold) {
  std::map<std::pair<Owner, std::string_view>, uint64_t> sums;
  for (const FailureGroup &g : groups)
    sums[{Owner(g.container), fold.label(g.mountpoint)}] += g.count;
  for (const auto &[key, count] : sums) {
    const auto &[owner, mountpoint] = key;
    w.sample({{"namespace", owner.pod_namespace},
              {"pod", owner.pod},
              {"uid", owner.pod_uid},
              {"container", owner.name},
              {"container_id", owner.container_id},
              {"mountpoint", mountpoint}},
             count);
  }
}

template <class T> void owner_sample(PrometheusWriter &w, const Owner &o, T value) {
  w.sample({{"namespace", o.pod_namespace},
            {"pod", o.pod},
            {"uid", o.pod_uid},
            {"container", o.name},
            {"container_id", o.container_id}},
           value);
}

// OOM kills by container, and what each container's latest remembered kill
// found: its memory cgroup's shared memory, limit and the share of the
// charge that was shared memory.
void oom_samples(PrometheusWriter &w, const MetricsSnapshot &s) {
  w.family("shmbpf_oom_kills_total", Type::counter,
           "Processes the kernel's OOM killer killed since start, by the victim's container "
           "(the host's cgroups: id=\"\").");
  std::map<Owner, uint64_t> sums;
  for (const FailureGroup &g : s.oom_kills)
    sums[Owner(g.container)] += g.count;
  for (const auto &[owner, count] : sums)
    owner_sample(w, owner, count);
  auto each = [&](const char *name, const char *help, auto value) {
    w.family(name, Type::gauge, help);
    for (const OomKill &k : s.last_oom_kills)
      if (const auto v = value(k))
        owner_sample(w, Owner(k.container), *v);
  };
  const int64_t to_realtime = s.counters.boot_to_realtime_ns;
  each("shmbpf_oom_last_kill_timestamp_seconds",
       "When the container's latest OOM kill happened, in seconds since the epoch.",
       [&](const OomKill &k) {
         return std::optional<double>(
             static_cast<double>(static_cast<int64_t>(k.ts_ns) + to_realtime) / 1e9);
       });
  each("shmbpf_oom_last_kill_shmem_bytes",
       "Shared memory (tmpfs, memfd, SysV) charged to the memory cgroup of the container's "
       "latest OOM kill, read as the kill was seen.",
       [](const OomKill &k) {
         return k.memory ? std::optional<double>(static_cast<double>(k.memory->shmem))
                         : std::nullopt;
       });
  each("shmbpf_oom_last_kill_shmem_ratio",
       "Shared memory's share of the memory cgroup of the container's latest OOM kill, of its "
       "limit (what it was charged when it was killed) or, without one, of its usage (0 to 1): "
       "at 0.5 or more, /dev/shm and its kind filled the cgroup.",
       [](const OomKill &k) { return k.shmem_share(); });
  each("shmbpf_oom_last_kill_limit_bytes",
       "The memory limit of the cgroup of the container's latest OOM kill; absent when it had "
       "none (the host ran out).",
       [](const OomKill &k) {
         return k.memory && k.memory->limit.bytes
                    ? std::optional<double>(static_cast<double>(*k.memory->limit.bytes))
                    : std::nullopt;
       });
}

// Three gauges of memory cgroups as read, named <prefix>_shmem_bytes,
// <prefix>_memory_usage_bytes and <prefix>_memory_limit_bytes (absent
// without a limit): each row's sample(row, value) gives its labels.
struct MemoryHelp {
  const char *shmem, *usage, *limit;
};
template <class Rows, class Sample>
void memory_gauges(PrometheusWriter &w, std::string_view prefix, const MemoryHelp &help,
                   const Rows &rows, Sample sample) {
  auto each = [&](std::string_view suffix, const char *text, auto value) {
    w.family(std::string(prefix) + std::string(suffix), Type::gauge, text);
    for (const auto &row : rows)
      if (const std::optional<uint64_t> v = value(row.second))
        sample(row, *v);
  };
  each("_shmem_bytes", help.shmem, [](const CgroupMemory &m) { return std::optional(m.shmem); });
  each("_memory_usage_bytes", help.usage,
       [](const CgroupMemory &m) { return std::optional(m.usage); });
  each("_memory_limit_bytes", help.limit, [](const CgroupMemory &m) { return m.limit.bytes; });
}

// Each container's memory cgroup: what shmem dashboards built on RSS or
// the working set miss. Then the host's top-level cgroups (system.slice,
// user.slice, kubepods, ...): where shared memory outside containers is
// charged.
void cgroup_memory(PrometheusWriter &w, const MetricsSnapshot &s) {
  memory_gauges(
      w, "shmbpf_container",
      {"Shared memory (tmpfs, memfd, SysV) charged to a container's memory cgroup "
       "(memory.stat shmem); id=\"\": the host's (/proc/meminfo Shmem).",
       "Everything charged to a container's memory cgroup (memory.current, "
       "memory.usage_in_bytes); id=\"\": the host's memory in use.",
       "The memory limit of a container's cgroup, the tightest up the tree; absent without "
       "one. id=\"\": the host's memory."},
      s.container_memory,
      [&](const auto &row, uint64_t v) { owner_sample(w, Owner(row.first), v); });
  std::vector<std::pair<std::string, CgroupMemory>> top;
  top.reserve(s.host_cgroups.size());
  for (const NamedCgroupMemory &c : s.host_cgroups)
    top.emplace_back(c.path, c.memory);
  memory_gauges(
      w, "shmbpf_cgroup",
      {"Shared memory (tmpfs, memfd, SysV) charged to one of the host's top-level memory "
       "cgroups (memory.stat shmem).",
       "Everything charged to one of the host's top-level memory cgroups.",
       "The memory limit of one of the host's top-level memory cgroups; absent without one."},
      top, [&](const auto &row, uint64_t v) {
        w.sample({{"cgroup", row.first}}, v);
      });
}

void counters(PrometheusWriter &w, const MetricsSnapshot &s, const Folding &fold) {
  const MetricsCounters &c = s.counters;
  w.family("shmbpf_events_total", Type::counter, "Events applied to the model since start.");
  for (size_t t = 1; t < c.events.size(); ++t)
    if (const std::string_view name = to_string(static_cast<EventType>(t)); name != "unknown")
      w.sample({{"event", name}}, c.events[t]); // the numbers no type has left out
  w.family("shmbpf_events_lost_total", Type::counter,
           "Records the kernel could not deliver since start (ring buffer full); the model "
           "rescans to recover.");
  w.sample({}, c.lost);
  w.family("shmbpf_sigbus_total", Type::counter,
           "SIGBUS faults the kernel generated since start, by the faulting process's container "
           "and the mount of the file it touched: what touching a page of a full /dev/shm "
           "causes.");
  failure_samples(w, s.sigbus, fold);
  w.family("shmbpf_nospace_total", Type::counter,
           "Writes, resizes (ftruncate, fallocate) and creates on a tmpfs or hugetlbfs that "
           "failed for lack of space (ENOSPC, or EDQUOT from a quota) since start, by the "
           "failing process's container and the mount: a full /dev/shm without the crash.");
  failure_samples(w, s.nospace, fold);
  oom_samples(w, s);
  w.family("shmbpf_bpf_program_attached", Type::gauge,
           "1 when the hook's program is attached; 0 when the hook is off on this kernel (what "
           "is lost: shmbpf doctor).");
  for (const HookStatus &h : c.hooks)
    w.sample({{"hook", h.hook}, {"program", h.program}},
             uint64_t{c.attached && !h.program.empty()});
}

void export_counters(PrometheusWriter &w, const ExportCounters &e) {
  w.family("shmbpf_export_records_total", Type::counter,
           "Records written to the export file since start (events, lost and orphan records).");
  w.sample({}, e.records);
  w.family("shmbpf_export_dropped_records_total", Type::counter,
           "Records never written to the export file: its writer fell too far behind, or a "
           "write failed.");
  w.sample({}, e.dropped);
  w.family("shmbpf_export_errors_total", Type::counter,
           "Failed writes, rotations and reopens of the export file (a full disk, say).");
  w.sample({}, e.errors);
  w.family("shmbpf_export_rotations_total", Type::counter,
           "Times the export file reached its size limit and was rotated.");
  w.sample({}, e.rotations);
}

void reap_counters(PrometheusWriter &w, const ReapCounters &r) {
  w.family("shmbpf_reap_runs_total", Type::counter,
           "Runs of serve --reap that found orphans to check, since start.");
  w.sample({}, r.runs);
  w.family("shmbpf_reaped_segments_total", Type::counter,
           "Orphaned segments serve --reap removed since start.");
  w.sample({}, r.freed);
  w.family("shmbpf_reaped_bytes_total", Type::counter,
           "Bytes of the orphaned segments serve --reap removed since start.");
  w.sample({}, r.bytes_freed);
  w.family("shmbpf_reap_skipped_total", Type::counter,
           "Orphans serve --reap checked and left, by the check that failed (docs/REAP.md).");
  for (auto reason = static_cast<int>(ReapSkip::namespace_gone);
       reason <= static_cast<int>(ReapSkip::failed); ++reason) {
    const std::string_view name = to_string(static_cast<ReapSkip>(reason));
    if (static_cast<ReapSkip>(reason) == ReapSkip::vanished)
      continue; // not skipped: gone
    const auto it = r.skipped.find(std::string(name));
    w.sample({{"reason", name}}, it == r.skipped.end() ? uint64_t{0} : it->second);
  }
}

} // namespace

MetricsSnapshot take_metrics_snapshot(const Engine &engine, MetricsCounters counters) {
  MetricsSnapshot s;
  // Orphans as soon as they are orphans: an alert's `for:` does the waiting.
  s.segments = engine.segment_groups(counters.now_ns, 0);
  s.mounts = engine.mounts();
  s.sigbus = engine.sigbus_groups();
  s.nospace = engine.nospace_groups();
  s.oom_kills = engine.oom_groups(counters.now_ns);
  s.last_oom_kills = engine.last_oom_kills(counters.now_ns);
  s.container_memory = engine.container_memory();
  s.host_cgroups = engine.host_cgroups();
  s.counters = std::move(counters);
  return s;
}

std::string metrics_text(const MetricsSnapshot &snapshot) {
  PrometheusWriter w;
  // The node on every series, first: metrics of many nodes join the
  // Kubernetes objects of theirs (kube-state-metrics' node).
  if (!snapshot.counters.agent.node.empty())
    w.set_common_label("node", snapshot.counters.agent.node);
  build_info(w, snapshot.counters);
  const std::vector<const MountUsage *> fs =
      one_mount_per_filesystem(snapshot.mounts, snapshot.counters.host_mntns);
  const Folding fold = fold_foreign(snapshot.mounts, fs);
  segments(w, snapshot.segments, fold);
  mounts(w, fs, fold);
  cgroup_memory(w, snapshot);
  counters(w, snapshot, fold);
  if (snapshot.counters.export_file)
    export_counters(w, *snapshot.counters.export_file);
  if (snapshot.counters.reap)
    reap_counters(w, *snapshot.counters.reap);
  if (snapshot.counters.process)
    process_metrics(w, *snapshot.counters.process);
  return w.take();
}

} // namespace shmbpf
