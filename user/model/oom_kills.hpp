// OOM kills: who the kernel killed, in which cgroup, what that cgroup held
// then (its shared memory, its usage, its limit) and the largest shared
// memory files charged to it as far as shmbpf can tell. Kept as a short
// history and counted by cgroup. Pure: the Engine records kills from oom
// events and names their victims from their exits.
#pragma once

#include "facts/memory_cgroup.hpp"
#include "model/containers.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

// A shared memory file as an OOM kill's report names it.
struct OomFile {
  std::string path;   // absolute, "memfd:<name>" or "SYSV<key>"
  uint64_t bytes = 0; // resident then
  uint64_t size = 0;
  bool operator==(const OomFile &) const = default;
};

struct OomKill {
  uint64_t ts_ns = 0; // CLOCK_BOOTTIME
  uint32_t pid = 0;   // the victim
  std::string comm;   // "" until known (the kernel's record, the process table, its exit)
  // The victim's cgroup, where known; else the one of the task whose
  // charge failed (in a cgroup's OOM, that cgroup).
  uint64_t cgroup_id = 0;
  ContainerRef container; // id "" = host, set by the Engine when read
  // The victim's memory cgroup as read when the kill was seen.
  std::optional<CgroupMemory> memory;
  std::optional<uint64_t> victim_shmem_rss; // the victim's own mapped shared memory, where given
  std::vector<OomFile> largest;             // largest first, at most kLargest
  // Shared memory's share of what was charged at the kill: of the limit
  // (the charge when a cgroup's OOM kills), else of the usage.
  std::optional<double> shmem_share() const;
  bool operator==(const OomKill &) const = default;
};

// A cgroup's kills: how many, and when the latest was.
struct OomCount {
  uint64_t count = 0;
  uint64_t last_ns = 0;
  bool operator==(const OomCount &) const = default;
};

class OomKillLog {
public:
  static constexpr size_t kRecent = 64;
  static constexpr size_t kLargest = 3;
  // Cgroups whose kills are counted; past it, the one killed in longest
  // ago is forgotten.
  static constexpr size_t kMaxCgroups = 4096;
  // How long after a kill its victim's exit may still name it.
  static constexpr uint64_t kExitWithinNs = 10'000'000'000;

  void record(OomKill k);
  // A process exited: if it is a recent kill's victim not named yet, that
  // kill takes its name (the kernel's record may have had the pid alone).
  // Its count stays where it was: a counter never goes down.
  void saw_exit(uint32_t pid, const std::string &comm, uint64_t ts_ns);

  // The last kRecent kills, oldest first.
  const std::deque<OomKill> &recent() const { return recent_; }
  // Kills by cgroup id (an exporter's label once its container is known).
  const std::map<uint64_t, OomCount> &by_cgroup() const { return by_cgroup_; }
  uint64_t total() const { return total_; }

private:
  std::deque<OomKill> recent_;
  std::map<uint64_t, OomCount> by_cgroup_;
  uint64_t total_ = 0;
};

} // namespace shmbpf
