// What the probe gave up on this kernel, told on stderr before a command
// starts: hooks that are off and what that costs, fallbacks that report
// less (every fallback and each hook's program with -v). docs/KERNELS.md.
#pragma once

#include "probe/probe.hpp"

namespace shmbpf {

void tell_kernel_notes(const Probe &probe, bool verbose);

} // namespace shmbpf
