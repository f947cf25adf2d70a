// The events held back while a gather runs (live/held_events): handed back
// in order, in pieces, and their slots given back once all are taken.
#include "live/held_events.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace shmbpf {
namespace {

Event numbered(uint32_t pid) {
  Event e;
  e.pid = pid;
  e.path = "/dev/shm/f" + std::to_string(pid);
  return e;
}

TEST(HeldEvents, OldestFirstInPieces) {
  HeldEvents held;
  EXPECT_TRUE(held.empty());
  for (uint32_t i = 1; i <= 5; ++i)
    held.push(numbered(i));
  EXPECT_EQ(held.size(), 5u);
  std::vector<uint32_t> order;
  held.take(2, [&](Event &e) { order.push_back(e.pid); });
  EXPECT_EQ(held.size(), 3u);
  held.push(numbered(6)); // behind the ones still held
  held.take(100, [&](Event &e) { order.push_back(e.pid); });
  EXPECT_EQ(order, (std::vector<uint32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(held.peak(), 5u);
}

TEST(HeldEvents, SlotsAreReusedAndGivenBackWhenEmpty) {
  HeldEvents held;
  for (uint32_t i = 1; i <= 3; ++i)
    held.push(numbered(i));
  held.take(3, [](Event &) {});
  held.push(numbered(9));
  EXPECT_EQ(held.capacity(), 3u); // the first slot again, not a new one
  uint32_t got = 0;
  held.take(1, [&](Event &e) {
    got = e.pid;
    EXPECT_EQ(e.path, "/dev/shm/f9");
  });
  EXPECT_EQ(got, 9u);

  const size_t many = HeldEvents::kKeptSlots * 2;
  for (size_t i = 0; i < many; ++i)
    held.push(numbered(static_cast<uint32_t>(i)));
  EXPECT_EQ(held.peak(), many);
  held.take(many - 1, [](Event &) {});
  EXPECT_EQ(held.capacity(), many); // one still held: nothing given back
  held.take(1, [](Event &) {});
  EXPECT_EQ(held.capacity(), HeldEvents::kKeptSlots);
}

} // namespace
} // namespace shmbpf
