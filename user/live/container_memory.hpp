// Each container's memory cgroup, read at every sample: the shared memory
// charged to it (memory.stat's shmem), its usage and its limit; the host's
// row is the machine's memory, with the host's top-level cgroups; a pod's
// own cgroup is read through its containers'. A container's cgroup directory is found once
// through one of its processes and kept, so that it is still read once its
// processes are gone (tmpfs pages stay charged to it), until it can no
// longer be read (the cgroup was removed). Pure but for run(), the
// worker's reads.
#pragma once

#include "facts/memory_cgroup.hpp"
#include "facts/mounts.hpp"
#include "model/engine.hpp"
#include "sources/cgroup.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shmbpf {

// One container to read: its cgroup's directories when known, else a
// process to find them through; and what the read found. A pod's job (a
// pod uid) reads the pod's own cgroup; the host's (neither) the machine's
// memory and its top-level cgroups.
struct MemoryJob {
  std::string id; // "" = the host, or a pod
  std::optional<MemoryCgroupDirs> dirs;
  uint32_t pid = 0;
  std::optional<CgroupMemory> found;
  std::string pod_uid = {};
  std::vector<NamedCgroupMemory> top_cgroups = {}; // the host's job only
};

// A Kubernetes container's pod-level cgroup, from the container's own:
// the innermost ancestor whose path names the pod
// (kubepods-<qos>-pod<uid>.slice, or kubepods/<qos>/pod<uid>); nullopt
// outside a pod.
std::optional<MemoryCgroupDirs> pod_cgroup_dirs(const MemoryCgroupDirs &container,
                                                std::string *pod_uid);

class ContainerMemory {
public:
  // At most this many containers are read a sample: the host first, then
  // those whose cgroups are known, then new ones.
  static constexpr size_t kMaxJobs = 1024;

  // The host and each container the engine knows.
  std::vector<MemoryJob> jobs(const Engine &engine) const;
  // The worker's reads (mounts: shmbpf's own, to find cgroup hierarchies).
  static void run(MemoryJob &job, const std::vector<MountInfo> &mounts);
  // What was read, into the engine; a container whose cgroup could not be
  // read is forgotten (found again through a process, if it has one), and
  // a pod with it.
  void apply(std::vector<MemoryJob> &jobs, Engine &engine);

private:
  std::unordered_map<std::string, MemoryCgroupDirs> dirs_;
};

// Once, for a command that lists a scan (ls, leaks): every container's
// memory read into the engine.
void measure_containers(Engine &engine);

} // namespace shmbpf
