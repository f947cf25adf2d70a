// The clocks every time base comes from: CLOCK_BOOTTIME, as BPF's
// bpf_ktime_get_boot_ns() stamps events, and its offset to wall time (for
// printing event times and aging files by their mtime).
#pragma once

#include <cstdint>

namespace shmbpf {

uint64_t boottime_ns();

// CLOCK_REALTIME - CLOCK_BOOTTIME now, in nanoseconds.
int64_t boot_to_realtime_ns();

} // namespace shmbpf
