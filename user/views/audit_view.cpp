#include "views/audit_view.hpp"

#include "facts/dev.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/json.hpp"
#include "views/ls_view.hpp"

#include <array>
#include <cstdio>

namespace shmbpf {

namespace {

std::string container_text(const std::optional<ContainerRef> &c) {
  if (!c)
    return "host";
  std::string out = c->name.empty() ? short_id(c->id) : escape_text(c->name);
  out += " (" + c->runtime + " " + short_id(c->id);
  if (!c->pod.empty())
    out += ", pod " + escape_text(c->pod_namespace) + "/" + escape_text(c->pod);
  return out + ")";
}

std::string octal(uint32_t mode) {
  std::array<char, 16> buf{};
  std::snprintf(buf.data(), buf.size(), "%04o", mode & 07777);
  return buf.data();
}

std::string limit_text(const std::optional<uint64_t> &bytes) {
  return bytes ? human_bytes(*bytes) : "none";
}

void line(std::string &out, std::string_view label, const std::string &value) {
  out += "    ";
  out += label;
  out += ": ";
  out += value;
  out += '\n';
}

// Whether the rule's evidence holds a field (a namespace inode is never 0;
// a limit shows where the rule is about limits).
bool about_limits(const Finding &f) { return f.rule == "unbounded-shm-mount"; }
bool about_mode(const Finding &f) { return f.rule == "world-writable-segment"; }

} // namespace

std::string audit_finding_text(const Finding &f) {
  std::string out;
  std::string sev(severity_name(f.severity));
  for (char &c : sev)
    c = static_cast<char>(c - 'a' + 'A');
  sev.resize(7, ' ');
  out += sev + f.rule + "  " + container_text(f.container) + (f.watched ? "  [watch]" : "") + "\n";
  out += "    " + escape_text(f.summary) + "\n";
  const Evidence &e = f.evidence;
  if (!e.processes.empty()) {
    std::string v;
    for (const AuditProcess &p : e.processes) {
      if (!v.empty())
        v += ", ";
      v += std::to_string(p.pid) + " " + escape_text(p.comm);
      if (p.container != f.container)
        v += " [" + container_text(p.container) + "]";
    }
    line(out, "processes", v);
  }
  for (const std::string &p : e.paths)
    line(out, "path", escape_text(p));
  if (!e.shmids.empty()) {
    std::string v;
    for (int32_t id : e.shmids)
      v += (v.empty() ? "" : ", ") + std::to_string(id);
    line(out, "shmids", v);
  }
  const size_t listed = e.paths.size() + e.shmids.size();
  if (e.segments > listed)
    line(out, "more", std::to_string(e.segments - listed) + " not listed");
  if (!e.mountpoint.empty()) {
    std::string v = escape_text(e.mountpoint) + " (dev " + dev_string(e.dev);
    if (!e.mount_options.empty())
      v += ", " + escape_text(e.mount_options);
    line(out, "mount", v + ")");
  } else if (e.dev != 0) {
    line(out, "file", "dev " + dev_string(e.dev) + " ino " + std::to_string(e.ino));
  }
  if (about_mode(f))
    line(out, "mode", octal(e.mode));
  if (about_limits(f)) {
    line(out, "size limit", limit_text(e.size_limit));
    line(out, "memory limit", limit_text(e.memory_limit));
  }
  if (e.mntns != 0)
    line(out, "mount namespace", std::to_string(e.mntns));
  if (e.ipcns != 0)
    line(out, "ipc namespace", std::to_string(e.ipcns));
  if (!e.others.empty()) {
    std::string v;
    for (const ContainerRef &c : e.others)
      v += (v.empty() ? "" : ", ") + container_text(c);
    line(out, "with", v);
  }
  out += '\n';
  return out;
}

std::string audit_counts_text(const std::vector<Finding> &findings) {
  std::array<size_t, 3> n{};
  for (const Finding &f : findings)
    ++n[static_cast<size_t>(f.severity)];
  if (findings.empty())
    return "no findings\n";
  return std::to_string(findings.size()) + (findings.size() == 1 ? " finding: " : " findings: ") +
         std::to_string(n[2]) + " high, " + std::to_string(n[1]) + " medium, " +
         std::to_string(n[0]) + " low\n";
}

std::string audit_text(const std::vector<Finding> &findings) {
  std::string out;
  for (const Finding &f : findings)
    out += audit_finding_text(f);
  return out + audit_counts_text(findings);
}

std::string audit_json(const std::vector<Finding> &findings, std::optional<double> watch_seconds) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().key("findings").begin_array();
  std::array<size_t, 3> n{};
  for (const Finding &f : findings) {
    ++n[static_cast<size_t>(f.severity)];
    const Evidence &e = f.evidence;
    w.begin_object()
        .str("rule", f.rule)
        .str("severity", severity_name(f.severity))
        .str("summary", f.summary)
        .str("source", f.watched ? "watch" : "snapshot");
    w.key("container");
    write_container(w, f.container ? *f.container : ContainerRef{});
    w.key("evidence").begin_object();
    if (!e.processes.empty()) {
      w.key("processes").begin_array();
      for (const AuditProcess &p : e.processes) {
        w.begin_object().num("pid", p.pid).str("comm", p.comm).key("container");
        write_container(w, p.container ? *p.container : ContainerRef{});
        w.end_object();
      }
      w.end_array();
    }
    if (!e.paths.empty()) {
      w.key("paths").begin_array();
      for (const std::string &p : e.paths)
        w.str(p);
      w.end_array();
    }
    if (!e.shmids.empty()) {
      w.key("shmids").begin_array();
      for (int32_t id : e.shmids)
        w.num(id);
      w.end_array();
    }
    if (e.segments != 0)
      w.num("segments", e.segments);
    if (!e.mountpoint.empty())
      w.str("mountpoint", e.mountpoint);
    if (!e.mount_options.empty())
      w.str("mount_options", e.mount_options);
    if (e.dev != 0)
      w.str("dev", dev_string(e.dev));
    if (e.ino != 0)
      w.num("ino", e.ino);
    if (about_mode(f))
      w.str("mode", octal(e.mode));
    if (e.mntns != 0)
      w.num("mntns", e.mntns);
    if (e.ipcns != 0)
      w.num("ipcns", e.ipcns);
    if (about_limits(f)) {
      w.key("size_limit");
      e.size_limit ? w.num(*e.size_limit) : w.null();
      w.key("memory_limit");
      e.memory_limit ? w.num(*e.memory_limit) : w.null();
    }
    if (!e.others.empty()) {
      w.key("containers").begin_array();
      for (const ContainerRef &c : e.others)
        write_container(w, c);
      w.end_array();
    }
    w.end_object().end_object();
  }
  w.end_array();
  w.key("counts")
      .begin_object()
      .num("high", n[2])
      .num("medium", n[1])
      .num("low", n[0])
      .end_object();
  w.key("watch_seconds");
  watch_seconds ? w.real(*watch_seconds) : w.null();
  w.end_object();
  out += '\n';
  return out;
}

} // namespace shmbpf
