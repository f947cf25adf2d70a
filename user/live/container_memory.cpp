#include "live/container_memory.hpp"

#include "model/containers.hpp"
#include "sources/mountinfo.hpp"

#include <cstddef>

#include <utility>

namespace shmbpf {

std::optional<MemoryCgroupDirs> pod_cgroup_dirs(const MemoryCgroupDirs &container,
                                                std::string *pod_uid) {
  if (container.dirs.empty())
    return std::nullopt;
  const auto ref = container_from_cgroup_path(container.dirs.front());
  if (!ref || ref->pod_uid.empty() || ref->id == ref->pod_uid)
    return std::nullopt;
  for (size_t i = 1; i + 1 < container.dirs.size(); ++i) {
    const auto up = container_from_cgroup_path(container.dirs[i]);
    if (up && up->id == ref->pod_uid && up->pod_uid == ref->pod_uid) {
      *pod_uid = ref->pod_uid;
      return MemoryCgroupDirs{
          container.v1, {container.dirs.begin() + static_cast<ptrdiff_t>(i), container.dirs.end()}};
    }
  }
  return std::nullopt;
}

std::vector<MemoryJob> ContainerMemory::jobs(const Engine &engine) const {
  std::vector<MemoryJob> out;
  out.push_back(MemoryJob{});
  std::unordered_map<std::string, uint32_t> pids;
  for (auto &[id, pid] : engine.container_pids())
    pids.emplace(id, pid);
  std::unordered_map<std::string, MemoryCgroupDirs> pods;
  for (const auto &[id, dirs] : dirs_) {
    if (out.size() < kMaxJobs)
      out.push_back(MemoryJob{id, dirs, 0, std::nullopt});
    std::string uid;
    if (auto pod = pod_cgroup_dirs(dirs, &uid))
      pods.try_emplace(std::move(uid), std::move(*pod));
  }
  for (const auto &[id, pid] : pids)
    if (!dirs_.contains(id) && out.size() < kMaxJobs)
      out.push_back(MemoryJob{id, std::nullopt, pid, std::nullopt});
  for (auto &[uid, dirs] : pods)
    if (out.size() < kMaxJobs) {
      MemoryJob pod;
      pod.dirs = std::move(dirs);
      pod.pod_uid = uid;
      out.push_back(std::move(pod));
    }
  return out;
}

void ContainerMemory::run(MemoryJob &job, const std::vector<MountInfo> &mounts) {
  if (job.id.empty() && job.pod_uid.empty()) {
    job.found = read_host_memory();
    job.top_cgroups = read_top_memory_cgroups(mounts);
    return;
  }
  if (!job.dirs && job.pid != 0)
    job.dirs = read_memory_cgroup_below_root(job.pid, mounts);
  if (job.dirs)
    job.found = read_cgroup_memory(*job.dirs);
}

void ContainerMemory::apply(std::vector<MemoryJob> &jobs, Engine &engine) {
  std::unordered_map<std::string, CgroupMemory> pods;
  for (MemoryJob &j : jobs) {
    if (!j.pod_uid.empty()) {
      if (j.found)
        pods.emplace(j.pod_uid, *j.found);
      continue;
    }
    engine.set_container_memory(j.id, j.found);
    if (j.id.empty()) {
      engine.set_host_cgroups(std::move(j.top_cgroups));
      continue;
    }
    if (j.found && j.dirs)
      dirs_.insert_or_assign(j.id, std::move(*j.dirs));
    else
      dirs_.erase(j.id);
  }
  engine.set_pod_memory(std::move(pods));
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
