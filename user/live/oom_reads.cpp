#include "live/oom_reads.hpp"

#include "live/gather.hpp"

#include "sources/cgroup.hpp"
#include "sources/mountinfo.hpp"

#include <sys/stat.h>

namespace shmbpf {

namespace {
constexpr uint64_t kSecondNs = 1'000'000'000;
} // namespace

bool ReadBudget::take(uint64_t now_ns) {
  if (!started_ || now_ns < window_start_ns_ || now_ns - window_start_ns_ >= kSecondNs) {
    started_ = true;
    window_start_ns_ = now_ns;
    used_ = 0;
  }
  if (used_ >= per_second_)
    return false;
  ++used_;
  return true;
}

std::optional<CgroupMemory> OomMemory::read_through(uint32_t pid, uint64_t memcg_id) {
  if (pid == 0)
    return std::nullopt;
  if (mounts_.empty())
    mounts_ = read_mountinfo(0);
  const auto dirs = read_memory_cgroup_below_root(pid, mounts_);
  if (!dirs)
    return std::nullopt;
  struct stat st {};
  if (memcg_id != 0 && (::stat(dirs->dirs.front().c_str(), &st) != 0 || st.st_ino != memcg_id))
    return std::nullopt;
  return read_cgroup_memory(*dirs);
}

std::optional<CgroupMemory> OomMemory::read_by_id(uint64_t memcg_id, uint64_t now_ns) {
  if (memcg_id == 0)
    return std::nullopt;
  for (const auto &[id, dirs] : known_dirs_)
    if (id == memcg_id)
      if (auto m = read_cgroup_memory(dirs))
        return m;
  if (!walk_budget_.take(now_ns))
    return std::nullopt;
  if (mounts_.empty())
    mounts_ = read_mountinfo(0);
  auto dirs = find_memory_cgroup(memcg_id, mounts_, kWalkDirs);
  if (!dirs)
    return std::nullopt;
  auto m = read_cgroup_memory(*dirs);
  if (known_dirs_.size() == kKnownDirs)
    known_dirs_.pop_front();
  known_dirs_.emplace_back(memcg_id, std::move(*dirs));
  return m;
}

void OomMemory::fill(Event &e) {
  if (e.type != EventType::oom || !budget_.take(e.ts_ns))
    return;
  // The victim's own cgroup (another one than the charging task's when a
  // pod's limit or the host ran out), else the charging task's, which the
  // kernel named.
  e.memcg = read_through(e.target_pid, 0);
  if (!e.memcg)
    e.memcg = read_through(e.pid, e.memcg_id);
  if (!e.memcg)
    e.memcg = read_by_id(e.memcg_id, e.ts_ns);
}

void OomFiles::recount(const Event &e, Engine &engine) {
  if (e.type != EventType::oom || !budget_.take(e.ts_ns))
    return;
  for (const SegmentKey &key : engine.oom_candidates(e, kFiles)) {
    const auto fs = engine.file_state(key);
    if (!fs || fs->path.empty())
      continue;
    StatJob j{key, std::string(fs->path), e.target_pid, e.pid};
    run_stat(j);
    if (j.found)
      engine.set_file_usage(j.key, j.size, j.bytes, e.ts_ns);
  }
}

} // namespace shmbpf
