// The details screen of `shmbpf top`: everything about one row (a segment's
// creator, every holder and its full path; a process's, a container's or a
// mount's segments or processes), opened with Enter.
#pragma once

#include "views/relations.hpp"
#include "views/top_frame.hpp"
#include "views/top_snapshot.hpp"
#include "views/top_state.hpp"

#include <vector>

namespace shmbpf {

// The lines about state.details_id (of state.details_view), or a line
// saying it is gone.
std::vector<TopLine> top_details_lines(const TopSnapshot &snap, const TopState &state,
                                       const Relations &rel);

} // namespace shmbpf
