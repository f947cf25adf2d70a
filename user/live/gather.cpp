#include "live/gather.hpp"

#include "facts/dev.hpp"
#include "live/container_names.hpp"
#include "sources/clock.hpp"
#include "sources/mountinfo.hpp"
#include "sources/proc_scan.hpp"
#include "sources/superblocks.hpp"
#include "sources/tmpfs_scan.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>

namespace shmbpf {

namespace {

void run(CgroupGather &) {}

void run(RescanGather &g) {
  g.scan_start_s = realtime_s();
  g.scan = scan_system();
}

// The files each process holds now, by fd or mapping; not alive when it
// has exited (its exit event is on the way).
void run(HoldersGather &g) {
  for (HolderJob &j : g.holders) {
    if (::kill(static_cast<pid_t>(j.pid), 0) != 0 && errno == ESRCH) {
      j.alive = false;
      continue;
    }
    for (const HeldFile &h : scan_holdings(j.pid))
      if (h.kind != HeldKind::sysv)
        j.files.push_back(SegmentKey::file(h.dev, h.ino));
  }
}

} // namespace

void run_stat(StatJob &j) {
  // The path is the one its process saw: a container's /dev/shm is
  // reached through that process's root while it lives.
  struct stat st {};
  auto same = [&](const std::string &p) {
    return ::stat(p.c_str(), &st) == 0 && st.st_ino == j.key.ino_or_shmid &&
           kernel_dev(st.st_dev) == j.key.dev_or_ipcns;
  };
  if (same(j.path) || same("/proc/" + std::to_string(j.pid) + "/root" + j.path) ||
      (j.other_pid != 0 && j.other_pid != j.pid &&
       same("/proc/" + std::to_string(j.other_pid) + "/root" + j.path))) {
    j.found = true;
    j.size = static_cast<uint64_t>(st.st_size);
    j.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  }
}

namespace {

void run(SampleGather &g) {
  for (StatJob &j : g.stats)
    run_stat(j);
  run(g.holders);
  if (!g.walk_namespaces) {
    auto again = refresh_mount_namespaces(std::move(g.namespaces));
    g.walk_namespaces = !again;
    if (again)
      g.namespaces = std::move(*again);
  }
  if (g.walk_namespaces)
    g.namespaces = scan_mount_namespaces();
  g.mount_usage = scan_mount_usage(g.namespaces);
  std::vector<uint32_t> mounted;
  for (const MountNamespace &ns : g.namespaces)
    for (const MountInfo &m : ns.mounts)
      if (m.is_tmpfs())
        mounted.push_back(m.dev);
  g.ended_devs = ended_filesystems(g.file_devs, mounted, g.walk_namespaces);
  if (!g.memory.empty()) {
    const std::vector<MountInfo> own = read_mountinfo(0);
    for (MemoryJob &j : g.memory)
      ContainerMemory::run(j, own);
  }
}

void run(CgroupLookup &c) {
  if (!c.ids.empty())
    c.paths = find_cgroup_paths(c.ids);
  for (const auto &[id, path] : c.paths)
    if (auto container = container_from_cgroup_path(path))
      c.to_name.push_back(std::move(*container));
  c.names = read_container_names(c.roots, c.to_name);
}

} // namespace

void run_gather(Gather &g) {
  const auto cpu0 = thread_cpu() + scan_helper_cpu();
  if (g.before)
    g.before();
  std::visit([](auto &request) { run(request); }, g.request);
  run(g.cgroups);
  g.cpu = thread_cpu() + scan_helper_cpu() - cpu0;
}

} // namespace shmbpf
