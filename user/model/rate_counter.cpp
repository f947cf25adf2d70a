#include "model/rate_counter.hpp"

#include <algorithm>
#include <cmath>

namespace shmbpf {

namespace {

constexpr double kRateTauS = 10.0; // decay time constant

} // namespace

void RateCounter::hit(uint64_t ts_ns) {
  if (count > 0 && ts_ns > last_ns)
    ewma *= std::exp(-static_cast<double>(ts_ns - last_ns) / 1e9 / kRateTauS);
  ewma += 1.0 / kRateTauS;
  last_ns = std::max(last_ns, ts_ns);
  ++count;
}

double RateCounter::rate(uint64_t now_ns) const {
  if (count == 0)
    return 0;
  const uint64_t dt = now_ns > last_ns ? now_ns - last_ns : 0;
  return ewma * std::exp(-static_cast<double>(dt) / 1e9 / kRateTauS);
}

} // namespace shmbpf
