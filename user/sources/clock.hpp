// The clocks every time base comes from: CLOCK_BOOTTIME, as BPF's
// bpf_ktime_get_boot_ns() stamps events, and its offset to wall time (for
// printing event times and aging files by their mtime).
#pragma once

#include <chrono>
#include <cstdint>

namespace shmbpf {

uint64_t boottime_ns();

// CLOCK_REALTIME now, in whole seconds (to compare with file times).
int64_t realtime_s();

// CLOCK_REALTIME - CLOCK_BOOTTIME now, in nanoseconds.
int64_t boot_to_realtime_ns();

// CPU time of the calling thread (what a periodic job costs, whatever the
// machine's load does to its wall time).
std::chrono::nanoseconds thread_cpu();

} // namespace shmbpf
