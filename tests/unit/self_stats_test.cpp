// The agent's own process (process_* metrics) from /proc/self/stat.
#include "sources/self_stats.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

namespace shmbpf {
namespace {

// A real line's shape, with a command name that holds ") (" and spaces.
const std::string kStat =
    "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 3 0 100000 "
    "943718400 20480 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

TEST(SelfStats, FieldsAfterTheLastParenthesis) {
  const auto s = parse_self_stat(kStat, 100, 4096, 1'700'000'000LL * 1'000'000'000);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0); // (250 + 50) ticks at 100 a second
  EXPECT_EQ(s->virtual_bytes, 943718400u);
  EXPECT_EQ(s->resident_bytes, 20480u * 4096);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1'700'000'000.0 + 1000.0); // 100000 ticks after boot
}

TEST(SelfStats, ATruncatedOrBrokenLineIsNothing) {
  EXPECT_FALSE(parse_self_stat("", 100, 4096, 0));
  EXPECT_FALSE(parse_self_stat("1 (x) S 1 2 3", 100, 4096, 0));
  EXPECT_FALSE(parse_self_stat(kStat.substr(0, kStat.find("943718400")), 100, 4096, 0));
  std::string bad = kStat;
  bad.replace(bad.find(" 250 "), 5, " x50 ");
  EXPECT_FALSE(parse_self_stat(bad, 100, 4096, 0));
  EXPECT_FALSE(parse_self_stat(kStat, 0, 4096, 0));
}

TEST(SelfStats, ThisProcessAsTheKernelCountsIt) {
  const auto s = read_self_stats();
  ASSERT_TRUE(s);
  EXPECT_GT(s->resident_bytes, 0u);
  EXPECT_GE(s->virtual_bytes, s->resident_bytes);
  EXPECT_GE(s->open_fds, 3u); // stdin, stdout, stderr at least
  EXPECT_GT(s->max_fds, s->open_fds);
  const double now = static_cast<double>(time(nullptr));
  EXPECT_LE(s->start_time_seconds, now + 1);
  EXPECT_GT(s->start_time_seconds, now - 3600);
}

} // namespace
} // namespace shmbpf
