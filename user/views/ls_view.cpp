#include "views/ls_view.hpp"

#include "decode/event.hpp"
#include "views/escape.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
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

void append_uint(std::string &out, uint64_t v) { out += std::to_string(v); }

void append_double(std::string &out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_bool(std::string &out, bool v) { out += v ? "true" : "false"; }

// `"key": ` with a leading ", " unless first.
class Object {
public:
  explicit Object(std::string &out) : out_(out) { out_ += '{'; }
  std::string &key(std::string_view k) {
    if (!first_)
      out_ += ", ";
    first_ = false;
    append_json_string(out_, k);
    out_ += ": ";
    return out_;
  }
  void close() { out_ += '}'; }

private:
  std::string &out_;
  bool first_ = true;
};

template <typename T, typename F>
std::string document(std::string_view name, const std::vector<T> &items, F item) {
  std::string out = "{";
  append_json_string(out, name);
  out += ": [";
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += i ? ",\n  " : "\n  ";
    item(out, items[i]);
  }
  out += items.empty() ? "]}\n" : "\n]}\n";
  return out;
}

void append_segment(std::string &out, const SegmentInfo &s, uint64_t now_ns) {
  const bool sysv = s.kind == Kind::sysv;
  Object o(out);
  append_json_string(o.key("kind"), to_string(s.kind));
  append_json_string(o.key("path"), s.path);
  if (sysv) {
    o.key("dev") += "null";
    o.key("ino") += "null";
    append_uint(o.key("shmid"), static_cast<uint32_t>(s.key.ino_or_shmid));
    append_uint(o.key("ipcns"), s.key.dev_or_ipcns);
    append_uint(o.key("sysv_key"), s.sysv_key);
    append_uint(o.key("nattch"), s.nattch);
  } else {
    append_json_string(o.key("dev"), dev_string(s.key.dev_or_ipcns));
    append_uint(o.key("ino"), s.key.ino_or_shmid);
    o.key("shmid") += "null";
  }
  append_uint(o.key("size"), s.size);
  append_uint(o.key("bytes"), s.bytes);
  append_json_string(o.key("state"), to_string(s.state));
  if (s.mountpoint.empty())
    o.key("mount") += "null";
  else
    append_json_string(o.key("mount"), s.mountpoint);
  if (const auto age = segment_age_s(s, now_ns))
    append_uint(o.key("age_s"), *age);
  else
    o.key("age_s") += "null";
  append_bool(o.key("existed_before"), s.existed_before);
  append_bool(o.key("orphan"), false); // SegmentInfo carries no orphan flag
  if (s.creator.known && s.creator.pid != 0) {
    Object c(o.key("creator"));
    append_uint(c.key("pid"), s.creator.pid);
    append_json_string(c.key("comm"), s.creator.comm);
    append_uint(c.key("uid"), s.creator.uid);
    append_bool(c.key("exited"), s.creator.exited);
    c.close();
  } else {
    o.key("creator") += "null";
  }
  std::string &h = o.key("holders");
  h += '[';
  for (std::size_t i = 0; i < s.holders.size(); ++i) {
    if (i)
      h += ", ";
    append_uint(h, s.holders[i]);
  }
  h += ']';
  if (s.creator.container_id.empty()) {
    o.key("container") += "null";
  } else {
    // SegmentInfo knows only the id; runtime and pod come from containers_json.
    Object c(o.key("container"));
    append_json_string(c.key("id"), s.creator.container_id);
    c.key("runtime") += "null";
    c.key("pod_uid") += "null";
    c.close();
  }
  if (s.pattern == NamePattern::none)
    o.key("pattern") += "null";
  else
    append_json_string(o.key("pattern"), to_string(s.pattern));
  if (s.inferred_pid != 0)
    append_uint(o.key("inferred_pid"), s.inferred_pid);
  else
    o.key("inferred_pid") += "null";
  o.close();
}

void append_opt_string(std::string &out, std::string_view s) {
  if (s.empty())
    out += "null";
  else
    append_json_string(out, s);
}

void append_process(std::string &out, const ProcessInfo &p) {
  Object o(out);
  append_uint(o.key("pid"), p.pid);
  append_uint(o.key("ppid"), p.ppid);
  append_uint(o.key("uid"), p.uid);
  append_uint(o.key("mntns"), p.mntns);
  append_json_string(o.key("comm"), p.comm);
  append_uint(o.key("cgroup_id"), p.cgroup_id);
  if (p.container_id.empty()) {
    o.key("container") += "null";
  } else {
    Object c(o.key("container"));
    append_json_string(c.key("id"), p.container_id);
    append_opt_string(c.key("runtime"), p.runtime);
    append_opt_string(c.key("pod_uid"), p.pod_uid);
    c.close();
  }
  append_uint(o.key("segments_created"), p.segments_created);
  append_uint(o.key("bytes_created"), p.bytes_created);
  append_uint(o.key("segments_held"), p.segments_held);
  append_uint(o.key("bytes_held"), p.bytes_held);
  append_uint(o.key("sysv_attachments"), p.sysv_attachments);
  append_uint(o.key("creates"), p.creates);
  append_uint(o.key("unlinks"), p.unlinks);
  append_double(o.key("create_rate"), p.create_rate);
  append_double(o.key("unlink_rate"), p.unlink_rate);
  append_uint(o.key("sigbus"), p.sigbus);
  o.close();
}

void append_container(std::string &out, const ContainerInfo &c) {
  Object o(out);
  append_json_string(o.key("id"), c.id);
  append_bool(o.key("host"), c.id.empty());
  append_opt_string(o.key("runtime"), c.runtime);
  append_opt_string(o.key("pod_uid"), c.pod_uid);
  append_uint(o.key("processes"), c.processes);
  append_uint(o.key("segments"), c.segments);
  append_uint(o.key("bytes"), c.bytes);
  append_uint(o.key("creates"), c.creates);
  append_uint(o.key("unlinks"), c.unlinks);
  append_double(o.key("create_rate"), c.create_rate);
  o.close();
}

void append_mount(std::string &out, const MountUsage &m) {
  Object o(out);
  append_json_string(o.key("mountpoint"), m.mount.mountpoint);
  append_uint(o.key("mntns"), m.mount.mntns);
  append_uint(o.key("mnt_id"), m.mount.mnt_id);
  append_json_string(o.key("dev"), dev_string(m.mount.dev));
  if (m.mount.size_limit == 0)
    o.key("size_bytes") += "null";
  else
    append_uint(o.key("size_bytes"), m.mount.size_limit);
  append_uint(o.key("used_bytes"), m.mount.used_bytes);
  append_uint(o.key("tracked_bytes"), m.tracked_bytes);
  append_uint(o.key("segments"), m.segments);
  if (m.percent)
    append_double(o.key("percent"), *m.percent);
  else
    o.key("percent") += "null";
  append_double(o.key("growth_bytes_per_s"), m.growth_bytes_per_s);
  if (m.seconds_to_full)
    append_double(o.key("seconds_to_full"), *m.seconds_to_full);
  else
    o.key("seconds_to_full") += "null";
  append_uint(o.key("enospc"), m.enospc);
  o.close();
}

} // namespace

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
                    holders_cell(s.holders), short_id(s.creator.container_id),
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
                  [&](std::string &out, const SegmentInfo &s) { append_segment(out, s, now_ns); });
}

std::string processes_json(const std::vector<ProcessInfo> &processes) {
  return document("processes", processes, append_process);
}

std::string containers_json(const std::vector<ContainerInfo> &containers) {
  return document("containers", containers, append_container);
}

std::string mounts_json(const std::vector<MountUsage> &mounts) {
  return document("mounts", mounts, append_mount);
}

} // namespace shmbpf
