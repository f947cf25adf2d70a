#include "model/rate_counter.hpp"

#include "model/types.hpp"

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
  return ewma * std::exp(-static_cast<double>(sat_sub(now_ns, last_ns)) / 1e9 / kRateTauS);
}

} // namespace shmbpf
