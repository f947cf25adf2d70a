// `shmbpf top -b --json`: one frame as one JSON object on one line.
#pragma once

#include "views/top_snapshot.hpp"
#include "views/top_state.hpp"

#include <string>

namespace shmbpf {

// Totals, the header's mounts and every row of the current view, filtered
// and sorted as on screen; no trailing newline.
std::string top_json(const TopSnapshot &snap, const TopState &state);

} // namespace shmbpf
