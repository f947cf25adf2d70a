// The engine's summaries: processes, containers, mounts, orphans, totals
// and segment groups, and what the live loop asks to resolve. The queries
// of segments themselves are in engine_queries.cpp.
#include "model/engine.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>

namespace shmbpf {

ProcessInfo Engine::process_info(uint32_t pid, const Process &p, uint64_t now_ns,
                                 bool count_held) const {
  ProcessInfo i;
  i.pid = pid;
  i.ppid = p.ppid;
  i.uid = p.uid;
  i.mntns = p.mntns;
  i.comm = p.comm;
  i.cgroup_id = p.cgroup_id;
  if (const ContainerRef *c = container_of(p.cgroup_id)) {
    i.container_id = c->id;
    i.runtime = c->runtime;
    i.pod_uid = c->pod_uid;
    i.container_name = c->name;
    i.pod = c->pod;
    i.pod_namespace = c->pod_namespace;
  }
  for (const Held &h : p.held) {
    if (!count_held)
      break;
    if (auto it = segs_.find(h.key); it != segs_.end()) {
      ++i.segments_held;
      i.bytes_held += it->second.bytes;
    }
  }
  i.sysv_attachments = p.attachments.size();
  i.creates = p.creates.count;
  i.unlinks = p.unlinks.count;
  i.create_rate = p.creates.rate(now_ns);
  i.unlink_rate = p.unlinks.rate(now_ns);
  i.last_create_ns = p.creates.last_ns;
  i.last_unlink_ns = p.unlinks.last_ns;
  i.sigbus = p.sigbus;
  return i;
}

std::vector<ProcessInfo> Engine::processes(uint64_t now_ns) const {
  now_ns = now_or_last(now_ns);
  std::vector<ProcessInfo> out;
  out.reserve(procs_.size());
  for (const auto &[pid, p] : procs_)
    out.push_back(process_info(pid, p, now_ns, false));
  std::sort(out.begin(), out.end(),
            [](const ProcessInfo &a, const ProcessInfo &b) { return a.pid < b.pid; });
  // One pass over the segments fills what each process created and holds:
  // pid -> row through a small open-addressing table of this query's own
  // (a lookup per segment and per holder, in cache), not a find per hold.
  size_t cells = 16;
  while (cells < out.size() * 2)
    cells *= 2;
  std::vector<uint32_t> row_of(cells, 0); // row + 1
  std::vector<uint32_t> serial(out.size());
  auto home = [&](uint32_t pid) { return (pid * 0x9e3779b1u) & (cells - 1); };
  for (size_t r = 0; r < out.size(); ++r) {
    serial[r] = procs_.find(out[r].pid)->second.serial;
    size_t c = home(out[r].pid);
    while (row_of[c])
      c = (c + 1) & (cells - 1);
    row_of[c] = static_cast<uint32_t>(r + 1);
  }
  auto row = [&](uint32_t pid) -> ProcessInfo * {
    for (size_t c = home(pid); row_of[c]; c = (c + 1) & (cells - 1))
      if (out[row_of[c] - 1].pid == pid)
        return &out[row_of[c] - 1];
    return nullptr;
  };
  for (const auto &[key, s] : segs_) {
    if (s.creator_pid) {
      // creator_alive(), through the table.
      ProcessInfo *c = row(s.creator_pid);
      if (c && (s.creator_serial == 0 ||
                serial[static_cast<size_t>(c - out.data())] == s.creator_serial)) {
        ++c->segments_created;
        c->bytes_created += s.bytes;
        c->segments_unheld += s.holders.empty() && s.nattch == 0;
      }
    }
    for (uint32_t pid : s.holders) {
      if (ProcessInfo *h = row(pid)) {
        ++h->segments_held;
        h->bytes_held += s.bytes;
      }
    }
  }
  return out;
}

std::optional<ProcessInfo> Engine::process(uint32_t pid, uint64_t now_ns) const {
  auto pit = procs_.find(pid);
  if (pit == procs_.end())
    return std::nullopt;
  ProcessInfo i = process_info(pid, pit->second, now_or_last(now_ns));
  for (const auto &[key, s] : segs_) {
    if (s.creator_pid == pid && creator_alive(s)) {
      ++i.segments_created;
      i.bytes_created += s.bytes;
      i.segments_unheld += s.holders.empty() && s.nattch == 0;
    }
  }
  return i;
}

std::vector<std::pair<std::string, uint32_t>> Engine::container_pids() const {
  std::map<std::string, uint32_t> lowest;
  for (const auto &[pid, p] : procs_)
    if (const ContainerRef *c = container_of(p.cgroup_id)) {
      auto [it, fresh] = lowest.try_emplace(c->id, pid);
      if (!fresh)
        it->second = std::min(it->second, pid);
    }
  return {lowest.begin(), lowest.end()};
}

std::vector<ContainerInfo> Engine::containers(uint64_t now_ns) const {
  now_ns = now_or_last(now_ns);
  std::map<std::string, ContainerInfo> rows;
  auto row = [&](const ContainerRef *c) -> ContainerInfo & {
    ContainerInfo &r = rows[c ? c->id : std::string()];
    if (r.runtime.empty()) {
      r.id = c ? c->id : std::string();
      r.runtime = c ? c->runtime : "host";
      r.pod_uid = c ? c->pod_uid : std::string();
      if (c) {
        r.name = c->name;
        r.pod = c->pod;
        r.pod_namespace = c->pod_namespace;
      }
    }
    return r;
  };
  row(nullptr); // the host is always a row
  for (const auto &[pid, p] : procs_) {
    ContainerInfo &r = row(container_of(p.cgroup_id));
    ++r.processes;
    r.creates += p.creates.count;
    r.unlinks += p.unlinks.count;
    r.create_rate += p.creates.rate(now_ns);
  }
  // Faults by the container their process was in (exited ones included).
  for (const auto &[cgroup, b] : failures_.bus_errors().by_cgroup()) {
    ContainerInfo &r = row(container_of(cgroup));
    r.sigbus += b.count;
    if (!r.last_sigbus || r.last_sigbus->ts_ns < b.last.ts_ns)
      r.last_sigbus = with_container(b.last);
  }
  // Kills of the containers still reported (Engine::kOomShownNs).
  for (const FailureGroup &g : oom_groups(now_ns))
    if (g.count != 0)
      row(g.container.id.empty() ? nullptr : &g.container).oom_kills += g.count;
  for (const OomKill &k : last_oom_kills(now_ns))
    row(k.container.id.empty() ? nullptr : &k.container).last_oom_kill = k;
  const LiveView ns = live_view();
  // Neighbouring segments mostly share a container: skip the map then.
  const ContainerRef *last = nullptr;
  ContainerInfo *last_row = &row(nullptr);
  for (const auto &[key, s] : segs_) {
    const ContainerRef *c = segment_container(key, s, ns);
    if (c != last) {
      last = c;
      last_row = &row(c);
    }
    ++last_row->segments;
    last_row->bytes += s.bytes;
  }
  std::vector<ContainerInfo> out;
  out.reserve(rows.size());
  for (auto &[id, r] : rows) {
    if (const CgroupMemory *m = containers_.memory(id))
      r.memory = *m;
    out.push_back(std::move(r));
  }
  return out;
}

const CgroupMemory *Engine::mount_charged_to(const MountUsage &u) const {
  if (u.container.id.empty())
    return nullptr;
  if (u.mount.mountpoint == "/dev/shm")
    return containers_.memory(u.container.id);
  if (u.container.runtime == "kubernetes" && u.container.id == u.container.pod_uid &&
      pod_uid_of_volume(u.mount.mountpoint))
    return containers_.pod_memory(u.container.pod_uid);
  return nullptr;
}

std::vector<ContainerInfo> Engine::containers_and_host_cgroups(uint64_t now_ns) const {
  std::vector<ContainerInfo> rows = containers(now_ns);
  rows.reserve(rows.size() + host_cgroups().size());
  for (const NamedCgroupMemory &c : host_cgroups()) {
    ContainerInfo row;
    row.cgroup = c.path;
    row.memory = c.memory;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ProducerInfo> Engine::producers(const SegmentFilter &filter, uint64_t now_ns,
                                            uint64_t orphan_min_age_ns) const {
  now_ns = now_or_last(now_ns);
  const LiveView live = live_view();
  std::map<NamePattern, ProducerInfo> rows;
  std::map<NamePattern, std::unordered_set<uint32_t>> creators;
  for (const auto &[key, s] : segs_) {
    if (!matches(key, s, filter, live))
      continue;
    ProducerInfo &r = rows[s.pattern];
    r.pattern = s.pattern;
    ++r.segments;
    r.bytes += s.bytes;
    if (is_orphan(key, s, now_ns, orphan_min_age_ns)) {
      ++r.orphans;
      r.orphan_bytes += s.bytes;
      r.restart_orphans += left_by_restart(s, live);
    } else if (creator_alive(s)) {
      creators[s.pattern].insert(s.creator_pid);
    }
  }
  std::vector<ProducerInfo> out;
  out.reserve(rows.size());
  for (auto &[pattern, r] : rows) {
    r.creators = creators[pattern].size();
    out.push_back(r);
  }
  return out;
}

std::vector<MountUsage> Engine::mounts() const {
  std::vector<MountUsage> out = mounts_.usage();
  const LiveView ns = live_view();
  const BusErrorLog &bus = failures_.bus_errors();
  for (MountUsage &u : out) {
    const MountState &m = u.mount;
    if (auto c = ns.mnt.find(m.mntns); c != ns.mnt.end() && c->second)
      u.container = *c->second;
    else if (auto uid = pod_uid_of_volume(m.mountpoint))
      u.container = containers_.pod_of(*uid);
    // How far the memory limit of the cgroup its pages are charged to is:
    // a container's /dev/shm is the container's, a pod's emptyDir seen
    // from the host the pod's.
    if (const CgroupMemory *mem = mount_charged_to(u); mem && mem->limit.bytes) {
      const uint64_t limit = *mem->limit.bytes;
      u.memory_room = limit - std::min(mem->usage, limit);
      if (u.growth_bytes_per_s > 0)
        u.seconds_to_memory_limit = static_cast<double>(*u.memory_room) / u.growth_bytes_per_s;
    }
    u.enospc = failures_.nospace_on(m.dev);
    if (auto b = bus.by_dev().find(m.dev); b != bus.by_dev().end()) {
      u.sigbus = b->second.count;
      u.last_sigbus = with_container(b->second.last);
    }
  }
  std::sort(out.begin(), out.end(), [](const MountUsage &a, const MountUsage &b) {
    if (a.mount.mountpoint != b.mount.mountpoint)
      return a.mount.mountpoint < b.mount.mountpoint;
    if (a.mount.mntns != b.mount.mntns)
      return a.mount.mntns < b.mount.mntns;
    return a.mount.mnt_id < b.mount.mnt_id;
  });
  return out;
}

std::vector<Orphan> Engine::orphans(uint64_t now_ns, uint64_t min_age_ns, OrphanScope scope) const {
  std::vector<Orphan> out;
  orphans_part(now_ns, min_age_ns, scope, 0, out, segs_.slot_end());
  sort_orphans(out);
  return out;
}

std::optional<size_t> Engine::orphans_part(uint64_t now_ns, uint64_t min_age_ns, OrphanScope scope,
                                           size_t from, std::vector<Orphan> &out,
                                           size_t slots) const {
  const LiveView ns = live_view();
  if (from == 0) // as segments_part
    out.reserve(out.size() + segs_.size());
  return for_each_in_part(from, slots, [&](const SegmentKey &key, const Segment &s) {
    if (!is_orphan(key, s, now_ns, min_age_ns, scope))
      return;
    const uint64_t age = age_ns(s, now_ns);
    Orphan &o = out.emplace_back(Orphan{info(key, s, &ns), age});
    o.segment.age_ns = age;
    o.segment.orphan = true;
    o.segment.restart_orphan = left_by_restart(s, ns);
  });
}

void sort_orphans(std::vector<Orphan> &orphans) {
  std::sort(orphans.begin(), orphans.end(), [](const Orphan &a, const Orphan &b) {
    if (a.segment.bytes != b.segment.bytes)
      return a.segment.bytes > b.segment.bytes;
    if (a.segment.path != b.segment.path)
      return a.segment.path < b.segment.path;
    return a.segment.key < b.segment.key;
  });
}

EngineTotals Engine::totals(uint64_t now_ns, uint64_t orphan_min_age_ns) const {
  now_ns = now_or_last(now_ns);
  EngineTotals t;
  for (const auto &[key, s] : segs_) {
    KindTotals &k = s.kind == Kind::sysv ? t.sysv : s.kind == Kind::memfd ? t.memfd : t.tmpfs;
    ++k.segments;
    k.bytes += s.bytes;
    if (is_orphan(key, s, now_ns, orphan_min_age_ns)) {
      ++t.orphans;
      t.orphan_bytes += s.bytes;
    }
  }
  t.creates = creates_.count;
  t.unlinks = unlinks_.count;
  t.create_rate = creates_.rate(now_ns);
  t.unlink_rate = unlinks_.rate(now_ns);
  const BusErrorLog &bus = failures_.bus_errors();
  t.sigbus = bus.total();
  if (!bus.recent().empty())
    t.last_sigbus = with_container(bus.recent().back());
  const OomKillLog &oom = failures_.oom_kills();
  t.oom_kills = oom.total();
  if (!oom.recent().empty())
    t.last_oom_kill = with_container(oom.recent().back());
  return t;
}

std::vector<SegmentGroup> Engine::segment_groups(uint64_t now_ns,
                                                 uint64_t orphan_min_age_ns) const {
  now_ns = now_or_last(now_ns);
  // Grouped first by what is cheap to compare (the container's entry, the
  // mount id, the device), then by the labels those resolve to: two
  // cgroups of one container, or two mounts of one mountpoint, are one group.
  struct Key {
    const ContainerRef *container;
    Kind kind;
    SegmentState state;
    uint32_t mnt_id;
    uint32_t dev;
    bool orphan;
    bool restart_orphan;
    auto tie() const {
      return std::tie(container, kind, state, mnt_id, dev, orphan, restart_orphan);
    }
    bool operator<(const Key &o) const { return tie() < o.tie(); }
    bool operator==(const Key &o) const { return tie() == o.tie(); }
  };
  struct Sum {
    uint64_t segments = 0;
    uint64_t bytes = 0;
  };
  std::map<Key, Sum> sums;
  const LiveView ns = live_view();
  // Neighbouring segments mostly fall in one group: skip the map then.
  std::optional<Key> last;
  Sum *last_sum = nullptr;
  for (const auto &[key, s] : segs_) {
    const bool sysv = key.is_sysv();
    const bool orphan = is_orphan(key, s, now_ns, orphan_min_age_ns);
    const Key k{segment_container(key, s, ns),
                s.kind,
                s.state,
                sysv ? 0 : s.mnt_id,
                sysv ? 0 : key.dev_or_ipcns,
                orphan,
                orphan && left_by_restart(s, ns)};
    if (!last || !(*last == k)) {
      last = k;
      last_sum = &sums[k];
    }
    ++last_sum->segments;
    last_sum->bytes += s.bytes;
  }
  std::vector<SegmentGroup> out;
  out.reserve(sums.size());
  for (const auto &[k, sum] : sums) {
    SegmentGroup g;
    if (k.container)
      g.container = *k.container;
    g.kind = k.kind;
    g.state = k.state;
    g.mountpoint = mountpoint_of(k.kind == Kind::sysv, k.mnt_id, k.dev);
    g.orphan = k.orphan;
    g.restart_orphan = k.restart_orphan;
    g.segments = sum.segments;
    g.bytes = sum.bytes;
    out.push_back(std::move(g));
  }
  auto labels = [](const SegmentGroup &g) {
    return std::tie(g.container.id, g.mountpoint, g.kind, g.state, g.orphan, g.restart_orphan);
  };
  std::sort(out.begin(), out.end(),
            [&](const SegmentGroup &a, const SegmentGroup &b) { return labels(a) < labels(b); });
  // Merge the groups that resolved to the same labels.
  std::vector<SegmentGroup> merged;
  for (SegmentGroup &g : out) {
    if (!merged.empty() && labels(merged.back()) == labels(g)) {
      merged.back().segments += g.segments;
      merged.back().bytes += g.bytes;
    } else {
      merged.push_back(std::move(g));
    }
  }
  return merged;
}

std::vector<ContainerRef> Engine::unnamed_containers() const { return containers_.unnamed(); }

std::vector<uint64_t> Engine::unknown_cgroups() const {
  std::unordered_set<uint64_t> ids;
  for (const auto &[pid, p] : procs_)
    if (p.cgroup_id && !containers_.knows(p.cgroup_id))
      ids.insert(p.cgroup_id);
  for (const auto &[key, s] : segs_)
    if (s.creator_cgroup && !containers_.knows(s.creator_cgroup))
      ids.insert(s.creator_cgroup);
  std::vector<uint64_t> out(ids.begin(), ids.end());
  std::sort(out.begin(), out.end());
  return out;
}

EngineStats Engine::stats() const {
  EngineStats s = stats_;
  s.segments = segs_.size();
  s.processes = procs_.size();
  return s;
}

} // namespace shmbpf
