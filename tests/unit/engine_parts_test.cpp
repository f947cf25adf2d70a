// Queries taken in parts (model/engine_parts.cpp): the same rows in the
// same order as the engine's own queries, the engine visited once per part
// (so the daemon lets its lock go in between), and a table that changes
// between parts lists every segment alive throughout exactly once.
#include "engine_fixture.hpp"
#include "model/engine_parts.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using namespace test;

// More segments than two parts hold, on two mounts, by 50 creators of whom
// the even ones exit (their files orphaned), some files resized.
constexpr uint64_t kFiles = 2 * Engine::kPartSlots + 1000;

Engine filled() {
  Engine engine = with_host_shm();
  for (uint64_t i = 0; i < kFiles; ++i) {
    const uint32_t pid = 100 + static_cast<uint32_t>(i % 50);
    // Paths out of slot order, so that the sort has work to do.
    engine.apply(create(pid, 1000 + i, "/dev/shm/f" + std::to_string((i * 7919) % kFiles), sec(1)));
    if (i % 3 == 0)
      engine.apply(resize(pid, 1000 + i, 4096 * (i % 5 + 1), 4096 * (i % 5 + 1), sec(1)));
  }
  for (uint32_t pid = 100; pid < 150; pid += 2)
    engine.apply(exit_of(pid, sec(2)));
  return engine;
}

template <class T> std::string text(const std::optional<T> &v) {
  return v ? std::to_string(*v) : "-";
}

// What tells two rows apart, as text.
std::string row(const SegmentInfo &s) {
  std::string holders;
  for (uint32_t pid : s.holders)
    holders += std::to_string(pid) + ",";
  return s.path + " " + std::to_string(s.key.dev_or_ipcns) + ":" +
         std::to_string(s.key.ino_or_shmid) + " bytes=" + std::to_string(s.bytes) +
         " age=" + text(s.age_ns) + " orphan=" + std::to_string(s.orphan) +
         " creator=" + std::to_string(s.creator.pid) + " holders=" + holders +
         " mount=" + s.mountpoint;
}

std::vector<std::string> rows(const std::vector<SegmentInfo> &segments) {
  std::vector<std::string> out;
  for (const SegmentInfo &s : segments)
    out.push_back(row(s));
  return out;
}

std::vector<std::string> rows(const std::vector<Orphan> &orphans) {
  std::vector<std::string> out;
  for (const Orphan &o : orphans)
    out.push_back(row(o.segment) + " orphan_age=" + std::to_string(o.age_ns));
  return out;
}

// visit_of, counting its calls.
EngineVisit counted(const Engine &engine, int &calls) {
  return [&engine, &calls](const std::function<void(const Engine &)> &read) {
    ++calls;
    read(engine);
    return true;
  };
}

TEST(EngineParts, SegmentsInPartsAreTheEnginesListInItsOrder) {
  const Engine engine = filled();
  const uint64_t now = sec(100);
  int calls = 0;
  auto parts = take_segments(counted(engine, calls), {}, now, sec(10));
  ASSERT_TRUE(parts);
  const std::vector<SegmentInfo> whole = engine.segments({}, now, sec(10));
  ASSERT_EQ(whole.size(), kFiles);
  EXPECT_EQ(rows(*parts), rows(whole));
  EXPECT_EQ(calls, 3); // the engine visited once per part

  // With a filter: the creator's segments only.
  SegmentFilter by_pid;
  by_pid.pid = 101;
  auto mine = take_segments(visit_of(engine), by_pid, now, sec(10));
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->size(), kFiles / 50 + (kFiles % 50 > 1));
  EXPECT_EQ(rows(*mine), rows(engine.segments(by_pid, now, sec(10))));
}

TEST(EngineParts, OrphansInPartsAreTheEnginesListInItsOrder) {
  const Engine engine = filled();
  const uint64_t now = sec(100);
  int calls = 0;
  auto parts = take_orphans(counted(engine, calls), now, sec(10));
  ASSERT_TRUE(parts);
  const std::vector<Orphan> whole = engine.orphans(now, sec(10));
  EXPECT_GT(whole.size(), kFiles / 3); // the exited creators' files
  EXPECT_EQ(rows(*parts), rows(whole));
  EXPECT_EQ(calls, 3);
  // Too young to be orphans: none, in parts or not.
  EXPECT_TRUE(take_orphans(visit_of(engine), now, sec(1000))->empty());
}

TEST(EngineParts, ATableThatChangesBetweenPartsListsEachLastingSegmentOnce) {
  Engine engine = filled();
  // Between parts, as the live loop would: files of the first part (already
  // listed) and of the last (not yet) go, and new ones come.
  int calls = 0;
  uint64_t next_ino = 1000 + kFiles;
  std::map<uint64_t, bool> gone; // ino -> listed before it went
  EngineVisit changing = [&](const std::function<void(const Engine &)> &read) {
    read(engine);
    if (++calls == 1) {
      for (uint64_t ino : {uint64_t{1000 + 2}, 1000 + kFiles - 2}) {
        const std::string path = engine.segment(file_key(ino))->path;
        engine.apply(exit_of(static_cast<uint32_t>(100 + (ino - 1000) % 50), sec(3)));
        engine.apply(free_pages(ino, 1 << 20, false, sec(3)));
        engine.apply(unlink_file(1, path, sec(3), ino));
        gone[ino] = ino < 1000 + Engine::kPartSlots;
      }
      for (int i = 0; i < 100; ++i, ++next_ino)
        engine.apply(create(7, next_ino, "/dev/shm/new" + std::to_string(i), sec(3)));
    }
    return true;
  };
  auto listed = take_segments(changing, {}, sec(100), sec(10));
  ASSERT_TRUE(listed);
  std::map<uint64_t, int> times;
  for (const SegmentInfo &s : *listed)
    ++times[s.key.ino_or_shmid];
  for (const auto &[ino, n] : times)
    EXPECT_EQ(n, 1) << "ino " << ino << " listed " << n << " times";
  // Every file that lasted is listed; one gone is listed only if its part
  // came before it went.
  for (uint64_t ino = 1000; ino < 1000 + kFiles; ++ino) {
    auto g = gone.find(ino);
    const bool expected = g == gone.end() || g->second;
    EXPECT_EQ(times.count(ino), expected ? 1u : 0u) << "ino " << ino;
  }
  // The list is still in order.
  for (size_t i = 1; i < listed->size(); ++i)
    EXPECT_LE((*listed)[i - 1].path, (*listed)[i].path);
}

TEST(EngineParts, NoEngineNoList) {
  const EngineVisit none = [](const std::function<void(const Engine &)> &) { return false; };
  EXPECT_FALSE(take_segments(none, {}, sec(1), 0));
  EXPECT_FALSE(take_orphans(none, sec(1), 0));
  // An empty engine is one part, and an empty list.
  Engine empty;
  int calls = 0;
  auto listed = take_segments(counted(empty, calls), {}, sec(1), 0);
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
  EXPECT_EQ(calls, 1);
}

} // namespace
} // namespace shmbpf
