// The engine's time base, read from the clocks when a command starts.
#pragma once

#include "model/engine.hpp"

namespace shmbpf {

// An engine configuration starting now: start time and realtime offset.
EngineConfig engine_config_now();

} // namespace shmbpf
