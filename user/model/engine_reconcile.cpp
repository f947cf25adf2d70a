// Scans applied to the engine: files, holders, processes, SysV segments and
// mounts that exist, and the reconcile_* rules that converge to them.
#include "model/engine.hpp"

#include <algorithm>
#include <span>
#include <unordered_set>

namespace shmbpf {

bool Engine::set_file_usage(SegmentKey key, uint64_t size, uint64_t bytes, uint64_t now_ns) {
  auto it = segs_.find(key);
  if (it == segs_.end() || key.is_sysv())
    return false;
  if (it->second.size != size || it->second.bytes != bytes)
    it->second.changed_ns = now_ns;
  it->second.size = size;
  set_bytes(it, bytes);
  return true;
}

void Engine::add_existing_file(const TmpfsFile &f, uint32_t mnt_id_or_0, std::string mountpoint) {
  mounts_.name(mnt_id_or_0, f.dev, std::move(mountpoint));
  const SegmentKey key = SegmentKey::file(f.dev, f.ino);
  auto it = segs_.find(key);
  if (it == segs_.end()) {
    it = insert_segment(key, f.memfd ? Kind::memfd : Kind::tmpfs);
    Segment &s = it->second;
    s.flags |= kExistedBefore;
    s.creator_uid = f.uid; // the owner: the best guess at who created it
    s.born = f.mtime_s;
    s.changed_ns = last_ts_;
    segs_.set_path(it, f.path, f.path.starts_with('/'));
    segs_.set_state(it, f.nlink == 0 ? SegmentState::unlinked : SegmentState::linked);
    if (f.nlink > 0)
      s.nlink = f.nlink;
  } else if (!(it->second.flags & kPathFull) && !f.path.empty()) {
    segs_.set_path(it, f.path, f.path.starts_with('/'));
  } else if (f.path.starts_with('/') && it->second.state == SegmentState::linked && f.nlink > 0) {
    // The same inode under another path: a hard link, one segment.
    it->second.nlink = f.nlink;
    segs_.add_other_name(it, f.path);
  }
  Segment &s = it->second;
  if (!s.mnt_id)
    s.mnt_id = mnt_id_or_0;
  s.size = f.size;
  set_bytes(it, f.bytes);
}

bool Engine::add_holder(uint32_t pid, SegmentKey key) {
  auto it = segs_.find(key);
  if (it == segs_.end())
    return false;
  Process &p = process_entry(pid);
  hold(it, pid, p, ExecHint::unknown);
  if (key.is_sysv())
    it->second.nattch = std::max(it->second.nattch, it->second.holders.size());
  return true;
}

bool Engine::set_holders(SegmentKey key, std::vector<uint32_t> pids) {
  auto it = segs_.find(key);
  if (it == segs_.end())
    return false;
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  std::vector<uint32_t> gone_holders;
  for (uint32_t pid : it->second.holders)
    if (!std::binary_search(pids.begin(), pids.end(), pid))
      gone_holders.push_back(pid);
  for (uint32_t pid : gone_holders)
    unhold(it, pid);
  for (uint32_t pid : pids)
    hold(it, pid, process_entry(pid), ExecHint::unknown);
  if (key.is_sysv())
    it->second.nattch = std::max(it->second.nattch, it->second.holders.size());
  collect_if_unused(it);
  return true;
}

void Engine::add_process(uint32_t pid, uint32_t ppid, uint32_t uid, std::string comm,
                         uint64_t cgroup_id, uint32_t mntns, uint32_t ipcns) {
  Process &p = process_entry(pid);
  p.ppid = ppid;
  p.uid = uid;
  p.comm = std::move(comm);
  p.cgroup_id = cgroup_id;
  p.mntns = mntns;
  if (ipcns)
    p.ipcns = ipcns;
}

void Engine::add_sysv(uint32_t ipcns, const SysvEntry &entry) {
  upsert_sysv(ipcns, entry, last_ts_);
}

void Engine::upsert_sysv(uint32_t ipcns, const SysvEntry &t, uint64_t now_ns) {
  if (t.shmid < 0)
    return;
  const SegmentKey key = SegmentKey::sysv(ipcns, t.shmid);
  auto it = segs_.find(key);
  if (it == segs_.end()) {
    it = insert_segment(key, Kind::sysv);
    it->second.flags |= kExistedBefore;
    // Aged from its shm_ctime (creation, or the last IPC_SET), as a
    // pre-existing file is from its mtime.
    it->second.born = t.ctime_s;
  }
  Segment &s = it->second;
  if (s.creator_pid == 0 && t.cpid != 0) {
    // Scans may list segments before their creator's process: match any
    // incarnation of cpid (serial 0) rather than guess it exited.
    if (auto pit = procs_.find(t.cpid); pit != procs_.end())
      set_creator(s, t.cpid, pit->second);
    s.creator_pid = t.cpid;
    s.creator_serial = 0;
  }
  s.sysv_key = t.key;
  s.size = t.size;
  s.bytes = t.rss_bytes;
  s.nattch = t.nattch;
  s.changed_ns = now_ns;
  if (t.nattch == 0) {
    // Nobody is attached, whatever our shmat/exit bookkeeping says.
    std::vector<uint32_t> stale(s.holders.begin(), s.holders.end());
    for (uint32_t pid : stale)
      unhold(it, pid);
  }
  if (t.removed)
    segs_.set_state(it, SegmentState::unlinked);
  collect_if_unused(it);
}

void Engine::set_cgroup_path(uint64_t cgroup_id, std::string path) {
  containers_.set_cgroup_path(cgroup_id, std::move(path));
}

void Engine::set_container_name(const std::string &id, const ContainerName &name) {
  containers_.set_container_name(id, name);
}

void Engine::set_mount(MountState m) { mounts_.set(std::move(m)); }

size_t Engine::reconcile_mounts(std::vector<MountState> mounts, uint64_t seen_ns) {
  size_t ended = 0;
  for (const MountState &m : mounts) {
    if (!mounts_.changed_filesystem(m))
      continue;
    // Another filesystem now: the last one's files are not its.
    if (seen_ns)
      ended += forget_filesystem(m.dev, seen_ns);
    mounts_.refile(m.dev, m.fsid);
  }
  mounts_.keep_only(mounts);
  for (MountState &m : mounts)
    mounts_.set(std::move(m));
  return ended;
}

std::vector<uint32_t> Engine::file_devs() const { return mounts_.file_devs(); }

size_t Engine::forget_filesystem(uint32_t dev, uint64_t since_ns) {
  std::vector<SegmentKey> ended;
  for (const auto &[key, s] : segs_)
    if (!key.is_sysv() && key.dev_or_ipcns == dev && s.kind == Kind::tmpfs && s.holders.empty() &&
        s.changed_ns < since_ns)
      ended.push_back(key);
  for (const SegmentKey &key : ended)
    erase_segment(segs_.find(key));
  mounts_.forget_if_empty(dev);
  return ended.size();
}

void Engine::sample_mounts(uint64_t now_ns) { mounts_.sample(now_ns); }

void Engine::reconcile_inode(std::span<const TmpfsFile *const> names, uint64_t now_ns) {
  const TmpfsFile &f = *names.front();
  auto it = segs_.find(SegmentKey::file(f.dev, f.ino));
  if (it == segs_.end()) {
    for (const TmpfsFile *name : names)
      add_existing_file(*name, 0, {});
    segs_.find(SegmentKey::file(f.dev, f.ino))->second.changed_ns = now_ns;
    return;
  }
  Segment &s = it->second;
  // The name shown stays while the file has it; else the first one found.
  const TmpfsFile *shown = &f;
  if (names.size() > 1)
    for (const TmpfsFile *name : names)
      if ((s.flags & kPathFull) && s.path == name->path)
        shown = name;
  bool changed = false;
  if (!(s.path == shown->path) || !(s.flags & kPathFull)) {
    segs_.set_path(it, shown->path, shown->path.starts_with('/')); // a rename we missed
    changed = true;
  }
  if (s.state != SegmentState::linked) {
    segs_.set_state(it, SegmentState::linked);
    changed = true;
  }
  const uint32_t nlink = std::max<uint32_t>(f.nlink, static_cast<uint32_t>(names.size()));
  if (s.nlink != nlink) {
    s.nlink = nlink; // links made or removed unseen
    changed = true;
  }
  std::vector<std::string> others;
  for (const TmpfsFile *name : names)
    if (name != shown && name->path.starts_with('/'))
      others.push_back(name->path);
  segs_.set_other_names(it, std::move(others));
  if (s.size != f.size || s.bytes != f.bytes) {
    s.size = f.size;
    set_bytes(it, f.bytes);
    changed = true;
  }
  if (changed)
    s.changed_ns = now_ns;
}

void Engine::reconcile_tmpfs(uint32_t dev, const std::vector<TmpfsFile> &truth, uint64_t now_ns) {
  std::vector<uint64_t> present; // inodes, sorted
  present.reserve(truth.size());
  for (const TmpfsFile &f : truth)
    if (f.dev == dev)
      present.push_back(f.ino);
  std::sort(present.begin(), present.end());
  // A file with hard links is listed once per name, and is one segment with
  // every name: those few are gathered first, in scan order.
  std::vector<uint64_t> linked_more;
  for (size_t i = 1; i < present.size(); ++i)
    if (present[i] == present[i - 1] && (linked_more.empty() || linked_more.back() != present[i]))
      linked_more.push_back(present[i]);
  std::vector<std::vector<const TmpfsFile *>> names(linked_more.size());
  for (const TmpfsFile &f : truth) {
    if (f.dev != dev)
      continue;
    if (!linked_more.empty()) {
      auto more = std::lower_bound(linked_more.begin(), linked_more.end(), f.ino);
      if (more != linked_more.end() && *more == f.ino) {
        names[more - linked_more.begin()].push_back(&f);
        continue;
      }
    }
    const TmpfsFile *one = &f;
    reconcile_inode({&one, 1}, now_ns);
  }
  for (const auto &inode : names)
    reconcile_inode(inode, now_ns);

  std::vector<SegmentKey> vanished;
  for (const auto &[key, s] : segs_)
    if (!key.is_sysv() && key.dev_or_ipcns == dev && s.kind == Kind::tmpfs &&
        !std::binary_search(present.begin(), present.end(), key.ino_or_shmid))
      vanished.push_back(key);
  for (const SegmentKey &key : vanished) {
    auto it = segs_.find(key);
    if (it->second.holders.empty()) {
      erase_segment(it); // an unlinked file nobody holds cannot exist either
    } else if (it->second.state == SegmentState::linked) {
      segs_.set_state(it, SegmentState::unlinked);
      it->second.changed_ns = now_ns;
    }
  }
}

void Engine::reconcile_sysv(uint32_t ipcns, const std::vector<SysvEntry> &truth, uint64_t now_ns) {
  now_ns = now_or_last(now_ns);
  std::unordered_set<uint64_t> present;
  present.reserve(truth.size());
  for (const SysvEntry &t : truth) {
    if (t.shmid < 0)
      continue;
    present.insert(SegmentKey::sysv(ipcns, t.shmid).ino_or_shmid);
    upsert_sysv(ipcns, t, now_ns);
  }
  std::vector<SegmentKey> vanished;
  for (const auto &[key, s] : segs_)
    if (key.is_sysv() && key.dev_or_ipcns == ipcns && !present.count(key.ino_or_shmid))
      vanished.push_back(key);
  for (const SegmentKey &key : vanished)
    erase_segment(segs_.find(key));
}

void Engine::reconcile_processes(const std::vector<uint32_t> &live_pids) {
  std::unordered_set<uint32_t> live(live_pids.begin(), live_pids.end());
  std::vector<uint32_t> dead;
  for (const auto &[pid, p] : procs_)
    if (!live.count(pid))
      dead.push_back(pid);
  for (uint32_t pid : dead) {
    auto pit = procs_.find(pid);
    release(pid, pit->second, false, last_ts_);
    procs_.erase(pit);
  }
}

void Engine::reconcile_holders(const std::vector<std::pair<uint32_t, SegmentKey>> &holdings) {
  // The truth by slot, sorted: segments are numbered densely, and a hash
  // map of a list per segment was most of a rescan's engine time.
  std::vector<std::pair<uint32_t, uint32_t>> truth; // (slot, pid)
  truth.reserve(holdings.size());
  for (const auto &[pid, key] : holdings)
    if (auto it = segs_.find(key); it != segs_.end())
      truth.emplace_back(it.index(), pid);
  std::sort(truth.begin(), truth.end());
  // One walk of the segments, in slot order as the truth is. set_holders
  // may destroy a segment (unlinked, last holder gone): the keys are taken
  // first.
  std::vector<std::pair<SegmentKey, std::vector<uint32_t>>> todo;
  size_t t = 0;
  for (auto it = segs_.begin(); it != segs_.end(); ++it) {
    const auto &[key, s] = *it;
    std::vector<uint32_t> pids;
    for (; t < truth.size() && truth[t].first == it.index(); ++t)
      pids.push_back(truth[t].second);
    if (!s.holders.empty() || !pids.empty())
      todo.emplace_back(key, std::move(pids));
  }
  for (auto &[key, pids] : todo)
    set_holders(key, std::move(pids));
}

bool Engine::reconcile_process_files(uint32_t pid, std::vector<SegmentKey> files) {
  auto pit = procs_.find(pid);
  if (pit == procs_.end())
    return false;
  Process &p = pit->second;
  std::unordered_set<SegmentKey, SegmentKeyHash> truth(files.begin(), files.end());
  // The held list is filtered in one pass: unholding the dropped files one
  // by one searches the list for each, quadratic in what a process that
  // creates files fast held since the last look (close(2) is not traced).
  std::vector<SegmentKey> dropped;
  size_t kept = 0;
  for (const Held &h : p.held) {
    if (!h.key.is_sysv() && !truth.count(h.key))
      dropped.push_back(h.key);
    else
      p.held[kept++] = h;
  }
  p.held.resize(kept);
  if (!dropped.empty() && !p.attachments.empty()) {
    std::unordered_set<SegmentKey, SegmentKeyHash> gone(dropped.begin(), dropped.end());
    std::erase_if(p.attachments, [&](const Attachment &a) { return gone.count(a.key) != 0; });
  }
  for (const SegmentKey &key : dropped)
    if (auto it = segs_.find(key); it != segs_.end()) {
      it->second.holders.erase(pid);
      collect_if_unused(it);
    }
  for (const SegmentKey &key : truth)
    if (auto it = segs_.find(key); it != segs_.end() && !key.is_sysv())
      hold(it, pid, p, ExecHint::unknown);
  return true;
}

} // namespace shmbpf
