// Leak findings from the engine's model: orphans grouped by mount,
// container and name pattern, and growth of processes, containers and
// mounts across successive samples. Pure; docs/LEAKS.md explains the rules.
#pragma once

#include "model/engine.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

// How old an orphan must be to count as a leak unless told otherwise
// (leaks --min-age): younger ones are often between a create and the
// attach of the process they were made for.
constexpr double kLeakMinAgeS = 60;

struct LeakGroup {
  std::string mount;      // by_mount: the mountpoint ("" for SysV and memfd)
  ContainerRef container; // by_container: empty id = host
  std::string pattern;    // by_pattern: torch, psm, sem or other
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t restart_count = 0; // of count, left by a restart (SegmentInfo::restart_orphan)
};

// One subject whose live shared-memory bytes rose over the whole window.
struct GrowthFinding {
  std::string what; // process, container or mount
  std::string id;   // pid, container id ("" = host) or mountpoint
  std::string name; // comm, runtime or mount namespace
  uint64_t from_bytes = 0;
  uint64_t to_bytes = 0;
  double seconds = 0;
  double bytes_per_s = 0;
};

// The window growth was judged over: what was asked, and what the samples
// at hand span (less than asked when a daemon has not run that long).
struct GrowthWindow {
  double requested_s = 0;
  double covered_s = 0;
  size_t samples = 0;
  bool complete = false; // the samples span at least requested_s
};

// The SIGBUS faults of a window on one mount, by one container's
// processes: what a full /dev/shm did to the processes using it (every
// container's is /dev/shm, so the container tells them apart).
struct BusErrorMount {
  ContainerRef container; // of the faulting processes; id "" = host
  std::string mountpoint; // "" when no file was found, for memfds and SysV
  uint64_t count = 0;
  BusError last;
};

struct LeakReport {
  std::vector<SegmentInfo> orphans; // largest first
  uint64_t orphan_bytes = 0;
  // Of the orphans, those an earlier container of a restarted pod left.
  uint64_t restart_orphans = 0;
  uint64_t restart_orphan_bytes = 0;
  std::vector<LeakGroup> by_mount, by_container, by_pattern; // largest first
  std::vector<GrowthFinding> growth;
  std::optional<GrowthWindow> window; // set when growth was checked
  // Mounts SIGBUS faults hit during the window, most faults first.
  std::vector<BusErrorMount> bus_errors;
  // Why faults were not watched during the window (no BPF), "" when they were.
  std::string bus_errors_unwatched;
  bool leaking() const { return !orphans.empty() || !growth.empty() || !bus_errors.empty(); }
};

// is_shared_memory (model/types.hpp) of a segment as the queries give it.
inline bool is_shared_memory(const SegmentInfo &s) {
  return is_shared_memory(s.kind, s.pattern, s.state, s.mountpoint);
}

// Orphans (Engine::orphans, in the scope asked for) whose path matches glob
// (fnmatch, no flags; empty glob: all); grouped.
LeakReport summarize_orphans(const std::vector<Orphan> &orphans, const std::string &glob);

// Live bytes of every subject at one instant.
struct UsageSample {
  uint64_t t_ns = 0;
  struct Subject {
    std::string what, id, name;
    uint64_t bytes = 0;
  };
  std::vector<Subject> subjects;
};

// The usage of every process, container and mount the engine knows now.
UsageSample sample_usage(const Engine &engine, uint64_t now_ns);

// Subjects present in every sample whose bytes never fell and rose at
// least min_rises times by min_bytes in total: monotonic growth, not noise.
std::vector<GrowthFinding> find_growth(const std::vector<UsageSample> &samples,
                                       uint64_t min_bytes = 1, size_t min_rises = 2);

// find_growth's rule for one subject's bytes, one value per sample.
bool steady_growth(const std::vector<uint64_t> &bytes, uint64_t min_bytes, size_t min_rises);
// A finding for bytes that grew over seconds.
GrowthFinding growth_finding(std::string what, std::string id, std::string name,
                             const std::vector<uint64_t> &bytes, double seconds);
// Fastest first, as find_growth returns them.
void sort_growth(std::vector<GrowthFinding> &findings);

// faults (oldest first, as Engine::sigbus_since, with their containers) by
// container and the mountpoint of the file each hit: most faults first,
// then by container id and mountpoint.
std::vector<BusErrorMount> bus_error_mounts(const std::vector<BusError> &faults);

} // namespace shmbpf
