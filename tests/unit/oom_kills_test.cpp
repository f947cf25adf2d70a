// OomKillLog (model/oom_kills): a bounded history, counts by cgroup, and a
// victim named by its exit within a window; OomKill's shmem share.
#include "model/oom_kills.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

OomKill kill_of(uint32_t pid, uint64_t cgroup, uint64_t ts) {
  OomKill k;
  k.pid = pid;
  k.cgroup_id = cgroup;
  k.ts_ns = ts;
  return k;
}

TEST(OomKillLog, KeepsTheRecentAndCountsEveryKill) {
  OomKillLog log;
  for (uint32_t i = 0; i < OomKillLog::kRecent + 10; ++i)
    log.record(kill_of(i, i % 2, i * kSec));
  EXPECT_EQ(log.total(), OomKillLog::kRecent + 10);
  ASSERT_EQ(log.recent().size(), OomKillLog::kRecent);
  EXPECT_EQ(log.recent().front().pid, 10u);
  EXPECT_EQ(log.recent().back().pid, OomKillLog::kRecent + 9);
  EXPECT_EQ(log.by_cgroup().at(0).count, (OomKillLog::kRecent + 10) / 2);
  EXPECT_EQ(log.by_cgroup().at(1).count, (OomKillLog::kRecent + 10) / 2);
  EXPECT_EQ(log.by_cgroup().at(1).last_ns, (OomKillLog::kRecent + 9) * kSec);
}

TEST(OomKillLog, TheVictimsExitNamesItAndItsCountStays) {
  OomKillLog log;
  log.record(kill_of(50, 7, 10 * kSec));
  log.saw_exit(51, "other", 10 * kSec); // not the victim
  EXPECT_EQ(log.recent().back().comm, "");
  log.saw_exit(50, "victim", 10 * kSec + 1);
  EXPECT_EQ(log.recent().back().comm, "victim");
  // Counted where it was placed: a counter never moves nor goes down.
  EXPECT_EQ(log.recent().back().cgroup_id, 7u);
  EXPECT_EQ(log.by_cgroup().at(7), (OomCount{1, 10 * kSec}));
  EXPECT_EQ(log.total(), 1u);
}

// A user may make cgroups and get killed in each: the counts are bounded,
// the cgroup killed in longest ago going first.
TEST(OomKillLog, CountsAreKeptForABoundedNumberOfCgroups) {
  OomKillLog log;
  for (uint64_t i = 0; i < OomKillLog::kMaxCgroups + 5; ++i)
    log.record(kill_of(1, 1000 + i, (i + 1) * kSec));
  EXPECT_EQ(log.by_cgroup().size(), OomKillLog::kMaxCgroups);
  EXPECT_FALSE(log.by_cgroup().contains(1000));
  EXPECT_FALSE(log.by_cgroup().contains(1004));
  EXPECT_TRUE(log.by_cgroup().contains(1005));
  EXPECT_EQ(log.total(), OomKillLog::kMaxCgroups + 5);
}

TEST(OomKillLog, ANameTheKernelGaveStaysAndLateExitsAreIgnored) {
  OomKillLog log;
  OomKill k = kill_of(50, 7, 10 * kSec);
  k.comm = "python3";
  log.record(k);
  log.saw_exit(50, "renamed", 11 * kSec);
  EXPECT_EQ(log.recent().back().comm, "python3");
  log.record(kill_of(60, 7, 12 * kSec));
  // A pid reused long after: not the victim's exit.
  log.saw_exit(60, "later", 12 * kSec + OomKillLog::kExitWithinNs + 1);
  EXPECT_EQ(log.recent().back().comm, "");
}

TEST(OomKill, ShmemShareOfTheChargeNeverPastAll) {
  OomKill k;
  EXPECT_FALSE(k.shmem_share());
  k.memory = CgroupMemory{.shmem = 8, .usage = 0, .limit = {}};
  EXPECT_FALSE(k.shmem_share());
  k.memory = CgroupMemory{.shmem = 24, .usage = 32, .limit = {32}};
  EXPECT_DOUBLE_EQ(*k.shmem_share(), 0.75);
  k.memory = CgroupMemory{.shmem = 40, .usage = 32, .limit = {32}};
  EXPECT_DOUBLE_EQ(*k.shmem_share(), 1.0);
  // Of the limit: the victim's heap has left the usage read after the kill.
  k.memory = CgroupMemory{.shmem = 10, .usage = 12, .limit = {100}};
  EXPECT_DOUBLE_EQ(*k.shmem_share(), 0.1);
  // Without a limit (the host ran out), of the usage.
  k.memory = CgroupMemory{.shmem = 10, .usage = 40, .limit = {}};
  EXPECT_DOUBLE_EQ(*k.shmem_share(), 0.25);
}

} // namespace
} // namespace shmbpf
