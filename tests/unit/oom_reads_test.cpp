// The budget of the reads an OOM kill's record triggers (live/oom_reads):
// at most ReadBudget::kPerSecond in any second of the records' time.
#include "live/oom_reads.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

TEST(ReadBudget, AFewASecondThenWaitForTheNext) {
  ReadBudget b;
  for (uint32_t i = 0; i < ReadBudget::kPerSecond; ++i)
    EXPECT_TRUE(b.take(10 * kSec + i)) << i;
  EXPECT_FALSE(b.take(10 * kSec + ReadBudget::kPerSecond));
  EXPECT_FALSE(b.take(11 * kSec - 1));
  EXPECT_TRUE(b.take(11 * kSec));
  // A clock that goes back (records of two CPUs) starts a new second.
  EXPECT_TRUE(b.take(5 * kSec));
}

TEST(ReadBudget, ItsOwnRate) {
  ReadBudget walks(2);
  EXPECT_TRUE(walks.take(kSec));
  EXPECT_TRUE(walks.take(kSec + 1));
  EXPECT_FALSE(walks.take(kSec + 2));
  EXPECT_TRUE(walks.take(2 * kSec));
}

TEST(OomMemory, OnlyOomEventsAreRead) {
  OomMemory m;
  Event e;
  e.type = EventType::exit;
  e.target_pid = static_cast<uint32_t>(getpid());
  m.fill(e);
  EXPECT_FALSE(e.memcg);
}

} // namespace
} // namespace shmbpf
