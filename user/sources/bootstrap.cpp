#include "sources/bootstrap.hpp"

#include "sources/proc_scan.hpp"
#include "sources/tmpfs_scan.hpp"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <string>
#include <unordered_set>

namespace shmbpf {

namespace {

// cgroup v2 id of a cgroup path: the inode of its directory.
uint64_t cgroup_id_of(const std::string &cgroup2_root, const std::string &path) {
  struct stat st {};
  std::string dir = cgroup2_root + (path == "/" ? "" : path);
  return stat(dir.c_str(), &st) == 0 ? st.st_ino : 0;
}

} // namespace

BootstrapStats bootstrap(Engine &engine, const std::vector<MountNamespace> &namespaces) {
  BootstrapStats stats;

  // Mounts and their files; each filesystem is scanned once.
  std::unordered_set<std::string> scanned;
  for (const auto &ns : namespaces) {
    std::string root = "/proc/" + std::to_string(ns.pid) + "/root";
    for (const auto &m : ns.mounts) {
      if (!m.is_tmpfs())
        continue;
      std::string dir = root + m.mountpoint;
      MountState st{m.mnt_id, ns.mntns, m.mountpoint, m.dev, m.size_limit().value_or(0), 0};
      struct statfs sfs {};
      if (statfs(dir.c_str(), &sfs) == 0)
        st.used_bytes = static_cast<uint64_t>(sfs.f_blocks - sfs.f_bfree) * sfs.f_bsize;
      engine.set_mount(st);
      if (!scanned.insert(std::to_string(m.dev) + ":" + m.root).second)
        continue;
      for (auto &f : scan_tmpfs_mount(dir)) {
        // Paths as the namespace's processes see them, not through /proc.
        if (f.path.starts_with(root))
          f.path.erase(0, root.size());
        engine.add_existing_file(f, m.mnt_id, m.mountpoint);
        stats.files++;
      }
    }
  }

  // Processes, their cgroups, and what they hold.
  std::string cgroup2;
  if (!namespaces.empty())
    cgroup2 = find_cgroup2_mount(namespaces.front().mounts).value_or("");
  // System V segments of our own IPC namespace, before the holders: the
  // attached segments show up in the processes' maps.
  uint32_t my_ipcns = 0;
  if (auto self = read_process(static_cast<uint32_t>(getpid())))
    my_ipcns = self->ipcns;
  for (const auto &s : read_sysvipc_shm()) {
    engine.add_sysv(my_ipcns, s.shmid, s.key, s.size, s.rss_bytes, s.cpid, s.nattch);
    stats.sysv++;
  }

  for (uint32_t pid : list_pids()) {
    auto id = read_process(pid);
    if (!id)
      continue;
    uint64_t cg = cgroup2.empty() ? 0 : cgroup_id_of(cgroup2, id->cgroup_path);
    if (cg)
      engine.set_cgroup_path(cg, id->cgroup_path);
    engine.add_process(pid, id->ppid, id->uid, id->comm, cg, id->mntns);
    stats.processes++;
    for (const auto &h : scan_holdings(pid)) {
      bool sysv = h.path.starts_with("/SYSV");
      SegmentKey key = sysv ? SegmentKey::sysv(id->ipcns, static_cast<int32_t>(h.ino))
                            : SegmentKey::file(h.dev, h.ino);
      if (!engine.add_holder(pid, key) && !sysv) {
        // Unlinked but held (PyTorch's file_descriptor strategy, memfds):
        // no directory lists it, only its holders do.
        TmpfsFile f;
        f.dev = h.dev;
        f.ino = h.ino;
        f.path = h.path.starts_with("/memfd:") ? h.path.substr(1) : h.path;
        f.leaf = f.path.substr(f.path.rfind('/') + 1);
        f.nlink = 0;
        engine.add_existing_file(f, 0, "");
        engine.add_holder(pid, key);
      }
      stats.holdings++;
    }
  }

  return stats;
}

} // namespace shmbpf
