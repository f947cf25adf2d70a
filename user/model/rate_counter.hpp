// A rate of events that decays exponentially (a 10 s time constant), so
// that `top` shows recent activity, with the count since start beside it.
// Pure: times are the events' CLOCK_BOOTTIME nanoseconds.
#pragma once

#include <cstdint>

namespace shmbpf {

struct RateCounter {
  uint64_t count = 0;
  uint64_t last_ns = 0;
  double ewma = 0; // events per second at last_ns

  // One event at ts_ns (one older than the last counts, and decays nothing).
  void hit(uint64_t ts_ns);
  // Events per second at now_ns: the rate at the last event, decayed since.
  double rate(uint64_t now_ns) const;
};

} // namespace shmbpf
