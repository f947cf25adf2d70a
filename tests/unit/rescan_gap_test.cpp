// How the live loop spaces its rescans (live/monitor): never closer than
// the configured period, and further apart as a rescan grows costly.
#include "live/monitor.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace shmbpf {
namespace {

using namespace std::chrono_literals;
using Duration = std::chrono::steady_clock::duration;

TEST(RescanGap, CheapRescansKeepTheConfiguredPeriod) {
  EXPECT_EQ(rescan_gap(30s, Duration{}, 400), Duration(30s));
  // 50 ms of CPU in 30 s is 1/600: within a 1/400 share.
  EXPECT_EQ(rescan_gap(30s, 50ms, 400), Duration(30s));
  EXPECT_EQ(rescan_gap(30s, 75ms, 400), Duration(30s));
}

TEST(RescanGap, CostlyRescansAreSpacedToTheirShare) {
  // A rescan of 0.4 s: one every 160 s at 1/400.
  EXPECT_EQ(rescan_gap(30s, 400ms, 400), Duration(160s));
  EXPECT_EQ(rescan_gap(2s, 400ms, 10), Duration(4s));
  // Twice the cost, twice the gap: the share stays the same.
  EXPECT_EQ(rescan_gap(30s, 800ms, 400), 2 * rescan_gap(30s, 400ms, 400));
}

} // namespace
} // namespace shmbpf
