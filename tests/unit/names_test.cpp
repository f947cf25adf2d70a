// The tracked-name table of bpf/shmbpf_names.h: the same code the BPF
// programs run, here on ordinary memory.
#include <linux/types.h>

#include "shmbpf_names.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

struct Hint {
  __u32 dev = 0;
  __u64 ino = 0;
  bool found = false;
};

Hint get(shmbpf_name_bucket &b, __u64 key) {
  Hint h;
  h.found = shmbpf_name_get(&b, key, &h.dev, &h.ino) != 0;
  return h;
}

size_t used(const shmbpf_name_bucket &b) {
  size_t n = 0;
  for (__u64 key : b.key)
    n += key > SHMBPF_NAME_BUSY;
  return n;
}

TEST(NameTable, KeysNeverLookFreeOrBusy) {
  EXPECT_EQ(shmbpf_name_key(0), 2u);
  EXPECT_EQ(shmbpf_name_key(1), 3u);
  EXPECT_EQ(shmbpf_name_key(2), 2u);
  EXPECT_EQ(shmbpf_name_key(~0ULL), ~0ULL);
}

TEST(NameTable, BucketFoldsTheHighHalf) {
  // Keys equal in their low 32 bits land in different buckets.
  EXPECT_NE(shmbpf_name_bucket_of(0x1'0000'0005ULL, 7), shmbpf_name_bucket_of(0x2'0000'0005ULL, 7));
  for (__u64 k : {2ULL, 0xdeadbeefcafef00dULL, ~0ULL})
    EXPECT_LE(shmbpf_name_bucket_of(k, 1023), 1023u);
}

TEST(NameTable, PutGetRemove) {
  shmbpf_name_bucket b{};
  EXPECT_FALSE(get(b, 42).found);
  EXPECT_EQ(shmbpf_name_put(&b, 42, 7, 1000, 1), SHMBPF_NAME_ADDED);
  Hint h = get(b, 42);
  ASSERT_TRUE(h.found);
  EXPECT_EQ(h.dev, 7u);
  EXPECT_EQ(h.ino, 1000u);
  EXPECT_FALSE(get(b, 43).found);
  EXPECT_EQ(shmbpf_name_remove(&b, 43), 0);
  EXPECT_EQ(shmbpf_name_remove(&b, 42), 1);
  EXPECT_FALSE(get(b, 42).found);
  EXPECT_EQ(used(b), 0u);
}

TEST(NameTable, ReplaceLastFileWinsOtherwiseFirst) {
  shmbpf_name_bucket b{};
  ASSERT_EQ(shmbpf_name_put(&b, 42, 7, 1, 0), SHMBPF_NAME_ADDED);
  EXPECT_EQ(shmbpf_name_put(&b, 42, 7, 2, 0), SHMBPF_NAME_KEPT);
  EXPECT_EQ(get(b, 42).ino, 1u);
  EXPECT_EQ(shmbpf_name_put(&b, 42, 8, 3, 1), SHMBPF_NAME_ADDED);
  EXPECT_EQ(get(b, 42).dev, 8u);
  EXPECT_EQ(get(b, 42).ino, 3u);
  EXPECT_EQ(used(b), 1u) << "a rewrite reuses the name's slot";
}

TEST(NameTable, FullBucketRefusesNewNamesOnly) {
  shmbpf_name_bucket b{};
  for (__u64 k = 10; k < 10 + SHMBPF_NAME_WAYS; ++k)
    ASSERT_EQ(shmbpf_name_put(&b, k, 1, k, 1), SHMBPF_NAME_ADDED);
  EXPECT_EQ(shmbpf_name_put(&b, 99, 1, 99, 1), SHMBPF_NAME_FULL);
  EXPECT_EQ(shmbpf_name_put(&b, 99, 1, 99, 0), SHMBPF_NAME_FULL);
  EXPECT_EQ(shmbpf_name_put(&b, 12, 1, 1200, 1), SHMBPF_NAME_ADDED);
  EXPECT_EQ(shmbpf_name_put(&b, 13, 1, 1300, 0), SHMBPF_NAME_KEPT);
  EXPECT_EQ(get(b, 12).ino, 1200u);
  ASSERT_EQ(shmbpf_name_remove(&b, 15), 1);
  EXPECT_EQ(shmbpf_name_put(&b, 99, 1, 99, 0), SHMBPF_NAME_ADDED);
  EXPECT_EQ(get(b, 99).ino, 99u);
  EXPECT_FALSE(get(b, 15).found);
}

TEST(NameTable, BusySlotReadsAsAbsentAndIsNotClaimed) {
  shmbpf_name_bucket b{};
  // Name 42 in slot 0, being rewritten by another writer.
  b.key[0] = SHMBPF_NAME_BUSY;
  b.ino[0] = 5;
  EXPECT_FALSE(get(b, 42).found);
  EXPECT_EQ(shmbpf_name_remove(&b, 42), 0);
  ASSERT_EQ(shmbpf_name_put(&b, 42, 7, 1, 1), SHMBPF_NAME_ADDED);
  EXPECT_EQ(b.key[0], SHMBPF_NAME_BUSY);
  EXPECT_EQ(b.ino[0], 5u);
  EXPECT_EQ(b.key[1], 42u);
}

TEST(NameTable, DuplicatesReadTheFirstAndAreAllRemoved) {
  // Two CPUs inserting one new name at once can each claim a slot.
  shmbpf_name_bucket b{};
  b.key[2] = b.key[5] = 42;
  b.ino[2] = 200;
  b.ino[5] = 500;
  EXPECT_EQ(get(b, 42).ino, 200u);
  EXPECT_EQ(shmbpf_name_put(&b, 42, 7, 300, 1), SHMBPF_NAME_ADDED);
  EXPECT_EQ(get(b, 42).ino, 300u);
  EXPECT_EQ(shmbpf_name_remove(&b, 42), 2);
  EXPECT_FALSE(get(b, 42).found);
}

TEST(NameTable, SwapOnlyWhileTheOldValueIsThere) {
  shmbpf_name_bucket b{};
  ASSERT_EQ(shmbpf_name_put(&b, 42, 7, 1, 0), SHMBPF_NAME_ADDED);
  EXPECT_EQ(shmbpf_name_swap(&b, 42, 7, 2, 7, 3), 0);
  EXPECT_EQ(get(b, 42).ino, 1u) << "another file's name stays";
  EXPECT_EQ(b.key[0], 42u) << "and is published again";
  EXPECT_EQ(shmbpf_name_swap(&b, 42, 7, 1, 8, 3), 1);
  EXPECT_EQ(get(b, 42).dev, 8u);
  EXPECT_EQ(get(b, 42).ino, 3u);
  EXPECT_EQ(shmbpf_name_swap(&b, 43, 7, 1, 8, 3), 0);
  EXPECT_FALSE(get(b, 43).found);
}

// Threads with disjoint names share one bucket: a slot is never claimed
// twice (each reads back its own value) and nothing stays busy.
TEST(NameTable, ConcurrentWritersNeverShareASlot) {
  std::vector<shmbpf_name_bucket> table(1);
  constexpr int kThreads = 4, kRounds = 20000;
  std::atomic<int> bad{0}, full{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        // Five names per thread in flight: 20 names for 16 slots, so
        // the bucket fills up now and then.
        __u64 keys[5];
        for (int j = 0; j < 5; ++j) {
          keys[j] = 2 + static_cast<__u64>(t) * 1000 + static_cast<__u64>((r + j) % 11);
          shmbpf_name_bucket &b = table[shmbpf_name_bucket_of(keys[j], 0)];
          const __u64 ino = static_cast<__u64>(r) * 8 + static_cast<__u64>(j);
          if (shmbpf_name_put(&b, keys[j], static_cast<__u32>(t), ino, 1) == SHMBPF_NAME_FULL) {
            ++full;
            keys[j] = 0;
            continue;
          }
          Hint h = get(b, keys[j]);
          if (!h.found || h.dev != static_cast<__u32>(t) || h.ino != ino)
            ++bad;
        }
        for (__u64 k : keys)
          if (k)
            shmbpf_name_remove(&table[shmbpf_name_bucket_of(k, 0)], k);
      }
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(bad.load(), 0);
  for (const shmbpf_name_bucket &b : table)
    for (__u64 key : b.key)
      EXPECT_EQ(key, SHMBPF_NAME_EMPTY);
  RecordProperty("full", full.load());
}

} // namespace
} // namespace shmbpf::test
