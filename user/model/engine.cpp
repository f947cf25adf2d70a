// The engine's own bookkeeping, under the event and scan rules: segments
// inserted and erased with their per-filesystem totals, holds kept in step
// on both sides (segment and process), and segments collected when nothing
// keeps them.
#include "model/engine.hpp"

#include <algorithm>

namespace shmbpf {

Engine::Engine(EngineConfig config)
    : config_(std::move(config)), mounts_(config_.growth_window_ns, config_.max_samples) {
  last_ts_ = config_.start_ns;
  if (config_.expected_segments)
    segs_.reserve(config_.expected_segments);
}

// --- internal bookkeeping ----------------------------------------------------

Engine::SegIt Engine::insert_segment(const SegmentKey &key, Kind kind) {
  auto it = segs_.insert(key, kind);
  if (!key.is_sysv())
    mounts_.add_segment(key.dev_or_ipcns);
  return it;
}

void Engine::erase_segment(SegIt it) {
  const SegmentKey key = it->first;
  const Segment &s = it->second;
  if (!key.is_sysv())
    mounts_.remove_segment(key.dev_or_ipcns, s.bytes);
  for (uint32_t pid : s.holders)
    procs_.forget_hold(pid, key);
  segs_.erase(it);
  ++stats_.gone;
}

void Engine::set_bytes(SegIt it, uint64_t bytes) {
  Segment &s = it->second;
  if (!it->first.is_sysv())
    mounts_.change_bytes(it->first.dev_or_ipcns, s.bytes, bytes);
  s.bytes = bytes;
}

void Engine::set_creator_comm(Segment &s, std::string_view comm) {
  s.creator_comm.fill('\0');
  std::copy_n(comm.begin(), std::min(comm.size(), s.creator_comm.size() - 1),
              s.creator_comm.begin());
}

void Engine::set_creator(Segment &s, uint32_t pid, const Process &p) {
  s.creator_pid = pid;
  s.creator_uid = p.uid;
  s.creator_cgroup = p.cgroup_id;
  s.creator_serial = p.serial;
  set_creator_comm(s, p.comm);
}

void Engine::hold(SegIt it, uint32_t pid, Process &p, ExecHint hint) {
  if (it->second.holders.insert(pid)) {
    p.held.push_back({it->first, hint != ExecHint::cloexec});
    return;
  }
  if (hint != ExecHint::survives)
    return;
  // Already a holder: a new fd without O_CLOEXEC keeps it past exec. Recent
  // holds are at the back.
  for (size_t i = p.held.size(); i-- > 0;) {
    if (p.held[i].key == it->first) {
      p.held[i].keep_on_exec = true;
      return;
    }
  }
}

void Engine::unhold(SegIt it, uint32_t pid) {
  if (it->second.holders.erase(pid))
    procs_.forget_hold(pid, it->first);
}

void Engine::release(uint32_t pid, Process &p, bool exec_only, uint64_t ts) {
  std::vector<SegmentKey> touched;
  size_t kept = 0;
  for (const Held &h : p.held) {
    // Mappings, and so SysV attachments, never survive exec; fds do unless
    // they were opened close-on-exec.
    if (exec_only && h.keep_on_exec && !h.key.is_sysv()) {
      p.held[kept++] = h;
      continue;
    }
    auto it = segs_.find(h.key);
    if (it == segs_.end())
      continue;
    Segment &s = it->second;
    s.holders.erase(pid);
    if (h.key.is_sysv()) {
      // Attachments seen through shmat, or at least one if the hold came
      // from a maps scan.
      auto n = std::count_if(p.attachments.begin(), p.attachments.end(),
                             [&](const Attachment &a) { return a.key == h.key; });
      s.nattch = static_cast<uint32_t>(sat_sub(s.nattch, std::max<uint64_t>(n, 1)));
    }
    s.changed_ns = std::max(s.changed_ns, ts);
    touched.push_back(h.key);
  }
  p.held.resize(kept);
  p.attachments.clear();
  for (const SegmentKey &key : touched)
    if (auto it = segs_.find(key); it != segs_.end())
      collect_if_unused(it);
}

bool Engine::collect_if_unused(SegIt it) {
  const Segment &s = it->second;
  if (s.state != SegmentState::unlinked)
    return false;
  if (it->first.is_sysv() ? s.nattch != 0 : !s.holders.empty())
    return false;
  erase_segment(it);
  return true;
}

Engine::SegIt Engine::find_linked_by_name(const Event &e) {
  if (e.ino != 0) {
    auto it = segs_.find(SegmentKey::file(e.dev, e.ino));
    // The (dev, ino) of an unlink is a hint: trust it only if the path agrees.
    if (it != segs_.end() && it->second.state == SegmentState::linked &&
        (e.full_path.empty() || !(it->second.flags & kPathFull) || segs_.has_name(it, e.full_path)))
      return it;
  }
  if (e.full_path.empty())
    return segs_.end();
  return segs_.find_by_name(e.full_path, e.dev);
}

void Engine::drop_name(SegIt it, std::string_view path) {
  // With bytes left, the kernel's frees (or a reconcile) finish the job.
  if (segs_.drop_name(it, path) && it->second.holders.empty() && it->second.bytes == 0)
    erase_segment(it);
}

} // namespace shmbpf
