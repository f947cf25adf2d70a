#include "model/oom_kills.hpp"

#include <algorithm>
#include <utility>

namespace shmbpf {

std::optional<double> OomKill::shmem_share() const {
  if (!memory || memory->usage == 0)
    return std::nullopt;
  // Usage is read a moment after the shmem count: never say more than all.
  const uint64_t shmem = std::min(memory->shmem, memory->usage);
  return static_cast<double>(shmem) / static_cast<double>(memory->usage);
}

void OomKillLog::record(OomKill k) {
  ++total_;
  OomCount &c = by_cgroup_[k.cgroup_id];
  ++c.count;
  c.last_ns = std::max(c.last_ns, k.ts_ns);
  if (recent_.size() == kRecent)
    recent_.pop_front();
  recent_.push_back(std::move(k));
}

void OomKillLog::saw_exit(uint32_t pid, const std::string &comm, uint64_t cgroup_id,
                          uint64_t ts_ns) {
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
    if (ts_ns >= it->ts_ns && ts_ns - it->ts_ns > kExitWithinNs)
      return;
    if (it->pid != pid)
      continue;
    if (it->comm.empty())
      it->comm = comm;
    if (cgroup_id != 0 && cgroup_id != it->cgroup_id) {
      auto old = by_cgroup_.find(it->cgroup_id);
      if (old != by_cgroup_.end() && --old->second.count == 0)
        by_cgroup_.erase(old);
      OomCount &c = by_cgroup_[cgroup_id];
      ++c.count;
      c.last_ns = std::max(c.last_ns, it->ts_ns);
      it->cgroup_id = cgroup_id;
    }
    return;
  }
}

} // namespace shmbpf
