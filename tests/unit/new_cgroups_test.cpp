// The cgroup ids events carry (live/new_cgroups): each new one once, and a
// few tries each to find its path.
#include "live/new_cgroups.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

TEST(NewCgroups, EachIdIsNewOnce) {
  NewCgroups c;
  EXPECT_FALSE(c.pending());
  for (uint64_t id : {7, 7, 0, 8, 7, 8, 9})
    c.saw(id);
  EXPECT_TRUE(c.pending());
  EXPECT_EQ(c.take(), (std::vector<uint64_t>{7, 8, 9}));
  EXPECT_FALSE(c.pending());
  c.saw(7);
  c.saw(10);
  EXPECT_EQ(c.take(), (std::vector<uint64_t>{10}));
}

TEST(NewCgroups, EachIdHasAFewTries) {
  NewCgroups c;
  for (int i = 0; i < NewCgroups::kTries; ++i)
    EXPECT_EQ(c.worth_resolving({5, 6}), (std::vector<uint64_t>{5, 6}));
  EXPECT_TRUE(c.worth_resolving({5, 6}).empty());
  EXPECT_EQ(c.worth_resolving({5, 11}), (std::vector<uint64_t>{11}));
}

} // namespace
} // namespace shmbpf
