// The engine's own bookkeeping, under the event and scan rules: segments
// inserted and erased with their per-filesystem totals, paths and states
// kept in step with the path index, holds kept in step on both sides
// (segment and process), and segments collected when nothing keeps them.
#include "model/engine.hpp"

#include <algorithm>
#include <cmath>

namespace shmbpf {
namespace {

constexpr double kRateTauS = 10.0; // decay time constant of the rates

} // namespace

Engine::Engine(EngineConfig config)
    : config_(std::move(config)), mounts_(config_.growth_window_ns, config_.max_samples) {
  last_ts_ = config_.start_ns;
  if (config_.expected_segments) {
    segs_.reserve(config_.expected_segments);
    by_path_.reserve(config_.expected_segments,
                     [this](auto &&file) { for_each_indexed_path(file); });
  }
}

// --- RateCounter -------------------------------------------------------------

void Engine::RateCounter::hit(uint64_t ts_ns) {
  if (count > 0 && ts_ns > last_ns)
    ewma *= std::exp(-static_cast<double>(ts_ns - last_ns) / 1e9 / kRateTauS);
  ewma += 1.0 / kRateTauS;
  last_ns = std::max(last_ns, ts_ns);
  ++count;
}

double Engine::RateCounter::rate(uint64_t now_ns) const {
  if (count == 0)
    return 0;
  uint64_t dt = sat_sub(now_ns, last_ns);
  return ewma * std::exp(-static_cast<double>(dt) / 1e9 / kRateTauS);
}

// --- internal bookkeeping ----------------------------------------------------

Engine::Process &Engine::process_entry(uint32_t pid) {
  auto [it, inserted] = procs_.try_emplace(pid);
  if (inserted) {
    if (++next_serial_ == 0)
      ++next_serial_; // 0 means "any incarnation"
    it->second.serial = next_serial_;
  }
  return it->second;
}

Engine::Process &Engine::touch_process(const Event &e) {
  const bool seen = procs_.contains(e.pid);
  Process &p = process_entry(e.pid);
  if (!e.comm.empty())
    p.comm = e.comm;
  p.uid = e.uid;
  p.ppid = e.ppid;
  // On a cgroup v1-only host the scan's path-made id tells the container;
  // the kernel's v2 id (the v2 root's) would hide it. A process no scan
  // has seen yet started in its parent's cgroups: it takes the parent's
  // path-made id, so that what a container's processes fork is the
  // container's before the next rescan (one that moves itself after the
  // fork, as runc does, stays where its parent was until then).
  if (!seen && e.ppid != 0) {
    if (auto parent = procs_.find(e.ppid);
        parent != procs_.end() && is_path_cgroup_id(parent->second.cgroup_id))
      p.cgroup_id = parent->second.cgroup_id;
  }
  if (e.cgroup_id && !is_path_cgroup_id(p.cgroup_id))
    p.cgroup_id = e.cgroup_id;
  if (e.mntns)
    p.mntns = e.mntns;
  if (e.ipcns)
    p.ipcns = e.ipcns;
  return p;
}

Engine::SegIt Engine::insert_segment(const SegmentKey &key, Kind kind) {
  auto it = segs_.try_emplace(key).first;
  it->second.kind = kind;
  if (!key.is_sysv())
    mounts_.add_segment(key.dev_or_ipcns);
  return it;
}

void Engine::erase_segment(SegIt it) {
  const SegmentKey key = it->first;
  Segment &s = it->second;
  unindex_path(it);
  births_.erase(key);
  if (!key.is_sysv())
    mounts_.remove_segment(key.dev_or_ipcns, s.bytes);
  for (uint32_t pid : s.holders) {
    auto pit = procs_.find(pid);
    if (pit == procs_.end())
      continue;
    auto &held = pit->second.held;
    for (size_t i = held.size(); i-- > 0;) {
      if (held[i].key == key) {
        held[i] = held.back();
        held.pop_back();
        break;
      }
    }
    std::erase_if(pit->second.attachments, [&](const Attachment &a) { return a.key == key; });
  }
  if (!other_names_.empty())
    other_names_.erase(key);
  segs_.erase(it);
  ++stats_.gone;
}

// Invariant: a segment is in by_path_ exactly when it is a linked tmpfs file
// with a resolved path. Every change of path, state or kind goes through
// set_path/set_state, which unindex before and index after.
bool Engine::path_indexed(const Slot &slot) {
  const Segment &s = slot.second;
  return !slot.first.is_sysv() && s.kind == Kind::tmpfs && s.state == SegmentState::linked &&
         (s.flags & kPathFull) && !s.path.empty();
}

template <class File> void Engine::for_each_indexed_path(File &&file) const {
  for (auto it = segs_.begin(); it != segs_.end(); ++it)
    if (path_indexed(*it))
      file(it.index(), path_key(it->second.path.hash()));
}

void Engine::index_path(SegIt it) {
  const Segment &s = it->second;
  if (!path_indexed(*it))
    return;
  by_path_.insert(it.index(), path_key(s.path.hash()),
                  [this](auto &&file) { for_each_indexed_path(file); });
}

void Engine::unindex_path(SegIt it) {
  if (it->first.is_sysv() || it->second.path.empty())
    return;
  by_path_.erase(it.index(), path_key(it->second.path.hash()),
                 [this](uint32_t i) { return path_key(segs_.slot(i).second.path.hash()); });
}

void Engine::set_path(SegIt it, std::string_view path, bool full) {
  unindex_path(it);
  Segment &s = it->second;
  s.path.assign(path);
  s.flags = static_cast<uint8_t>(full ? s.flags | kPathFull : s.flags & ~kPathFull);
  s.pattern = classify_shm_name(path).pattern;
  index_path(it);
}

void Engine::set_state(SegIt it, SegmentState state) {
  Segment &s = it->second;
  if (!it->first.is_sysv()) {
    // A file is linked while it has a name.
    if (state == SegmentState::linked) {
      s.nlink = std::max<uint32_t>(s.nlink, 1);
    } else {
      s.nlink = 0;
      if (!other_names_.empty())
        other_names_.erase(it->first);
    }
  }
  if (s.state == state)
    return;
  unindex_path(it);
  it->second.state = state;
  index_path(it);
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
  if (!it->second.holders.erase(pid))
    return;
  auto pit = procs_.find(pid);
  if (pit == procs_.end())
    return;
  auto &held = pit->second.held;
  for (size_t i = held.size(); i-- > 0;) {
    if (held[i].key == it->first) {
      held[i] = held.back();
      held.pop_back();
      break;
    }
  }
  std::erase_if(pit->second.attachments, [&](const Attachment &a) { return a.key == it->first; });
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

Engine::SegIt Engine::find_by_path(std::string_view path, uint32_t dev) {
  SegIt found = segs_.end();
  int matches = 0;
  const uint32_t h = PathStr::hash_of(path);
  by_path_.find(path_key(h), [&](uint32_t i) {
    const Slot &slot = segs_.slot(i);
    if (slot.second.path.hash() != h || (dev != 0 && slot.first.dev_or_ipcns != dev) ||
        !(slot.second.path == path))
      return false;
    found = SegIt(&segs_, i);
    ++matches;
    return false; // count them all
  });
  // The same path in two mount namespaces with no dev to tell them apart.
  return matches == 1 ? found : segs_.end();
}

Engine::SegIt Engine::find_by_name(std::string_view path, uint32_t dev) {
  if (auto it = find_by_path(path, dev); it != segs_.end() || other_names_.empty())
    return it;
  // Few files have hard links: a walk of them, with find_by_path's rule.
  SegIt found = segs_.end();
  int matches = 0;
  for (const auto &[key, names] : other_names_) {
    if ((dev != 0 && key.dev_or_ipcns != dev) ||
        std::find(names.begin(), names.end(), path) == names.end())
      continue;
    found = segs_.find(key);
    ++matches;
  }
  return matches == 1 ? found : segs_.end();
}

Engine::SegIt Engine::find_linked_by_name(const Event &e) {
  if (e.ino != 0) {
    auto it = segs_.find(SegmentKey::file(e.dev, e.ino));
    // The (dev, ino) of an unlink is a hint: trust it only if the path agrees.
    if (it != segs_.end() && it->second.state == SegmentState::linked &&
        (e.full_path.empty() || !(it->second.flags & kPathFull) || has_name(it, e.full_path)))
      return it;
  }
  if (e.full_path.empty())
    return segs_.end();
  return find_by_name(e.full_path, e.dev);
}

// --- names of files with hard links --------------------------------------------

bool Engine::has_name(SegIt it, std::string_view path) const {
  if (it->second.path == path)
    return true;
  if (other_names_.empty())
    return false;
  auto n = other_names_.find(it->first);
  return n != other_names_.end() &&
         std::find(n->second.begin(), n->second.end(), path) != n->second.end();
}

void Engine::add_other_name(SegIt it, std::string_view path) {
  if (it->second.state != SegmentState::linked || it->second.nlink < 2 || has_name(it, path))
    return;
  other_names_[it->first].emplace_back(path);
}

void Engine::set_other_names(SegIt it, std::vector<std::string> names) {
  if (names.empty() || it->second.state != SegmentState::linked || it->second.nlink < 2) {
    if (!other_names_.empty())
      other_names_.erase(it->first);
    return;
  }
  other_names_[it->first] = std::move(names);
}

void Engine::drop_name(SegIt it, std::string_view path) {
  Segment &s = it->second;
  if (s.nlink <= 1) {
    set_state(it, SegmentState::unlinked);
    // With bytes left, the kernel's frees (or a reconcile) finish the job.
    if (s.holders.empty() && s.bytes == 0)
      erase_segment(it);
    return;
  }
  --s.nlink;
  auto n = other_names_.find(it->first);
  if (!path.empty() && !(s.path == path)) {
    // Another name than the one shown: forget it, if it was known.
    if (n != other_names_.end())
      std::erase(n->second, path);
  } else if (!path.empty() && n != other_names_.end() && !n->second.empty()) {
    // The name shown: show another one.
    set_path(it, n->second.back(), true);
    n->second.pop_back();
  } else if (!path.empty()) {
    // The name shown, and its others are unknown (made unseen): the file is
    // still linked, but this path no longer finds it; a rescan names it.
    unindex_path(it);
    s.flags = static_cast<uint8_t>(s.flags & ~kPathFull);
  }
  if (n != other_names_.end() && (s.nlink < 2 || n->second.empty()))
    other_names_.erase(n);
}

void Engine::rename_name(SegIt it, std::string_view from, std::string_view to) {
  if (!(it->second.path == from)) {
    if (auto n = other_names_.find(it->first); n != other_names_.end()) {
      auto name = std::find(n->second.begin(), n->second.end(), from);
      if (name != n->second.end()) {
        name->assign(to);
        return;
      }
    }
  }
  set_path(it, to, true);
}

} // namespace shmbpf
