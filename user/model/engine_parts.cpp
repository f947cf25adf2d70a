#include "model/engine_parts.hpp"

#include <utility>

namespace shmbpf {

EngineVisit visit_of(const Engine &engine) {
  return [&engine](const std::function<void(const Engine &)> &read) {
    read(engine);
    return true;
  };
}

namespace {

// Every part of a query: part(engine, from, out) takes the part at from
// and says where the next begins.
template <class Row, class Part>
std::optional<std::vector<Row>> take_parts(const EngineVisit &visit, Part &&part) {
  std::vector<Row> out;
  std::optional<size_t> from = 0;
  while (from) {
    const size_t at = *from;
    if (!visit([&](const Engine &engine) { from = part(engine, at, out); }))
      return std::nullopt;
  }
  return out;
}

} // namespace

std::optional<std::vector<SegmentInfo>> take_segments(const EngineVisit &visit,
                                                      const SegmentFilter &filter, uint64_t now_ns,
                                                      uint64_t orphan_min_age_ns) {
  auto rows = take_parts<SegmentInfo>(
      visit, [&](const Engine &engine, size_t from, std::vector<SegmentInfo> &out) {
        return engine.segments_part(filter, now_ns, orphan_min_age_ns, from, out);
      });
  if (rows)
    sort_segments(*rows);
  return rows;
}

std::optional<std::vector<Orphan>> take_orphans(const EngineVisit &visit, uint64_t now_ns,
                                                uint64_t min_age_ns, OrphanScope scope) {
  auto rows =
      take_parts<Orphan>(visit, [&](const Engine &engine, size_t from, std::vector<Orphan> &out) {
        return engine.orphans_part(now_ns, min_age_ns, scope, from, out);
      });
  if (rows)
    sort_orphans(*rows);
  return rows;
}

} // namespace shmbpf
