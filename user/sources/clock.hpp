// The clocks the engine's time base comes from: CLOCK_BOOTTIME, as BPF's
// bpf_ktime_get_boot_ns(), and its offset to wall time for file mtimes.
#pragma once

#include "model/engine.hpp"

#include <cstdint>

namespace shmbpf {

uint64_t boottime_ns();

// An engine configuration starting now: start time and realtime offset.
EngineConfig engine_config_now();

} // namespace shmbpf
