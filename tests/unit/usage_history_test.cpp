// The daemon's usage history from synthetic samples: what it keeps (time
// and memory bounds, thinning), which samples a window takes, and growth
// judged over a window as find_growth judges the same samples.
#include "model/usage_history.hpp"
#include "views/leaks_view.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMs = 1'000'000;

// A sample at t_ns of processes (pid, bytes) and one mount.
UsageSample usage(uint64_t t_ns, std::vector<std::pair<std::string, uint64_t>> procs,
                  uint64_t mount_bytes = 0) {
  UsageSample u;
  u.t_ns = t_ns;
  for (auto &[pid, bytes] : procs)
    u.subjects.push_back({"process", pid, "comm", bytes});
  u.subjects.push_back({"mount", "/dev/shm", "4026531841", mount_bytes});
  return u;
}

std::vector<uint64_t> times(const UsageWindow &w) {
  std::vector<uint64_t> out;
  for (const auto &s : w.samples)
    out.push_back(s->t_ns);
  return out;
}

TEST(UsageHistory, KeepsTheLongestWindowAndOneSampleBeforeIt) {
  UsageHistory h(HistoryLimits{10 * kSec, size_t{1} << 30});
  for (uint64_t t = 0; t <= 30; ++t)
    h.add(usage(100 * kSec + t * kSec, {{"1", t}}));
  // 120..130 s: a window of 10 s is covered in full, nothing older is kept.
  EXPECT_EQ(h.size(), 11u);
  EXPECT_EQ(h.span_ns(), 10 * kSec);
  const UsageWindow w = h.window(10 * kSec);
  EXPECT_TRUE(w.span.complete);
  EXPECT_DOUBLE_EQ(w.span.requested_s, 10.0);
  EXPECT_DOUBLE_EQ(w.span.covered_s, 10.0);
  EXPECT_EQ(w.span.samples, 11u);
  EXPECT_EQ(w.samples.front()->t_ns, 120 * kSec);
  // A window longer than what is kept is what there is, and says so.
  const UsageWindow longer = h.window(11 * kSec);
  EXPECT_FALSE(longer.span.complete);
  EXPECT_DOUBLE_EQ(longer.span.covered_s, 10.0);
}

TEST(UsageHistory, AWindowStartsAtTheLastSampleAtOrBeforeItsStart) {
  UsageHistory h;
  // Samples about a second apart, as the monitor's come.
  for (uint64_t t : {0u, 1'100u, 2'050u, 3'000u, 4'200u, 5'000u})
    h.add(usage(50 * kSec + t * kMs, {}));
  // The last 2 s from 55.0: the sample at 53.0 exactly.
  EXPECT_EQ(times(h.window(2 * kSec)),
            (std::vector<uint64_t>{53'000 * kMs, 54'200 * kMs, 55'000 * kMs}));
  // The last 2.5 s from 55.0 start at 52.5: from 52.05, which covers them.
  const UsageWindow w = h.window(2'500 * kMs);
  EXPECT_EQ(w.samples.front()->t_ns, 52'050 * kMs);
  EXPECT_TRUE(w.span.complete);
  EXPECT_NEAR(w.span.covered_s, 2.95, 1e-9);
  // Shorter than one gap: the newest and the one before.
  EXPECT_EQ(h.window(100 * kMs).samples.size(), 2u);
}

TEST(UsageHistory, ADaemonYoungerThanTheWindowUsesWhatItHas) {
  UsageHistory h;
  EXPECT_TRUE(h.window(60 * kSec).samples.empty());
  EXPECT_FALSE(h.window(60 * kSec).span.complete);
  for (uint64_t t = 0; t <= 5; ++t)
    h.add(usage(7 * kSec + t * kSec, {{"42", 4096 * (t + 1)}}));
  const UsageWindow w = h.window(60 * kSec);
  EXPECT_FALSE(w.span.complete);
  EXPECT_DOUBLE_EQ(w.span.requested_s, 60.0);
  EXPECT_DOUBLE_EQ(w.span.covered_s, 5.0);
  EXPECT_EQ(w.span.samples, 6u);
  const auto g = find_growth(w);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].id, "42");
  EXPECT_EQ(g[0].from_bytes, 4096u);
  EXPECT_EQ(g[0].to_bytes, 6 * 4096u);
  EXPECT_DOUBLE_EQ(g[0].seconds, 5.0);
}

TEST(UsageHistory, GrowthOverAWindowIsFindGrowthOverItsSamples) {
  // 1 grows throughout; 2 grows for the first 5 s, then stays; 3 dips once
  // at 7 s; 4 appears at 3 s and grows; the mount grows from 4 s on.
  std::vector<UsageSample> all;
  UsageHistory h;
  for (uint64_t t = 0; t <= 10; ++t) {
    std::vector<std::pair<std::string, uint64_t>> procs = {
        {"1", 100 * t}, {"2", 100 * std::min<uint64_t>(t, 5)}, {"3", t == 7 ? 0 : 10 * t}};
    if (t >= 3)
      procs.push_back({"4", t});
    all.push_back(usage(t * kSec + 1, procs, 1000 + 10 * std::max<uint64_t>(t, 4)));
    h.add(all.back());
  }
  auto ids = [](const std::vector<GrowthFinding> &g) {
    std::vector<std::string> out;
    for (const auto &f : g)
      out.push_back(f.what + " " + f.id);
    std::sort(out.begin(), out.end());
    return out;
  };
  for (uint64_t window_s : {2u, 4u, 6u, 10u}) {
    const UsageWindow w = h.window(window_s * kSec);
    const std::vector<UsageSample> same(all.end() - static_cast<long>(w.samples.size()), all.end());
    ASSERT_EQ(times(w).front(), same.front().t_ns) << window_s;
    const auto got = find_growth(w);
    const auto want = find_growth(same);
    EXPECT_EQ(ids(got), ids(want)) << window_s;
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      EXPECT_EQ(got[i].from_bytes, want[i].from_bytes);
      EXPECT_EQ(got[i].to_bytes, want[i].to_bytes);
      EXPECT_DOUBLE_EQ(got[i].seconds, want[i].seconds);
    }
  }
  // The last 2 s: 2 is flat, 3 rises again after its dip.
  EXPECT_EQ(ids(find_growth(h.window(2 * kSec))),
            (std::vector<std::string>{"mount /dev/shm", "process 1", "process 3", "process 4"}));
  // The last 10 s: 2 stopped growing (still a steady rise), 3 fell, 4 came late.
  EXPECT_EQ(ids(find_growth(h.window(10 * kSec))),
            (std::vector<std::string>{"mount /dev/shm", "process 1", "process 2"}));
}

TEST(UsageHistory, MemoryBoundThinsOlderSamplesMoreAndKeepsTheSpan) {
  constexpr size_t kMax = 256 << 10;
  UsageHistory h(HistoryLimits{900 * kSec, kMax});
  // 200 processes a sample, one replaced by a new pid every 30 s.
  for (uint64_t t = 0; t < 900; ++t) {
    std::vector<std::pair<std::string, uint64_t>> procs;
    for (uint64_t p = 0; p < 200; ++p)
      procs.push_back({std::to_string(p + t / 30), p});
    h.add(usage(1000 * kSec + t * kSec, procs));
    ASSERT_LE(h.memory_bytes(), kMax) << t;
  }
  // Fewer samples than seconds, the span intact.
  EXPECT_LT(h.size(), 100u);
  EXPECT_GT(h.size(), 20u);
  EXPECT_EQ(h.span_ns(), 899 * kSec);
  const UsageWindow all = h.window(899 * kSec);
  EXPECT_TRUE(all.span.complete);
  EXPECT_EQ(all.samples.size(), h.size());
  // Recent seconds keep their resolution; every window has samples enough
  // to judge growth by.
  EXPECT_EQ(h.window(5 * kSec).samples.size(), 6u);
  size_t last = 0;
  for (uint64_t s : {10u, 60u, 300u, 899u}) {
    const size_t n = h.window(s * kSec).samples.size();
    EXPECT_GE(n, 6u) << s;
    EXPECT_GE(n, last) << s;
    last = n;
  }
  // Subjects no sample has are forgotten.
  EXPECT_LE(h.subjects(), 200 + 900 / 30 + 1);
}

TEST(UsageHistory, SubjectsOfDroppedSamplesAreForgotten) {
  UsageHistory h(HistoryLimits{5 * kSec, size_t{1} << 30});
  for (uint64_t t = 0; t < 100; ++t)
    h.add(usage(t * kSec, {{std::to_string(t), 1}}));
  // Six samples (95..99 s and the one at 94 s), each its own pid, and the mount.
  EXPECT_EQ(h.size(), 6u);
  EXPECT_EQ(h.subjects(), 7u);
}

TEST(UsageHistory, AWindowOutlivesTheSamplesItHolds) {
  UsageHistory h(HistoryLimits{3 * kSec, size_t{1} << 30});
  for (uint64_t t = 0; t <= 3; ++t)
    h.add(usage(t * kSec, {{"7", 10 * t}}));
  UsageWindow w = h.window(3 * kSec);
  // The history moves on and lets go of every sample the window has.
  for (uint64_t t = 4; t <= 20; ++t)
    h.add(usage(t * kSec, {{"8", 1}}));
  EXPECT_EQ(h.size(), 4u);
  EXPECT_EQ(h.subjects(), 3u); // 7 is still the window's
  const auto g = find_growth(w);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].id, "7");
  EXPECT_EQ(g[0].name, "comm");
  EXPECT_EQ(g[0].to_bytes, 30u);
  // Once the window is gone, so is 7.
  w = {};
  h.add(usage(21 * kSec, {{"8", 1}}));
  EXPECT_EQ(h.subjects(), 2u);
}

TEST(UsageHistory, OlderSamplesAreIgnoredAndTwoAreAlwaysKept) {
  UsageHistory h(HistoryLimits{60 * kSec, 1});
  h.add(usage(10 * kSec, {{"1", 1}}));
  h.add(usage(9 * kSec, {{"1", 2}}));  // earlier: ignored
  h.add(usage(10 * kSec, {{"1", 3}})); // the same time: ignored
  EXPECT_EQ(h.size(), 1u);
  for (uint64_t t = 11; t <= 15; ++t)
    h.add(usage(t * kSec, {{"1", t}}));
  // Every sample is over a bound of one byte: the oldest and the newest stay.
  EXPECT_EQ(times(h.window(60 * kSec)), (std::vector<uint64_t>{10 * kSec, 15 * kSec}));
}

TEST(LeaksView, TheWindowInJsonAndAShortOneInText) {
  LeakReport r;
  EXPECT_FALSE(nlohmann::json::parse(leaks_json(r, 0)).contains("window"));
  r.window = GrowthWindow{60, 12.5, 13, false};
  const auto j = nlohmann::json::parse(leaks_json(r, 0));
  EXPECT_EQ(j["window"]["requested_s"], 60.0);
  EXPECT_EQ(j["window"]["covered_s"], 12.5);
  EXPECT_EQ(j["window"]["samples"], 13);
  EXPECT_EQ(j["window"]["complete"], false);
  std::string t = leaks_text(r, 0, 60);
  EXPECT_NE(t.find("no steady growth or SIGBUS fault seen over the last 12 s"), std::string::npos)
      << t;
  EXPECT_NE(t.find("note: growth judged over 12 s (13 samples), not the 60 s asked for"),
            std::string::npos)
      << t;
  r.growth.push_back({"process", "42", "grower", 4096, 8192, 12.5, 327.68});
  t = leaks_text(r, 0, 60);
  EXPECT_NE(t.find("growth: 1 still rising over the last 12 s"), std::string::npos) << t;
  EXPECT_NE(t.find("note: growth judged over 12 s"), std::string::npos) << t;
  r.window->complete = true;
  EXPECT_EQ(leaks_text(r, 0, 60).find("note:"), std::string::npos);
}

} // namespace
} // namespace shmbpf
