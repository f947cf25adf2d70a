#include "live/file_watch.hpp"

#include <algorithm>

namespace shmbpf {

namespace {

// Puts the first n of v (or all) at the front, starting at cursor, in turn.
template <class T> void take_in_turn(std::vector<T> &v, size_t n, size_t &cursor) {
  if (v.size() <= n)
    return;
  std::rotate(v.begin(), v.begin() + static_cast<long>(cursor % v.size()), v.end());
  v.resize(n);
  cursor += n;
}

} // namespace

void FileWatch::saw(const Event &e, const Engine &engine) {
  if ((e.type == EventType::unlink || e.type == EventType::rename) && e.ino != 0) {
    // Whoever still holds the file may close it unseen. (A watched file's
    // new path, or that it has none, the engine knows.)
    if (e.ret != 0)
      return;
    const SegmentKey key = SegmentKey::file(e.dev, e.ino);
    recheck_holders_of(key, engine);
    // Made, sized and unlinked since the last sample: nothing to re-stat.
    while (e.type == EventType::unlink && !touched_.empty() && touched_.back().key == key)
      touched_.pop_back();
    return;
  }
  const bool file_event =
      e.type == EventType::create || e.type == EventType::open || e.type == EventType::resize;
  if (!file_event || e.kind == Kind::sysv || e.ret < 0 || e.ino == 0)
    return;
  // Its process may close the file unseen: rescan it for a while.
  if (last_pid_ == nullptr || last_pid_id_ != e.pid) {
    last_pid_ = &recent_pids_[e.pid];
    last_pid_id_ = e.pid;
  }
  last_pid_->last_event_ns = std::max(last_pid_->last_event_ns, e.ts_ns);
  constexpr size_t kMaxTouched = 262144;
  const SegmentKey key = SegmentKey::file(e.dev, e.ino);
  if (!touched_.empty() && touched_.back().key == key)
    touched_.back() = {key, e.pid, e.mntns,
                       std::max(touched_.back().ts_ns, e.ts_ns)}; // a create, then its resize
  else if (!e.full_path.empty() && touched_.size() < kMaxTouched)
    touched_.push_back({key, e.pid, e.mntns, e.ts_ns});
}

std::vector<StatJob> FileWatch::stat_jobs(const Engine &engine, uint64_t now_ns,
                                          const std::vector<MountNamespace> &namespaces) {
  constexpr size_t kMaxWatched = 65536;
  for (const Touched &t : touched_) {
    auto it = watched_.find(t.key);
    if (it == watched_.end()) {
      auto fs = engine.file_state(t.key);
      if (!fs || fs->path.empty() || watched_.size() >= kMaxWatched)
        continue;
      it = watched_.try_emplace(t.key).first;
    }
    it->second.pid = t.pid;
    it->second.mntns = t.mntns;
    it->second.last_event_ns = std::max(it->second.last_event_ns, t.ts_ns);
  }
  touched_.clear();
  if (touched_.capacity() > 65536)
    touched_.shrink_to_fit();
  // A process of each mount namespace the last walk found.
  std::unordered_map<uint32_t, uint32_t> ns_pid;
  for (const MountNamespace &ns : namespaces)
    ns_pid.emplace(ns.mntns, static_cast<uint32_t>(ns.pid));
  std::vector<StatJob> jobs;
  for (auto it = watched_.begin(); it != watched_.end();) {
    auto fs = engine.file_state(it->first);
    // Gone, or gone from its path (its holders were noted at the unlink);
    // kept while held (it may still grow), and for a minute after the last
    // event (a writer that closed it may have filled it just before).
    if (!fs || fs->path.empty() ||
        (!fs->held && now_ns - std::min(now_ns, it->second.last_event_ns) >= kLingerNs)) {
      it = watched_.erase(it);
      continue;
    }
    const auto other = ns_pid.find(it->second.mntns);
    jobs.push_back({it->first, std::string(fs->path), it->second.pid,
                    other == ns_pid.end() ? 0 : other->second});
    ++it;
  }
  take_in_turn(jobs, kMaxStats, stat_cursor_);
  return jobs;
}

std::vector<HolderJob> FileWatch::sample_holder_jobs() {
  std::vector<uint32_t> pids;
  pids.reserve(recent_pids_.size());
  for (const auto &[pid, r] : recent_pids_)
    pids.push_back(pid);
  return holder_jobs(std::move(pids));
}

std::vector<HolderJob> FileWatch::unlinked_holder_jobs() {
  std::vector<uint32_t> pids;
  for (const auto &[pid, r] : recent_pids_)
    if (r.unlinked != 0)
      pids.push_back(pid);
  return holder_jobs(std::move(pids));
}

std::vector<HolderJob> FileWatch::holder_jobs(std::vector<uint32_t> pids) {
  std::sort(pids.begin(), pids.end());
  take_in_turn(pids, kMaxPids, holder_cursor_);
  std::vector<HolderJob> jobs;
  for (uint32_t pid : pids) {
    jobs.push_back({pid, true, {}});
    // The rescan settles what it held when the reads began.
    auto &r = recent_pids_[pid];
    unlinked_held_ -= std::min<size_t>(unlinked_held_, r.unlinked);
    r.unlinked = 0;
  }
  return jobs;
}

void FileWatch::missed(SegmentKey key, const Engine &engine) {
  if (auto it = watched_.find(key); it != watched_.end()) {
    // Unlinked or renamed unseen: stop failing stats; whoever holds it
    // may close it unseen too.
    watched_.erase(it);
    recheck_holders_of(key, engine);
  }
}

void FileWatch::rescanned(const HolderJob &job) {
  auto r = recent_pids_.find(job.pid);
  if (r == recent_pids_.end())
    return;
  if (!job.alive) {
    unlinked_held_ -= std::min<size_t>(unlinked_held_, r->second.unlinked);
    recent_pids_.erase(r);
    last_pid_ = nullptr;
    return;
  }
  r->second.holds = !job.files.empty();
}

void FileWatch::expire(uint64_t now_ns) {
  for (auto it = recent_pids_.begin(); it != recent_pids_.end();)
    if (!it->second.holds && it->second.unlinked == 0 &&
        now_ns - std::min(now_ns, it->second.last_event_ns) >= kLingerNs)
      it = recent_pids_.erase(it);
    else
      ++it;
  last_pid_ = nullptr; // entries may be gone
}

void FileWatch::recheck_holders_of(SegmentKey key, const Engine &engine) {
  engine.for_each_holder(key, [&](uint32_t pid) {
    RecentPid &r = recent_pids_[pid];
    r.holds = true;
    ++r.unlinked;
    ++unlinked_held_;
  });
}

} // namespace shmbpf
