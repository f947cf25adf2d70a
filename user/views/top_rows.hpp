// The rows of each `shmbpf top` view: which entries of a snapshot pass the
// state's filters (-p, --container, the `/` text) and in which order the
// state's sort puts them. The frame and the JSON line show these rows.
#pragma once

#include "model/engine.hpp"
#include "views/relations.hpp"
#include "views/top_snapshot.hpp"
#include "views/top_state.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shmbpf {

// Ids that follow a row across snapshots ("p:<pid>", "s:<sysv>:<dev>:<ino>"...).
std::string process_row_id(const ProcessInfo &p);
std::string container_row_id(const ContainerInfo &c);
std::string mount_row_id(const MountUsage &m);
std::string segment_row_id(const SegmentInfo &s);
std::string producer_row_id(const ProducerInfo &p);

// Indices into snap.processes, snap.containers, rel.filesystems() and
// snap.segments, in display order.
std::vector<std::size_t> process_rows(const TopSnapshot &snap, const TopState &st);
std::vector<std::size_t> container_rows(const TopSnapshot &snap, const TopState &st);
std::vector<std::size_t> mount_rows(const TopState &st, const Relations &rel);
// Indices into snap.producers (already counted under the pid and container
// filters): the `/` text picks by name, the sort orders.
std::vector<std::size_t> producer_rows(const TopSnapshot &snap, const TopState &st);
// With pick, the segments it picks (in the view's order) instead of the
// view's own filters.
using SegmentPick = std::function<bool(const SegmentInfo &)>;
std::vector<std::size_t> segment_rows(const TopSnapshot &snap, const TopState &st,
                                      const SegmentPick &pick = {});

// Does a segment involve pid, as its creator or a holder?
bool segment_involves(const SegmentInfo &s, uint32_t pid);

// The mounts worth a header line: every /dev/shm and any other tmpfs that
// holds something shmbpf tracks; the alarming ones first.
std::vector<const MountUsage *> header_mounts(const TopSnapshot &snap, const Relations &rel);

// The segments view's rows for state into snap, straight from the engine:
// filtered and ordered over segments read in place, and only the rows a
// frame around the selection can show (all_rows: every row, for batch
// mode and --json) copied out as SegmentInfo. The frame and the JSON are
// the ones a snapshot holding every segment gives.
void fill_segment_page(TopSnapshot &snap, const Engine &engine, const TopState &state,
                       uint64_t orphan_min_age_ns, bool all_rows);

} // namespace shmbpf
