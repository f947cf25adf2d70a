// One `ls` list, as ls prints it and the daemon's /v1/ lists answer it: the
// rows copied out of the engine (under the daemon's lock, a part at a time
// for segments, or from ls's own engine), then rendered with the lock let
// go. Pure.
#pragma once

#include "model/engine.hpp"
#include "model/engine_parts.hpp"
#include "model/leaks.hpp"
#include "views/columns.hpp"
#include "views/list_wire.hpp"
#include "views/relations.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

// A segment's orphan verdict in a list uses leaks' default --min-age.
inline constexpr auto kListOrphanMinAgeNs = static_cast<uint64_t>(kLeakMinAgeS * 1e9);

struct Listing {
  uint64_t now_ns = 0;
  uint32_t host_mntns = 0; // labels the host's mounts
  std::vector<SegmentInfo> segments;
  std::vector<ProcessInfo> processes; // --by process: only those with shared memory
  std::vector<ContainerInfo> containers;
  std::vector<MountUsage> mounts;

  Relations relations() const { return Relations(processes, mounts, host_mntns); }
};

// The rows query lists, at now, read through visit: segments in parts
// (model/engine_parts.hpp), the rest at once. A text table of containers or
// mounts also takes what its columns relate them to (every process, the
// mounts). nullopt when visit has no engine.
std::optional<Listing> take_listing(const EngineVisit &visit, const LsQuery &query, uint64_t now,
                                    uint32_t host_mntns);
// The same from an engine nothing else changes.
Listing take_listing(const Engine &engine, const LsQuery &query, uint64_t now, uint32_t host_mntns);

// The table or the JSON document; users names the processes' uids (only
// the process table shows them).
std::string listing_output(const Listing &listing, const LsQuery &query, const UserNames &users);

} // namespace shmbpf
