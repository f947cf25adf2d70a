#include "live/audit_watch.hpp"

#include "live/container_names.hpp"

#include "facts/result.hpp"
#include "live/kernel_notes.hpp"
#include "live/session.hpp"
#include "live/signals.hpp"
#include "model/containers.hpp"
#include "sources/exe.hpp"
#include "sources/namespaces.hpp"
#include "sources/proc_scan.hpp"
#include "sources/system_scan.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

namespace shmbpf {

namespace {

// Which container an exec's process is in: its cgroup path (from /proc
// while it runs, else from the cgroup's id), named from the snapshot or,
// for a container started since, from its runtime's files.
class ContainerLookup {
public:
  ContainerLookup(const AuditScan &scan, const RuntimeRoots &roots) : roots_(roots) {
    for (const auto &[id, path] : scan.system.cgroups)
      paths_.emplace(id, path);
    for (const auto &[id, name] : scan.names)
      names_.emplace(id, name);
  }

  std::optional<ContainerRef> of(const Event &e) {
    std::optional<std::string> path;
    if (auto id = read_process(e.pid))
      path = id->cgroup_path;
    if (!path) {
      auto it = paths_.find(e.cgroup_id);
      if (it == paths_.end()) {
        for (auto &[id, p] : find_cgroup_paths({e.cgroup_id}))
          it = paths_.emplace(id, std::move(p)).first;
      }
      if (it != paths_.end())
        path = it->second;
    }
    if (!path)
      return std::nullopt;
    std::optional<ContainerRef> c = container_from_cgroup_path(*path);
    if (!c)
      return c;
    auto it = names_.find(c->id);
    if (it == names_.end()) {
      const ContainerRef ref = *c;
      auto named = read_container_names(roots_, {ref});
      it = names_.emplace(c->id, named.empty() ? ContainerName{} : named.front().second).first;
    }
    c->name = it->second.name;
    c->pod = it->second.pod;
    c->pod_namespace = it->second.pod_namespace;
    if (c->pod_uid.empty())
      c->pod_uid = it->second.pod_uid;
    return c;
  }

private:
  const RuntimeRoots &roots_;
  std::unordered_map<uint64_t, std::string> paths_;
  std::unordered_map<std::string, ContainerName> names_;
};

using FindingKey = std::tuple<std::string, std::string, uint32_t, uint64_t>;
FindingKey key_of(const Finding &f) {
  return {f.rule, f.container ? f.container->id : "", f.evidence.dev, f.evidence.ino};
}

} // namespace

void watch_execs(const ExecWatchOptions &opts, const AuditScan &scan,
                 const AuditSelection &selection, std::vector<Finding> &findings,
                 const std::function<void(const Finding &)> &found) {
  ProbeOptions popts;
  popts.ring_buffer_bytes = opts.ring_buffer_bytes;
  popts.verbose = opts.verbose;
  popts.command = "audit --watch";
  HookSetting::apply(popts, opts.hooks, HookSet::light);
  Session session(popts);
  install_stop_signals();
  tell_kernel_notes(session.probe(), opts.verbose);
  std::fprintf(stderr, "shmbpf: watching execs for %g s\n", opts.seconds);

  ContainerLookup containers(scan, opts.runtime_roots);
  std::unordered_map<std::string, size_t> seen;      // FindingKey as text -> index
  std::set<std::pair<uint32_t, uint32_t>> looked_up; // (mntns, dev) tables were read again for
  ExecJudge judge(scan);
  auto on_event = [&](Event &e) {
    if (e.type != EventType::exec)
      return;
    // A program on a tmpfs no table of its namespace showed: one mounted
    // since the snapshot (a new container's /dev/shm), perhaps under the
    // device number of one that ended. The tables are read again once per
    // such namespace and device.
    if (e.fs != 0 && !judge.knows_mount(e.mntns, e.dev) &&
        looked_up.insert({e.mntns, e.dev}).second)
      judge.learn_mounts(scan_mount_namespaces());
    const ExecSeen exec{AuditProcess{e.pid, e.comm, containers.of(e)},
                        judge.exe_of(e, read_exe(e.pid))};
    std::optional<Finding> f = judge.judge(exec);
    if (!f || !selection.selects(*f))
      return;
    const auto [rule, id, dev, ino] = key_of(*f);
    const std::string key = rule + "/" + id + "/" + std::to_string(dev) + "/" + std::to_string(ino);
    if (auto it = seen.find(key); it != seen.end()) {
      Evidence &ev = findings[it->second].evidence;
      if (ev.processes.size() < kEvidenceItems)
        ev.processes.push_back(exec.process);
      return;
    }
    seen.emplace(key, findings.size());
    findings.push_back(*f);
    found(*f);
  };
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::duration<double>(opts.seconds);
  while (!stop_requested() && std::chrono::steady_clock::now() < until) {
    const int n = session.poll(100, on_event);
    if (n < 0 && n != -EINTR)
      throw FatalError("reading the ring buffer", std::to_string(-n));
  }
  session.drain(on_event);
  if (const uint64_t lost = session.lost())
    std::fprintf(stderr, "shmbpf: warning: %llu events lost while watching: execs may be missing\n",
                 static_cast<unsigned long long>(lost));
}

} // namespace shmbpf
