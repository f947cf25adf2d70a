#include "live/doctor.hpp"

#include "sources/runtime_discovery.hpp"

#include "facts/result.hpp"
#include "probe/probe.hpp"
#include "probe/tracefs.hpp"
#include "sources/mountinfo.hpp"
#include "sources/namespaces.hpp"
#include "sources/system_scan.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace shmbpf {
namespace {

using Verdict = DoctorCheck::Verdict;

// The oldest kernel shmbpf is tested on (tests/vm): older ones may work.
constexpr int kOldestTested[2] = {5, 10};

bool older_than_tested(const std::string &release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2)
    return false;
  return major < kOldestTested[0] || (major == kOldestTested[0] && minor < kOldestTested[1]);
}

DoctorCheck kernel_check(DoctorReport &r) {
  utsname u{};
  if (uname(&u) == 0) {
    r.release = u.release;
    r.machine = u.machine;
  }
  DoctorCheck c{"kernel", Verdict::ok, "Linux " + r.release + " (" + r.machine + ")"};
  if (older_than_tested(r.release)) {
    c.verdict = Verdict::warn;
    c.detail += "; older than 5.10, the oldest kernel shmbpf is tested on";
  }
  return c;
}

DoctorCheck btf_check() {
  const char *path = "/sys/kernel/btf/vmlinux";
  struct stat st {};
  if (stat(path, &st) != 0)
    return {"BTF", Verdict::fail,
            std::string(path) + " is missing: the kernel was built without "
                                "CONFIG_DEBUG_INFO_BTF=y, which CO-RE programs need"};
  return {"BTF", Verdict::ok,
          std::string(path) + " (" + std::to_string(st.st_size >> 10) + " KiB)"};
}

DoctorCheck privileges_check(const Privileges &p) {
  if (!p.can_load_bpf())
    return {"privileges", Verdict::fail,
            "loading BPF programs needs root (or CAP_BPF and CAP_PERFMON); run: sudo shmbpf "
            "doctor"};
  std::string detail = p.root ? "root" : "";
  auto add = [&detail](const char *name) {
    detail += (detail.empty() ? "" : ", ") + std::string(name);
  };
  if (!p.root) {
    if (p.sys_admin)
      add("CAP_SYS_ADMIN");
    if (p.bpf && p.perfmon)
      add("CAP_BPF, CAP_PERFMON");
  }
  std::string missing;
  if (!p.sys_ptrace)
    missing += " CAP_SYS_PTRACE";
  if (!p.dac_read_search)
    missing += " CAP_DAC_READ_SEARCH";
  if (missing.empty())
    return {"privileges", Verdict::ok, detail};
  return {"privileges", Verdict::warn,
          detail + "; without" + missing +
              " other users' files, fds and maps are not read: their segments may look "
              "orphaned"};
}

// Kernel lockdown in confidentiality mode forbids BPF to read kernel memory.
std::optional<DoctorCheck> lockdown_check() {
  std::ifstream in("/sys/kernel/security/lockdown");
  std::string text;
  if (!in || !std::getline(in, text))
    return std::nullopt; // no lockdown LSM, or securityfs is not mounted
  const auto open = text.find('['), close = text.find(']');
  const std::string mode =
      open != std::string::npos && close > open ? text.substr(open + 1, close - open - 1) : text;
  if (mode == "confidentiality")
    return DoctorCheck{"lockdown", Verdict::fail,
                       "confidentiality: the kernel does not let BPF programs read its memory"};
  return DoctorCheck{"lockdown", Verdict::ok, mode};
}

DoctorCheck tracefs_check() {
  const TracefsState t = find_tracefs();
  if (!t.problem.empty())
    return {"tracefs", Verdict::fail, t.problem};
  if (!t.readable)
    return {"tracefs", Verdict::ok, t.dir + " (not readable without privileges)"};
  if (t.dir.empty())
    return {"tracefs", Verdict::ok,
            "not mounted: shmbpf mounts one of its own while it attaches its programs, in a "
            "mount namespace no other process sees"};
  return {"tracefs", Verdict::ok, t.dir};
}

std::string hooks_summary(const DoctorReport &r) {
  const auto on = std::count_if(r.hooks.begin(), r.hooks.end(),
                                [](const HookStatus &h) { return !h.program.empty(); });
  std::string builds;
  for (Build b : {Build::fast, Build::compat, Build::compat_noatomic})
    if (std::any_of(r.hooks.begin(), r.hooks.end(),
                    [b](const HookStatus &h) { return !h.program.empty() && h.build == b; }))
      builds += (builds.empty() ? "" : ", ") + std::string(build_name(b));
  return std::to_string(on) + " of " + std::to_string(r.hooks.size()) + " hooks of the " +
         std::string(hook_set_name(r.hook_set)) + " set attached (build " + builds +
         "); light set " +
         (r.light_missing.empty() ? "available" : "not available: " + r.light_missing);
}

// Loads and attaches the real programs, as trace and top do, and lets them go.
DoctorCheck programs_check(DoctorReport &r, const DoctorOptions &opts) {
  ProbeOptions po;
  po.command = "doctor";
  po.verbose = opts.verbose;
  HookSetting::apply(po, opts.hooks, HookSet::full);
  if (opts.ring_buffer_bytes)
    po.ring_buffer_bytes = opts.ring_buffer_bytes;
  r.tmpfs_files = tmpfs_files_in_use();
  po.name_capacity = name_map_capacity(r.tmpfs_files);
  r.ring_buffer_bytes = po.ring_buffer_bytes;
  try {
    Probe probe(po);
    r.hooks = probe.hooks();
    r.hook_set = probe.hook_set();
    r.hook_set_note = probe.hook_set_note();
    r.light_missing = probe.light_missing();
    r.fallbacks = probe.fallbacks();
    r.name_capacity = probe.name_capacity();
  } catch (const FatalError &e) {
    return {"programs", Verdict::fail, e.what()};
  }
  const bool off = std::any_of(r.hooks.begin(), r.hooks.end(),
                               [](const HookStatus &h) { return h.program.empty(); });
  const bool lossy = std::any_of(r.fallbacks.begin(), r.fallbacks.end(),
                                 [](const Fallback &f) { return f.lossy; });
  DoctorCheck c{"programs", Verdict::ok, hooks_summary(r)};
  if (off || lossy) {
    c.verdict = Verdict::warn;
    c.detail += off ? "; some hooks are off (see below)" : "; some fallbacks report less";
  }
  return c;
}

// Where the running container runtimes keep the files that name their
// containers, and what said so.
DoctorCheck runtimes_check() {
  const std::vector<FoundRoot> found = discover_runtime_roots();
  if (found.empty())
    return {"runtimes", Verdict::ok,
            "no runtime daemon found: containers are named from the default paths "
            "(--runtime-root RUNTIME=DIR moves one)"};
  std::string detail;
  for (const FoundRoot &f : found)
    detail += (detail.empty() ? "" : "; ") + f.runtime + " " + f.dir + " (" + f.how + ")";
  return {"runtimes", Verdict::ok, detail};
}

} // namespace

DoctorReport examine_machine(const DoctorOptions &opts) {
  DoctorReport r;
  r.checks.push_back(kernel_check(r));
  r.checks.push_back(btf_check());
  r.checks.push_back(privileges_check(read_privileges()));
  if (auto lockdown = lockdown_check())
    r.checks.push_back(*lockdown);
  r.checks.push_back(tracefs_check());
  // Loading tells the rest; it is not tried when it cannot work.
  if (const DoctorCheck *f = r.failure())
    r.checks.push_back({"programs", Verdict::fail, "not loaded: " + f->name + " (above)"});
  else
    r.checks.push_back(programs_check(r, opts));

  const std::vector<MountNamespace> namespaces = scan_mount_namespaces();
  r.mount_namespaces = namespaces.size();
  r.mounts = scan_mount_usage(namespaces);
  r.checks.push_back(r.mounts.empty()
                         ? DoctorCheck{"tmpfs mounts", Verdict::warn,
                                       "none found: only memfds and System V segments to watch"}
                         : DoctorCheck{"tmpfs mounts", Verdict::ok,
                                       std::to_string(r.mounts.size()) + ", found in " +
                                           std::to_string(r.mount_namespaces) + " mount namespace" +
                                           (r.mount_namespaces == 1 ? "" : "s") + " (below)"});
  r.checks.push_back(runtimes_check());
  r.cgroup2 = find_cgroup2_mount(read_mountinfo(0));
  r.checks.push_back(r.cgroup2 ? DoctorCheck{"cgroup2", Verdict::ok, *r.cgroup2}
                               : DoctorCheck{"cgroup2", Verdict::warn,
                                             "no cgroup2 mount: a process the kernel reports "
                                             "gets its container at the next rescan"});
  return r;
}

} // namespace shmbpf
