// The engine's queries of segments: one, a filtered list or each in turn,
// the orphan verdict, and SegmentScan's reads in place. The summaries by
// process, container and mount are in engine_summaries.cpp.
#include "model/engine.hpp"

#include "model/glob.hpp"
#include <numeric>

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

// The order of every list of segments: by path, then key.
bool listed_before(std::string_view path_a, const SegmentKey &a, std::string_view path_b,
                   const SegmentKey &b) {
  if (path_a != path_b)
    return path_a < path_b;
  return a < b;
}

bool container_matches(const ContainerRef *c, const std::string &want) {
  if (want.empty())
    return c == nullptr;
  return c != nullptr && (c->id.starts_with(want) || (!c->name.empty() && c->name == want));
}

} // namespace

bool Engine::creator_alive(const Segment &s) const {
  return s.creator_pid != 0 && procs_.alive(s.creator_pid, s.creator_serial);
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
      procs_.contains(classify_shm_name(s.path).pid))
    return false; // the pid in the torch name is alive: assume it is the creator
  if (age_ns(s, now_ns) < min_age_ns)
    return false;
  // Last, as it looks the mount up: shared memory, unless asked otherwise.
  return scope == OrphanScope::all_mounts ||
         is_shared_memory(s.kind, s.pattern, s.state,
                          mountpoint_view(sysv, s.mnt_id, key.dev_or_ipcns),
                          !sysv && mounts_.served_shared_memory(key.dev_or_ipcns));
}

Engine::LiveView Engine::live_view() const {
  // A namespace belongs to a container when every process in it that we
  // know is in that container: the host's has host processes, and one
  // shared by two containers (a pod's IPC namespace) is ambiguous.
  LiveView out;
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
    if (c && !c->pod_uid.empty()) {
      std::vector<const ContainerRef *> &live = out.by_pod[c->pod_uid];
      if (std::none_of(live.begin(), live.end(),
                       [c](const ContainerRef *l) { return l == c || l->id == c->id; }))
        live.push_back(c);
    }
  }
  return out;
}

bool Engine::left_by_restart(const Segment &s, const LiveView &live) const {
  if (s.creator_pid == 0)
    return false;
  const ContainerRef *creator = container_of(s.creator_cgroup);
  if (!creator || creator->pod_uid.empty())
    return false;
  auto pod = live.by_pod.find(creator->pod_uid);
  if (pod == live.by_pod.end())
    return false; // the pod has ended, or not one of its containers runs
  bool successor = false;
  for (const ContainerRef *c : pod->second) {
    if (c->id == creator->id)
      return false; // the creator's container still runs
    successor = successor || creator->name.empty() || c->name == creator->name;
  }
  return successor;
}

const ContainerRef *Engine::segment_container(const SegmentKey &key, const Segment &s,
                                              const LiveView &ns) const {
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
    if (const MountState *m = mounts_.mount(s.mnt_id))
      if (auto c = in(ns.mnt, m->mntns))
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

std::string Engine::mountpoint_of(const SegmentKey &key, const Segment &s) const {
  return mountpoint_of(key.is_sysv(), s.mnt_id, key.dev_or_ipcns);
}

std::string Engine::mountpoint_of(bool sysv, uint32_t mnt_id, uint32_t dev) const {
  return std::string(mountpoint_view(sysv, mnt_id, dev));
}

std::string_view Engine::mountpoint_view(bool sysv, uint32_t mnt_id, uint32_t dev) const {
  return sysv ? std::string_view() : mounts_.mountpoint(mnt_id, dev);
}

SegmentInfo Engine::info(const SegmentKey &key, const Segment &s, const LiveView *ns) const {
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
  if (const std::vector<std::string> *others = segs_.other_names(key))
    i.other_paths = *others;
  i.sysv_key = s.sysv_key;
  i.changed_ns = s.changed_ns;
  i.pattern = s.pattern;
  if (!i.creator.known && s.pattern == NamePattern::torch)
    i.inferred_pid = classify_shm_name(s.path).pid;
  const ContainerRef *c = nullptr;
  if (ns) {
    c = segment_container(key, s, *ns);
  } else {
    const LiveView own = live_view();
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
                     const LiveView &ns) const {
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
  const LiveView ns = live_view();
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
    return listed_before(a.path, *a.key, b.path, *b.key);
  });
  for (const Ref &r : refs)
    fn(listed(*r.key, *r.seg, ns, now_ns, orphan_min_age_ns));
}

SegmentInfo Engine::listed(const SegmentKey &key, const Segment &s, const LiveView &ns,
                           uint64_t now_ns, uint64_t orphan_min_age_ns) const {
  SegmentInfo i = info(key, s, &ns);
  if (now_ns) {
    i.age_ns = age_ns(s, now_ns);
    i.orphan = is_orphan(key, s, now_ns, orphan_min_age_ns);
    i.restart_orphan = i.orphan && left_by_restart(s, ns);
  }
  return i;
}

std::optional<size_t> Engine::segments_part(const SegmentFilter &filter, uint64_t now_ns,
                                            uint64_t orphan_min_age_ns, size_t from,
                                            std::vector<SegmentInfo> &out, size_t slots) const {
  const LiveView ns = live_view();
  // Room for every row at once: a SegmentInfo moved at each growth of the
  // vector cost a third of the copy. Pages never written are never mapped.
  if (from == 0)
    out.reserve(out.size() + segs_.size());
  return for_each_in_part(from, slots, [&](const SegmentKey &key, const Segment &s) {
    if (matches(key, s, filter, ns))
      out.push_back(listed(key, s, ns, now_ns, orphan_min_age_ns));
  });
}

void sort_segments(std::vector<SegmentInfo> &segments) {
  // Sort indexes, then move each row once: moving SegmentInfo objects
  // around in the sort costs more than the rest.
  std::vector<uint32_t> order(segments.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const SegmentInfo &x = segments[a], &y = segments[b];
    return listed_before(x.path, x.key, y.path, y.key);
  });
  std::vector<SegmentInfo> sorted;
  sorted.reserve(segments.size());
  for (uint32_t i : order)
    sorted.push_back(std::move(segments[i]));
  segments = std::move(sorted);
}

SegmentScan::SegmentScan(const Engine &engine, uint64_t now_ns, uint64_t orphan_min_age_ns)
    : engine_(engine), ns_(engine.live_view()), now_ns_(now_ns),
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
    i.restart_orphan = i.orphan && engine_.left_by_restart(slot.second, ns_);
  }
  return i;
}

} // namespace shmbpf
