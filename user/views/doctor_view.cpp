#include "views/doctor_view.hpp"

#include "facts/dev.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/json.hpp"
#include "views/table.hpp"

#include <algorithm>

namespace shmbpf {
namespace {

std::string_view verdict_name(DoctorCheck::Verdict v) {
  switch (v) {
  case DoctorCheck::Verdict::ok:
    return "ok";
  case DoctorCheck::Verdict::warn:
    return "warn";
  case DoctorCheck::Verdict::fail:
    return "FAIL";
  }
  return "?";
}

std::string headline(const DoctorReport &r) {
  if (const DoctorCheck *f = r.failure())
    return "shmbpf cannot run here: " + escape_text(f->name) + ": " + escape_text(f->detail) + "\n";
  const auto warnings = std::count_if(r.checks.begin(), r.checks.end(), [](const DoctorCheck &c) {
    return c.verdict == DoctorCheck::Verdict::warn;
  });
  return "shmbpf can run here" +
         (warnings ? " (" + std::to_string(warnings) + " warning" + (warnings > 1 ? "s" : "") + ")"
                   : std::string()) +
         ".\n";
}

std::string hooks_table(const DoctorReport &r) {
  Table t{{{"HOOK"}, {"STATE"}, {"EVENTS"}, {"PROGRAM, OR WHY OFF"}}, {}};
  for (const HookStatus &h : r.hooks) {
    const bool on = !h.program.empty();
    t.rows.push_back(
        {escape_text(h.hook), on ? "on" : "OFF", escape_text(h.events),
         on ? escape_text(h.program) : escape_text(h.off + (h.lost.empty() ? "" : ": " + h.lost))});
  }
  return table_text(t);
}

std::string mounts_table(const DoctorReport &r) {
  Table t{{{"MOUNTPOINT", Align::left, true, true},
           {"MNTNS", Align::right},
           {"DEV"},
           {"SIZE", Align::right},
           {"USED", Align::right},
           {"USE%", Align::right}},
          {}};
  for (const MountState &m : r.mounts) {
    std::optional<double> percent;
    if (m.size_limit)
      percent = 100.0 * static_cast<double>(m.used_bytes) / static_cast<double>(m.size_limit);
    t.rows.push_back({escape_text(m.mountpoint), std::to_string(m.mntns), dev_string(m.dev),
                      size_limit_text(m.size_limit),
                      m.used_known ? human_bytes(m.used_bytes) : std::string("?"),
                      percent_text(percent)});
  }
  return table_text(t);
}

} // namespace

std::string doctor_text(const DoctorReport &r) {
  std::string out = headline(r) + "\n";
  Table checks{{{"CHECK"}, {"STATE"}, {"DETAIL"}}, {}};
  for (const DoctorCheck &c : r.checks)
    checks.rows.push_back(
        {escape_text(c.name), std::string(verdict_name(c.verdict)), escape_text(c.detail)});
  out += table_text(checks);
  if (r.ring_buffer_bytes)
    out += "\nring buffer: " + human_bytes(r.ring_buffer_bytes) +
           " (--ring-buffer-size); name table: " + std::to_string(r.name_capacity) +
           " names, for " + std::to_string(r.tmpfs_files) + " files on tmpfs now\n";
  if (!r.hook_set_note.empty())
    out += "\nnote: " + escape_text(r.hook_set_note) + "\n";
  if (!r.hooks.empty())
    out += "\n" + std::string(hook_set_name(r.hook_set)) + " hook set:\n" + hooks_table(r);
  if (!r.fallbacks.empty()) {
    out += "\nkernel " + escape_text(r.release) + " lacks, and shmbpf does instead:\n";
    for (const Fallback &f : r.fallbacks)
      out += "  " + escape_text(f.feature) + ": " + escape_text(f.instead) +
             (f.lossy ? " (reports less)" : "") + "\n";
  }
  if (!r.mounts.empty())
    out += "\n" + mounts_table(r);
  return out;
}

std::string doctor_json(const DoctorReport &r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  const DoctorCheck *failure = r.failure();
  w.boolean("can_run", failure == nullptr);
  w.key("reason");
  if (failure)
    w.str(failure->name + ": " + failure->detail);
  else
    w.null();
  w.key("kernel").begin_object().str("release", r.release).str("machine", r.machine).end_object();
  w.key("checks").begin_array();
  for (const DoctorCheck &c : r.checks) {
    w.begin_object().str("check", c.name);
    w.str("verdict", c.verdict == DoctorCheck::Verdict::fail ? "fail" : verdict_name(c.verdict));
    w.str("detail", c.detail).end_object();
  }
  w.end_array();
  w.str("hook_set", hook_set_name(r.hook_set));
  w.key("hook_set_note").str_or_null(r.hook_set_note);
  w.key("light_missing").str_or_null(r.light_missing);
  w.key("hooks").begin_array();
  for (const HookStatus &h : r.hooks) {
    const bool on = !h.program.empty();
    w.begin_object().str("hook", h.hook).str("events", h.events).boolean("attached", on);
    w.key("program").str_or_null(h.program);
    w.key("build");
    if (on)
      w.str(build_name(h.build));
    else
      w.null();
    w.key("off").str_or_null(h.off);
    w.key("lost").str_or_null(on ? std::string_view() : std::string_view(h.lost));
    w.end_object();
  }
  w.end_array();
  w.key("fallbacks").begin_array();
  for (const Fallback &f : r.fallbacks)
    w.begin_object()
        .str("feature", f.feature)
        .str("instead", f.instead)
        .boolean("lossy", f.lossy)
        .end_object();
  w.end_array();
  w.num("ring_buffer_bytes", r.ring_buffer_bytes).num("name_capacity", r.name_capacity);
  w.num("tmpfs_files", r.tmpfs_files);
  w.key("cgroup2").str_or_null(r.cgroup2.value_or(""));
  w.num("mount_namespaces", r.mount_namespaces);
  w.key("mounts").begin_array();
  for (const MountState &m : r.mounts) {
    w.begin_object().str("mountpoint", m.mountpoint).num("mntns", m.mntns);
    w.num("mnt_id", m.mnt_id).str("dev", dev_string(m.dev));
    w.key("size_bytes");
    if (m.size_limit)
      w.num(m.size_limit);
    else
      w.null();
    w.key("used_bytes");
    if (m.used_known)
      w.num(m.used_bytes);
    else
      w.null();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  out += "\n";
  return out;
}

} // namespace shmbpf
