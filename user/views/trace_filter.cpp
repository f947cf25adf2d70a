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
  if (!names(pids, e.pid) && !(e.type == EventType::sigbus &&
                               std::find(pids.begin(), pids.end(), e.target_pid) != pids.end()))
    return false;
  // Compared as views: no string is made per event.
  return names(comms, e.comm) && names(kinds, to_string(e.kind)) &&
         names(events, to_string(e.type));
}

} // namespace shmbpf
