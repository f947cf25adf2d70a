#include "views/top_frame.hpp"

#include "views/columns.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/relations.hpp"
#include "views/scan_notes.hpp"
#include "views/text_width.hpp"
#include "views/top_details.hpp"
#include "views/top_rows.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <utility>

namespace shmbpf {

namespace {

constexpr std::size_t bar_width = 20;      // cells inside a mount's usage bar
constexpr std::size_t max_mount_name = 40; // header mount names are cut beyond this

const char *help_line_text = "p/c/m/s/w view  b/n/r/a sort  / filter  Enter details  arrows "
                             "PgUp/PgDn scroll  h help  q quit";

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
  // Its owner's memory limit, which its pages count against.
  if (m.memory_room) {
    const auto ttl = m.seconds_to_memory_limit;
    line += "  mem limit in " + (ttl && std::isfinite(*ttl) ? human_age(static_cast<uint64_t>(*ttl))
                                                            : std::string("-"));
    if (oom_before_full(m))
      line += "  OOM before full";
  }
  if (m.enospc)
    line += "  ENOSPC " + std::to_string(m.enospc);
  if (m.sigbus)
    line += "  SIGBUS " + std::to_string(m.sigbus);
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
           "   OOM kills: " + std::to_string(t.oom_kills) +
           "   Lost events: " + std::to_string(snap.lost) + (snap.lost ? " (!)" : ""),
       snap.lost || t.sigbus || t.oom_kills ? TopStyle::alert : TopStyle::normal, width);
  if (t.last_sigbus)
    push(f, "Last SIGBUS: " + bus_error_text(*t.last_sigbus, snap.now_ns), TopStyle::alert, width);
  if (t.last_oom_kill)
    push(f, "Last OOM kill: " + oom_kill_text(*t.last_oom_kill, snap.now_ns), TopStyle::alert,
         width);
  // Files a scan could not reach are in no table: say so, at most twice.
  const auto gaps = scan_shortfall_lines(snap.scan_gaps);
  constexpr std::size_t kMaxGapLines = 2;
  for (std::size_t i = 0; i < gaps.size() && i < kMaxGapLines; ++i)
    push(f, "Scan: " + gaps[i], TopStyle::alert, width);
  if (gaps.size() > kMaxGapLines)
    push(f, "Scan: ... and " + std::to_string(gaps.size() - kMaxGapLines) + " more filesystems",
         TopStyle::alert, width);

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
  case TopView::containers: {
    idx = container_rows(snap, st);
    const ColumnSet<ContainerInfo> *set = &container_columns_for(snap.containers);
    r.columns = columns_of(*set);
    r.id = [&](std::size_t i) { return container_row_id(snap.containers[idx[i]]); };
    r.cells = [&, set](std::size_t i) { return cells_of(*set, snap.containers[idx[i]], ctx); };
    r.alert = [&](std::size_t i) {
      const ContainerInfo &c = snap.containers[idx[i]];
      const MountUsage *m = c.cgroup.empty() ? rel.shm_of(c.id) : nullptr;
      return m && mount_alert(*m);
    };
    break;
  }
  case TopView::mounts:
    idx = mount_rows(st, rel);
    r.columns = columns_of(mount_columns());
    r.id = [&](std::size_t i) { return mount_row_id(*rel.filesystems()[idx[i]]); };
    r.cells = [&](std::size_t i) {
      return cells_of(mount_columns(), *rel.filesystems()[idx[i]], ctx);
    };
    r.alert = [&](std::size_t i) { return mount_alert(*rel.filesystems()[idx[i]]); };
    break;
  case TopView::producers:
    idx = producer_rows(snap, st);
    r.columns = columns_of(producer_columns());
    r.id = [&](std::size_t i) { return producer_row_id(snap.producers[idx[i]]); };
    r.cells = [&](std::size_t i) {
      return cells_of(producer_columns(), snap.producers[idx[i]], ctx);
    };
    r.alert = [&](std::size_t i) { return snap.producers[idx[i]].orphans > 0; };
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

} // namespace

void append_table(std::vector<TopLine> &out, const Table &t, std::size_t width) {
  auto lines = table_lines(t, width);
  for (std::size_t i = 0; i < lines.size(); ++i)
    out.push_back({std::move(lines[i]), i == 0 ? TopStyle::columns : TopStyle::normal});
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
      "     UNHELD (segments it created, still running, that no process holds now)",
      "  c  containers: ID RUNTIME POD PROCS SEGS BYTES, and how full their /dev/shm is",
      "  m  mounts: every tmpfs, its usage, growth and predicted time to full",
      "  s  segments: PATH/NAME KIND SIZE BYTES STATE CREATOR HOLDERS AGE",
      "  w  producers (who made them, by name: torch, nccl, postgres...): SEGS BYTES",
      "     ORPHANS ORPHANED RESTART (orphans a restarted container's pod was left) CREATORS",
      "",
      "Sort (largest first)",
      "  b  bytes   n  count   r  rate (segments: latest change; producers: creators)",
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

} // namespace shmbpf
