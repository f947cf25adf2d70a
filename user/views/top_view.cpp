#include "views/top_view.hpp"

#include "decode/event.hpp"
#include "views/columns.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/json.hpp"
#include "views/ls_view.hpp"
#include "views/relations.hpp"
#include "views/table.hpp"
#include "views/text_width.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

namespace shmbpf {
namespace {

// Blanks between top's columns: a screen has little room to spare.
constexpr std::size_t top_column_gap = 1;

// ---- rows of each view: filtered and sorted ----------------------------------

using SegmentPick = std::function<bool(const SegmentInfo &)>;

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

std::string process_row_id(const ProcessInfo &p) { return "p:" + std::to_string(p.pid); }
std::string container_row_id(const ContainerInfo &c) { return "c:" + c.id; }
std::string mount_row_id(const MountUsage &m) {
  return "m:" + std::to_string(m.mount.dev) + ":" + std::to_string(m.mount.mnt_id);
}
std::string segment_row_id(const SegmentInfo &s) { return segment_key_id(s.key); }

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
    if (st.pid && (!of_pid || c.id != *of_pid))
      continue;
    if (st.container && !container_matches(c.id, *st.container))
      continue;
    if (!needle.empty() && !name_matches(c.id.empty() ? "host" : c.id, needle) &&
        !name_matches(c.runtime, needle) && !name_matches(c.pod_uid, needle))
      continue;
    idx.push_back(i);
  }
  const auto &v = snap.containers;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const ContainerInfo &x = v[a], &y = v[b];
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

std::vector<std::size_t> segment_rows(const TopSnapshot &snap, const TopState &st,
                                      const SegmentPick &pick = {}) {
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

// ---- details ------------------------------------------------------------------

void append_table(std::vector<TopLine> &out, const Table &t, std::size_t width) {
  auto lines = table_lines(t, width);
  for (std::size_t i = 0; i < lines.size(); ++i)
    out.push_back({std::move(lines[i]), i == 0 ? TopStyle::columns : TopStyle::normal});
}

constexpr std::size_t key_width = 14; // "key:" padded so that values line up

class Details {
public:
  Details(const TopSnapshot &snap, const TopState &st, const Relations &rel)
      : snap_(snap), st_(st), rel_(rel), ctx_{snap.now_ns, &snap.users, &rel} {}

  // One "key:   value" line.
  void kv(std::string_view k, const std::string &v) {
    std::string line(k);
    line += ':';
    line.append(k.size() < key_width ? key_width - k.size() : 1, ' ');
    out_.push_back({line + v, TopStyle::normal});
  }
  void line(std::string text) { out_.push_back({std::move(text), TopStyle::normal}); }

  bool segment(const std::string &id);
  bool process(const std::string &id);
  bool container(const std::string &id);
  bool mount(const std::string &id);

  std::vector<TopLine> take() { return std::move(out_); }

private:
  // The segments pick chooses, in the segments view's order.
  void segments_table(const SegmentPick &pick) {
    const std::vector<std::size_t> idx = segment_rows(snap_, st_, pick);
    Table t = table_of(segment_columns(), top_column_gap);
    for (std::size_t i : idx)
      t.rows.push_back(cells_of(segment_columns(), snap_.segments[i], ctx_));
    line(std::to_string(idx.size()) + " segment(s):");
    append_table(out_, t, st_.width);
  }

  std::string comm_of(uint32_t pid) const {
    const ProcessInfo *p = rel_.process(pid);
    return p ? escape_text(p->comm) : std::string("?");
  }

  const TopSnapshot &snap_;
  const TopState &st_;
  const Relations &rel_;
  const CellContext ctx_;
  std::vector<TopLine> out_;
};

std::string hex8(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

bool Details::segment(const std::string &id) {
  for (const SegmentInfo &s : snap_.segments) {
    if (segment_row_id(s) != id)
      continue;
    kv("path", escape_text(s.path));
    kv("kind", std::string(to_string(s.kind)));
    if (s.key.is_sysv())
      kv("shmid", std::to_string(static_cast<uint32_t>(s.key.ino_or_shmid)) + " (ipcns " +
                      std::to_string(s.key.dev_or_ipcns) + ", key 0x" + hex8(s.sysv_key) + ")");
    else
      kv("inode", dev_string(s.key.dev_or_ipcns) + " " + std::to_string(s.key.ino_or_shmid));
    kv("mount", or_dash(s.mountpoint));
    kv("size", human_bytes(s.size) + " (" + std::to_string(s.size) + " bytes)");
    kv("resident", human_bytes(s.bytes) + " (" + std::to_string(s.bytes) + " bytes)");
    kv("state", state_cell(s));
    kv("age", age_cell(s, snap_.now_ns) + (s.existed_before ? " (existed before shmbpf)" : ""));
    std::string creator = creator_cell(s.creator);
    if (s.creator.known && s.creator.pid)
      creator += "  uid " + std::to_string(s.creator.uid);
    if (!s.creator.known && s.inferred_pid)
      creator += "  (pid " + std::to_string(s.inferred_pid) + " from the name)";
    kv("creator", creator);
    const std::string_view ctr = segment_container(s);
    kv("container", ctr.empty()
                        ? std::string("host")
                        : escape_text(ctr) + (s.container.runtime.empty()
                                                  ? std::string()
                                                  : " (" + escape_text(s.container.runtime) + ")"));
    if (s.pattern != NamePattern::none)
      kv("pattern", std::string(to_string(s.pattern)));
    if (s.key.is_sysv())
      kv("attached", std::to_string(s.nattch));
    kv("holders", std::to_string(s.holders.size()));
    for (uint32_t pid : s.holders)
      line("  " + std::to_string(pid) + "  " + comm_of(pid));
    return true;
  }
  return false;
}

bool Details::process(const std::string &id) {
  for (const ProcessInfo &p : snap_.processes) {
    if (process_row_id(p) != id)
      continue;
    kv("pid", std::to_string(p.pid) + "  ppid " + std::to_string(p.ppid));
    kv("comm", escape_text(p.comm));
    kv("user", user_cell(p.uid, ctx_) + " (uid " + std::to_string(p.uid) + ")");
    kv("container", p.container_id.empty()
                        ? std::string("host")
                        : escape_text(p.container_id) + " (" + or_dash(p.runtime) + ")");
    kv("created",
       std::to_string(p.segments_created) + " live segments, " + human_bytes(p.bytes_created));
    kv("holds", std::to_string(p.segments_held) + " segments, " + human_bytes(p.bytes_held) + "; " +
                    std::to_string(p.sysv_attachments) + " SysV attachments");
    kv("activity", std::to_string(p.creates) + " creates (" + rate_text(p.create_rate) + "/s), " +
                       std::to_string(p.unlinks) + " unlinks (" + rate_text(p.unlink_rate) +
                       "/s), " + std::to_string(p.sigbus) + " SIGBUS");
    const uint32_t pid = p.pid;
    segments_table([pid](const SegmentInfo &s) { return segment_involves(s, pid); });
    return true;
  }
  return false;
}

bool Details::container(const std::string &id) {
  for (const ContainerInfo &c : snap_.containers) {
    if (container_row_id(c) != id)
      continue;
    kv("container", c.id.empty() ? std::string("host") : escape_text(c.id));
    kv("runtime", or_dash(c.runtime));
    kv("pod", or_dash(c.pod_uid));
    kv("segments", std::to_string(c.segments) + " (" + human_bytes(c.bytes) + ")");
    kv("activity", std::to_string(c.creates) + " creates (" + rate_text(c.create_rate) + "/s), " +
                       std::to_string(c.unlinks) + " unlinks");
    if (const MountUsage *m = rel_.shm_of(c.id))
      kv("/dev/shm", percent_text(m->percent) + " of " + size_limit_text(m->mount.size_limit));
    Table t = table_of(process_columns(), top_column_gap);
    for (const ProcessInfo &p : snap_.processes)
      if (p.container_id == c.id &&
          (p.segments_created || p.segments_held || p.sysv_attachments || p.creates))
        t.rows.push_back(cells_of(process_columns(), p, ctx_));
    line(std::to_string(t.rows.size()) + " process(es) using shared memory:");
    append_table(out_, t, st_.width);
    return true;
  }
  return false;
}

bool Details::mount(const std::string &id) {
  for (const MountUsage *m : rel_.filesystems()) {
    if (mount_row_id(*m) != id)
      continue;
    kv("mountpoint", escape_text(m->mount.mountpoint));
    kv("owner", rel_.mount_owner(*m) + " (mntns " + std::to_string(m->mount.mntns) + ", mount id " +
                    std::to_string(m->mount.mnt_id) + ")");
    kv("device", dev_string(m->mount.dev));
    kv("usage", human_bytes(m->mount.used_bytes) + " of " + size_limit_text(m->mount.size_limit) +
                    " (" + percent_text(m->percent) + ")");
    const auto ttf = seconds_to_full(*m);
    kv("growth", bytes_rate_text(m->growth_bytes_per_s, true) + ", full in " +
                     (ttf ? human_age(*ttf) : std::string("-")));
    kv("enospc", std::to_string(m->enospc) + " failed resizes");
    const uint32_t dev = m->mount.dev;
    segments_table(
        [dev](const SegmentInfo &s) { return !s.key.is_sysv() && s.key.dev_or_ipcns == dev; });
    return true;
  }
  return false;
}

std::vector<TopLine> top_details_lines(const TopSnapshot &snap, const TopState &st,
                                       const Relations &rel) {
  Details d(snap, st, rel);
  bool found = false;
  switch (st.details_view) {
  case TopView::segments:
    found = d.segment(st.details_id);
    break;
  case TopView::processes:
    found = d.process(st.details_id);
    break;
  case TopView::containers:
    found = d.container(st.details_id);
    break;
  case TopView::mounts:
    found = d.mount(st.details_id);
    break;
  }
  if (!found)
    d.line("(gone: it no longer exists)");
  return d.take();
}

// ---- frame --------------------------------------------------------------------

constexpr std::size_t bar_width = 20;      // cells inside a mount's usage bar
constexpr std::size_t max_mount_name = 40; // header mount names are cut beyond this

const char *help_line_text =
    "p/c/m/s view  b/n/r/a sort  / filter  Enter details  arrows PgUp/PgDn scroll  h help  q quit";

// ---- header --------------------------------------------------------------------

std::string kind_total(std::string_view name, const KindTotals &k) {
  return std::to_string(k.segments) + " " + std::string(name) + " (" + human_bytes(k.bytes) + ")";
}

std::string usage_bar(const MountUsage &m) {
  std::string bar = "[";
  std::size_t filled = 0;
  if (m.percent && std::isfinite(*m.percent)) {
    const double p = std::clamp(*m.percent, 0.0, 100.0);
    filled = static_cast<std::size_t>(std::lround(p / 100.0 * bar_width));
  }
  bar.append(filled, '#');
  bar.append(bar_width - filled, m.percent ? '.' : ' ');
  return bar + "]";
}

// "mountpoint (owner)", with the device when two header mounts would read the
// same (a tmpfs mounted over another one at the same place).
std::vector<std::string> mount_names(const Relations &rel,
                                     const std::vector<const MountUsage *> &mounts) {
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const MountUsage *m : mounts) {
    names.push_back(escape_text(m->mount.mountpoint) + " (" + rel.mount_owner(*m) + ")");
    ++seen[names.back()];
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (seen[names[i]] > 1)
      names[i].insert(names[i].size() - 1, ", dev " + dev_string(mounts[i]->mount.dev));
  return names;
}

std::string mount_line(const MountUsage &m, std::string name, std::size_t name_width) {
  name = fit_text(name, name_width, true);
  name.append(name_width - terminal_width(name), ' ');
  std::string line = mount_alert(m) ? "!! " : "   ";
  line += name + " " + usage_bar(m) + " ";
  std::string pct = percent_text(m.percent);
  line += std::string(pct.size() < 6 ? 6 - pct.size() : 0, ' ') + pct;
  line += "  " + human_bytes(m.mount.used_bytes) + "/" + size_limit_text(m.mount.size_limit);
  line += "  " + bytes_rate_text(m.growth_bytes_per_s, true);
  const auto ttf = seconds_to_full(m);
  line += "  full in " + (ttf ? human_age(*ttf) : std::string("-"));
  return line;
}

std::string title_line(const TopSnapshot &snap, const TopState &st) {
  std::string t = "shmbpf top";
  if (!snap.clock.empty())
    t += " - " + snap.clock;
  t += "  view: " + std::string(to_string(st.view)) + "  sort: " + std::string(to_string(st.sort));
  if (!st.filter.empty())
    t += "  filter: " + escape_text(st.filter);
  if (st.pid)
    t += "  pid: " + std::to_string(*st.pid);
  if (st.container)
    t += "  container: " +
         (st.container->empty() ? std::string("host") : escape_text(*st.container));
  t += "  events: " + std::to_string(snap.events);
  return t;
}

void push(TopFrame &f, std::string text, TopStyle style, std::size_t width) {
  if (width > 0 && terminal_width(text) > width)
    text = std::string(fit_head(text, width));
  f.lines.push_back({std::move(text), style});
}

void push_header(TopFrame &f, const TopSnapshot &snap, const TopState &st, const Relations &rel) {
  const std::size_t width = st.width;
  push(f, title_line(snap, st), TopStyle::title, width);
  const EngineTotals &t = snap.totals;
  push(f,
       "Segments: " + kind_total("tmpfs", t.tmpfs) + ", " + kind_total("memfd", t.memfd) + ", " +
           kind_total("sysv", t.sysv) + "   Orphans: " + std::to_string(t.orphans) + " (" +
           human_bytes(t.orphan_bytes) + ")",
       t.orphans ? TopStyle::alert : TopStyle::normal, width);
  push(f,
       "Activity: " + rate_text(t.create_rate) + " creates/s, " + rate_text(t.unlink_rate) +
           " unlinks/s   SIGBUS: " + std::to_string(t.sigbus) +
           "   Lost events: " + std::to_string(snap.lost) + (snap.lost ? " (!)" : ""),
       snap.lost || t.sigbus ? TopStyle::alert : TopStyle::normal, width);

  const auto mounts = header_mounts(snap, rel);
  const auto names = mount_names(rel, mounts);
  // Mount lines may take at most a quarter of the screen; the rest is for rows.
  const std::size_t max_mounts =
      st.height > 0 ? std::max<std::size_t>(1, st.height / 4) : mounts.size();
  std::size_t name_width = 0;
  for (const auto &n : names)
    name_width = std::max(name_width, terminal_width(n));
  name_width = std::min(name_width, max_mount_name);
  for (std::size_t i = 0; i < mounts.size(); ++i) {
    if (i + 1 == max_mounts && mounts.size() > max_mounts) {
      push(f, "   ... " + std::to_string(mounts.size() - i) + " more mounts (press m)",
           TopStyle::normal, width);
      break;
    }
    push(f, mount_line(*mounts[i], names[i], name_width),
         mount_alert(*mounts[i]) ? TopStyle::alert : TopStyle::normal, width);
  }
  push(f, "", TopStyle::normal, width);
}

// ---- one view's rows, whatever the view -------------------------------------------

struct ViewRows {
  std::vector<Column> columns;
  std::size_t count = 0;
  std::function<std::string(std::size_t)> id;                 // row id at position
  std::function<std::vector<std::string>(std::size_t)> cells; // cells at position
  std::function<bool(std::size_t)> alert = [](std::size_t) { return false; };
  // Positions id and cells can answer for (all of them unless paged).
  std::size_t window_first = 0;
  std::size_t window_last = 0;
};

template <class Row> std::vector<Column> columns_of(const ColumnSet<Row> &set) {
  return table_of(set, top_column_gap).columns;
}

ViewRows view_rows(const TopSnapshot &snap, const TopState &st, const Relations &rel,
                   const CellContext &ctx, std::vector<std::size_t> &idx) {
  ViewRows r;
  switch (st.view) {
  case TopView::processes:
    idx = process_rows(snap, st);
    r.columns = columns_of(process_columns());
    r.id = [&](std::size_t i) { return process_row_id(snap.processes[idx[i]]); };
    r.cells = [&](std::size_t i) {
      return cells_of(process_columns(), snap.processes[idx[i]], ctx);
    };
    break;
  case TopView::containers:
    idx = container_rows(snap, st);
    r.columns = columns_of(container_columns());
    r.id = [&](std::size_t i) { return container_row_id(snap.containers[idx[i]]); };
    r.cells = [&](std::size_t i) {
      return cells_of(container_columns(), snap.containers[idx[i]], ctx);
    };
    r.alert = [&](std::size_t i) {
      const MountUsage *m = rel.shm_of(snap.containers[idx[i]].id);
      return m && mount_alert(*m);
    };
    break;
  case TopView::mounts:
    idx = mount_rows(st, rel);
    r.columns = columns_of(mount_columns());
    r.id = [&](std::size_t i) { return mount_row_id(*rel.filesystems()[idx[i]]); };
    r.cells = [&](std::size_t i) {
      return cells_of(mount_columns(), *rel.filesystems()[idx[i]], ctx);
    };
    r.alert = [&](std::size_t i) { return mount_alert(*rel.filesystems()[idx[i]]); };
    break;
  case TopView::segments:
    idx = segment_rows(snap, st);
    r.columns = columns_of(segment_columns());
    if (snap.segments_paged) {
      // Rows [segments_offset, + segments.size()) of segments_total.
      const std::size_t off = snap.segments_offset;
      auto at = [&snap, off](std::size_t i) -> const SegmentInfo * {
        return i >= off && i - off < snap.segments.size() ? &snap.segments[i - off] : nullptr;
      };
      r.id = [at](std::size_t i) {
        const SegmentInfo *s = at(i);
        return s ? segment_row_id(*s) : std::string();
      };
      r.cells = [at, &ctx](std::size_t i) {
        const SegmentInfo *s = at(i);
        return s ? cells_of(segment_columns(), *s, ctx) : std::vector<std::string>();
      };
      r.alert = [at](std::size_t i) {
        const SegmentInfo *s = at(i);
        return s && s->orphan;
      };
      r.count = snap.segments_total;
      r.window_first = off;
      r.window_last = off + snap.segments.size();
      return r;
    }
    r.id = [&](std::size_t i) { return segment_row_id(snap.segments[idx[i]]); };
    r.cells = [&](std::size_t i) {
      return cells_of(segment_columns(), snap.segments[idx[i]], ctx);
    };
    r.alert = [&](std::size_t i) { return snap.segments[idx[i]].orphan; };
    break;
  }
  r.count = idx.size();
  r.window_last = r.count;
  return r;
}

// The view's table from the scroll position on, the selection followed by
// id (else kept at its index) and kept on screen.
std::vector<TopLine> view_lines(const TopSnapshot &snap, TopState &st, const Relations &rel,
                                std::size_t body) {
  const bool limited = st.height > 0;
  const CellContext ctx{snap.now_ns, &snap.users, &rel};
  std::vector<std::size_t> idx;
  ViewRows r = view_rows(snap, st, rel, ctx, idx);
  st.rows = r.count;
  const std::size_t page = limited ? std::max<std::size_t>(1, body > 0 ? body - 1 : 0) : r.count;
  st.page_rows = std::max<std::size_t>(1, page);
  // A paged snapshot knows where the id it was taken for went.
  if (!st.selected_id.empty()) {
    if (snap.selected_rank && st.view == TopView::segments && snap.segments_paged &&
        st.selected_id == snap.ranked_id) {
      st.selected = *snap.selected_rank;
    } else {
      for (std::size_t i = r.window_first; i < r.window_last; ++i)
        if (r.id(i) == st.selected_id) {
          st.selected = i;
          break;
        }
    }
  }
  st.selected = r.count ? std::min(st.selected, r.count - 1) : 0;
  st.selected_id = r.count ? r.id(st.selected) : std::string();
  if (limited) {
    if (st.selected < st.scroll)
      st.scroll = st.selected;
    if (st.selected >= st.scroll + st.page_rows)
      st.scroll = st.selected + 1 - st.page_rows;
    st.scroll = std::min(st.scroll, r.count > st.page_rows ? r.count - st.page_rows : 0);
  } else {
    st.scroll = 0;
  }
  const std::size_t first = st.scroll, last = std::min(r.count, first + page);
  // A paged snapshot that lacks rows this frame shows (the selection moved
  // far): the caller takes the page again.
  st.page_miss = first < r.window_first || last > r.window_last;
  Table tab{r.columns, {}, top_column_gap};
  tab.rows.reserve(last - first);
  for (std::size_t i = first; i < last; ++i)
    tab.rows.push_back(r.cells(i));
  auto text = table_lines(tab, st.width);
  std::vector<TopLine> lines;
  lines.push_back({std::move(text[0]), TopStyle::columns});
  for (std::size_t i = first; i < last; ++i) {
    TopStyle style = r.alert(i) ? TopStyle::alert : TopStyle::normal;
    if (limited && i == st.selected)
      style = TopStyle::selected;
    lines.push_back({std::move(text[i - first + 1]), style});
  }
  if (r.count == 0)
    lines.push_back({st.filter.empty()
                         ? "(nothing to show)"
                         : "(no row matches the filter \"" + escape_text(st.filter) + "\")",
                     TopStyle::normal});
  return lines;
}

// ---- JSON ---------------------------------------------------------------------

void kind_json(JsonWriter &w, std::string_view name, const KindTotals &k) {
  w.key(name).begin_object().num("segments", k.segments).num("bytes", k.bytes).end_object();
}

void opt_real(JsonWriter &w, std::string_view k, std::optional<double> v) {
  if (v)
    w.real(k, *v);
  else
    w.null(k);
}

// Mounts, processes and containers: the field names of `ls --json`, plus
// what top derives (owner and alert, user and orphans, shm_percent).
void mount_json(JsonWriter &w, const Relations &rel, const MountUsage &m) {
  w.begin_object();
  w.str("mountpoint", m.mount.mountpoint).str("owner", rel.mount_owner(m));
  w.num("mntns", m.mount.mntns).num("mnt_id", m.mount.mnt_id).str("dev", dev_string(m.mount.dev));
  if (m.mount.size_limit)
    w.num("size_bytes", m.mount.size_limit);
  else
    w.null("size_bytes");
  w.num("used_bytes", m.mount.used_bytes).num("tracked_bytes", m.tracked_bytes);
  w.num("segments", m.segments);
  opt_real(w, "percent", m.percent);
  w.real("growth_bytes_per_s", m.growth_bytes_per_s);
  opt_real(w, "seconds_to_full", m.seconds_to_full);
  w.num("enospc", m.enospc).boolean("alert", mount_alert(m));
  w.end_object();
}

void process_json(JsonWriter &w, const TopSnapshot &snap, const ProcessInfo &p) {
  auto u = snap.users.find(p.uid);
  w.begin_object();
  w.num("pid", p.pid).num("ppid", p.ppid).num("uid", p.uid);
  w.key("user").str_or_null(u == snap.users.end() ? std::string_view() : u->second);
  w.str("comm", p.comm);
  w.key("container").str_or_null(p.container_id);
  w.num("segments_created", p.segments_created).num("bytes_created", p.bytes_created);
  w.num("segments_held", p.segments_held).num("bytes_held", p.bytes_held);
  w.real("create_rate", p.create_rate).real("unlink_rate", p.unlink_rate);
  w.num("orphans", p.segments_unheld);
  w.num("sigbus", p.sigbus);
  w.end_object();
}

void container_json(JsonWriter &w, const Relations &rel, const ContainerInfo &c) {
  const MountUsage *shm = rel.shm_of(c.id);
  w.begin_object();
  w.str("id", c.id).boolean("host", c.id.empty());
  w.key("runtime").str_or_null(c.runtime);
  w.key("pod_uid").str_or_null(c.pod_uid);
  w.num("processes", c.processes).num("segments", c.segments).num("bytes", c.bytes);
  w.real("create_rate", c.create_rate);
  opt_real(w, "shm_percent", shm ? shm->percent : std::nullopt);
  w.end_object();
}

// ---- keys ---------------------------------------------------------------------

// The keys of the filter prompt: text, Backspace, Enter keeps, Esc clears.
bool filter_key(TopState &st, int key) {
  if (key == top_key::enter) {
    st.editing_filter = false;
  } else if (key == top_key::escape) {
    st.editing_filter = false;
    st.filter.clear();
  } else if (key == top_key::backspace) {
    if (!st.filter.empty()) {
      // Remove one whole UTF-8 code point.
      std::size_t n = st.filter.size() - 1;
      while (n > 0 && (static_cast<unsigned char>(st.filter[n]) & 0xc0) == 0x80)
        --n;
      st.filter.resize(n);
    }
  } else if (key >= 0x20 && key != 0x7f && key < 0x100) {
    st.filter += static_cast<char>(key);
  } else {
    return false;
  }
  st.selected = 0;
  st.selected_id.clear();
  st.scroll = 0;
  return true;
}

// Scrolling the details screen; false for the keys it leaves to the views.
bool details_key(TopState &st, int key) {
  switch (key) {
  case top_key::escape:
  case top_key::left:
  case top_key::backspace:
  case top_key::enter:
    st.details = false;
    return true;
  case top_key::up:
    st.details_scroll -= st.details_scroll ? 1 : 0;
    return true;
  case top_key::down:
    ++st.details_scroll; // clamped when the frame is built
    return true;
  case top_key::page_up:
    st.details_scroll -= std::min(st.details_scroll, st.page_rows);
    return true;
  case top_key::page_down:
    st.details_scroll += st.page_rows;
    return true;
  case top_key::home:
    st.details_scroll = 0;
    return true;
  case top_key::end:
    st.details_scroll = SIZE_MAX / 2;
    return true;
  default:
    return false;
  }
}

// The views' keys: switch view or sort, move the selection, open details.
bool view_key(TopState &st, int key) {
  auto view = [&](TopView v) {
    if (st.view != v) {
      st.view = v;
      st.selected = 0;
      st.selected_id.clear();
      st.scroll = 0;
    }
    return true;
  };
  auto sort = [&](TopSort s) {
    st.sort = s;
    return true; // the selection follows its row to the new place
  };
  auto move_to = [&](std::size_t i) {
    st.selected = st.rows ? std::min(i, st.rows - 1) : 0;
    st.selected_id.clear();
    return true;
  };
  switch (key) {
  case 'p':
    return view(TopView::processes);
  case 'c':
    return view(TopView::containers);
  case 'm':
    return view(TopView::mounts);
  case 's':
    return view(TopView::segments);
  case 'b':
    return sort(TopSort::bytes);
  case 'n':
    return sort(TopSort::count);
  case 'r':
    return sort(TopSort::rate);
  case 'a':
    return sort(TopSort::age);
  case '/':
    st.editing_filter = true;
    return true;
  case top_key::up:
    return move_to(st.selected ? st.selected - 1 : 0);
  case top_key::down:
    return move_to(st.selected + 1);
  case top_key::page_up:
    return move_to(st.selected - std::min(st.selected, st.page_rows));
  case top_key::page_down:
    return move_to(st.selected + st.page_rows);
  case top_key::home:
    return move_to(0);
  case top_key::end:
    return move_to(st.rows ? st.rows - 1 : 0);
  case top_key::enter:
  case top_key::right:
    if (st.rows == 0 || st.selected_id.empty())
      return false;
    st.details = true;
    st.details_view = st.view;
    st.details_id = st.selected_id;
    st.details_scroll = 0;
    return true;
  case top_key::escape:
    if (!st.filter.empty()) {
      st.filter.clear();
      return true;
    }
    return false;
  default:
    return false;
  }
}

bool apply_key(TopState &st, int key) {
  if (st.editing_filter)
    return filter_key(st, key);
  // A space types into the filter; elsewhere it pages down, as in less.
  if (key == ' ')
    key = top_key::page_down;
  if (st.help) {
    if (key == 'q')
      st.quit = true;
    st.help = false; // any key closes help
    return true;
  }
  if (key == 'q') {
    st.quit = true;
    return true;
  }
  if (key == 'h' || key == '?') {
    st.help = true;
    return true;
  }
  if (st.details) {
    if (details_key(st, key))
      return true;
    // View and sort keys leave the details; other keys leave them alone.
    TopState out = st;
    out.details = false;
    if (!view_key(out, key))
      return false;
    st = std::move(out);
    return true;
  }
  return view_key(st, key);
}

} // namespace

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

TopFrame build_top_frame(const TopSnapshot &snap, TopState &st) {
  TopFrame f;
  const std::size_t width = st.width;
  const bool limited = st.height > 0;
  const Relations rel(snap.processes, snap.mounts, snap.host_mntns);
  push_header(f, snap, st, rel);

  // Body: help, details or the view's table. The bottom line is the key
  // help (or the filter prompt) when the screen is limited.
  const std::size_t used = f.lines.size();
  const std::size_t body = limited ? (st.height > used + 1 ? st.height - used - 1 : 0) : SIZE_MAX;
  std::vector<TopLine> lines;
  if (st.help) {
    for (auto &h : top_help_lines())
      lines.push_back({std::move(h), TopStyle::normal});
    st.page_rows = std::max<std::size_t>(1, body);
  } else if (st.details) {
    lines = top_details_lines(snap, st, rel);
    lines.insert(lines.begin(), {"Details (Esc: back)", TopStyle::columns});
    const std::size_t page = std::max<std::size_t>(1, body);
    if (limited && lines.size() > page)
      st.details_scroll = std::min(st.details_scroll, lines.size() - page);
    else
      st.details_scroll = 0;
    lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(
                                                   std::min(st.details_scroll, lines.size())));
    st.page_rows = page;
  } else {
    lines = view_lines(snap, st, rel, body);
  }
  for (auto &l : lines) {
    if (limited && f.lines.size() >= used + body)
      break;
    push(f, std::move(l.text), l.style, width);
  }
  if (limited) {
    while (f.lines.size() < st.height - std::min<std::size_t>(st.height, 1))
      f.lines.push_back({});
    if (st.editing_filter)
      push(f, "Filter: " + escape_text(st.filter) + "_   (Enter: keep, Esc: clear)", TopStyle::help,
           width);
    else
      push(f, help_line_text, TopStyle::help, width);
    if (f.lines.size() > st.height)
      f.lines.resize(st.height);
  }
  return f;
}

std::string top_text(const TopFrame &frame) {
  std::string out;
  for (const TopLine &l : frame.lines) {
    out += l.text;
    out += '\n';
  }
  return out;
}

std::vector<std::string> top_help_lines() {
  return {
      "shmbpf top: shared memory, live",
      "",
      "Views",
      "  p  processes: PID USER COMM CONTAINER SEGS (created, live) BYTES HELD CREATE/s",
      "     ORPHANS (segments it created that no process holds any more)",
      "  c  containers: ID RUNTIME POD PROCS SEGS BYTES, and how full their /dev/shm is",
      "  m  mounts: every tmpfs, its usage, growth and predicted time to full",
      "  s  segments: PATH/NAME KIND SIZE BYTES STATE CREATOR HOLDERS AGE",
      "",
      "Sort (largest first)",
      "  b  bytes   n  count   r  rate (segments: latest change)",
      "  a  age (segments: oldest first; mounts: soonest full; others: by pid or name)",
      "",
      "  /        filter by name (Enter keeps it, Esc clears it)",
      "  Up/Down PgUp/PgDn Home/End   move the selection",
      "  Enter    details of the selected row (segment: creator, holders, path;",
      "           process: its segments); Esc or Left goes back",
      "  h or ?   this help; any key closes it",
      "  q        quit",
      "",
      "Header: live segments and bytes by kind, orphans (nobody holds them and their",
      "creator is gone), create/unlink rates, SIGBUS faults, lost events; one line per",
      "/dev/shm and per tmpfs holding shared memory. '!!' marks a mount over 90% full",
      "or predicted to fill within an hour.",
  };
}

std::string top_json(const TopSnapshot &snap, const TopState &st) {
  const Relations rel(snap.processes, snap.mounts, snap.host_mntns);
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  if (!snap.clock.empty())
    w.str("time", snap.clock);
  w.num("now_ns", snap.now_ns).str("view", to_string(st.view)).str("sort", to_string(st.sort));
  w.key("filter").str_or_null(st.filter);
  const EngineTotals &t = snap.totals;
  w.key("totals").begin_object();
  kind_json(w, "tmpfs", t.tmpfs);
  kind_json(w, "memfd", t.memfd);
  kind_json(w, "sysv", t.sysv);
  w.num("orphans", t.orphans).num("orphan_bytes", t.orphan_bytes);
  w.num("creates", t.creates).num("unlinks", t.unlinks);
  w.real("create_rate", t.create_rate).real("unlink_rate", t.unlink_rate);
  w.num("sigbus", t.sigbus).num("events", snap.events).num("lost", snap.lost);
  w.end_object();
  w.key("mounts").begin_array();
  for (const MountUsage *m : header_mounts(snap, rel))
    mount_json(w, rel, *m);
  w.end_array();
  w.key("rows").begin_array();
  switch (st.view) {
  case TopView::processes:
    for (std::size_t i : process_rows(snap, st))
      process_json(w, snap, snap.processes[i]);
    break;
  case TopView::containers:
    for (std::size_t i : container_rows(snap, st))
      container_json(w, rel, snap.containers[i]);
    break;
  case TopView::mounts:
    for (std::size_t i : mount_rows(st, rel))
      mount_json(w, rel, *rel.filesystems()[i]);
    break;
  case TopView::segments:
    // The same objects as `shmbpf ls --json`.
    for (std::size_t i : segment_rows(snap, st))
      write_segment(w, snap.segments[i], snap.now_ns);
    break;
  }
  w.end_array();
  w.end_object();
  return out;
}

std::string_view to_string(TopView v) {
  switch (v) {
  case TopView::processes:
    return "processes";
  case TopView::containers:
    return "containers";
  case TopView::mounts:
    return "mounts";
  case TopView::segments:
    return "segments";
  }
  return "?";
}

std::string_view to_string(TopSort s) {
  switch (s) {
  case TopSort::bytes:
    return "bytes";
  case TopSort::count:
    return "count";
  case TopSort::rate:
    return "rate";
  case TopSort::age:
    return "age";
  }
  return "?";
}

std::optional<TopView> parse_top_view(std::string_view s) {
  if (s == "process" || s == "processes")
    return TopView::processes;
  if (s == "container" || s == "containers")
    return TopView::containers;
  if (s == "mount" || s == "mounts")
    return TopView::mounts;
  if (s == "segment" || s == "segments")
    return TopView::segments;
  return std::nullopt;
}

bool top_handle_key(TopState &st, int key) { return apply_key(st, key); }

} // namespace shmbpf
