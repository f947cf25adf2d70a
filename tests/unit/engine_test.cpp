// The engine as a whole (model/engine.cpp): one key space for every
// segment, its table and indexes under random churn, and its scale.
#include "engine_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

namespace shmbpf {
namespace {

using namespace test;

TEST(Engine, SegmentKeysShareOneSpaceForFiles) {
  std::unordered_set<SegmentKey> keys;
  keys.insert(SegmentKey{Kind::tmpfs, 1, 2});
  EXPECT_TRUE(keys.count(SegmentKey{Kind::memfd, 1, 2}));
  EXPECT_FALSE(keys.count(SegmentKey{Kind::sysv, 1, 2}));
  EXPECT_FALSE(keys.count(SegmentKey{Kind::tmpfs, 2, 1}));
  EXPECT_TRUE(SegmentKey::file(1, 2) < SegmentKey::sysv(0, 0));
}

TEST(Engine, SmokeTwoHundredThousandSegments) {
  constexpr uint64_t kN = 200'000;
  EngineConfig cfg;
  cfg.expected_segments = kN;
  Engine engine(cfg);
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev));
  for (uint64_t i = 1; i <= kN; ++i) {
    uint32_t pid = 1000 + static_cast<uint32_t>(i % 4);
    engine.apply(
        create(pid, i, "/dev/shm/torch_" + std::to_string(pid) + "_7_" + std::to_string(i), i));
    engine.apply(resize(pid, i, 4096, 4096, i));
  }
  EXPECT_EQ(engine.segment_count(), kN);
  EXPECT_EQ(engine.mounts()[0].tracked_bytes, kN * 4096);
  EXPECT_EQ(engine.process(1001)->segments_held, kN / 4);

  // Unlink the first half in creation order, with and without inode hints.
  for (uint64_t i = 1; i <= kN / 2; ++i) {
    uint32_t pid = 1000 + static_cast<uint32_t>(i % 4);
    engine.apply(unlink_file(pid,
                             "/dev/shm/torch_" + std::to_string(pid) + "_7_" + std::to_string(i),
                             kN + i, i % 2 ? i : 0));
    engine.apply(free_pages(i, 4096, true, kN + i));
  }
  EXPECT_EQ(engine.segment_count(), kN); // unlinked but still held
  EXPECT_EQ(engine.mounts()[0].tracked_bytes, 0u + kN / 2 * 4096);
  for (uint32_t pid = 1000; pid < 1004; ++pid)
    engine.apply(exit_of(pid, 3 * kN));
  EXPECT_EQ(engine.segment_count(), kN / 2);
  EXPECT_EQ(engine.orphans(3 * kN, 0).size(), kN / 2);
  engine.reconcile_tmpfs(kDev, {}, 3 * kN);
  EXPECT_EQ(engine.segment_count(), 0u);
  EXPECT_EQ(engine.mounts()[0].tracked_bytes, 0u);
  EXPECT_EQ(engine.stats().gone, kN);
}

// Random creates (with inode reuse), opens, resizes, renames, unlinks (with
// and without a (dev, ino) hint), frees, exits and SysV segments, checked
// against a shadow of which keys are alive and under which path.
TEST(Engine, TableAndIndexesFollowRandomChurn) {
  Engine engine(starting_at(sec(1)));
  std::map<uint64_t, std::string> linked; // ino -> path of the live linked files we made
  std::mt19937 rng(42);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  uint64_t ts = sec(2);
  for (int step = 0; step < 20000; ++step) {
    const uint32_t pid = 100 + pick(8);
    const uint64_t ino = 1 + pick(600);
    const std::string path = "/dev/shm/f" + std::to_string(ino) + "_" + std::to_string(pick(3));
    switch (pick(9)) {
    case 0:
    case 1:
      if (!linked.count(ino)) {
        engine.apply(create(pid, ino, path, ts++));
        linked[ino] = path;
      }
      break;
    case 2:
      if (auto it = linked.find(ino); it != linked.end())
        engine.apply(open_file(pid, ino, it->second, ts++));
      break;
    case 3:
      if (linked.count(ino))
        engine.apply(resize(pid, ino, 4096 * pick(4), 4096 * pick(4), ts++));
      break;
    case 4:
    case 5:
      if (auto it = linked.find(ino); it != linked.end()) {
        // Half the unlinks carry no hint: only the path index finds them.
        engine.apply(unlink_file(pid, it->second, ts++, pick(2) ? ino : 0));
        linked.erase(it);
      }
      break;
    case 6:
      if (auto it = linked.find(ino); it != linked.end()) {
        const std::string to = "/dev/shm/r" + std::to_string(ino);
        Event e = process_event(EventType::rename, pid, ts++);
        e.kind = Kind::tmpfs;
        e.path = it->second;
        e.full_path = it->second;
        e.newpath = to;
        e.full_newpath = to;
        e.absolute = true;
        engine.apply(e);
        it->second = to;
      }
      break;
    case 7:
      engine.apply(exit_of(pid, ts++));
      break;
    case 8: {
      const int32_t shmid = static_cast<int32_t>(pick(50));
      if (pick(2))
        engine.apply(shmget(pid, shmid, 0x1000 + shmid, 4096, ts++));
      else
        engine.apply(sysv(EventType::shm_rmid, pid, shmid, ts++));
      break;
    }
    }
    if (step % 500 != 499)
      continue;
    // Every file we left linked is there under its path; unlinked ones may
    // live on (held, or pages left) but never as linked.
    size_t linked_files = 0;
    for (const SegmentInfo &s : engine.segments()) {
      ASSERT_TRUE(engine.contains(s.key));
      if (s.key.is_sysv() || s.state != SegmentState::linked)
        continue;
      ++linked_files;
      auto it = linked.find(s.key.ino_or_shmid);
      ASSERT_NE(it, linked.end()) << s.path;
      EXPECT_EQ(s.path, it->second);
    }
    EXPECT_EQ(linked_files, linked.size());
    // The one-pass processes() agrees with process(pid), which walks holds.
    for (const ProcessInfo &p : engine.processes()) {
      auto one = engine.process(p.pid);
      ASSERT_TRUE(one);
      EXPECT_EQ(p.segments_created, one->segments_created);
      EXPECT_EQ(p.bytes_created, one->bytes_created);
      EXPECT_EQ(p.segments_unheld, one->segments_unheld);
      EXPECT_EQ(p.segments_held, one->segments_held);
      EXPECT_EQ(p.bytes_held, one->bytes_held);
    }
  }
  // A copy has the same table and a working path index of its own.
  Engine copy = engine;
  ASSERT_EQ(copy.segment_count(), engine.segment_count());
  for (const auto &[ino, path] : linked) {
    copy.apply(unlink_file(100, path, ts++, 0));
    auto s = copy.segment(file_key(ino));
    EXPECT_TRUE(!s || s->state == SegmentState::unlinked) << path;
    auto orig = engine.segment(file_key(ino));
    ASSERT_TRUE(orig);
    EXPECT_EQ(orig->state, SegmentState::linked);
  }
}

} // namespace
} // namespace shmbpf
