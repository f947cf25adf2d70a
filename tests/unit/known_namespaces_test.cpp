// The mount namespaces samples read through (live/known_namespaces): when
// a walk of every process is due.
#include "live/known_namespaces.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::vector<MountNamespace> namespaces(std::initializer_list<uint32_t> ids) {
  std::vector<MountNamespace> out;
  for (uint32_t id : ids) {
    MountNamespace m;
    m.mntns = id;
    m.pid = static_cast<int>(id) + 1000;
    out.push_back(m);
  }
  return out;
}

TEST(KnownNamespaces, WalksFirstThenEveryTenSeconds) {
  const Clock::time_point t{1h};
  KnownNamespaces k;
  EXPECT_TRUE(k.walk_due(t)); // nothing known
  k.replace(namespaces({1, 2}), false, {});
  EXPECT_TRUE(k.walk_due(t)); // known from a scan, never walked
  k.replace(namespaces({1, 2}), true, t);
  EXPECT_FALSE(k.walk_due(t + 9s));
  EXPECT_TRUE(k.walk_due(t + 10s));
  // A sample that read the same representatives again: no walk.
  k.replace(namespaces({1, 2}), false, t + 10s);
  EXPECT_TRUE(k.walk_due(t + 10s));
  ASSERT_EQ(k.list().size(), 2u);
  EXPECT_EQ(k.list()[1].pid, 1002);
}

TEST(KnownNamespaces, AnEventFromAnUnknownNamespaceAsksForAWalk) {
  const Clock::time_point t{1h};
  KnownNamespaces k;
  k.replace(namespaces({1, 2}), true, t);
  k.saw(1);
  k.saw(0);
  k.saw(2);
  EXPECT_FALSE(k.walk_due(t + 1s));
  k.saw(3);
  EXPECT_TRUE(k.walk_due(t + 1s));
  k.replace(namespaces({1, 2, 3}), true, t + 1s);
  EXPECT_FALSE(k.walk_due(t + 2s));
  k.saw(3);
  EXPECT_FALSE(k.walk_due(t + 2s));
}

} // namespace
} // namespace shmbpf
