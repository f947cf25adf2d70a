// The engine's queries: segments, processes, containers, mounts, orphans
// and totals, and SegmentScan's reads in place.
#include "model/engine.hpp"
#include "model/glob.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>

namespace shmbpf {
namespace {

std::string sysv_name(uint32_t key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "SYSV%08x", key);
  return buf;
}

bool container_matches(const ContainerRef *c, const std::string &want) {
  if (want.empty())
    return c == nullptr;
  return c != nullptr && (c->id.starts_with(want) || (!c->name.empty() && c->name == want));
}

} // namespace

bool Engine::creator_alive(const Segment &s) const {
  if (s.creator_pid == 0)
    return false;
  auto pit = procs_.find(s.creator_pid);
  return pit != procs_.end() && (s.creator_serial == 0 || pit->second.serial == s.creator_serial);
}

bool Engine::is_orphan(const SegmentKey &key, const Segment &s, uint64_t now_ns,
                       uint64_t min_age_ns, OrphanScope scope) const {
  const bool sysv = key.is_sysv();
  // It must pin something: a name, or pages of an unlinked file.
  const bool pins =
      sysv ? s.state == SegmentState::linked : s.state == SegmentState::linked || s.bytes > 0;
  if (!pins || !s.holders.empty() || (sysv && s.nattch > 0))
    return false;
  if (creator_alive(s))
    return false;
  if (s.creator_pid == 0 && s.pattern == NamePattern::torch &&
      procs_.count(classify_shm_name(s.path).pid))
    return false; // the pid in the torch name is alive: assume it is the creator
  if (age_ns(s, now_ns) < min_age_ns)
    return false;
  // Last, as it looks the mount up: shared memory, unless asked otherwise.
  return scope == OrphanScope::all_mounts ||
         is_shared_memory(s.kind, s.pattern, s.state,
                          mountpoint_view(sysv, s.mnt_id, key.dev_or_ipcns));
}

Engine::NsContainers Engine::ns_containers() const {
  // A namespace belongs to a container when every process in it that we
  // know is in that container: the host's has host processes, and one
  // shared by two containers (a pod's IPC namespace) is ambiguous.
  NsContainers out;
  auto note = [](std::unordered_map<uint32_t, const ContainerRef *> &map,
                 std::unordered_set<uint32_t> &mixed, uint32_t ns, const ContainerRef *c) {
    if (!ns || mixed.count(ns))
      return;
    auto [it, fresh] = map.try_emplace(ns, c);
    if (!fresh && it->second != c && !(it->second && c && it->second->id == c->id)) {
      map.erase(it);
      mixed.insert(ns);
    }
  };
  std::unordered_set<uint32_t> mixed_mnt, mixed_ipc;
  for (const auto &[pid, p] : procs_) {
    const ContainerRef *c = container_of(p.cgroup_id);
    note(out.mnt, mixed_mnt, p.mntns, c);
    note(out.ipc, mixed_ipc, p.ipcns, c);
  }
  return out;
}

const ContainerRef *Engine::segment_container(const SegmentKey &key, const Segment &s,
                                              const NsContainers &ns) const {
  if (s.creator_pid != 0 && s.creator_cgroup != 0)
    return container_of(s.creator_cgroup);
  // Creator unknown: the namespace it lives in tells. A SysV segment
  // belongs to an IPC namespace; a file to the mount namespace of the mount
  // it was found on (a container's own /dev/shm).
  auto in = [](const std::unordered_map<uint32_t, const ContainerRef *> &map,
               uint32_t id) -> std::optional<const ContainerRef *> {
    if (auto it = map.find(id); it != map.end())
      return it->second;
    return std::nullopt;
  };
  if (key.is_sysv()) {
    if (auto c = in(ns.ipc, key.dev_or_ipcns))
      return *c;
  } else if (s.mnt_id) {
    if (auto m = mounts_.find(s.mnt_id); m != mounts_.end())
      if (auto c = in(ns.mnt, m->second.state.mntns))
        return *c;
  }
  // Otherwise the holders, when they agree.
  const ContainerRef *found = nullptr;
  bool first = true;
  for (uint32_t pid : s.holders) {
    auto pit = procs_.find(pid);
    if (pit == procs_.end())
      continue;
    const ContainerRef *c = container_of(pit->second.cgroup_id);
    if (!first && c != found)
      return nullptr;
    found = c;
    first = false;
  }
  return found;
}

uint64_t Engine::age_ns(const Segment &s, uint64_t now_ns) const {
  if (!(s.flags & kExistedBefore))
    return sat_sub(now_ns, static_cast<uint64_t>(s.born));
  if (s.born != 0 && config_.realtime_offset_ns) {
    int64_t real_now = static_cast<int64_t>(now_ns) + *config_.realtime_offset_ns;
    int64_t mtime_ns = s.born * 1'000'000'000;
    return real_now > mtime_ns ? static_cast<uint64_t>(real_now - mtime_ns) : 0;
  }
  return sat_sub(now_ns, config_.start_ns);
}

const ContainerRef *Engine::container_of(uint64_t cgroup_id) const {
  auto it = cgroups_.find(cgroup_id);
  if (it == cgroups_.end() || !it->second.container)
    return nullptr;
  return &*it->second.container;
}

std::string Engine::mountpoint_of(const SegmentKey &key, const Segment &s) const {
  return mountpoint_of(key.is_sysv(), s.mnt_id, key.dev_or_ipcns);
}

std::string Engine::mountpoint_of(bool sysv, uint32_t mnt_id, uint32_t dev) const {
  return std::string(mountpoint_view(sysv, mnt_id, dev));
}

std::string_view Engine::mountpoint_view(bool sysv, uint32_t mnt_id, uint32_t dev) const {
  if (sysv)
    return {};
  if (mnt_id)
    if (auto it = mnt_names_.find(mnt_id); it != mnt_names_.end())
      return it->second;
  if (auto it = dev_names_.find(dev); it != dev_names_.end())
    return it->second;
  return {};
}

SegmentInfo Engine::info(const SegmentKey &key, const Segment &s, const NsContainers *ns) const {
  SegmentInfo i;
  i.key = key;
  i.key.kind = s.kind;
  i.kind = s.kind;
  i.path = key.is_sysv() ? sysv_name(s.sysv_key) : std::string(s.path.view());
  i.mnt_id = s.mnt_id;
  i.mountpoint = mountpoint_of(key, s);
  i.size = s.size;
  i.bytes = s.bytes;
  i.state = s.state;
  i.creator.pid = s.creator_pid;
  i.creator.uid = s.creator_uid;
  i.creator.comm.assign(s.creator_comm.data(), ::strnlen(s.creator_comm.data(), 16));
  i.creator.cgroup_id = s.creator_cgroup;
  if (const ContainerRef *c = container_of(s.creator_cgroup))
    i.creator.container_id = c->id;
  i.creator.known = s.creator_pid != 0;
  i.creator.exited = i.creator.known && !creator_alive(s);
  i.existed_before = s.flags & kExistedBefore;
  i.created_ns = i.existed_before ? 0 : static_cast<uint64_t>(s.born);
  i.mtime_s = i.existed_before ? s.born : 0;
  i.holders.assign(s.holders.begin(), s.holders.end());
  std::sort(i.holders.begin(), i.holders.end());
  i.nattch = s.nattch;
  i.nlink = s.nlink;
  if (!other_names_.empty())
    if (auto n = other_names_.find(key); n != other_names_.end())
      i.other_paths = n->second;
  i.sysv_key = s.sysv_key;
  i.changed_ns = s.changed_ns;
  i.pattern = s.pattern;
  if (!i.creator.known && s.pattern == NamePattern::torch)
    i.inferred_pid = classify_shm_name(s.path).pid;
  const ContainerRef *c = nullptr;
  if (ns) {
    c = segment_container(key, s, *ns);
  } else {
    const NsContainers own = ns_containers();
    c = segment_container(key, s, own);
  }
  if (c)
    i.container = *c;
  return i;
}

std::optional<SegmentInfo> Engine::segment(const SegmentKey &key) const {
  auto it = segs_.find(key);
  if (it == segs_.end())
    return std::nullopt;
  return info(it->first, it->second);
}

bool Engine::matches(const SegmentKey &key, const Segment &s, const SegmentFilter &f,
                     const NsContainers &ns) const {
  if (f.kind && s.kind != *f.kind)
    return false;
  if (f.state && s.state != *f.state)
    return false;
  if (f.pid && s.creator_pid != *f.pid && !s.holders.contains(*f.pid))
    return false;
  if (f.container) {
    bool any = container_matches(segment_container(key, s, ns), *f.container);
    for (uint32_t pid : s.holders) {
      if (any)
        break;
      auto pit = procs_.find(pid);
      any = pit != procs_.end() &&
            container_matches(container_of(pit->second.cgroup_id), *f.container);
    }
    if (!any)
      return false;
  }
  if (f.mount && mountpoint_of(key, s) != *f.mount)
    return false;
  if (f.path_glob) {
    std::string path = key.is_sysv() ? sysv_name(s.sysv_key) : std::string(s.path.view());
    if (!glob_matches(*f.path_glob, path))
      return false;
  }
  return true;
}

std::vector<SegmentInfo> Engine::segments(const SegmentFilter &filter) const {
  return segments(filter, 0, 0);
}

std::vector<SegmentInfo> Engine::segments(const SegmentFilter &filter, uint64_t now_ns,
                                          uint64_t orphan_min_age_ns) const {
  std::vector<SegmentInfo> out;
  for_each_segment(filter, now_ns, orphan_min_age_ns,
                   [&](SegmentInfo &&i) { out.push_back(std::move(i)); });
  return out;
}

void Engine::for_each_segment(const SegmentFilter &filter, uint64_t now_ns,
                              uint64_t orphan_min_age_ns,
                              const std::function<void(SegmentInfo &&)> &fn) const {
  // Sort light references, then build the (heavy) results in order: moving
  // SegmentInfo objects around in the sort cost more than everything else.
  struct Ref {
    std::string_view path;
    const SegmentKey *key;
    const Segment *seg;
  };
  const NsContainers ns = ns_containers();
  std::deque<std::string> sysv_names; // stable storage for the views
  std::vector<Ref> refs;
  refs.reserve(segs_.size());
  for (const auto &[key, s] : segs_) {
    if (!matches(key, s, filter, ns))
      continue;
    std::string_view path = s.path;
    if (key.is_sysv())
      path = sysv_names.emplace_back(sysv_name(s.sysv_key));
    refs.push_back({path, &key, &s});
  }
  std::sort(refs.begin(), refs.end(), [](const Ref &a, const Ref &b) {
    if (a.path != b.path)
      return a.path < b.path;
    return *a.key < *b.key;
  });
  for (const Ref &r : refs) {
    SegmentInfo i = info(*r.key, *r.seg, &ns);
    if (now_ns) {
      i.age_ns = age_ns(*r.seg, now_ns);
      i.orphan = is_orphan(*r.key, *r.seg, now_ns, orphan_min_age_ns);
    }
    fn(std::move(i));
  }
}

SegmentScan::SegmentScan(const Engine &engine, uint64_t now_ns, uint64_t orphan_min_age_ns)
    : engine_(engine), ns_(engine.ns_containers()), now_ns_(now_ns),
      orphan_min_age_ns_(orphan_min_age_ns) {}

void SegmentScan::for_each(const std::function<void(const Item &)> &f) const {
  for (auto it = engine_.segs_.begin(); it != engine_.segs_.end(); ++it) {
    const SegmentKey &key = it->first;
    const Engine::Segment &s = it->second;
    Item item;
    item.key = key;
    item.key.kind = s.kind;
    item.path = key.is_sysv() ? std::string_view(names_.emplace_back(sysv_name(s.sysv_key)))
                              : s.path.view();
    item.creator_comm =
        std::string_view(s.creator_comm.data(), ::strnlen(s.creator_comm.data(), 16));
    item.creator_pid = s.creator_pid;
    item.size = s.size;
    item.bytes = s.bytes;
    item.changed_ns = s.changed_ns;
    item.age_ns = engine_.age_ns(s, now_ns_);
    item.holders_begin = s.holders.begin();
    item.holders_end = s.holders.end();
    item.slot = it.index();
    f(item);
  }
}

std::string_view SegmentScan::container_id(const Item &item) const {
  const Engine::Slot &slot = engine_.segs_.slot(item.slot);
  const ContainerRef *c = engine_.segment_container(slot.first, slot.second, ns_);
  if (c && !c->id.empty())
    return c->id;
  const ContainerRef *creator = engine_.container_of(slot.second.creator_cgroup);
  return creator ? std::string_view(creator->id) : std::string_view();
}

SegmentInfo SegmentScan::info(const Item &item) const {
  const Engine::Slot &slot = engine_.segs_.slot(item.slot);
  SegmentInfo i = engine_.info(slot.first, slot.second, &ns_);
  if (now_ns_) {
    i.age_ns = engine_.age_ns(slot.second, now_ns_);
    i.orphan = engine_.is_orphan(slot.first, slot.second, now_ns_, orphan_min_age_ns_);
  }
  return i;
}

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
  for (const auto &[cgroup, b] : bus_errors_.by_cgroup()) {
    ContainerInfo &r = row(container_of(cgroup));
    r.sigbus += b.count;
    if (!r.last_sigbus || r.last_sigbus->ts_ns < b.last.ts_ns)
      r.last_sigbus = with_container(b.last);
  }
  const NsContainers ns = ns_containers();
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
  for (auto &[id, r] : rows)
    out.push_back(std::move(r));
  return out;
}

// A pod as the owner of its emptyDir volumes: its uid, and its name and
// namespace if one of its containers has been named.
ContainerRef Engine::pod_of(const std::string &uid) const {
  ContainerRef pod{uid, "kubernetes", uid};
  for (const auto &[cg, entry] : cgroups_)
    if (entry.container && entry.container->pod_uid == uid && !entry.container->pod.empty()) {
      pod.pod = entry.container->pod;
      pod.pod_namespace = entry.container->pod_namespace;
      break;
    }
  return pod;
}

std::vector<MountUsage> Engine::mounts() const {
  std::vector<MountUsage> out;
  const NsContainers ns = ns_containers();
  for (const auto &[id, m] : mounts_) {
    MountUsage u;
    u.mount = m.state;
    u.mount.used_bytes = used_now(m);
    if (auto c = ns.mnt.find(m.state.mntns); c != ns.mnt.end() && c->second)
      u.container = *c->second;
    else if (auto uid = pod_uid_of_volume(m.state.mountpoint))
      u.container = pod_of(*uid);
    if (auto d = devs_.find(m.state.dev); d != devs_.end()) {
      u.tracked_bytes = d->second.bytes;
      u.segments = d->second.segments;
      u.enospc = d->second.enospc;
    }
    if (auto b = bus_errors_.by_dev().find(m.state.dev); b != bus_errors_.by_dev().end()) {
      u.sigbus = b->second.count;
      u.last_sigbus = with_container(b->second.last);
    }
    const double limit = static_cast<double>(m.state.size_limit);
    const double used = static_cast<double>(u.mount.used_bytes);
    if (m.state.size_limit)
      u.percent = 100.0 * used / limit;
    // Least-squares slope, times relative to the first sample.
    if (m.samples.size() >= 2) {
      double n = 0, st = 0, sy = 0, stt = 0, sty = 0;
      const auto [t0, y0] = m.samples.front();
      for (const auto &[t, y] : m.samples) {
        double x = static_cast<double>(t - t0) / 1e9;
        double v = static_cast<double>(y) - static_cast<double>(y0);
        n += 1;
        st += x;
        sy += v;
        stt += x * x;
        sty += x * v;
      }
      double denom = n * stt - st * st;
      if (denom > 0)
        u.growth_bytes_per_s = (n * sty - st * sy) / denom;
    }
    if (m.state.size_limit && u.growth_bytes_per_s > 0)
      u.seconds_to_full = std::max(0.0, limit - used) / u.growth_bytes_per_s;
    out.push_back(std::move(u));
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
  const NsContainers ns = ns_containers();
  for (const auto &[key, s] : segs_) {
    if (!is_orphan(key, s, now_ns, min_age_ns, scope))
      continue;
    uint64_t age = age_ns(s, now_ns);
    out.push_back({info(key, s, &ns), age});
    out.back().segment.age_ns = age;
    out.back().segment.orphan = true;
  }
  std::sort(out.begin(), out.end(), [](const Orphan &a, const Orphan &b) {
    if (a.segment.bytes != b.segment.bytes)
      return a.segment.bytes > b.segment.bytes;
    if (a.segment.path != b.segment.path)
      return a.segment.path < b.segment.path;
    return a.segment.key < b.segment.key;
  });
  return out;
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
  t.sigbus = bus_errors_.total();
  if (!bus_errors_.recent().empty())
    t.last_sigbus = with_container(bus_errors_.recent().back());
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
    auto tie() const { return std::tie(container, kind, state, mnt_id, dev, orphan); }
    bool operator<(const Key &o) const { return tie() < o.tie(); }
    bool operator==(const Key &o) const { return tie() == o.tie(); }
  };
  struct Sum {
    uint64_t segments = 0;
    uint64_t bytes = 0;
  };
  std::map<Key, Sum> sums;
  const NsContainers ns = ns_containers();
  // Neighbouring segments mostly fall in one group: skip the map then.
  std::optional<Key> last;
  Sum *last_sum = nullptr;
  for (const auto &[key, s] : segs_) {
    const bool sysv = key.is_sysv();
    const Key k{segment_container(key, s, ns),
                s.kind,
                s.state,
                sysv ? 0 : s.mnt_id,
                sysv ? 0 : key.dev_or_ipcns,
                is_orphan(key, s, now_ns, orphan_min_age_ns)};
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
    g.segments = sum.segments;
    g.bytes = sum.bytes;
    out.push_back(std::move(g));
  }
  auto labels = [](const SegmentGroup &g) {
    return std::tie(g.container.id, g.mountpoint, g.kind, g.state, g.orphan);
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

std::vector<ContainerRef> Engine::unnamed_containers() const {
  std::vector<ContainerRef> out;
  out.reserve(unnamed_.size());
  for (const auto &[id, c] : unnamed_)
    out.push_back(c);
  return out;
}

std::vector<uint64_t> Engine::unknown_cgroups() const {
  std::unordered_set<uint64_t> ids;
  for (const auto &[pid, p] : procs_)
    if (p.cgroup_id && !cgroups_.count(p.cgroup_id))
      ids.insert(p.cgroup_id);
  for (const auto &[key, s] : segs_)
    if (s.creator_cgroup && !cgroups_.count(s.creator_cgroup))
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
