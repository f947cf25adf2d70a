// The decaying rate top shows beside each count.
#include "model/rate_counter.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

TEST(RateCounter, ASteadyRateConvergesToItAndDecaysOnceItStops) {
  RateCounter r;
  EXPECT_EQ(r.rate(5 * kSec), 0);
  // Ten a second for a minute: six time constants, within 0.3% of 10/s.
  for (uint64_t i = 1; i <= 600; ++i)
    r.hit(i * kSec / 10);
  EXPECT_EQ(r.count, 600u);
  EXPECT_NEAR(r.rate(60 * kSec), 10.0, 0.1);
  // Ten seconds of nothing: down by e.
  EXPECT_NEAR(r.rate(70 * kSec), r.rate(60 * kSec) / std::exp(1.0), 0.01);
  EXPECT_LT(r.rate(200 * kSec), 0.01);
}

TEST(RateCounter, AnEventOlderThanTheLastCountsAndDecaysNothing) {
  RateCounter r;
  r.hit(10 * kSec);
  const double before = r.rate(10 * kSec);
  r.hit(9 * kSec); // events from two CPUs, a little out of order
  EXPECT_EQ(r.count, 2u);
  EXPECT_EQ(r.last_ns, 10 * kSec);
  EXPECT_NEAR(r.rate(10 * kSec), 2 * before, 1e-9);
  // A reading before the last event decays nothing either.
  EXPECT_EQ(r.rate(5 * kSec), r.rate(10 * kSec));
}

} // namespace
} // namespace shmbpf
