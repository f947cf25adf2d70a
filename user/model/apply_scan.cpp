#include "model/apply_scan.hpp"

#include "model/state.hpp"

namespace shmbpf {

namespace {

SegmentKey key_of(const ScannedProcess &p, const HeldFile &h) {
  if (h.kind == HeldKind::sysv)
    return SegmentKey::sysv(p.id.ipcns, static_cast<int32_t>(h.ino));
  return SegmentKey::file(h.dev, h.ino);
}

// An unlinked file that only its holders know (PyTorch's file_descriptor
// strategy, memfds): no directory lists it.
TmpfsFile held_file(const HeldFile &h) {
  TmpfsFile f;
  f.dev = h.dev;
  f.ino = h.ino;
  f.memfd = h.kind == HeldKind::memfd;
  f.path = f.memfd ? h.path.substr(1) : h.path; // "memfd:<name>", as events name it
  f.leaf = f.path.substr(f.path.rfind('/') + 1);
  f.nlink = h.deleted ? 0 : 1;
  f.size = h.size;
  f.bytes = h.bytes;
  f.uid = h.uid;
  f.mtime_s = h.mtime_s;
  return f;
}

} // namespace

std::vector<ScanGap> scan_gaps(const std::vector<ScannedFs> &filesystems) {
  std::vector<ScanGap> out;
  for (const ScannedFs &fs : filesystems)
    if (fs.shortfall.any())
      out.push_back({fs.dev, fs.mountpoint, fs.shortfall});
  return out;
}

BootstrapStats bootstrap(Engine &engine, const SystemScan &scan) {
  BootstrapStats stats;
  engine.set_scan_gaps(scan_gaps(scan.filesystems));
  for (const auto &fs : scan.filesystems) {
    for (const auto &f : fs.files)
      engine.add_existing_file(f, fs.mnt_id, fs.mountpoint);
    stats.files += fs.files.size();
  }
  for (const auto &[id, path] : scan.cgroups)
    engine.set_cgroup_path(id, path);
  // Processes before SysV segments, which name their creator's pid; SysV
  // before the holders, since attached segments show up in the maps.
  for (const auto &p : scan.processes) {
    engine.add_process(p.id.pid, p.id.ppid, p.id.uid, p.id.comm, p.cgroup_id, p.id.mntns,
                       p.id.ipcns);
    stats.processes++;
  }
  for (const auto &ipc : scan.ipc) {
    for (const auto &s : ipc.segments)
      engine.add_sysv(ipc.ipcns, s);
    stats.sysv += ipc.segments.size();
  }
  for (const auto &p : scan.processes) {
    for (const auto &h : p.holdings) {
      SegmentKey key = key_of(p, h);
      if (!engine.add_holder(p.id.pid, key) && !key.is_sysv()) {
        engine.add_existing_file(held_file(h), 0, "");
        engine.add_holder(p.id.pid, key);
      }
      stats.holdings++;
    }
  }
  // Mounts last: their statfs usage already counts every file added above,
  // and the engine moves it only by what changes from here on.
  for (const auto &m : scan.mounts)
    engine.set_mount(m);
  return stats;
}

void reconcile(Engine &engine, const SystemScan &scan, uint64_t now_ns) {
  engine.set_scan_gaps(scan_gaps(scan.filesystems));
  for (const auto &[id, path] : scan.cgroups)
    engine.set_cgroup_path(id, path);
  std::vector<uint32_t> pids;
  pids.reserve(scan.processes.size());
  for (const auto &p : scan.processes) {
    engine.add_process(p.id.pid, p.id.ppid, p.id.uid, p.id.comm, p.cgroup_id, p.id.mntns,
                       p.id.ipcns);
    pids.push_back(p.id.pid);
  }
  engine.reconcile_processes(pids);
  // Births (what a restart matches segments by) of the segments whose
  // creation was seen: the engine keeps only those.
  for (const auto &fs : scan.filesystems) {
    engine.reconcile_tmpfs(fs.dev, fs.files, now_ns);
    for (const TmpfsFile &f : fs.files)
      engine.note_birth(SegmentKey::file(f.dev, f.ino), file_birth(f));
  }
  for (const auto &ipc : scan.ipc) {
    engine.reconcile_sysv(ipc.ipcns, ipc.segments, now_ns);
    for (const SysvEntry &e : ipc.segments)
      if (e.ctime_s > 0)
        engine.note_birth(SegmentKey::sysv(ipc.ipcns, e.shmid),
                          {Engine::Birth::Kind::time, static_cast<uint64_t>(e.ctime_s)});
  }

  // Holders last, so that unlinked-but-held files survive the tmpfs
  // reconcile only when someone really holds them.
  std::vector<std::pair<uint32_t, SegmentKey>> holdings;
  for (const auto &p : scan.processes) {
    for (const auto &h : p.holdings) {
      SegmentKey key = key_of(p, h);
      if (!key.is_sysv() && !engine.contains(key))
        engine.add_existing_file(held_file(h), 0, "");
      holdings.emplace_back(p.id.pid, key);
    }
  }
  engine.reconcile_holders(holdings);
  // Last, for the same reason as in bootstrap().
  engine.reconcile_mounts(scan.mounts);
}

} // namespace shmbpf
