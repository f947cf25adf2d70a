#include "views/top_rows.hpp"

#include "views/escape.hpp"
#include "views/format.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

namespace shmbpf {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Case-insensitive substring of the raw name or of its escaped form (what
// the user sees, e.g. "\x1b").
bool name_matches(std::string_view name, const std::string &needle_lower) {
  if (needle_lower.empty())
    return true;
  if (lower(name).find(needle_lower) != std::string::npos)
    return true;
  return lower(escape_text(name)).find(needle_lower) != std::string::npos;
}

// The sorts put the largest first, comparing a view's keys in order (a
// tuple of references, std::tie): whether x goes before y, or nullopt when
// all the keys are equal and the view's tie-break decides.
template <class Keys> std::optional<bool> largest_first(const Keys &x, const Keys &y) {
  if (x == y)
    return std::nullopt;
  return x > y;
}

// What the segments view filters and sorts on, from a SegmentInfo or, for
// the paged query, from a segment read in place: one definition of the
// order for both.
struct SegSortKey {
  uint64_t bytes = 0;
  uint64_t size = 0;
  std::size_t holders = 0;
  uint64_t changed_ns = 0;
  uint64_t age_ns = 0;
  std::string_view path;
  SegmentKey key;
};

SegSortKey sort_key(const SegmentInfo &s, uint64_t now_ns) {
  return {s.bytes, s.size, s.holders.size(), s.changed_ns, segment_age_ns(s, now_ns).value_or(0),
          s.path,  s.key};
}

SegSortKey sort_key(const SegmentScan::Item &s) {
  return {s.bytes, s.size, s.holder_count(), s.changed_ns, s.age_ns, s.path, s.key};
}

// The view's order: a strict total order (path and key break every tie).
bool seg_before(const SegSortKey &x, const SegSortKey &y, TopSort sort) {
  std::optional<bool> first;
  switch (sort) {
  case TopSort::bytes:
    first = largest_first(std::tie(x.bytes, x.size), std::tie(y.bytes, y.size));
    break;
  case TopSort::count:
    first = largest_first(std::tie(x.holders), std::tie(y.holders));
    break;
  case TopSort::rate:
    // Segments have no rate of their own: the most recently changed first.
    first = largest_first(std::tie(x.changed_ns), std::tie(y.changed_ns));
    break;
  case TopSort::age:
    first = largest_first(std::tie(x.age_ns), std::tie(y.age_ns));
    break;
  }
  return first.value_or(std::tie(x.path, x.key) < std::tie(y.path, y.key));
}

// The view's own filters (pid, container, the `/` text), given how to get
// the fields of one segment.
template <class Involves, class Container>
bool seg_passes(const TopState &st, const std::string &needle, std::string_view path,
                std::string_view comm, Involves &&involves, Container &&container) {
  if (st.pid && !involves(*st.pid))
    return false;
  if (st.container && !container_matches(container(), *st.container))
    return false;
  if (!needle.empty() && !name_matches(path, needle) && !name_matches(comm, needle))
    return false;
  return true;
}

std::string segment_key_id(const SegmentKey &k) {
  return "s:" + std::to_string(k.is_sysv()) + ":" + std::to_string(k.dev_or_ipcns) + ":" +
         std::to_string(k.ino_or_shmid);
}

} // namespace

std::string process_row_id(const ProcessInfo &p) { return "p:" + std::to_string(p.pid); }
std::string container_row_id(const ContainerInfo &c) {
  return c.cgroup.empty() ? "c:" + c.id : "g:" + c.cgroup;
}
std::string mount_row_id(const MountUsage &m) {
  return "m:" + std::to_string(m.mount.dev) + ":" + std::to_string(m.mount.mnt_id);
}
std::string segment_row_id(const SegmentInfo &s) { return segment_key_id(s.key); }
std::string producer_row_id(const ProducerInfo &p) {
  return "w:" + std::string(producer_name(p.pattern));
}

bool segment_involves(const SegmentInfo &s, uint32_t pid) {
  // holders are sorted (engine contract).
  return (s.creator.known && s.creator.pid == pid) ||
         std::binary_search(s.holders.begin(), s.holders.end(), pid);
}

std::vector<std::size_t> process_rows(const TopSnapshot &snap, const TopState &st) {
  const std::string needle = lower(st.filter);
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < snap.processes.size(); ++i) {
    const ProcessInfo &p = snap.processes[i];
    if (st.pid && p.pid != *st.pid)
      continue;
    if (st.container && !container_matches(p.container_id, *st.container))
      continue;
    // Only processes that have anything to do with shared memory, unless
    // asked for by pid.
    if (!st.pid &&
        !(p.segments_created || p.segments_held || p.sysv_attachments || p.creates || p.unlinks))
      continue;
    if (!needle.empty()) {
      auto u = snap.users.find(p.uid);
      if (!name_matches(p.comm, needle) && std::to_string(p.pid).find(needle) != 0 &&
          !name_matches(p.container_id, needle) &&
          !(u != snap.users.end() && name_matches(u->second, needle)))
        continue;
    }
    idx.push_back(i);
  }
  const auto &v = snap.processes;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const ProcessInfo &x = v[a], &y = v[b];
    std::optional<bool> first;
    switch (st.sort) {
    case TopSort::bytes:
      first = largest_first(std::tie(x.bytes_created, x.bytes_held),
                            std::tie(y.bytes_created, y.bytes_held));
      break;
    case TopSort::count:
      first = largest_first(std::tie(x.segments_created, x.segments_held, x.segments_unheld),
                            std::tie(y.segments_created, y.segments_held, y.segments_unheld));
      break;
    case TopSort::rate:
      first = largest_first(std::tie(x.create_rate, x.unlink_rate),
                            std::tie(y.create_rate, y.unlink_rate));
      break;
    case TopSort::age:
      break; // processes have no age: by pid
    }
    return first.value_or(x.pid < y.pid);
  });
  return idx;
}

std::vector<std::size_t> container_rows(const TopSnapshot &snap, const TopState &st) {
  const std::string needle = lower(st.filter);
  std::optional<std::string> of_pid;
  if (st.pid)
    for (const ProcessInfo &p : snap.processes)
      if (p.pid == *st.pid)
        of_pid = p.container_id;
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < snap.containers.size(); ++i) {
    const ContainerInfo &c = snap.containers[i];
    // A host cgroup's row is no process's nor container's.
    if ((st.pid || st.container) && !c.cgroup.empty())
      continue;
    if (st.pid && (!of_pid || c.id != *of_pid))
      continue;
    if (st.container && !container_matches(c.id, *st.container))
      continue;
    if (!needle.empty() && !name_matches(c.id.empty() ? "host" : c.id, needle) &&
        !name_matches(c.runtime, needle) && !name_matches(c.pod_uid, needle) &&
        !name_matches(c.cgroup, needle))
      continue;
    idx.push_back(i);
  }
  const auto &v = snap.containers;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const ContainerInfo &x = v[a], &y = v[b];
    if (x.cgroup.empty() != y.cgroup.empty())
      return x.cgroup.empty(); // the host's cgroups after the containers, by path
    std::optional<bool> first;
    switch (st.sort) {
    case TopSort::bytes:
      first = largest_first(std::tie(x.bytes), std::tie(y.bytes));
      break;
    case TopSort::count:
      first = largest_first(std::tie(x.segments), std::tie(y.segments));
      break;
    case TopSort::rate:
      first = largest_first(std::tie(x.create_rate), std::tie(y.create_rate));
      break;
    case TopSort::age:
      break;
    }
    return first.value_or(a < b); // the engine's order: host first, then by id
  });
  return idx;
}

std::vector<std::size_t> mount_rows(const TopState &st, const Relations &rel) {
  const std::string needle = lower(st.filter);
  std::set<uint32_t> scope_ns;
  bool scoped = false;
  if (st.pid) {
    scoped = true;
    if (const ProcessInfo *p = rel.process(*st.pid))
      scope_ns.insert(p->mntns);
  }
  if (st.container) {
    scoped = true;
    for (const auto &[id, ns] : rel.container_namespaces())
      if (container_matches(id, *st.container))
        scope_ns.insert(ns.begin(), ns.end());
  }
  const auto &fs = rel.filesystems();
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const MountUsage &m = *fs[i];
    if (scoped && !scope_ns.count(m.mount.mntns))
      continue;
    if (!needle.empty() && !name_matches(m.mount.mountpoint, needle) &&
        !name_matches(rel.mount_owner(m), needle))
      continue;
    idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const MountUsage &x = *fs[a], &y = *fs[b];
    std::optional<bool> first;
    switch (st.sort) {
    case TopSort::bytes:
      first = largest_first(std::tie(x.mount.used_bytes), std::tie(y.mount.used_bytes));
      break;
    case TopSort::count:
      first = largest_first(std::tie(x.segments), std::tie(y.segments));
      break;
    case TopSort::rate:
      first = largest_first(std::tie(x.growth_bytes_per_s), std::tie(y.growth_bytes_per_s));
      break;
    case TopSort::age: {
      // The soonest to fill first.
      const auto tx = seconds_to_full(x), ty = seconds_to_full(y);
      if (tx.has_value() != ty.has_value())
        return tx.has_value();
      if (tx && *tx != *ty)
        return *tx < *ty;
      break;
    }
    }
    return first.value_or(x.mount.mountpoint < y.mount.mountpoint);
  });
  return idx;
}

std::vector<std::size_t> producer_rows(const TopSnapshot &snap, const TopState &st) {
  const std::string needle = lower(st.filter);
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < snap.producers.size(); ++i) {
    const ProducerInfo &p = snap.producers[i];
    if (!needle.empty() && !name_matches(producer_name(p.pattern), needle) &&
        !name_matches(producer_text(p.pattern), needle))
      continue;
    idx.push_back(i);
  }
  const auto &v = snap.producers;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const ProducerInfo &x = v[a], &y = v[b];
    std::optional<bool> first;
    switch (st.sort) {
    case TopSort::bytes:
      first = largest_first(std::tie(x.bytes, x.orphan_bytes), std::tie(y.bytes, y.orphan_bytes));
      break;
    case TopSort::count:
      first = largest_first(std::tie(x.segments, x.orphans), std::tie(y.segments, y.orphans));
      break;
    case TopSort::rate:
      // Producers have no rate: the most live creators first.
      first = largest_first(std::tie(x.creators), std::tie(y.creators));
      break;
    case TopSort::age:
      break;
    }
    return first.value_or(a < b); // the engine's order
  });
  return idx;
}

std::vector<std::size_t> segment_rows(const TopSnapshot &snap, const TopState &st,
                                      const SegmentPick &pick) {
  if (snap.segments_paged && !pick) {
    // Already the view's rows, filtered and in order.
    std::vector<std::size_t> idx(snap.segments.size());
    for (std::size_t i = 0; i < idx.size(); ++i)
      idx[i] = i;
    return idx;
  }
  const std::string needle = lower(st.filter);
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < snap.segments.size(); ++i) {
    const SegmentInfo &s = snap.segments[i];
    if (pick) {
      if (!pick(s))
        continue;
    } else if (!seg_passes(
                   st, needle, s.path, s.creator.comm,
                   [&](uint32_t pid) { return segment_involves(s, pid); },
                   [&] { return segment_container(s); })) {
      continue;
    }
    idx.push_back(i);
  }
  std::vector<SegSortKey> keys(snap.segments.size());
  for (std::size_t i : idx)
    keys[i] = sort_key(snap.segments[i], snap.now_ns);
  std::sort(idx.begin(), idx.end(),
            [&](std::size_t a, std::size_t b) { return seg_before(keys[a], keys[b], st.sort); });
  return idx;
}

std::vector<const MountUsage *> header_mounts(const TopSnapshot &snap, const Relations &rel) {
  std::vector<const MountUsage *> out;
  for (const MountUsage *m : rel.filesystems())
    if (m->mount.mountpoint == "/dev/shm" || m->segments > 0 || m->tracked_bytes > 0)
      out.push_back(m);
  std::stable_sort(out.begin(), out.end(), [&](const MountUsage *a, const MountUsage *b) {
    if (mount_alert(*a) != mount_alert(*b))
      return mount_alert(*a);
    const bool ha = a->mount.mountpoint == "/dev/shm" && a->mount.mntns == snap.host_mntns;
    const bool hb = b->mount.mountpoint == "/dev/shm" && b->mount.mntns == snap.host_mntns;
    if (ha != hb)
      return ha;
    if (a->mount.used_bytes != b->mount.used_bytes)
      return a->mount.used_bytes > b->mount.used_bytes;
    return a->mount.mountpoint < b->mount.mountpoint;
  });
  return out;
}

void fill_segment_page(TopSnapshot &snap, const Engine &engine, const TopState &st,
                       uint64_t orphan_min_age_ns, bool all_rows) {
  const SegmentScan scan(engine, snap.now_ns, orphan_min_age_ns);
  const std::string needle = lower(st.filter);
  struct Row {
    SegSortKey key;
    uint32_t slot;
  };
  std::vector<Row> rows;
  rows.reserve(engine.segment_count());
  scan.for_each([&](const SegmentScan::Item &it) {
    if (!seg_passes(
            st, needle, it.path, it.creator_comm,
            [&](uint32_t pid) {
              return (it.creator_pid != 0 && it.creator_pid == pid) ||
                     std::find(it.holders_begin, it.holders_end, pid) != it.holders_end;
            },
            [&] { return scan.container_id(it); }))
      return;
    rows.push_back({sort_key(it), it.slot});
  });
  // The row the selection follows, if it passed the filters.
  std::optional<std::size_t> anchor;
  if (!st.selected_id.empty() && st.selected_id.starts_with("s:")) {
    for (std::size_t i = 0; i < rows.size() && !anchor; ++i)
      if (st.selected_id == segment_key_id(rows[i].key.key))
        anchor = i;
  }
  auto before = [&](const Row &a, const Row &b) { return seg_before(a.key, b.key, st.sort); };
  const std::size_t total = rows.size();
  std::optional<std::size_t> rank;
  if (anchor) {
    const Row a = rows[*anchor];
    rank = static_cast<std::size_t>(
        std::count_if(rows.begin(), rows.end(), [&](const Row &r) { return before(r, a); }));
  }
  std::size_t first = 0, last = total;
  if (!all_rows && total > 0) {
    // Whatever scroll the frame picks, the selection stays on screen: the
    // rows within two screens of it cover the frame and a page key or two.
    const std::size_t page = std::max<std::size_t>({st.page_rows, st.height, 1});
    const std::size_t at = std::min(rank.value_or(st.selected), total - 1);
    first = at > 2 * page ? at - 2 * page : 0;
    last = std::min(total, at + 2 * page + 1);
    if (first > 0)
      std::nth_element(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end(),
                       before);
    if (last < total)
      std::nth_element(rows.begin() + static_cast<std::ptrdiff_t>(first),
                       rows.begin() + static_cast<std::ptrdiff_t>(last), rows.end(), before);
  }
  std::sort(rows.begin() + static_cast<std::ptrdiff_t>(first),
            rows.begin() + static_cast<std::ptrdiff_t>(last), before);
  snap.segments.clear();
  snap.segments.reserve(last - first);
  for (std::size_t i = first; i < last; ++i) {
    SegmentScan::Item it;
    it.slot = rows[i].slot;
    snap.segments.push_back(scan.info(it));
  }
  snap.segments_paged = true;
  snap.segments_total = total;
  snap.segments_offset = first;
  snap.selected_rank = rank;
  snap.ranked_id = st.selected_id;
}

} // namespace shmbpf
