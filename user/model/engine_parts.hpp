// The queries over every segment, taken a part of the engine's table at a
// time, with the engine held still only for each part: the daemon locks it
// for each and lets the live loop run in between, so that no request holds
// the loop for long whatever the number of segments (docs/BENCHMARKS.md).
// A segment is listed as its part found it: one made or gone during the
// listing may be in it or not, one alive throughout is in it once, as in a
// read of /proc. Pure.
#pragma once

#include "model/engine.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace shmbpf {

// Runs read(engine) with the engine held still (under the daemon's lock, or
// at once for a command's own engine); false when there is no engine to
// read (the daemon is not ready).
using EngineVisit = std::function<bool(const std::function<void(const Engine &)> &read)>;

// An EngineVisit for an engine nothing else changes.
EngineVisit visit_of(const Engine &engine);

// Engine::segments(filter, now_ns, orphan_min_age_ns), in parts; nullopt
// when visit had no engine.
std::optional<std::vector<SegmentInfo>> take_segments(const EngineVisit &visit,
                                                      const SegmentFilter &filter, uint64_t now_ns,
                                                      uint64_t orphan_min_age_ns);

// Engine::orphans(now_ns, min_age_ns, scope), in parts.
std::optional<std::vector<Orphan>> take_orphans(const EngineVisit &visit, uint64_t now_ns,
                                                uint64_t min_age_ns,
                                                OrphanScope scope = OrphanScope::shared_memory);

} // namespace shmbpf
