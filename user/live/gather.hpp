// What the Monitor's worker thread reads for the consumer: one request type
// per kind of gather, each with what it asks and what was found. The
// consumer makes a request, the worker runs its reads (files, /proc, the
// mount tables, the cgroup tree, the runtimes' files) and never touches
// the engine, and the consumer applies the result.
#pragma once

#include "facts/container_name.hpp"
#include "facts/mounts.hpp"
#include "live/container_memory.hpp"
#include "live/file_watch.hpp"
#include "model/containers.hpp"
#include "sources/namespaces.hpp"
#include "sources/runtime_names.hpp"
#include "sources/system_scan.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace shmbpf {

// A full rescan: every process, mount namespace, tmpfs file and SysV
// segment, and the wall-clock second it began.
struct RescanGather {
  SystemScan scan;
  int64_t scan_start_s = 0;
};

// The processes that held files unlinked lately, read again: a rescan of
// their fds and maps tells which of those files they closed.
struct HoldersGather {
  std::vector<HolderJob> holders;
};

// A sample: files re-stat'ed (their size and resident bytes), processes'
// holdings read again (no event tells close or munmap), and every tmpfs
// mount's usage.
struct SampleGather {
  std::vector<StatJob> stats;
  HoldersGather holders;
  // The mount namespaces to sample through: the last ones known, read
  // again through their representatives, or found by a walk of /proc.
  std::vector<MountNamespace> namespaces;
  bool walk_namespaces = false;
  std::vector<MountState> mount_usage;
  // The filesystems the engine has files on, and those of them that
  // ended (no mount left, no superblock: ended_filesystems).
  std::vector<uint32_t> file_devs, ended_devs;
  // The host's and each container's memory cgroup.
  std::vector<MemoryJob> memory;
};

// Only the cgroups and containers of Gather::cgroups.
struct CgroupGather {};

// Cgroup ids to find in the cgroup2 tree and the containers to name, with
// what was found. Any gather may carry one.
struct CgroupLookup {
  std::vector<uint64_t> ids;
  RuntimeRoots roots;
  std::vector<std::pair<uint64_t, std::string>> paths; // found: id, path
  // The containers of those paths, and what their runtimes' files say.
  std::vector<ContainerRef> to_name;
  std::vector<std::pair<std::string, ContainerName>> names;
};

struct Gather {
  std::variant<CgroupGather, RescanGather, HoldersGather, SampleGather> request;
  CgroupLookup cgroups;
  std::function<void()> before; // called on the worker first (tests)
  uint64_t now_ns = 0;          // when the reads began
  std::chrono::steady_clock::time_point started;
  std::chrono::nanoseconds cpu{}; // the worker's CPU time for the reads
};

// Runs g's reads, on the worker thread.
void run_gather(Gather &g);

// One file's stat at its path, as its process saw it (through that
// process's root, or the other one's): found, size and bytes.
void run_stat(StatJob &j);

} // namespace shmbpf
