// What `shmbpf top` shows at one instant, taken from the model: the engine's
// answers plus the live loop's counters. Everything a frame or a JSON line
// is built from, so that building them needs no engine and no clock.
#pragma once

#include "model/engine.hpp"
#include "views/columns.hpp"
#include "views/top_state.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

struct TopSnapshot {
  uint64_t now_ns = 0;     // CLOCK_BOOTTIME, for ages
  std::string clock;       // wall-clock time for the title line ("" to omit)
  uint64_t events = 0;     // events applied since start
  uint64_t lost = 0;       // records the kernel could not deliver
  uint32_t host_mntns = 0; // mount namespace of the host (shmbpf's own), labels mounts
  EngineTotals totals;
  std::vector<MountUsage> mounts;
  std::vector<ProcessInfo> processes;
  std::vector<ContainerInfo> containers;
  std::vector<SegmentInfo> segments;
  std::vector<ProducerInfo> producers; // when counts_producers(state)
  std::vector<ScanGap> scan_gaps;      // what the last full scan could not cover
  std::vector<BusError> sigbus;        // the latest SIGBUS faults, oldest first
  UserNames users;

  // Set by fill_segment_page: segments holds only rows [segments_offset,
  // segments_offset + segments.size()) of the segments view's
  // segments_total rows, already filtered and sorted for the state it was
  // taken for, and selected_rank is where the row ranked_id (that state's
  // selected_id) is, if it is a row.
  bool segments_paged = false;
  std::size_t segments_total = 0;
  std::size_t segments_offset = 0;
  std::optional<std::size_t> selected_rank;
  std::string ranked_id;
};

// What the live loop knows that the engine does not.
struct TopCounters {
  uint64_t now_ns = 0;     // CLOCK_BOOTTIME
  std::string clock;       // wall-clock time, "" to omit
  uint64_t events = 0;     // events applied since start
  uint64_t lost = 0;       // records the kernel could not deliver
  uint32_t host_mntns = 0; // shmbpf's own mount namespace: where typed paths mean what they say
};

// Orphans as soon as they are orphans: top shows the present, `leaks`
// applies the age threshold that makes one a leak.
inline constexpr uint64_t top_orphan_min_age_ns = 0;

// The snapshot state's frame needs (segment_copy(state) says which segments
// it copies); login_name gives a uid's name, "" for none.
TopSnapshot take_top_snapshot(const Engine &engine, TopCounters counters, const TopState &state,
                              const std::function<std::string(uint32_t uid)> &login_name);

} // namespace shmbpf
