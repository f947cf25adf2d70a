// What the live model's samples read again (live/file_watch): files that
// recent events touched, re-stat'ed while linked; their processes, and the
// holders of a file when it is unlinked, rescanned.
#include "live/file_watch.hpp"

#include "synthetic_events.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr test::FileAt kShm{0x2a, 30};

Event unlinked(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts) {
  Event e = test::process_event(EventType::unlink, pid, ts);
  e.kind = Kind::tmpfs;
  e.dev = kShm.dev;
  e.ino = ino;
  e.path = e.full_path = path;
  return e;
}

std::vector<uint32_t> pids_of(const std::vector<HolderJob> &jobs) {
  std::vector<uint32_t> out;
  for (const HolderJob &j : jobs)
    out.push_back(j.pid);
  return out;
}

// Events as the monitor hands them: applied first, then seen.
struct Fixture {
  Engine engine;
  FileWatch watch;
  void apply(Event e) {
    engine.apply(e);
    watch.saw(e, engine);
  }
};

TEST(FileWatch, TouchedFilesAreReStatedThroughTheirProcess) {
  Fixture f;
  MountNamespace ns;
  ns.mntns = 4026531840u;
  ns.pid = 1;
  Event c = test::created_file(kShm, 100, 7, "/dev/shm/a", 4096, 1 * kSec);
  c.mntns = ns.mntns;
  f.apply(c);
  auto jobs = f.watch.stat_jobs(f.engine, 2 * kSec, {ns});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].key, SegmentKey::file(kShm.dev, 7));
  EXPECT_EQ(jobs[0].path, "/dev/shm/a");
  EXPECT_EQ(jobs[0].pid, 100u);
  EXPECT_EQ(jobs[0].other_pid, 1u); // its namespace's representative
  EXPECT_EQ(pids_of(f.watch.sample_holder_jobs()), (std::vector<uint32_t>{100}));
  // Still held a minute later: still watched.
  EXPECT_EQ(f.watch.stat_jobs(f.engine, 200 * kSec, {ns}).size(), 1u);
}

TEST(FileWatch, AFileMadeAndUnlinkedBetweenSamplesIsNotStated) {
  Fixture f;
  f.apply(test::created_file(kShm, 100, 7, "/dev/shm/a", 4096, 1 * kSec));
  f.apply(unlinked(100, 7, "/dev/shm/a", 2 * kSec));
  EXPECT_TRUE(f.watch.stat_jobs(f.engine, 3 * kSec, {}).empty());
  // Its holder may close it unseen: rescanned before the next sample once
  // enough such files wait.
  EXPECT_FALSE(f.watch.unlinked_due());
  EXPECT_EQ(pids_of(f.watch.unlinked_holder_jobs()), (std::vector<uint32_t>{100}));
  EXPECT_TRUE(f.watch.unlinked_holder_jobs().empty()); // settled by that rescan
}

TEST(FileWatch, ManyUnlinkedFilesCallForTheirHoldersRescan) {
  Fixture f;
  for (uint64_t i = 0; i < FileWatch::kUnlinkedBatch; ++i) {
    const std::string path = "/dev/shm/f" + std::to_string(i);
    f.apply(test::created_file(kShm, 100, 1000 + i, path, 4096, kSec));
    f.apply(unlinked(100, 1000 + i, path, kSec));
  }
  EXPECT_TRUE(f.watch.unlinked_due());
  EXPECT_EQ(f.watch.unlinked_holder_jobs().size(), 1u);
  EXPECT_FALSE(f.watch.unlinked_due());
}

TEST(FileWatch, AFileGoneFromItsPathStopsBeingStated) {
  Fixture f;
  f.apply(test::created_file(kShm, 100, 7, "/dev/shm/a", 4096, 1 * kSec));
  auto jobs = f.watch.stat_jobs(f.engine, 2 * kSec, {});
  ASSERT_EQ(jobs.size(), 1u);
  f.watch.missed(jobs[0].key, f.engine); // renamed or unlinked unseen
  EXPECT_TRUE(f.watch.stat_jobs(f.engine, 3 * kSec, {}).empty());
  EXPECT_EQ(pids_of(f.watch.unlinked_holder_jobs()), (std::vector<uint32_t>{100}));
}

TEST(FileWatch, ProcessesAreForgottenWhenGoneOrIdleForAMinute) {
  Fixture f;
  f.apply(test::created_file(kShm, 100, 7, "/dev/shm/a", 4096, 1 * kSec));
  f.apply(test::created_file(kShm, 200, 8, "/dev/shm/b", 4096, 1 * kSec));
  f.watch.rescanned({100, false, {}}); // exited
  f.watch.rescanned({200, true, {}});  // holds nothing now
  f.watch.expire(30 * kSec);
  EXPECT_EQ(pids_of(f.watch.sample_holder_jobs()), (std::vector<uint32_t>{200}));
  f.watch.expire(1 * kSec + FileWatch::kLingerNs);
  EXPECT_TRUE(f.watch.sample_holder_jobs().empty());
}

TEST(FileWatch, HolderRescansTakeTurns) {
  Fixture f;
  const uint32_t n = FileWatch::kMaxPids + 10;
  for (uint32_t pid = 1; pid <= n; ++pid)
    f.apply(test::created_file(kShm, pid, pid, "/dev/shm/p" + std::to_string(pid), 4096, kSec));
  const auto first = pids_of(f.watch.sample_holder_jobs());
  const auto second = pids_of(f.watch.sample_holder_jobs());
  EXPECT_EQ(first.size(), FileWatch::kMaxPids);
  EXPECT_EQ(second.size(), FileWatch::kMaxPids);
  // Every process had its turn within two samples.
  std::vector<uint32_t> both = first;
  both.insert(both.end(), second.begin(), second.end());
  std::sort(both.begin(), both.end());
  both.erase(std::unique(both.begin(), both.end()), both.end());
  EXPECT_EQ(both.size(), n);
}

} // namespace
} // namespace shmbpf
