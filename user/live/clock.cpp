#include "live/clock.hpp"

#include "sources/clock.hpp"

namespace shmbpf {

EngineConfig engine_config_now() {
  EngineConfig cfg;
  cfg.start_ns = boottime_ns();
  cfg.realtime_offset_ns = boot_to_realtime_ns();
  return cfg;
}

} // namespace shmbpf
