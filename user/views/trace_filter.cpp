#include "views/trace_filter.hpp"

#include <algorithm>

namespace shmbpf {

namespace {

template <typename T, typename V> bool names(const std::vector<T> &list, const V &value) {
  return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
}

} // namespace

bool TraceFilter::matches(const Event &e) const {
  // trace calls this for every record, filters or not.
  if (pids.empty() && comms.empty() && kinds.empty() && events.empty())
    return true;
  // A SIGBUS and an OOM kill are as much the target's (or victim's) event
  // as the sender's.
  const bool has_target = e.type == EventType::sigbus || e.type == EventType::oom;
  if (!names(pids, e.pid) &&
      !(has_target && std::find(pids.begin(), pids.end(), e.target_pid) != pids.end()))
    return false;
  // Compared as views: no string is made per event.
  return names(comms, e.comm) && names(kinds, to_string(e.kind)) &&
         names(events, to_string(e.type));
}

} // namespace shmbpf
