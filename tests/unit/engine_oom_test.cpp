// The engine's OOM kills (model/engine_oom.cpp): whose cgroup a kill is
// counted in, its memory cgroup as read, the largest files charged to that
// cgroup, the name its victim's exit gives, and the containers' counts.
#include "engine_fixture.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

using namespace test;

const std::string kDockerId(64, 'c');

Event in_cgroup(Event e, uint64_t cgroup) {
  e.cgroup_id = cgroup;
  return e;
}

// The OOM killer chose target while pid's charge found no memory.
Event oom(uint32_t pid, uint64_t cgroup, uint32_t target, uint64_t ts) {
  Event e = in_cgroup(process_event(EventType::oom, pid, ts), cgroup);
  e.target_pid = target;
  e.memcg = CgroupMemory{.shmem = 24 * kMiB, .usage = 32 * kMiB, .limit = {32 * kMiB}};
  return e;
}

// The kills oom_groups reports at now for container id ("" the host).
uint64_t kills_of(const Engine &engine, uint64_t now, const std::string &id) {
  uint64_t n = 0;
  for (const FailureGroup &g : engine.oom_groups(now))
    if (g.container.id == id)
      n += g.count;
  return n;
}

// pid of cgroup made path and filled bytes of it (size bytes too).
void filled(Engine &engine, uint32_t pid, uint64_t cgroup, uint64_t ino, const std::string &path,
            uint64_t bytes) {
  engine.apply(in_cgroup(create(pid, ino, path, sec(1)), cgroup));
  engine.apply(in_cgroup(resize(pid, ino, bytes, bytes, sec(1)), cgroup));
}

TEST(EngineOom, AKillOfTheChargingTaskTakesItsCgroupMemoryAndFiles) {
  Engine engine;
  filled(engine, 100, 7, 1, "/dev/shm/big", 20 * kMiB);
  filled(engine, 100, 7, 2, "/dev/shm/small", 1 * kMiB);
  filled(engine, 200, 8, 3, "/dev/shm/other", 30 * kMiB); // another cgroup's
  engine.apply(oom(100, 7, 100, sec(2)));

  const auto kills = engine.oom_kills_since(0);
  ASSERT_EQ(kills.size(), 1u);
  const OomKill &k = kills[0];
  EXPECT_EQ(k.ts_ns, sec(2));
  EXPECT_EQ(k.pid, 100u);
  EXPECT_EQ(k.comm, "p100");
  EXPECT_EQ(k.cgroup_id, 7u);
  ASSERT_TRUE(k.memory);
  EXPECT_EQ(k.memory->limit.bytes, 32 * kMiB);
  ASSERT_TRUE(k.shmem_share());
  EXPECT_DOUBLE_EQ(*k.shmem_share(), 0.75);
  ASSERT_EQ(k.largest.size(), 2u);
  EXPECT_EQ(k.largest[0], (OomFile{"/dev/shm/big", 20 * kMiB, 20 * kMiB}));
  EXPECT_EQ(k.largest[1].path, "/dev/shm/small");
  EXPECT_EQ(engine.oom_kills(), 1u);
}

// Read a moment after the kill, the cgroup may have lost its /dev/shm with
// its container: the victim's mapped shared memory, the kernel's count at
// the kill, is the floor.
TEST(EngineOom, TheVictimsMappedSharedMemoryIsAFloor) {
  Engine engine;
  Event e = oom(100, 7, 100, sec(2));
  e.memcg->shmem = 0;
  e.victim_mem = true;
  e.victim_shmem_rss = 30 * kMiB;
  engine.apply(e);
  const OomKill k = engine.oom_kills_since(0).at(0);
  ASSERT_TRUE(k.memory);
  EXPECT_EQ(k.memory->shmem, 30 * kMiB);
  ASSERT_TRUE(k.shmem_share());
  EXPECT_NEAR(*k.shmem_share(), 30.0 / 32.0, 1e-9);
}

TEST(EngineOom, OnlyTheLargestFewFilesAreKept) {
  Engine engine;
  for (uint64_t i = 1; i <= 5; ++i)
    filled(engine, 100, 7, i, "/dev/shm/f" + std::to_string(i), i * kMiB);
  filled(engine, 100, 7, 6, "/dev/shm/empty", 0);
  // Sized, its pages never counted: after those whose are.
  engine.apply(in_cgroup(create(100, 7, "/dev/shm/mapped", sec(1)), 7));
  engine.apply(in_cgroup(resize(100, 7, 64 * kMiB, 0, sec(1)), 7));
  engine.apply(oom(100, 7, 100, sec(2)));
  const OomKill k = engine.oom_kills_since(0).at(0);
  ASSERT_EQ(k.largest.size(), OomKillLog::kLargest);
  EXPECT_EQ(k.largest[0].path, "/dev/shm/f5");
  EXPECT_EQ(k.largest[1].path, "/dev/shm/f4");
  EXPECT_EQ(k.largest[2].path, "/dev/shm/f3");
}

// On a host whose memory controller is v1, unrelated processes share a
// cgroup v2 id: the victim's own files come first.
// A file filled by faults and out of reach at the kill (its container
// gone with the victim) is still named, by its size.
TEST(EngineOom, AFileWhosePagesWereNeverCountedIsNamedBySize) {
  Engine engine;
  engine.apply(in_cgroup(create(100, 1, "/dev/shm/big", sec(1)), 7));
  engine.apply(in_cgroup(resize(100, 1, 60 * kMiB, 0, sec(1)), 7));
  engine.apply(oom(100, 7, 100, sec(2)));
  const OomKill k = engine.oom_kills_since(0).at(0);
  ASSERT_EQ(k.largest.size(), 1u);
  EXPECT_EQ(k.largest[0], (OomFile{"/dev/shm/big", 0, 60 * kMiB}));
}

TEST(EngineOom, TheVictimsOwnFilesComeFirst) {
  Engine engine;
  filled(engine, 100, 7, 1, "/dev/shm/victims", 2 * kMiB);
  filled(engine, 200, 7, 2, "/dev/shm/neighbours", 50 * kMiB);
  engine.apply(oom(100, 7, 100, sec(2)));
  const OomKill k = engine.oom_kills_since(0).at(0);
  ASSERT_EQ(k.largest.size(), 2u);
  EXPECT_EQ(k.largest[0].path, "/dev/shm/victims");
  EXPECT_EQ(k.largest[1].path, "/dev/shm/neighbours");
  const auto keys = engine.oom_candidates(oom(100, 7, 100, sec(2)), 1);
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0], SegmentKey::file(kDev, 1));
}

TEST(EngineOom, AnotherVictimTakesItsOwnCgroupAndName) {
  Engine engine;
  engine.apply(in_cgroup(exec_of(300, sec(1), "victim"), 9));
  engine.apply(oom(100, 7, 300, sec(2)));
  const OomKill k = engine.oom_kills_since(0).at(0);
  EXPECT_EQ(k.pid, 300u);
  EXPECT_EQ(k.comm, "victim");
  EXPECT_EQ(k.cgroup_id, 9u);
}

TEST(EngineOom, AnUnknownVictimIsNamedByItsExit) {
  Engine engine;
  engine.apply(oom(100, 7, 400, sec(2)));
  EXPECT_EQ(engine.oom_kills_since(0).at(0).comm, "");
  EXPECT_EQ(engine.oom_kills_since(0).at(0).cgroup_id, 7u);
  // Another process's exit changes nothing; the victim's names it.
  engine.apply(in_cgroup(exit_of(401, sec(3)), 13));
  Event exit = in_cgroup(exit_of(400, sec(3)), 12);
  exit.comm = "victim";
  engine.apply(exit);
  const OomKill k = engine.oom_kills_since(0).at(0);
  EXPECT_EQ(k.comm, "victim");
  EXPECT_EQ(k.cgroup_id, 7u); // counted where it was placed
}

// A kill in a cgroup not described yet waits for it (a new container's,
// resolved within a second or two) rather than count as the host's and
// then move; one never described is the host's.
TEST(EngineOom, AKillWaitsForItsCgroupToBeDescribed) {
  Engine engine;
  engine.apply(oom(100, 11, 100, sec(2)));
  engine.apply(oom(101, 12, 101, sec(2)));
  auto count_of = [&](uint64_t now, const std::string &id) { return kills_of(engine, now, id); };
  EXPECT_EQ(count_of(sec(3), ""), 0u);
  engine.set_cgroup_path(11, "/system.slice/docker-" + kDockerId + ".scope");
  EXPECT_EQ(count_of(sec(3), kDockerId), 1u);
  EXPECT_EQ(count_of(sec(3), ""), 0u);
  EXPECT_EQ(count_of(sec(2) + Engine::kOomUnknownWaitNs, ""), 1u); // 12 never was
  EXPECT_EQ(engine.oom_kills(), 2u);
}

TEST(EngineOom, AContainerCountsItsKillsAndKeepsTheLatest) {
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + kDockerId + ".scope");
  engine.apply(oom(100, 11, 100, sec(2)));
  engine.apply(oom(101, 11, 101, sec(5)));
  engine.apply(oom(102, 0, 102, sec(6))); // the host's
  const EngineTotals t = engine.totals(sec(7), 0);
  EXPECT_EQ(t.oom_kills, 3u);
  ASSERT_TRUE(t.last_oom_kill);
  EXPECT_EQ(t.last_oom_kill->pid, 102u);
  for (const ContainerInfo &c : engine.containers(sec(7))) {
    if (c.id == kDockerId) {
      EXPECT_EQ(c.oom_kills, 2u);
      ASSERT_TRUE(c.last_oom_kill);
      EXPECT_EQ(c.last_oom_kill->pid, 101u);
      EXPECT_EQ(c.last_oom_kill->container.id, kDockerId);
    } else {
      EXPECT_EQ(c.oom_kills, 1u);
    }
  }
}

// An OOM kill often ends its container: its kills are still reported for
// a while (scrapes, alerts), then no more, unless it lives on.
TEST(EngineOom, AnEndedContainersKillsAreReportedForAWhile) {
  Engine engine;
  const std::string live_id(64, 'e');
  engine.set_cgroup_path(11, "/system.slice/docker-" + kDockerId + ".scope");
  engine.set_cgroup_path(12, "/system.slice/docker-" + live_id + ".scope");
  engine.apply(oom(100, 11, 100, sec(2)));
  engine.apply(in_cgroup(exit_of(100, sec(2)), 11)); // it ended with its only process
  engine.apply(in_cgroup(exec_of(200, sec(1), "server"), 12));
  engine.apply(oom(201, 12, 201, sec(2))); // its other process lives on
  auto count_of = [&](uint64_t now, const std::string &id) { return kills_of(engine, now, id); };
  const uint64_t later = sec(2) + Engine::kOomShownNs;
  EXPECT_EQ(count_of(later - 1, kDockerId), 1u);
  EXPECT_EQ(engine.last_oom_kills(later - 1).size(), 2u);
  EXPECT_EQ(count_of(later, kDockerId), 0u);
  EXPECT_EQ(count_of(later, live_id), 1u);
  const auto last = engine.last_oom_kills(later);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].container.id, live_id);
  for (const ContainerInfo &c : engine.containers(later))
    EXPECT_NE(c.id, kDockerId);
  // The host's count is always there, and every kill is in the total.
  EXPECT_EQ(engine.oom_kills(), 2u);
}

TEST(EngineOom, CandidatesToCountAgainAreTheCgroupsLinkedFilesBySize) {
  Engine engine;
  // Sized, not filled yet: faults fill a mapping without events.
  engine.apply(in_cgroup(create(100, 1, "/dev/shm/mapped", sec(1)), 7));
  engine.apply(in_cgroup(resize(100, 1, 64 * kMiB, 0, sec(1)), 7));
  filled(engine, 100, 7, 2, "/dev/shm/written", 2 * kMiB);
  filled(engine, 100, 7, 3, "/dev/shm/gone", 8 * kMiB);
  engine.apply(in_cgroup(unlink_file(100, "/dev/shm/gone", sec(1)), 7));
  filled(engine, 200, 8, 4, "/dev/shm/other", 90 * kMiB);
  const auto keys = engine.oom_candidates(oom(100, 7, 100, sec(2)), 8);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], SegmentKey::file(kDev, 1));
  EXPECT_EQ(keys[1], SegmentKey::file(kDev, 2));
  EXPECT_EQ(engine.oom_candidates(oom(100, 7, 100, sec(2)), 1).size(), 1u);
}

} // namespace
} // namespace shmbpf
