// What `trace` says about its programs once it stops: the hooks it
// attached and (`--stats`) the time spent in each. Pure.
#pragma once

#include "facts/hooks.hpp"
#include "facts/program_stats.hpp"

#include <string>
#include <vector>

namespace shmbpf {

// `trace --stats`: the time spent in shmbpf's BPF programs over `seconds`
// of tracing, in total (and as a share of one CPU) and per hook, the
// costliest first; hooks that never ran are left out. Lines end in '\n'.
std::string program_stats_text(std::vector<ProgramStats> stats, double seconds);

// "shmbpf: light hooks: a, b, c": the set loaded and the hooks attached.
std::string hooks_in_use_text(HookSet set, const std::vector<HookStatus> &hooks);

} // namespace shmbpf
