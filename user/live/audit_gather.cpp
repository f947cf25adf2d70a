#include "live/audit_gather.hpp"

#include "live/container_names.hpp"
#include "model/containers.hpp"
#include "sources/cgroup.hpp"
#include "sources/exe.hpp"
#include "sources/mountinfo.hpp"
#include "sources/namespaces.hpp"
#include "sources/system_scan.hpp"

#include <unordered_map>

namespace shmbpf {

AuditScan gather_audit(const RuntimeRoots &roots) { return gather_audit(roots, scan_system()); }

AuditScan gather_audit(const RuntimeRoots &roots, SystemScan system) {
  AuditScan out;
  out.system = std::move(system);
  out.host = read_host_namespaces();

  // Each container once, with its processes: a cgroup path is recognised
  // once per process, names and limits are read once per container.
  std::vector<ContainerRef> containers;
  std::vector<std::vector<uint32_t>> members;
  std::unordered_map<std::string, size_t> index; // id -> position in containers
  out.exes.reserve(out.system.processes.size());
  for (const ScannedProcess &p : out.system.processes) {
    if (auto exe = read_exe(p.id.pid))
      out.exes.push_back(std::move(*exe));
    auto c = container_from_cgroup_path(p.id.cgroup_path);
    if (!c)
      continue;
    auto [it, added] = index.emplace(c->id, containers.size());
    if (added) {
      containers.push_back(std::move(*c));
      members.emplace_back();
    }
    members[it->second].push_back(p.id.pid);
  }

  out.names = read_container_names(roots, containers);
  // shmbpf's own mount table: the cgroup files are read through its mounts.
  const std::vector<MountInfo> mounts = read_mountinfo(0);
  for (size_t i = 0; i < containers.size(); ++i) {
    // The first process that can still be read; one that exited since the
    // scan gives its place to the next.
    for (uint32_t pid : members[i])
      if (auto limit = read_memory_limit(pid, mounts)) {
        out.memory_limits.emplace_back(containers[i].id, *limit);
        break;
      }
  }
  return out;
}

} // namespace shmbpf
