#include "sources/clock.hpp"

#include <ctime>

namespace shmbpf {

namespace {

int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

} // namespace

uint64_t boottime_ns() { return static_cast<uint64_t>(clock_ns(CLOCK_BOOTTIME)); }

int64_t boot_to_realtime_ns() {
  // Bracket the realtime read between two boottime reads and use their
  // midpoint, which halves the error from being preempted in between.
  const int64_t b1 = clock_ns(CLOCK_BOOTTIME);
  const int64_t r = clock_ns(CLOCK_REALTIME);
  const int64_t b2 = clock_ns(CLOCK_BOOTTIME);
  return r - (b1 + (b2 - b1) / 2);
}

int64_t realtime_s() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}

std::chrono::nanoseconds thread_cpu() {
  return std::chrono::nanoseconds(clock_ns(CLOCK_THREAD_CPUTIME_ID));
}

} // namespace shmbpf
