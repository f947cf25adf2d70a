// How the live loop spaces its rescans (live/monitor): never closer than
// the configured period, and further apart as a rescan grows costly; what
// it starts when, after lost records, and the cgroup lookups' turns.
#include "live/rescan_schedule.hpp"

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

using Next = RescanSchedule::Next;
using Clock = std::chrono::steady_clock;

RescanSchedule started_at(Clock::time_point t0, Duration cpu = {}) {
  RescanSchedule s({30s, 2s, 1s});
  s.began(t0, cpu);
  return s;
}

TEST(RescanSchedule, SamplesEverySecondAndRescansEveryPeriod) {
  const Clock::time_point t0{};
  RescanSchedule s = started_at(t0 + 1h);
  const auto t = t0 + 1h;
  EXPECT_EQ(s.next(t + 500ms, 0, false), Next::nothing);
  EXPECT_EQ(s.next(t + 1s, 0, false), Next::sample);
  EXPECT_EQ(s.next(t + 1500ms, 0, false), Next::nothing); // the sample took its turn
  EXPECT_EQ(s.next(t + 2s, 0, false), Next::sample);
  EXPECT_EQ(s.next(t + 30s, 0, false), Next::rescan);
  // Until the rescan is applied, it stays due.
  EXPECT_EQ(s.next(t + 31s, 0, false), Next::rescan);
  s.rescanned(t + 31s, t + 32s, 10ms);
  EXPECT_EQ(s.next(t + 33s, 0, false), Next::sample);
  EXPECT_EQ(s.next(t + 61s, 0, false), Next::sample); // not yet a rescan
  EXPECT_EQ(s.next(t + 62s, 0, false), Next::rescan);
}

TEST(RescanSchedule, TheFirstScansCostSpacesTheFirstRescan) {
  const Clock::time_point t{1h};
  // 100 ms of CPU at 1/800 of one CPU: 80 s, not 30.
  RescanSchedule s = started_at(t, 100ms);
  EXPECT_NE(s.next(t + 79s, 0, false), Next::rescan);
  EXPECT_EQ(s.next(t + 80s, 0, false), Next::rescan);
}

TEST(RescanSchedule, LostRecordsRescanSoonButNotOnEveryPoll) {
  const Clock::time_point t{1h};
  RescanSchedule s = started_at(t);
  // Within the loss gap of the last rescan: not yet.
  EXPECT_NE(s.next(t + 1s, 5, false), Next::loss_rescan);
  EXPECT_EQ(s.next(t + 2s, 5, false), Next::loss_rescan);
  s.rescanned(t + 2s, t + 3s, 10ms); // took 1 s of wall time: loss rescans 10 s apart
  // The loss was taken as seen; more is lost meanwhile.
  EXPECT_NE(s.next(t + 5s, 9, false), Next::loss_rescan);
  EXPECT_NE(s.next(t + 12s, 9, false), Next::loss_rescan);
  EXPECT_EQ(s.next(t + 13s, 9, false), Next::loss_rescan);
  s.rescanned(t + 13s, t + 14s, 10ms);
  // Nothing more lost: no loss rescan.
  EXPECT_NE(s.next(t + 40s, 9, false), Next::loss_rescan);
}

TEST(RescanSchedule, UnlinkedFilesComeBeforeASample) {
  const Clock::time_point t{1h};
  RescanSchedule s = started_at(t);
  EXPECT_EQ(s.next(t + 1s, 0, true), Next::unlinked);
  EXPECT_EQ(s.next(t + 1s, 0, false), Next::sample); // its turn was kept
  EXPECT_EQ(s.next(t + 30s, 0, true), Next::rescan); // a rescan settles them too
}

TEST(RescanSchedule, CgroupLookupsTakeTurns) {
  const Clock::time_point t{1h};
  RescanSchedule s = started_at(t);
  EXPECT_TRUE(s.resolve_new_cgroups(t));
  EXPECT_FALSE(s.resolve_new_cgroups(t + 99ms));
  EXPECT_TRUE(s.resolve_new_cgroups(t + 100ms));
  EXPECT_TRUE(s.resolve_all_cgroups(t));
  EXPECT_FALSE(s.resolve_all_cgroups(t + 9s));
  EXPECT_TRUE(s.resolve_all_cgroups(t + 10s));
}

} // namespace
} // namespace shmbpf
