#include "live/container_memory.hpp"

#include "sources/mountinfo.hpp"

#include <utility>

namespace shmbpf {

std::vector<MemoryJob> ContainerMemory::jobs(const Engine &engine) const {
  std::vector<MemoryJob> out;
  out.push_back(MemoryJob{});
  std::unordered_map<std::string, uint32_t> pids;
  for (auto &[id, pid] : engine.container_pids())
    pids.emplace(id, pid);
  for (const auto &[id, dirs] : dirs_)
    if (out.size() < kMaxJobs)
      out.push_back(MemoryJob{id, dirs, 0, std::nullopt});
  for (const auto &[id, pid] : pids)
    if (!dirs_.contains(id) && out.size() < kMaxJobs)
      out.push_back(MemoryJob{id, std::nullopt, pid, std::nullopt});
  return out;
}

void ContainerMemory::run(MemoryJob &job, const std::vector<MountInfo> &mounts) {
  if (job.id.empty()) {
    job.found = read_host_memory();
    return;
  }
  if (!job.dirs && job.pid != 0) {
    job.dirs = read_memory_cgroup_dirs(job.pid, mounts);
    // A container is never the hierarchy's root: a process on its way out
    // may read as in it.
    if (job.dirs && job.dirs->dirs.size() < 2)
      job.dirs.reset();
  }
  if (job.dirs)
    job.found = read_cgroup_memory(*job.dirs);
}

void ContainerMemory::apply(std::vector<MemoryJob> &jobs, Engine &engine) {
  for (MemoryJob &j : jobs) {
    engine.set_container_memory(j.id, j.found);
    if (j.id.empty())
      continue;
    if (j.found && j.dirs)
      dirs_.insert_or_assign(j.id, std::move(*j.dirs));
    else
      dirs_.erase(j.id);
  }
}

void measure_containers(Engine &engine) {
  ContainerMemory memory;
  std::vector<MemoryJob> jobs = memory.jobs(engine);
  const std::vector<MountInfo> own = read_mountinfo(0);
  for (MemoryJob &j : jobs)
    ContainerMemory::run(j, own);
  memory.apply(jobs, engine);
}

} // namespace shmbpf
