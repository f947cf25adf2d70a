// What the probe gave up on this kernel, told on stderr before a command
// starts: hooks that are off and what that costs, fallbacks that report
// less (every fallback and each hook's program with -v). docs/KERNELS.md.
#pragma once

#include "probe/probe.hpp"

#include <string>
#include <vector>

namespace shmbpf {

// The notes, one line each, without the "shmbpf: " that starts them on stderr.
std::vector<std::string> kernel_notes(const Probe &probe, bool verbose);

// Each note on stderr, as "shmbpf: <note>".
void tell_kernel_notes(const Probe &probe, bool verbose);

} // namespace shmbpf
