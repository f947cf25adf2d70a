#include "sources/clock.hpp"

#include <ctime>

namespace shmbpf {

namespace {

uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

} // namespace

uint64_t boottime_ns() { return clock_ns(CLOCK_BOOTTIME); }

EngineConfig engine_config_now() {
  EngineConfig cfg;
  cfg.start_ns = boottime_ns();
  cfg.realtime_offset_ns =
      static_cast<int64_t>(clock_ns(CLOCK_REALTIME)) - static_cast<int64_t>(cfg.start_ns);
  return cfg;
}

} // namespace shmbpf
