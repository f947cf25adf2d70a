#include "views/leaks_view.hpp"

#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/json.hpp"
#include "views/ls_view.hpp"

#include <cmath>

namespace shmbpf {

namespace {

std::string seconds_text(double s) { return fixed(s, s < 10 ? 1 : 0) + " s"; }

// " over the last 60 s", when growth was checked.
std::string over_window(const LeakReport &r) {
  return r.window ? " over the last " + seconds_text(r.window->covered_s) : std::string();
}

// Said when the samples span less than the window asked for: a daemon that
// has not run that long judges growth from what it has (a scan watches the
// whole window).
std::string short_window_note(const LeakReport &r) {
  if (!r.window || r.window->complete)
    return {};
  return "note: growth judged over " + seconds_text(r.window->covered_s) + " (" +
         std::to_string(r.window->samples) + " samples), not the " +
         seconds_text(r.window->requested_s) + " asked for: the daemon has not run that long yet\n";
}

// Faults not watched: said under every report of a window.
std::string unwatched_note(const LeakReport &r) {
  if (!r.window || r.bus_errors_unwatched.empty())
    return {};
  return "note: SIGBUS faults not watched during the window: " +
         escape_text(r.bus_errors_unwatched) + "\n";
}

std::string bus_errors_text(const LeakReport &r, uint64_t now_ns) {
  std::string out = "bus errors: " + std::to_string(r.bus_errors.size()) + " mount" +
                    (r.bus_errors.size() == 1 ? "" : "s") + " with SIGBUS faults" + over_window(r) +
                    "\n";
  for (const BusErrorMount &m : r.bus_errors)
    out += "  " + (m.mountpoint.empty() ? std::string("(no mount)") : escape_text(m.mountpoint)) +
           " of " + container_text(m.container) + "  " + std::to_string(m.count) + " fault" +
           (m.count == 1 ? "" : "s") + ", last " + bus_error_text(m.last, now_ns) + "\n";
  return out;
}

void write_bus_error(JsonWriter &w, const BusError &b) {
  w.begin_object().num("ts_ns", b.ts_ns).num("pid", b.pid).num("tid", b.tid).str("comm", b.comm);
  if (b.ns_pid != 0)
    w.num("ns_pid", b.ns_pid);
  else
    w.null("ns_pid");
  w.key("container");
  write_container(w, b.container);
  w.str("fault", to_string(b.fault)).str("cause", to_string(b.cause));
  w.key("kind");
  if (b.kind == Kind::none)
    w.null();
  else
    w.str(to_string(b.kind));
  w.str("path", b.path).num("addr", b.addr).num("offset", b.offset);
  w.num("file_size", b.file_size).num("mount_size", b.mount_size).num("mount_used", b.mount_used);
  w.end_object();
}

} // namespace

std::string leaks_text(const LeakReport &r, uint64_t now_ns, uint64_t min_age_s) {
  std::string out;
  if (!r.leaking()) {
    out += "no leaks: no orphaned segment older than " + human_age(min_age_s) +
           ", no steady growth" + std::string(r.window ? " or SIGBUS fault" : "") + " seen" +
           over_window(r) + "\n";
    return out + short_window_note(r) + unwatched_note(r);
  }
  if (!r.orphans.empty()) {
    out += "orphans: " + std::to_string(r.orphans.size()) + " segments, " +
           human_bytes(r.orphan_bytes) + " (no holder, creator gone or unknown, older than " +
           human_age(min_age_s) + ")\n";
    if (r.restart_orphans)
      out += "  left by restarts: " + std::to_string(r.restart_orphans) + " segments, " +
             human_bytes(r.restart_orphan_bytes) +
             " (made by an earlier container of a pod that runs a newer one)\n";
    auto group = [&](const char *title, const std::vector<LeakGroup> &groups, auto name) {
      out += std::string("  by ") + title + ":\n";
      for (const LeakGroup &g : groups)
        out += "    " + name(g) + "  " + std::to_string(g.count) + " segments, " +
               human_bytes(g.bytes) +
               (g.restart_count ? ", " + std::to_string(g.restart_count) + " left by a restart"
                                : std::string()) +
               "\n";
    };
    group("mount", r.by_mount, [](const LeakGroup &g) {
      return g.mount.empty() ? std::string("(no mount: SysV, memfd)") : escape_text(g.mount);
    });
    group("container", r.by_container,
          [](const LeakGroup &g) { return container_text(g.container); });
    group("pattern", r.by_pattern, [](const LeakGroup &g) { return g.pattern; });
    out += "\n";
    out += segments_table(r.orphans, now_ns);
  }
  if (!r.growth.empty()) {
    if (!r.orphans.empty())
      out += "\n";
    out += "growth: " + std::to_string(r.growth.size()) + " still rising" + over_window(r) + "\n";
    for (const GrowthFinding &g : r.growth) {
      std::string who = g.what + " " + (g.id.empty() ? std::string("host") : escape_text(g.id));
      if (!g.name.empty() && g.what != "mount")
        who += " (" + escape_text(g.name) + ")";
      out += "  " + who + ": " + human_bytes(g.from_bytes) + " -> " + human_bytes(g.to_bytes) +
             " in " + human_age(static_cast<uint64_t>(std::llround(g.seconds))) + ", " +
             bytes_rate_text(g.bytes_per_s, false) + "\n";
    }
  }
  if (!r.bus_errors.empty()) {
    if (!r.orphans.empty() || !r.growth.empty())
      out += "\n";
    out += bus_errors_text(r, now_ns);
  }
  return out + short_window_note(r) + unwatched_note(r);
}

std::string leaks_json(const LeakReport &r, uint64_t now_ns) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("orphans").begin_array();
  for (const SegmentInfo &s : r.orphans)
    write_segment(w, s, now_ns);
  w.end_array();
  w.num("orphan_count", r.orphans.size()).num("orphan_bytes", r.orphan_bytes);
  w.num("restart_orphan_count", r.restart_orphans);
  w.num("restart_orphan_bytes", r.restart_orphan_bytes);
  w.key("by_mount").begin_array();
  for (const LeakGroup &g : r.by_mount) {
    w.begin_object().key("mount").str_or_null(g.mount);
    w.num("count", g.count).num("bytes", g.bytes).num("restart_count", g.restart_count);
    w.end_object();
  }
  w.end_array();
  w.key("by_container").begin_array();
  for (const LeakGroup &g : r.by_container) {
    w.begin_object().key("container");
    write_container(w, g.container);
    w.num("count", g.count).num("bytes", g.bytes).num("restart_count", g.restart_count);
    w.end_object();
  }
  w.end_array();
  w.key("by_pattern").begin_array();
  for (const LeakGroup &g : r.by_pattern)
    w.begin_object()
        .str("pattern", g.pattern)
        .num("count", g.count)
        .num("bytes", g.bytes)
        .num("restart_count", g.restart_count)
        .end_object();
  w.end_array();
  w.key("growth").begin_array();
  for (const GrowthFinding &g : r.growth) {
    w.begin_object().str("what", g.what).str("id", g.id).str("name", g.name);
    w.num("from_bytes", g.from_bytes).num("to_bytes", g.to_bytes);
    w.real("seconds", g.seconds).real("bytes_per_s", g.bytes_per_s).end_object();
  }
  w.end_array();
  if (r.window) {
    w.key("window").begin_object();
    w.real("requested_s", r.window->requested_s).real("covered_s", r.window->covered_s);
    w.num("samples", r.window->samples).boolean("complete", r.window->complete).end_object();
    // SIGBUS faults of the window by mount; null when they were not watched.
    w.key("bus_errors");
    if (!r.bus_errors_unwatched.empty()) {
      w.null();
    } else {
      w.begin_array();
      for (const BusErrorMount &m : r.bus_errors) {
        w.begin_object().key("mountpoint").str_or_null(m.mountpoint).key("container");
        write_container(w, m.container);
        w.num("count", m.count);
        w.key("last");
        write_bus_error(w, m.last);
        w.end_object();
      }
      w.end_array();
    }
  }
  w.end_object();
  out += '\n';
  return out;
}

} // namespace shmbpf
