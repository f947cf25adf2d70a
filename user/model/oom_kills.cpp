#include "model/oom_kills.hpp"

#include <algorithm>
#include <utility>

namespace shmbpf {

std::optional<double> OomKill::shmem_share() const {
  // Of the limit that was hit (what the cgroup was charged when it was
  // killed): usage, read after the kill, has lost the victim's own pages.
  // Without a limit (the host ran out), of what is charged now.
  if (!memory)
    return std::nullopt;
  const uint64_t whole = memory->limit.bytes ? *memory->limit.bytes : memory->usage;
  if (whole == 0)
    return std::nullopt;
  return static_cast<double>(std::min(memory->shmem, whole)) / static_cast<double>(whole);
}

void OomKillLog::record(OomKill k) {
  ++total_;
  if (!by_cgroup_.contains(k.cgroup_id) && by_cgroup_.size() >= kMaxCgroups) {
    // Cgroups come and go (a user may make them): the one killed in
    // longest ago makes room.
    auto oldest = by_cgroup_.begin();
    for (auto it = by_cgroup_.begin(); it != by_cgroup_.end(); ++it)
      if (it->second.last_ns < oldest->second.last_ns)
        oldest = it;
    by_cgroup_.erase(oldest);
  }
  OomCount &c = by_cgroup_[k.cgroup_id];
  ++c.count;
  c.last_ns = std::max(c.last_ns, k.ts_ns);
  if (recent_.size() == kRecent)
    recent_.pop_front();
  recent_.push_back(std::move(k));
}

void OomKillLog::saw_exit(uint32_t pid, const std::string &comm, uint64_t ts_ns) {
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
    if (ts_ns >= it->ts_ns && ts_ns - it->ts_ns > kExitWithinNs)
      return;
    if (it->pid != pid)
      continue;
    if (it->comm.empty())
      it->comm = comm;
    return;
  }
}

} // namespace shmbpf
