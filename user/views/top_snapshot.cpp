#include "views/top_snapshot.hpp"

#include "views/top_rows.hpp"

#include <utility>

namespace shmbpf {

TopSnapshot take_top_snapshot(const Engine &engine, TopCounters counters, const TopState &state,
                              const std::function<std::string(uint32_t uid)> &login_name) {
  TopSnapshot s;
  s.now_ns = counters.now_ns;
  s.clock = std::move(counters.clock);
  s.events = counters.events;
  s.lost = counters.lost;
  s.host_mntns = counters.host_mntns;
  s.totals = engine.totals(s.now_ns, top_orphan_min_age_ns);
  s.mounts = engine.mounts();
  s.scan_gaps = engine.scan_gaps();
  s.sigbus = engine.sigbus_since(0);
  s.processes = engine.processes(s.now_ns);
  s.containers = engine.containers_and_host_cgroups(s.now_ns);
  switch (segment_copy(state)) {
  case SegmentCopy::none:
    break;
  case SegmentCopy::every:
    s.segments = engine.segments({}, s.now_ns, top_orphan_min_age_ns);
    break;
  case SegmentCopy::page:
  case SegmentCopy::all_rows:
    fill_segment_page(s, engine, state, top_orphan_min_age_ns,
                      segment_copy(state) == SegmentCopy::all_rows);
    break;
  }
  if (counts_producers(state)) {
    SegmentFilter filter;
    filter.pid = state.pid;
    filter.container = state.container;
    s.producers = engine.producers(filter, s.now_ns, top_orphan_min_age_ns);
  }
  s.users = user_names(s.processes, login_name);
  return s;
}

} // namespace shmbpf
