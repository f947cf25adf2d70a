#include "views/ls_view.hpp"

#include "decode/event.hpp"
#include "views/escape.hpp"
#include "views/json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string_view>

namespace shmbpf {
namespace {

constexpr uint64_t ns_per_sec = 1'000'000'000;
constexpr std::size_t id_width = 12;   // container ids are shown shortened
constexpr std::size_t max_holders = 3; // pids listed before "+N"

// ---- tables ----------------------------------------------------------------

struct Column {
  std::string_view title;
  bool right = false; // numbers are right-aligned
};

// Display width of escaped text: code points (escaped text is valid UTF-8).
std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xc0u) != 0x80u)
      ++n;
  return n;
}

// Renders cells already escaped; columns separated by two spaces, the last
// column never padded so lines carry no trailing blanks.
std::string render(const std::vector<Column> &cols,
                   const std::vector<std::vector<std::string>> &rows) {
  std::vector<std::size_t> width(cols.size());
  for (std::size_t i = 0; i < cols.size(); ++i)
    width[i] = display_width(cols[i].title);
  for (const auto &row : rows)
    for (std::size_t i = 0; i < cols.size() && i < row.size(); ++i)
      width[i] = std::max(width[i], display_width(row[i]));

  std::string out;
  auto line = [&](auto cell) {
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const std::string_view text = cell(i);
      const std::size_t pad = width[i] - std::min(width[i], display_width(text));
      const bool last = i + 1 == cols.size();
      if (cols[i].right)
        out.append(pad, ' ');
      out += text;
      if (!cols[i].right && !last)
        out.append(pad, ' ');
      if (!last)
        out += "  ";
    }
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    out += '\n';
  };
  line([&](std::size_t i) { return cols[i].title; });
  for (const auto &row : rows)
    line([&](std::size_t i) {
      return i < row.size() ? std::string_view(row[i]) : std::string_view();
    });
  return out;
}

std::string short_id(std::string_view id) {
  if (id.empty())
    return "-";
  return escape_text(id.substr(0, id_width));
}

std::string creator_cell(const CreatorInfo &c) {
  std::string s;
  if (!c.known || c.pid == 0)
    s = "?";
  else
    s = std::to_string(c.pid) + "/" + escape_text(c.comm);
  if (c.known && c.exited)
    s += " (exited)";
  return s;
}

std::string holders_cell(const std::vector<uint32_t> &pids) {
  if (pids.empty())
    return "-";
  std::string s;
  const std::size_t shown = std::min(pids.size(), max_holders);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i)
      s += ',';
    s += std::to_string(pids[i]);
  }
  if (pids.size() > shown)
    s += ",+" + std::to_string(pids.size() - shown);
  return s;
}

std::string or_dash(std::string_view s) { return s.empty() ? std::string("-") : escape_text(s); }

std::string fixed1(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// ---- JSON ------------------------------------------------------------------

// The document in pieces: sink(text) gets about flush_bytes at a time, so
// that a large one (100,000 segments make tens of megabytes) is never held
// whole. each(fn) calls fn once per item, in order.
template <typename Each, typename F>
void document(std::string_view name, Each each, F item,
              const std::function<void(std::string_view)> &sink, std::size_t flush_bytes) {
  // One item per line: readable, and greppable by line.
  std::string out = "{";
  append_json_text(out, name);
  out += ": [";
  bool first = true;
  each([&](const auto &value) {
    out += first ? "\n  " : ",\n  ";
    first = false;
    JsonWriter w(out);
    item(w, value);
    if (out.size() >= flush_bytes) {
      sink(out);
      out.clear();
    }
  });
  out += first ? "]}\n" : "\n]}\n";
  sink(out);
}

template <typename T> auto each_of(const std::vector<T> &items) {
  return [&items](const auto &fn) {
    for (const T &x : items)
      fn(x);
  };
}

template <typename T, typename F>
std::string document(std::string_view name, const std::vector<T> &items, F item) {
  std::string out;
  document(
      name, each_of(items), item, [&](std::string_view piece) { out += piece; }, SIZE_MAX);
  return out;
}

} // namespace

void write_container(JsonWriter &w, const ContainerRef &c) {
  if (c.id.empty()) {
    w.null();
    return;
  }
  w.begin_object().str("id", c.id);
  w.key("runtime").str_or_null(c.runtime);
  w.key("pod_uid").str_or_null(c.pod_uid);
  w.end_object();
}

void write_segment(JsonWriter &w, const SegmentInfo &s, uint64_t now_ns) {
  w.begin_object();
  w.str("kind", to_string(s.kind)).str("path", s.path);
  if (s.kind == Kind::sysv) {
    w.null("dev").null("ino");
    w.num("shmid", static_cast<uint32_t>(s.key.ino_or_shmid));
    w.num("ipcns", s.key.dev_or_ipcns).num("sysv_key", s.sysv_key).num("nattch", s.nattch);
  } else {
    w.str("dev", dev_string(s.key.dev_or_ipcns)).num("ino", s.key.ino_or_shmid).null("shmid");
  }
  w.num("size", s.size).num("bytes", s.bytes).str("state", to_string(s.state));
  w.key("mount").str_or_null(s.mountpoint);
  if (const auto age = segment_age_s(s, now_ns))
    w.num("age_s", *age);
  else
    w.null("age_s");
  w.boolean("existed_before", s.existed_before).boolean("orphan", s.orphan);
  w.key("creator");
  if (s.creator.known && s.creator.pid != 0) {
    w.begin_object().num("pid", s.creator.pid).str("comm", s.creator.comm);
    w.num("uid", s.creator.uid).boolean("exited", s.creator.exited).end_object();
  } else {
    w.null();
  }
  w.key("holders").begin_array();
  for (uint32_t pid : s.holders)
    w.num(pid);
  w.end_array();
  w.key("container");
  write_container(w, s.container);
  w.key("pattern");
  if (s.pattern == NamePattern::none)
    w.null();
  else
    w.str(to_string(s.pattern));
  w.key("inferred_pid");
  if (s.inferred_pid != 0)
    w.num(s.inferred_pid);
  else
    w.null();
  w.end_object();
}

void write_process(JsonWriter &w, const ProcessInfo &p) {
  w.begin_object();
  w.num("pid", p.pid).num("ppid", p.ppid).num("uid", p.uid).num("mntns", p.mntns);
  w.str("comm", p.comm).num("cgroup_id", p.cgroup_id);
  w.key("container");
  write_container(w, ContainerRef{p.container_id, p.runtime, p.pod_uid});
  w.num("segments_created", p.segments_created).num("bytes_created", p.bytes_created);
  w.num("segments_held", p.segments_held).num("bytes_held", p.bytes_held);
  w.num("sysv_attachments", p.sysv_attachments);
  w.num("creates", p.creates).num("unlinks", p.unlinks);
  w.real("create_rate", p.create_rate).real("unlink_rate", p.unlink_rate);
  w.num("sigbus", p.sigbus);
  w.end_object();
}

void write_container_row(JsonWriter &w, const ContainerInfo &c) {
  w.begin_object();
  w.str("id", c.id).boolean("host", c.id.empty());
  w.key("runtime").str_or_null(c.runtime);
  w.key("pod_uid").str_or_null(c.pod_uid);
  w.num("processes", c.processes).num("segments", c.segments).num("bytes", c.bytes);
  w.num("creates", c.creates).num("unlinks", c.unlinks).real("create_rate", c.create_rate);
  w.end_object();
}

void write_mount(JsonWriter &w, const MountUsage &m) {
  w.begin_object();
  w.str("mountpoint", m.mount.mountpoint).num("mntns", m.mount.mntns);
  w.num("mnt_id", m.mount.mnt_id).str("dev", dev_string(m.mount.dev));
  if (m.mount.size_limit == 0)
    w.null("size_bytes");
  else
    w.num("size_bytes", m.mount.size_limit);
  w.num("used_bytes", m.mount.used_bytes).num("tracked_bytes", m.tracked_bytes);
  w.num("segments", m.segments);
  if (m.percent)
    w.real("percent", *m.percent);
  else
    w.null("percent");
  w.real("growth_bytes_per_s", m.growth_bytes_per_s);
  if (m.seconds_to_full)
    w.real("seconds_to_full", *m.seconds_to_full);
  else
    w.null("seconds_to_full");
  w.num("enospc", m.enospc);
  w.end_object();
}

namespace {} // namespace

std::string human_bytes(uint64_t bytes) {
  static constexpr char units[] = {'K', 'M', 'G', 'T', 'P', 'E'};
  if (bytes < 1024)
    return std::to_string(bytes) + "B";
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof units) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (v < 9.95)
    std::snprintf(buf, sizeof buf, "%.1f%c", v, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.0f%c", v, units[u]);
  return buf;
}

std::string human_age(std::optional<uint64_t> seconds) {
  if (!seconds)
    return "?";
  const uint64_t s = *seconds;
  if (s < 60)
    return std::to_string(s) + "s";
  if (s < 3600)
    return std::to_string(s / 60) + "m";
  if (s < 86400)
    return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::optional<uint64_t> segment_age_s(const SegmentInfo &s, uint64_t now_ns) {
  if (s.age_ns)
    return *s.age_ns / ns_per_sec;
  if (s.created_ns == 0 || now_ns < s.created_ns)
    return std::nullopt;
  return (now_ns - s.created_ns) / ns_per_sec;
}

std::string segments_table(const std::vector<SegmentInfo> &segments, uint64_t now_ns) {
  const std::vector<Column> cols = {{"PATH"},        {"KIND"},      {"SIZE", true},
                                    {"BYTES", true}, {"STATE"},     {"CREATOR"},
                                    {"HOLDERS"},     {"CONTAINER"}, {"AGE", true}};
  std::vector<std::vector<std::string>> rows;
  rows.reserve(segments.size());
  for (const SegmentInfo &s : segments)
    rows.push_back({escape_text(s.path), std::string(to_string(s.kind)), human_bytes(s.size),
                    human_bytes(s.bytes), std::string(to_string(s.state)), creator_cell(s.creator),
                    holders_cell(s.holders), short_id(s.container.id),
                    human_age(segment_age_s(s, now_ns))});
  return render(cols, rows);
}

std::string processes_table(const std::vector<ProcessInfo> &processes) {
  const std::vector<Column> cols = {{"PID", true},  {"USER", true},  {"COMM"},      {"CONTAINER"},
                                    {"SEGS", true}, {"BYTES", true}, {"HELD", true}};
  std::vector<std::vector<std::string>> rows;
  rows.reserve(processes.size());
  for (const ProcessInfo &p : processes)
    rows.push_back({std::to_string(p.pid), std::to_string(p.uid), escape_text(p.comm),
                    short_id(p.container_id), std::to_string(p.segments_created),
                    human_bytes(p.bytes_created), human_bytes(p.bytes_held)});
  return render(cols, rows);
}

std::string containers_table(const std::vector<ContainerInfo> &containers) {
  const std::vector<Column> cols = {{"ID"},          {"RUNTIME"},    {"POD"},
                                    {"PROCS", true}, {"SEGS", true}, {"BYTES", true}};
  std::vector<std::vector<std::string>> rows;
  rows.reserve(containers.size());
  for (const ContainerInfo &c : containers)
    rows.push_back({c.id.empty() ? std::string("host") : short_id(c.id), or_dash(c.runtime),
                    or_dash(c.pod_uid), std::to_string(c.processes), std::to_string(c.segments),
                    human_bytes(c.bytes)});
  return render(cols, rows);
}

std::string mounts_table(const std::vector<MountUsage> &mounts) {
  const std::vector<Column> cols = {{"MOUNTPOINT"},        {"MNTNS", true},   {"SIZE", true},
                                    {"USED", true},        {"PERCENT", true}, {"GROWTH/s", true},
                                    {"TIME-TO-FULL", true}};
  std::vector<std::vector<std::string>> rows;
  rows.reserve(mounts.size());
  for (const MountUsage &m : mounts) {
    std::string growth = "-";
    if (std::isfinite(m.growth_bytes_per_s) && m.growth_bytes_per_s != 0) {
      const double mag = std::fabs(m.growth_bytes_per_s);
      growth = (m.growth_bytes_per_s > 0 ? "+" : "-") +
               human_bytes(static_cast<uint64_t>(std::llround(mag)));
    }
    std::string ttf = "-";
    if (m.seconds_to_full && std::isfinite(*m.seconds_to_full) && *m.seconds_to_full >= 0)
      ttf = human_age(static_cast<uint64_t>(*m.seconds_to_full));
    rows.push_back(
        {escape_text(m.mount.mountpoint), std::to_string(m.mount.mntns),
         m.mount.size_limit ? human_bytes(m.mount.size_limit) : std::string("unlimited"),
         human_bytes(m.mount.used_bytes),
         m.percent && std::isfinite(*m.percent) ? fixed1(*m.percent) + "%" : std::string("-"),
         growth, ttf});
  }
  return render(cols, rows);
}

std::string segments_json(const std::vector<SegmentInfo> &segments, uint64_t now_ns) {
  return document("segments", segments,
                  [&](JsonWriter &w, const SegmentInfo &s) { write_segment(w, s, now_ns); });
}

void segments_json(const SegmentSource &segments, uint64_t now_ns,
                   const std::function<void(std::string_view)> &sink) {
  document(
      "segments", segments,
      [&](JsonWriter &w, const SegmentInfo &s) { write_segment(w, s, now_ns); }, sink,
      std::size_t{1} << 20);
}

std::string processes_json(const std::vector<ProcessInfo> &processes) {
  return document("processes", processes, write_process);
}

std::string containers_json(const std::vector<ContainerInfo> &containers) {
  return document("containers", containers, write_container_row);
}

std::string mounts_json(const std::vector<MountUsage> &mounts) {
  return document("mounts", mounts, write_mount);
}

} // namespace shmbpf
