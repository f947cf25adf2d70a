#include "model/engine.hpp"
#include "synthetic_events.hpp"

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

constexpr uint32_t kDev = 26; // 0:26, the host's /dev/shm
constexpr uint32_t kOtherDev = 27;
constexpr uint32_t kMntId = 25;
constexpr uint32_t kIpcNs = 4026531839u;
constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMiB = 1 << 20;

uint64_t sec(double s) { return static_cast<uint64_t>(s * kSec); }

using test::process_event;

Event file_event(EventType type, uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts) {
  Event e = process_event(type, pid, ts);
  e.kind = Kind::tmpfs;
  e.dev = kDev;
  e.mnt_id = kMntId;
  e.ino = ino;
  e.full_path = path;
  e.name = path.empty() ? "" : path.substr(path.find('/', 1));
  e.path = path;
  e.ret = 3;
  e.fd = 3;
  return e;
}

Event create(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts,
             uint32_t flags = O_RDWR | O_CREAT | O_CLOEXEC) {
  Event e = file_event(EventType::create, pid, ino, path, ts);
  e.is_new = true;
  e.flags = flags;
  return e;
}

Event open_file(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts,
                uint32_t flags = O_RDWR | O_CLOEXEC) {
  Event e = file_event(EventType::open, pid, ino, path, ts);
  e.flags = flags;
  return e;
}

// An open of a file that already holds bytes: file events carry size and
// i_blocks after the call.
Event open_sized(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts, uint64_t bytes) {
  Event e = open_file(pid, ino, path, ts);
  e.size = bytes;
  e.bytes = bytes;
  return e;
}

Event resize(uint32_t pid, uint64_t ino, uint64_t size, uint64_t bytes, uint64_t ts) {
  Event e = file_event(EventType::resize, pid, ino, "", ts);
  e.full_path.clear();
  e.name.clear();
  e.path.clear();
  e.ret = 0;
  e.size = size;
  e.bytes = bytes;
  e.arg_size = size;
  e.origin = Origin::ftruncate;
  return e;
}

// hint_ino: what the resolver left in dev/ino (0 = nothing).
Event unlink_file(uint32_t pid, const std::string &path, uint64_t ts, uint64_t hint_ino = 0) {
  Event e = process_event(EventType::unlink, pid, ts);
  e.kind = Kind::tmpfs;
  e.path = path;
  e.full_path = path;
  e.absolute = true;
  e.ino = hint_ino;
  e.dev = hint_ino ? kDev : 0;
  return e;
}

Event free_pages(uint64_t ino, uint64_t bytes, bool unlinked, uint64_t ts) {
  Event e = process_event(EventType::free, 0, ts);
  e.comm = "kworker/0:1";
  e.kind = Kind::tmpfs;
  e.dev = kDev;
  e.ino = ino;
  e.bytes = bytes;
  e.folios = bytes / 4096;
  e.unlinked = unlinked;
  e.nlink = unlinked ? 0 : 1;
  return e;
}

Event memfd(uint32_t pid, uint64_t ino, const std::string &name, uint64_t ts, uint32_t flags) {
  Event e = process_event(EventType::memfd_create, pid, ts);
  e.kind = Kind::memfd;
  e.dev = 1;
  e.ino = ino;
  e.path = name;
  e.name = "memfd:" + name;
  e.flags = flags;
  e.ret = 4;
  e.fd = 4;
  return e;
}

Event exit_of(uint32_t pid, uint64_t ts) { return process_event(EventType::exit, pid, ts); }

Event exec_of(uint32_t pid, uint64_t ts, std::string comm) {
  Event e = process_event(EventType::exec, pid, ts);
  e.comm = std::move(comm);
  return e;
}

Event sysv(EventType type, uint32_t pid, int32_t shmid, uint64_t ts) {
  Event e = process_event(type, pid, ts);
  e.kind = Kind::sysv;
  e.ipcns = kIpcNs;
  e.shmid = shmid;
  return e;
}

Event shmget(uint32_t pid, int32_t shmid, uint32_t key, uint64_t size, uint64_t ts,
             uint8_t created = 1) {
  Event e = sysv(EventType::shmget, pid, shmid, ts);
  e.ret = shmid;
  e.key = key;
  e.size = size;
  e.arg_size = size;
  e.created = created;
  return e;
}

Event shmat(uint32_t pid, int32_t shmid, uint64_t addr, uint64_t ts) {
  Event e = sysv(EventType::shmat, pid, shmid, ts);
  e.addr = addr;
  return e;
}

Event shmdt(uint32_t pid, uint64_t addr, uint64_t ts) {
  Event e = sysv(EventType::shmdt, pid, -1, ts);
  e.addr = addr;
  return e;
}

SegmentKey file_key(uint64_t ino, uint32_t dev = kDev) { return SegmentKey::file(dev, ino); }
SegmentKey sysv_key(int32_t shmid) { return SegmentKey::sysv(kIpcNs, shmid); }

TmpfsFile existing(uint64_t ino, const std::string &path, uint64_t bytes, int64_t mtime_s = 0,
                   uint32_t dev = kDev) {
  TmpfsFile f;
  f.dev = dev;
  f.ino = ino;
  f.path = path;
  f.leaf = path.substr(path.rfind('/') + 1);
  f.size = bytes;
  f.bytes = bytes;
  f.uid = 1000;
  f.nlink = 1;
  f.mtime_s = mtime_s;
  return f;
}

EngineConfig starting_at(uint64_t start_ns) {
  EngineConfig c;
  c.start_ns = start_ns;
  return c;
}

MountState tmpfs_mount(uint32_t mnt_id, std::string mountpoint, uint32_t dev, uint64_t limit = 0,
                       uint64_t used = 0) {
  MountState m;
  m.mnt_id = mnt_id;
  m.mntns = 1;
  m.mountpoint = std::move(mountpoint);
  m.dev = dev;
  m.size_limit = limit;
  m.used_bytes = used;
  return m;
}

// An engine that knows the host's /dev/shm (kMntId, kDev), the mount the
// events' files are on: files on a mount it does not know are no shared
// memory by the orphan rule (docs/LEAKS.md), unless named by a scheme.
Engine with_host_shm() {
  Engine engine;
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev));
  return engine;
}

SysvEntry sysv_line(int32_t shmid, uint32_t key, uint64_t size, uint64_t rss, uint32_t cpid,
                    uint32_t nattch, bool removed = false) {
  SysvEntry t;
  t.shmid = shmid;
  t.key = key;
  t.size = size;
  t.rss_bytes = rss;
  t.cpid = cpid;
  t.nattch = nattch;
  t.removed = removed;
  return t;
}

std::vector<std::string> orphan_paths(const Engine &engine, uint64_t now, uint64_t min_age) {
  std::vector<std::string> out;
  for (const auto &o : engine.orphans(now, min_age))
    out.push_back(o.segment.path);
  return out;
}

using Pids = std::vector<uint32_t>;

// --- tmpfs lifecycle ---------------------------------------------------------

TEST(Engine, CreateResizeUnlinkFreeWhileHeld) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(2)));
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->kind, Kind::tmpfs);
  EXPECT_EQ(s->path, "/dev/shm/a");
  EXPECT_EQ(s->mnt_id, kMntId);
  EXPECT_EQ(s->size, kMiB);
  EXPECT_EQ(s->bytes, kMiB);
  EXPECT_EQ(s->holders, Pids{100});
  EXPECT_EQ(s->creator.pid, 100u);
  EXPECT_EQ(s->creator.comm, "p100");
  EXPECT_EQ(s->creator.uid, 1000u);
  EXPECT_TRUE(s->creator.known);
  EXPECT_FALSE(s->creator.exited);
  EXPECT_EQ(s->created_ns, sec(1));
  EXPECT_FALSE(s->existed_before);
  EXPECT_EQ(s->changed_ns, sec(2));

  engine.apply(unlink_file(100, "/dev/shm/a", sec(3), 1));
  s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::unlinked);
  EXPECT_EQ(s->bytes, kMiB); // still held: the memory stays

  engine.apply(free_pages(1, kMiB / 2, true, sec(4))); // a truncate by the holder
  s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->bytes, kMiB / 2);

  engine.apply(exit_of(100, sec(5)));
  EXPECT_FALSE(engine.segment(file_key(1)));
  EXPECT_EQ(engine.stats().gone, 1u);
  EXPECT_EQ(engine.segment_count(), 0u);
}

TEST(Engine, UnlinkOfUnheldFileWaitsForItsFrees) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(2)));
  engine.apply(exit_of(100, sec(3)));
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s); // linked files outlive their creator
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_TRUE(s->holders.empty());
  EXPECT_TRUE(s->creator.exited);

  engine.apply(unlink_file(200, "/dev/shm/a", sec(4), 1));
  s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::unlinked);
  engine.apply(free_pages(1, kMiB / 4, false, sec(5)));
  EXPECT_EQ(engine.segment(file_key(1))->bytes, 3 * kMiB / 4);
  engine.apply(free_pages(1, 3 * kMiB / 4, true, sec(5)));
  EXPECT_FALSE(engine.segment(file_key(1)));
}

TEST(Engine, EvictionFreeBeforeTheUnlinkEvent) {
  // The kernel frees an unheld file inside unlink(2), so its free record is
  // emitted before the unlink record.
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(2)));
  engine.apply(exit_of(100, sec(3)));
  engine.apply(free_pages(1, kMiB, true, sec(4)));
  EXPECT_FALSE(engine.segment(file_key(1)));
  engine.apply(unlink_file(200, "/dev/shm/a", sec(4), 1));
  EXPECT_EQ(engine.segment_count(), 0u);
  EXPECT_EQ(engine.stats().gone, 1u);
}

TEST(Engine, UnlinkOfEmptyUnheldFileIsGoneAtOnce) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(exit_of(100, sec(2)));
  engine.apply(unlink_file(200, "/dev/shm/a", sec(3), 1));
  EXPECT_FALSE(engine.segment(file_key(1)));
}

TEST(Engine, FreesOfALinkedFileSubtractAndClamp) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(2)));
  engine.apply(free_pages(1, kMiB / 4, false, sec(3)));
  EXPECT_EQ(engine.segment(file_key(1))->bytes, 3 * kMiB / 4);
  engine.apply(free_pages(1, 2 * kMiB, false, sec(4))); // more than we knew of
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->bytes, 0u);
  EXPECT_EQ(s->state, SegmentState::linked);
  engine.apply(resize(100, 1, 2 * kMiB, 2 * kMiB, sec(5))); // absolute again
  EXPECT_EQ(engine.segment(file_key(1))->bytes, 2 * kMiB);
}

TEST(Engine, UnlinkedButHeldKeepsBytesUntilLastHolderExits) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, 8 * kMiB, 8 * kMiB, sec(2)));
  engine.apply(open_sized(200, 1, "/dev/shm/a", sec(3), 8 * kMiB));
  engine.apply(unlink_file(100, "/dev/shm/a", sec(4), 1));
  engine.apply(exit_of(100, sec(5)));
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::unlinked);
  EXPECT_EQ(s->bytes, 8 * kMiB);
  EXPECT_EQ(s->holders, Pids{200});
  EXPECT_TRUE(orphan_paths(engine, sec(100), 0).empty());
  engine.apply(exit_of(200, sec(6)));
  EXPECT_FALSE(engine.segment(file_key(1)));
}

TEST(Engine, OpenByAnotherPidAddsAHolder) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(open_file(200, 1, "/dev/shm/a", sec(2)));
  engine.apply(open_file(200, 1, "/dev/shm/a", sec(3)));
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->holders, (Pids{100, 200}));
  EXPECT_EQ(s->creator.pid, 100u); // an open never changes the creator
  auto p = engine.process(200);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->segments_held, 1u);
  EXPECT_EQ(p->segments_created, 0u);
}

TEST(Engine, ManyHoldersAndCopies) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  std::vector<uint32_t> pids;
  for (uint32_t pid = 200; pid < 220; ++pid) {
    engine.apply(open_file(pid, 1, "/dev/shm/a", sec(2)));
    pids.push_back(pid);
  }
  Engine copy = engine; // segments own their holder lists
  engine.apply(unlink_file(100, "/dev/shm/a", sec(3), 1));
  for (uint32_t pid : pids)
    engine.apply(exit_of(pid, sec(4)));
  EXPECT_EQ(engine.segment(file_key(1))->holders, Pids{100});
  EXPECT_EQ(copy.segment(file_key(1))->holders.size(), 21u);
  EXPECT_EQ(copy.segment(file_key(1))->state, SegmentState::linked);
  Engine moved = std::move(copy);
  pids.insert(pids.begin(), 100);
  EXPECT_EQ(moved.segment(file_key(1))->holders, pids);
  engine.apply(exit_of(100, sec(5)));
  EXPECT_EQ(engine.segment_count(), 0u);
}

TEST(Engine, CreatorExitWhileAnotherPidHolds) {
  Engine engine = with_host_shm();
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(1)));
  engine.apply(open_file(200, 1, "/dev/shm/a", sec(2)));
  engine.apply(exit_of(100, sec(3)));
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->holders, Pids{200});
  EXPECT_TRUE(s->creator.exited);
  EXPECT_EQ(s->creator.comm, "p100"); // kept after the process is gone
  EXPECT_FALSE(engine.process(100));
  EXPECT_TRUE(orphan_paths(engine, sec(1000), 0).empty());

  engine.apply(exit_of(200, sec(4)));
  EXPECT_EQ(orphan_paths(engine, sec(1000), 0), std::vector<std::string>{"/dev/shm/a"});
}

TEST(Engine, MemfdLivesWhileHeldAndDiesWithItsHolders) {
  Engine engine;
  constexpr uint32_t kMfdCloexec = 1;
  engine.apply(memfd(100, 7, "buf", sec(1), kMfdCloexec));
  engine.apply(memfd(100, 8, "keep", sec(1), 0));
  Event grow = resize(100, 7, kMiB, kMiB, sec(2));
  grow.dev = 1;
  engine.apply(grow);
  auto s = engine.segment(SegmentKey{Kind::memfd, 1, 7});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, Kind::memfd);
  EXPECT_EQ(s->path, "memfd:buf");
  EXPECT_EQ(s->state, SegmentState::unlinked); // a memfd has no name
  EXPECT_EQ(s->bytes, kMiB);
  // Events and scans that cannot tell a memfd from a tmpfs file still find it.
  EXPECT_TRUE(engine.segment(SegmentKey::file(1, 7)));
  EXPECT_TRUE(engine.orphans(sec(100), 0).empty());

  engine.apply(exec_of(100, sec(3), "python3")); // closes the MFD_CLOEXEC one
  EXPECT_FALSE(engine.segment(SegmentKey::file(1, 7)));
  EXPECT_TRUE(engine.segment(SegmentKey::file(1, 8)));
  EXPECT_EQ(engine.process(100)->comm, "python3");
  engine.apply(exit_of(100, sec(4)));
  EXPECT_EQ(engine.segment_count(), 0u);
}

TEST(Engine, ExecDropsOnlyCloseOnExecHolds) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1), O_RDWR | O_CREAT | O_CLOEXEC));
  engine.apply(create(100, 2, "/dev/shm/b", sec(1), O_RDWR | O_CREAT));
  engine.apply(open_file(100, 3, "/dev/shm/c", sec(1), O_RDWR | O_CLOEXEC));
  engine.apply(open_file(100, 3, "/dev/shm/c", sec(1), O_RDWR)); // a second, inheritable fd
  engine.apply(exec_of(100, sec(2), "sh"));
  EXPECT_TRUE(engine.segment(file_key(1))->holders.empty());
  EXPECT_EQ(engine.segment(file_key(2))->holders, Pids{100});
  EXPECT_EQ(engine.segment(file_key(3))->holders, Pids{100});
  EXPECT_FALSE(engine.segment(file_key(1))->creator.exited); // exec is not exit
}

TEST(Engine, RenameMovesPathPatternAndReplacesTarget) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(create(100, 2, "/dev/shm/torch_100_1_0", sec(1)));
  engine.apply(exit_of(100, sec(1)));

  Event mv = process_event(EventType::rename, 200, sec(2));
  mv.kind = Kind::tmpfs;
  mv.path = "/dev/shm/a";
  mv.full_path = "/dev/shm/a";
  mv.newpath = "/dev/shm/psm_1234abcd";
  mv.full_newpath = mv.newpath;
  mv.absolute = true;
  engine.apply(mv);
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/dev/shm/psm_1234abcd");
  EXPECT_EQ(s->pattern, NamePattern::psm);

  // Relative, from the cwd /dev/shm, onto an existing file: the target
  // loses its name and, empty and unheld, is gone.
  Event over = process_event(EventType::rename, 200, sec(3));
  over.kind = Kind::tmpfs;
  over.path = "psm_1234abcd";
  over.full_path = "/dev/shm/psm_1234abcd";
  over.newpath = "torch_100_1_0";
  over.full_newpath = "/dev/shm/torch_100_1_0"; // from the same start: the resolver's job
  engine.apply(over);
  s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/dev/shm/torch_100_1_0");
  EXPECT_EQ(s->pattern, NamePattern::torch);
  EXPECT_FALSE(engine.segment(file_key(2)));

  // Later unlinks find it under its new name, even without an inode hint.
  engine.apply(unlink_file(200, "/dev/shm/torch_100_1_0", sec(4)));
  EXPECT_FALSE(engine.segment(file_key(1)));
}

TEST(Engine, UnlinkHintOfAnotherFileWithTheSameLeafIsChecked) {
  Engine engine;
  engine.apply(create(100, 10, "/dev/shm/x/data", sec(1)));
  engine.apply(create(100, 11, "/dev/shm/y/data", sec(1)));
  // The kernel's hint is the last tracked inode with this leaf name.
  engine.apply(unlink_file(100, "/dev/shm/x/data", sec(2), 11));
  EXPECT_EQ(engine.segment(file_key(10))->state, SegmentState::unlinked);
  EXPECT_EQ(engine.segment(file_key(11))->state, SegmentState::linked);
  engine.apply(unlink_file(100, "/dev/shm/nothing", sec(3)));
  EXPECT_EQ(engine.segment(file_key(11))->state, SegmentState::linked);
}

TEST(Engine, InodeReuseReplacesTheStaleSegment) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/old", sec(1)));
  engine.apply(exit_of(100, sec(2)));
  // The unlink and free of /dev/shm/old were lost; the inode comes back.
  engine.apply(create(200, 1, "/dev/shm/new", sec(3)));
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/dev/shm/new");
  EXPECT_EQ(s->creator.pid, 200u);
  EXPECT_EQ(engine.segment_count(), 1u);
  engine.apply(exit_of(200, sec(4)));
  engine.apply(exit_of(200, sec(4))); // reported twice: harmless
  EXPECT_EQ(engine.segment_count(), 1u);
}

TEST(Engine, FailedCallsAndUnknownInodesAreIgnored) {
  Engine engine;
  Event bad = create(100, 1, "/dev/shm/a", sec(1));
  bad.ret = -EACCES;
  bad.err = EACCES;
  engine.apply(bad);
  engine.apply(free_pages(99, 4096, true, sec(2)));
  Event dt = shmdt(100, 0x7f0000000000, sec(3));
  engine.apply(dt);
  EXPECT_EQ(engine.segment_count(), 0u);
  EXPECT_EQ(engine.stats().events, 3u);
  EXPECT_EQ(engine.stats().ignored, 3u);
}

// --- orphans -----------------------------------------------------------------

TEST(Engine, OrphansHonourMinAgeHoldersAndCreatorExit) {
  Engine engine = with_host_shm();
  engine.apply(create(100, 1, "/dev/shm/lonely", sec(10)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(10)));
  engine.apply(create(300, 2, "/dev/shm/shared", sec(10)));
  engine.apply(open_file(400, 2, "/dev/shm/shared", sec(11)));
  engine.apply(create(500, 3, "/dev/shm/alive", sec(10)));

  EXPECT_TRUE(orphan_paths(engine, sec(100), 0).empty()); // every creator alive

  engine.apply(exit_of(100, sec(20)));
  engine.apply(exit_of(300, sec(20)));
  EXPECT_TRUE(orphan_paths(engine, sec(40), sec(60)).empty()); // 30 s old
  auto orphans = engine.orphans(sec(80), sec(60));
  ASSERT_EQ(orphans.size(), 1u); // shared is held by 400, alive's creator lives
  EXPECT_EQ(orphans[0].segment.path, "/dev/shm/lonely");
  EXPECT_EQ(orphans[0].age_ns, sec(70));
  EXPECT_EQ(orphans[0].segment.bytes, kMiB);
  EXPECT_TRUE(orphans[0].segment.creator.exited);

  // Once holders and creators are gone all three are orphans, largest first.
  engine.apply(exit_of(400, sec(21)));
  engine.apply(resize(500, 3, kMiB, 0, sec(21)));
  engine.apply(exit_of(500, sec(22)));
  EXPECT_EQ(orphan_paths(engine, sec(100), 0),
            (std::vector<std::string>{"/dev/shm/lonely", "/dev/shm/alive", "/dev/shm/shared"}));
}

TEST(Engine, PreexistingSegmentsAgeFromMtimeElseFromStart) {
  EngineConfig cfg;
  cfg.start_ns = sec(100);
  const int64_t boot_realtime_s = 1'700'000'000;
  cfg.realtime_offset_ns = boot_realtime_s * static_cast<int64_t>(kSec);
  Engine engine(cfg);
  engine.add_existing_file(existing(1, "/dev/shm/old", 4096, boot_realtime_s + 100 - 3600), kMntId,
                           "/dev/shm");
  engine.add_existing_file(existing(2, "/dev/shm/nomtime", 4096), kMntId, "/dev/shm");
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->existed_before);
  EXPECT_EQ(s->created_ns, 0u);
  EXPECT_FALSE(s->creator.known);
  EXPECT_EQ(s->creator.uid, 1000u); // the owner
  EXPECT_EQ(s->mountpoint, "/dev/shm");

  auto orphans = engine.orphans(sec(160), sec(30 * 60));
  ASSERT_EQ(orphans.size(), 1u);
  EXPECT_EQ(orphans[0].segment.path, "/dev/shm/old");
  EXPECT_EQ(orphans[0].age_ns, sec(3660));
  EXPECT_EQ(orphan_paths(engine, sec(160), sec(30)).size(), 2u); // nomtime: 60 s since start
  EXPECT_TRUE(orphan_paths(engine, sec(160), sec(61)).size() == 1u);

  // A holder found by the /proc scan takes it off the list.
  EXPECT_TRUE(engine.add_holder(4242, file_key(1)));
  EXPECT_EQ(orphan_paths(engine, sec(160), 0), std::vector<std::string>{"/dev/shm/nomtime"});
}

TEST(Engine, NameClassifier) {
  auto torch = classify_shm_name("/dev/shm/torch_4242_1804289383_17");
  EXPECT_EQ(torch.pattern, NamePattern::torch);
  EXPECT_EQ(torch.pid, 4242u);
  EXPECT_EQ(classify_shm_name("torch_1_2_3").pid, 1u);
  EXPECT_EQ(classify_shm_name("/dev/shm/psm_3f2a91bc").pattern, NamePattern::psm);
  EXPECT_EQ(classify_shm_name("/dev/shm/sem.mp-a1b2c3d4").pattern, NamePattern::sem);
  for (const char *none : {"/dev/shm/torch_", "/dev/shm/torch_abc_1", "/dev/shm/torch_12",
                           "/dev/shm/torch_12_", "/dev/shm/torch_99999999999_1_1", "/dev/shm/psm_",
                           "/dev/shm/sem.", "/dev/shm/x/torch", "pulse-shm-1"}) {
    EXPECT_EQ(classify_shm_name(none).pattern, NamePattern::none) << none;
    EXPECT_EQ(classify_shm_name(none).pid, 0u) << none;
  }
  EXPECT_EQ(classify_shm_name("/dev/shm/torch_5/psm_x").pattern, NamePattern::psm); // leaf only
  EXPECT_EQ(to_string(NamePattern::torch), "torch");
}

TEST(Engine, TorchNamesOnPreexistingFilesInferTheCreator) {
  Engine engine(starting_at(sec(10)));
  engine.add_existing_file(existing(1, "/dev/shm/torch_4242_1804289383_0", kMiB), 0, "/dev/shm");
  engine.add_existing_file(existing(2, "/dev/shm/psm_3f2a91bc", kMiB), 0, "/dev/shm");
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pattern, NamePattern::torch);
  EXPECT_EQ(s->inferred_pid, 4242u);
  EXPECT_FALSE(s->creator.known);
  EXPECT_EQ(engine.segment(file_key(2))->pattern, NamePattern::psm);
  EXPECT_EQ(engine.segment(file_key(2))->inferred_pid, 0u);
  EXPECT_EQ(orphan_paths(engine, sec(20), 0).size(), 2u);

  engine.add_process(4242, 1, 1000, "python3", 0, 0);
  EXPECT_EQ(orphan_paths(engine, sec(20), 0), std::vector<std::string>{"/dev/shm/psm_3f2a91bc"});

  // A torch name from a segment we saw created keeps the real creator.
  engine.apply(create(77, 3, "/dev/shm/torch_77_5_1", sec(11)));
  EXPECT_EQ(engine.segment(file_key(3))->inferred_pid, 0u);
  EXPECT_EQ(engine.segment(file_key(3))->creator.pid, 77u);
}

// --- bootstrap and reconcile -------------------------------------------------

TEST(Engine, BootstrapHoldersFromScans) {
  Engine engine;
  engine.add_existing_file(existing(1, "/dev/shm/x", 4096), kMntId, "/dev/shm");
  engine.add_process(301, 1, 0, "writer", 0, 0);
  EXPECT_TRUE(engine.add_holder(300, file_key(1)));
  EXPECT_FALSE(engine.add_holder(300, file_key(999)));
  EXPECT_TRUE(engine.set_holders(file_key(1), {302, 301, 302}));
  EXPECT_EQ(engine.segment(file_key(1))->holders, (Pids{301, 302}));
  EXPECT_EQ(engine.process(300)->segments_held, 0u);
  EXPECT_EQ(engine.process(301)->segments_held, 1u);
  EXPECT_EQ(engine.process(301)->bytes_held, 4096u);

  engine.apply(unlink_file(301, "/dev/shm/x", sec(1))); // no hint: found by path
  EXPECT_EQ(engine.segment(file_key(1))->state, SegmentState::unlinked);
  EXPECT_TRUE(engine.set_holders(file_key(1), {}));
  EXPECT_FALSE(engine.segment(file_key(1)));
  EXPECT_EQ(engine.process(301)->segments_held, 0u);
}

TEST(Engine, ReconcileTmpfsConvergesAfterLostEvents) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(create(100, 2, "/dev/shm/b", sec(1)));
  engine.apply(create(100, 3, "/dev/shm/c", sec(1)));
  engine.apply(resize(100, 3, kMiB, kMiB, sec(1)));
  engine.apply(create(200, 4, "/dev/shm/d", sec(1)));
  engine.apply(create(100, 6, "/dev/shm/e", sec(1)));
  engine.apply(exit_of(100, sec(2)));
  Event other = create(100, 1, "/srv/tmp/a", sec(1));
  other.dev = kOtherDev;
  engine.apply(other);
  // Lost: unlinks of b, c and d, the creation of f, writes to a, a rename of e.
  std::vector<TmpfsFile> truth = {existing(1, "/dev/shm/a", 64 * 1024),
                                  existing(5, "/dev/shm/f", 4096), existing(6, "/dev/shm/e2", 0)};
  engine.reconcile_tmpfs(kDev, truth, sec(10));

  auto a = engine.segment(file_key(1));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes, 64u * 1024);
  EXPECT_EQ(a->changed_ns, sec(10));
  EXPECT_EQ(a->creator.pid, 100u);
  EXPECT_FALSE(engine.segment(file_key(2)));
  EXPECT_FALSE(engine.segment(file_key(3)));
  auto d = engine.segment(file_key(4));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->state, SegmentState::unlinked); // held by 200
  auto f = engine.segment(file_key(5));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->existed_before);
  EXPECT_FALSE(f->creator.known);
  EXPECT_EQ(f->state, SegmentState::linked);
  EXPECT_EQ(engine.segment(file_key(6))->path, "/dev/shm/e2");
  EXPECT_TRUE(engine.segment(file_key(1, kOtherDev))); // another filesystem: untouched

  // Idempotent.
  auto before = engine.segments();
  engine.reconcile_tmpfs(kDev, truth, sec(20));
  auto after = engine.segments();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].key, after[i].key);
    EXPECT_EQ(before[i].changed_ns, after[i].changed_ns) << after[i].path;
  }

  // The renamed file is found by its new name.
  engine.apply(unlink_file(1, "/dev/shm/e2", sec(30)));
  EXPECT_FALSE(engine.segment(file_key(6)));
  // d's holder exits: gone.
  engine.apply(exit_of(200, sec(31)));
  EXPECT_FALSE(engine.segment(file_key(4)));
}

TEST(Engine, ReconcileProcessesTreatsMissingPidsAsExited) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(unlink_file(100, "/dev/shm/a", sec(2), 1));
  engine.apply(create(200, 2, "/dev/shm/b", sec(1)));
  engine.reconcile_processes({200, 1});
  EXPECT_FALSE(engine.process(100));
  EXPECT_FALSE(engine.segment(file_key(1)));
  EXPECT_FALSE(engine.segment(file_key(2))->creator.exited);
}

// --- System V ----------------------------------------------------------------

TEST(EngineSysv, GetAttachDetachRmidWithNattch) {
  Engine engine;
  engine.apply(shmget(100, 7, 0x1234, kMiB, sec(1)));
  auto s = engine.segment(sysv_key(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, Kind::sysv);
  EXPECT_EQ(s->path, "SYSV00001234");
  EXPECT_EQ(s->sysv_key, 0x1234u);
  EXPECT_EQ(s->size, kMiB);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->creator.pid, 100u);
  EXPECT_EQ(s->nattch, 0u);

  engine.apply(shmat(100, 7, 0x7f00000a0000, sec(2)));
  engine.apply(shmat(200, 7, 0x7f00000b0000, sec(2)));
  engine.apply(shmat(200, 7, 0x7f00000c0000, sec(2)));
  s = engine.segment(sysv_key(7));
  EXPECT_EQ(s->nattch, 3u);
  EXPECT_EQ(s->holders, (Pids{100, 200}));
  EXPECT_EQ(engine.process(200)->sysv_attachments, 2u);

  engine.apply(shmdt(200, 0x7f00000b0000, sec(3)));
  s = engine.segment(sysv_key(7));
  EXPECT_EQ(s->nattch, 2u);
  EXPECT_EQ(s->holders, (Pids{100, 200})); // 200 still has another attachment

  Event rmid = sysv(EventType::shm_rmid, 100, 7, sec(4));
  engine.apply(rmid);
  s = engine.segment(sysv_key(7));
  ASSERT_TRUE(s); // destroyed only at the last detach
  EXPECT_EQ(s->state, SegmentState::unlinked);

  engine.apply(shmdt(200, 0x7f00000c0000, sec(5)));
  s = engine.segment(sysv_key(7));
  EXPECT_EQ(s->nattch, 1u);
  EXPECT_EQ(s->holders, Pids{100});
  engine.apply(shmdt(200, 0x7f00000c0000, sec(5))); // already detached
  EXPECT_EQ(engine.segment(sysv_key(7))->nattch, 1u);
  engine.apply(shmdt(100, 0x7f00000a0000, sec(6)));
  EXPECT_FALSE(engine.segment(sysv_key(7)));
}

TEST(EngineSysv, UnremovedSegmentOutlivesItsUsers) {
  Engine engine;
  engine.apply(shmget(100, 3, 0, 4096, sec(1))); // IPC_PRIVATE
  engine.apply(shmat(100, 3, 0x1000, sec(1)));
  engine.apply(shmdt(100, 0x1000, sec(2)));
  engine.apply(exit_of(100, sec(3)));
  auto s = engine.segment(sysv_key(3));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "SYSV00000000");
  EXPECT_EQ(orphan_paths(engine, sec(10), sec(5)), std::vector<std::string>{"SYSV00000000"});
}

TEST(EngineSysv, ExecAndExitDetach) {
  Engine engine;
  engine.apply(shmget(100, 9, 0xbeef, kMiB, sec(1)));
  engine.apply(shmat(100, 9, 0x1000, sec(1)));
  engine.apply(shmat(200, 9, 0x2000, sec(1)));
  engine.apply(sysv(EventType::shm_rmid, 100, 9, sec(2)));
  engine.apply(exec_of(100, sec(3), "bash"));
  auto s = engine.segment(sysv_key(9));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->nattch, 1u);
  EXPECT_EQ(s->holders, Pids{200});
  EXPECT_EQ(engine.process(100)->sysv_attachments, 0u);
  engine.apply(exit_of(200, sec(4)));
  EXPECT_FALSE(engine.segment(sysv_key(9)));
}

TEST(EngineSysv, ExistingSegmentFromShmget) {
  Engine engine(starting_at(sec(1)));
  engine.apply(shmget(100, 4, 0x42, 0, sec(2), 0)); // created elsewhere, before us
  auto s = engine.segment(sysv_key(4));
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->existed_before);
  EXPECT_FALSE(s->creator.known);
  EXPECT_EQ(engine.process(100)->creates, 0u);
}

TEST(EngineSysv, BootstrapAndReconcile) {
  Engine engine(starting_at(sec(1)));
  engine.add_sysv(kIpcNs, sysv_line(5, 0x5, kMiB, 4096, 300, 0)); // before its creator
  engine.add_process(300, 1, 0, "postgres", 0, 0);
  engine.add_sysv(kIpcNs, sysv_line(6, 0x6, kMiB, 0, 999, 0));
  engine.add_sysv(kIpcNs, sysv_line(8, 0x8, kMiB, 0, 999, 2));
  // IPC_RMID'ed while attached: nameless, alive until the last detach.
  engine.add_sysv(kIpcNs, sysv_line(11, 0xb, kMiB, 0, 300, 1, true));
  EXPECT_EQ(engine.segment(sysv_key(11))->state, SegmentState::unlinked);
  auto s5 = engine.segment(sysv_key(5));
  ASSERT_TRUE(s5);
  EXPECT_EQ(s5->creator.pid, 300u);
  EXPECT_FALSE(s5->creator.exited);
  EXPECT_EQ(s5->bytes, 4096u);
  EXPECT_TRUE(engine.segment(sysv_key(6))->creator.exited);
  EXPECT_EQ(orphan_paths(engine, sec(2), 0), std::vector<std::string>{"SYSV00000006"});

  std::vector<SysvEntry> truth = {
      sysv_line(5, 0x5, kMiB, 8192, 300, 1),
      sysv_line(9, 0x9, 4096, 0, 300, 0),
      sysv_line(10, 0, 4096, 0, 300, 0, true),
  };
  engine.reconcile_sysv(kIpcNs, truth, sec(5));
  EXPECT_EQ(engine.segment(sysv_key(5))->bytes, 8192u);
  EXPECT_EQ(engine.segment(sysv_key(5))->nattch, 1u);
  EXPECT_FALSE(engine.segment(sysv_key(6)));
  EXPECT_FALSE(engine.segment(sysv_key(8)));
  EXPECT_FALSE(engine.segment(sysv_key(10))); // removed and unattached: gone
  auto s9 = engine.segment(sysv_key(9));
  ASSERT_TRUE(s9);
  EXPECT_EQ(s9->changed_ns, sec(5));
  EXPECT_TRUE(s9->existed_before);
}

// --- aggregation -------------------------------------------------------------

TEST(Engine, ProcessAggregation) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(1)));
  engine.apply(create(100, 2, "/dev/shm/b", sec(2)));
  engine.apply(resize(100, 2, kMiB, kMiB, sec(2)));
  engine.apply(create(200, 3, "/dev/shm/c", sec(2)));
  engine.apply(resize(200, 3, 2 * kMiB, 2 * kMiB, sec(2)));
  engine.apply(open_sized(100, 3, "/dev/shm/c", sec(3), 2 * kMiB));
  engine.apply(memfd(100, 50, "ring", sec(3), 0));
  engine.apply(unlink_file(100, "/dev/shm/b", sec(4), 2));
  engine.apply(shmget(100, 1, 0x77, 4096, sec(4)));
  engine.apply(shmat(100, 1, 0x1000, sec(4)));

  auto procs = engine.processes(sec(4));
  ASSERT_EQ(procs.size(), 2u);
  const ProcessInfo &p = procs[0];
  EXPECT_EQ(p.pid, 100u);
  EXPECT_EQ(p.comm, "p100");
  EXPECT_EQ(p.segments_created, 4u); // a, b (unlinked, held), ring, the SysV segment
  EXPECT_EQ(p.bytes_created, 2 * kMiB);
  EXPECT_EQ(p.segments_held, 5u); // the same four and c
  EXPECT_EQ(p.bytes_held, 4 * kMiB);
  EXPECT_EQ(p.sysv_attachments, 1u);
  EXPECT_EQ(p.creates, 4u);
  EXPECT_EQ(p.unlinks, 1u);
  EXPECT_EQ(p.last_create_ns, sec(4));
  EXPECT_EQ(p.last_unlink_ns, sec(4));
  EXPECT_GT(p.create_rate, 0.3);
  EXPECT_LT(p.create_rate, 0.4); // 4 hits, tau 10 s: just under 0.4/s
  EXPECT_LT(engine.processes(sec(100))[0].create_rate, p.create_rate / 100);
  EXPECT_EQ(procs[1].pid, 200u);
  EXPECT_EQ(procs[1].segments_created, 1u);
  EXPECT_EQ(procs[1].segments_held, 1u);

  engine.apply(exit_of(100, sec(5)));
  auto p200 = engine.process(200);
  ASSERT_TRUE(p200);
  EXPECT_EQ(p200->segments_created, 1u);
  EXPECT_EQ(engine.processes().size(), 1u);
}

TEST(Engine, SigbusCountsFaultsOnly) {
  Engine engine;
  Event fault = process_event(EventType::sigbus, 100, sec(1));
  fault.target_pid = 100;
  fault.si_code = 2; // BUS_ADRERR
  engine.apply(fault);
  Event kill = process_event(EventType::sigbus, 200, sec(1));
  kill.target_pid = 100;
  kill.si_code = 0; // SI_USER
  engine.apply(kill);
  EXPECT_EQ(engine.process(100)->sigbus, 1u);
  EXPECT_FALSE(engine.process(200));
}

TEST(Engine, ContainerAggregation) {
  const std::string docker_id(64, 'a');
  const std::string cri_id(64, 'c');
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + docker_id + ".scope");
  engine.set_cgroup_path(12, "/kubepods.slice/kubepods-burstable.slice/"
                             "kubepods-burstable-pod1234abcd_5678_90ab_cdef_1234567890ab.slice/"
                             "cri-containerd-" +
                                 cri_id + ".scope");
  engine.set_cgroup_path(13, "/user.slice/user-1000.slice/session-2.scope");
  auto in = [](Event e, uint64_t cgroup) {
    e.cgroup_id = cgroup;
    return e;
  };
  engine.apply(in(create(100, 1, "/dev/shm/d1", sec(1)), 11));
  engine.apply(in(resize(100, 1, kMiB, kMiB, sec(1)), 11));
  engine.apply(in(exec_of(101, sec(1), "worker"), 11));
  engine.apply(in(create(200, 2, "/dev/shm/k1", sec(1)), 12));
  engine.apply(in(create(200, 3, "/dev/shm/k2", sec(1)), 12));
  engine.apply(in(resize(200, 3, 2 * kMiB, 2 * kMiB, sec(1)), 12));
  engine.apply(in(create(300, 4, "/dev/shm/h1", sec(1)), 13));
  engine.apply(in(open_file(101, 4, "/dev/shm/h1", sec(1)), 11));

  auto rows = engine.containers(sec(1));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].id, "");
  EXPECT_EQ(rows[0].runtime, "host");
  EXPECT_EQ(rows[0].processes, 1u);
  EXPECT_EQ(rows[0].segments, 1u);
  EXPECT_EQ(rows[1].id, docker_id);
  EXPECT_EQ(rows[1].runtime, "docker");
  EXPECT_EQ(rows[1].processes, 2u);
  EXPECT_EQ(rows[1].segments, 1u);
  EXPECT_EQ(rows[1].bytes, kMiB);
  EXPECT_EQ(rows[1].creates, 1u);
  EXPECT_EQ(rows[2].id, cri_id);
  EXPECT_EQ(rows[2].runtime, "containerd");
  EXPECT_EQ(rows[2].pod_uid, "1234abcd-5678-90ab-cdef-1234567890ab");
  EXPECT_EQ(rows[2].segments, 2u);
  EXPECT_EQ(rows[2].bytes, 2 * kMiB);

  // Segments keep their container after the creator exits.
  engine.apply(exit_of(200, sec(2)));
  EXPECT_EQ(engine.segment(file_key(2))->creator.container_id, cri_id);
  EXPECT_EQ(engine.containers()[2].processes, 0u);
  EXPECT_EQ(engine.containers()[2].segments, 2u);

  auto p = engine.process(100);
  EXPECT_EQ(p->container_id, docker_id);
  EXPECT_EQ(p->runtime, "docker");
  EXPECT_EQ(engine.process(300)->container_id, "");

  SegmentFilter by_short_id;
  by_short_id.container = docker_id.substr(0, 12);
  auto segs = engine.segments(by_short_id); // created in it, or held from it
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].path, "/dev/shm/d1");
  EXPECT_EQ(segs[1].path, "/dev/shm/h1");
  SegmentFilter host;
  host.container = "";
  segs = engine.segments(host);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].path, "/dev/shm/h1");

  EXPECT_TRUE(engine.unknown_cgroups().empty());
  engine.add_process(400, 1, 0, "new", 99, 0);
  EXPECT_EQ(engine.unknown_cgroups(), std::vector<uint64_t>{99});
}

TEST(Engine, SegmentFilters) {
  Engine engine;
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev));
  engine.set_mount(tmpfs_mount(40, "/run/user/1000", kOtherDev));
  engine.apply(create(100, 1, "/dev/shm/torch_100_1_0", sec(1)));
  engine.apply(create(100, 2, "/dev/shm/torch_100_1_1", sec(1)));
  engine.apply(create(200, 3, "/dev/shm/psm_abc", sec(1)));
  Event run = create(200, 1, "/run/user/1000/pulse-shm-1", sec(1));
  run.dev = kOtherDev;
  run.mnt_id = 40;
  engine.apply(run);
  engine.apply(memfd(200, 9, "wayland", sec(1), 0));
  engine.apply(shmget(200, 1, 0x10, 4096, sec(1)));
  engine.apply(unlink_file(100, "/dev/shm/torch_100_1_1", sec(2), 2));

  auto filter = [](auto set) {
    SegmentFilter f;
    set(f);
    return f;
  };
  auto paths = [&](const SegmentFilter &f) {
    std::vector<std::string> out;
    for (const auto &s : engine.segments(f))
      out.push_back(s.path);
    return out;
  };
  EXPECT_EQ(paths({}), (std::vector<std::string>{
                           "/dev/shm/psm_abc", "/dev/shm/torch_100_1_0", "/dev/shm/torch_100_1_1",
                           "/run/user/1000/pulse-shm-1", "SYSV00000010", "memfd:wayland"}));
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.pid = 100; })),
            (std::vector<std::string>{"/dev/shm/torch_100_1_0", "/dev/shm/torch_100_1_1"}));
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.mount = "/run/user/1000"; })),
            std::vector<std::string>{"/run/user/1000/pulse-shm-1"});
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.kind = Kind::memfd; })),
            std::vector<std::string>{"memfd:wayland"});
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.kind = Kind::sysv; })),
            std::vector<std::string>{"SYSV00000010"});
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.path_glob = "/dev/shm/torch_*"; })),
            (std::vector<std::string>{"/dev/shm/torch_100_1_0", "/dev/shm/torch_100_1_1"}));
  EXPECT_EQ(paths(filter([](SegmentFilter &f) {
              f.pid = 100;
              f.state = SegmentState::linked;
            })),
            std::vector<std::string>{"/dev/shm/torch_100_1_0"});
  EXPECT_EQ(engine.segment(file_key(1))->mountpoint, "/dev/shm");
}

TEST(EngineMounts, PercentGrowthAndSecondsToFull) {
  Engine engine;
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev, 1000 * kMiB, 100 * kMiB));
  engine.set_mount(tmpfs_mount(40, "/run/flat", kOtherDev, 10 * kMiB, kMiB));
  engine.set_mount(tmpfs_mount(41, "/run/nolimit", 28));
  engine.sample_mounts(sec(100));
  for (int i = 1; i <= 4; ++i) {
    engine.apply(create(100, i, "/dev/shm/f" + std::to_string(i), sec(100 + i)));
    engine.apply(resize(100, i, 10 * kMiB, 10 * kMiB, sec(100 + i)));
    engine.sample_mounts(sec(100 + i));
  }
  auto m = engine.mounts();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].mount.mountpoint, "/dev/shm");
  EXPECT_EQ(m[0].mount.used_bytes, 140 * kMiB);
  EXPECT_EQ(m[0].tracked_bytes, 40 * kMiB);
  EXPECT_EQ(m[0].segments, 4u);
  ASSERT_TRUE(m[0].percent);
  EXPECT_DOUBLE_EQ(*m[0].percent, 14.0);
  EXPECT_NEAR(m[0].growth_bytes_per_s, 10.0 * kMiB, 1.0);
  ASSERT_TRUE(m[0].seconds_to_full);
  EXPECT_NEAR(*m[0].seconds_to_full, 86.0, 1e-6);

  EXPECT_EQ(m[1].mount.mountpoint, "/run/flat");
  EXPECT_DOUBLE_EQ(*m[1].percent, 10.0);
  EXPECT_EQ(m[1].growth_bytes_per_s, 0.0);
  EXPECT_FALSE(m[1].seconds_to_full); // not growing
  EXPECT_EQ(m[2].mount.mountpoint, "/run/nolimit");
  EXPECT_FALSE(m[2].percent);
  EXPECT_FALSE(m[2].seconds_to_full);

  // A fresh statfs replaces the estimate; frees shrink it.
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev, 1000 * kMiB, 150 * kMiB));
  engine.apply(free_pages(1, 10 * kMiB, false, sec(105)));
  EXPECT_EQ(engine.mounts()[0].mount.used_bytes, 140 * kMiB);

  Event full = resize(100, 2, 20 * kMiB, 10 * kMiB, sec(106));
  full.ret = -ENOSPC;
  full.err = ENOSPC;
  engine.apply(full);
  EXPECT_EQ(engine.mounts()[0].enospc, 1u);

  // A write and a create without space count with it; a create whose
  // mount was not found (no device) does not, nor does another errno.
  Event write = full;
  write.type = EventType::nospace;
  write.origin = Origin::write;
  engine.apply(write);
  Event create_failed = write;
  create_failed.origin = Origin::openat;
  create_failed.ino = 0;
  engine.apply(create_failed);
  create_failed.dev = 0;
  engine.apply(create_failed);
  Event other = full;
  other.ret = -EPERM;
  other.err = EPERM;
  engine.apply(other);
  EXPECT_EQ(engine.mounts()[0].enospc, 3u);
  EXPECT_EQ(engine.mounts()[1].enospc, 0u);
  const auto groups = engine.nospace_groups();
  ASSERT_EQ(groups.size(), 2u); // the host's empty group, and /dev/shm's
  EXPECT_EQ(groups[1].mountpoint, "/dev/shm");
  EXPECT_EQ(groups[1].count, 3u);
}

// A mount statfs could not reach this time (its namespace's process exited)
// keeps its last measurement, moved by the events since; it does not fall to
// zero, which would read as a sudden free and then a burst of growth.
TEST(EngineMounts, AnUnmeasuredMountKeepsItsLastMeasurement) {
  Engine engine;
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev, 1000 * kMiB, 100 * kMiB));
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, 20 * kMiB, 20 * kMiB, sec(1)));

  MountState unknown = tmpfs_mount(kMntId, "/dev/shm", kDev, 1000 * kMiB, 0);
  unknown.used_known = false;
  MountState never = tmpfs_mount(40, "/run/never", kOtherDev, 10 * kMiB, 0);
  never.used_known = false;
  engine.reconcile_mounts({unknown, never});
  auto m = engine.mounts();
  ASSERT_EQ(m.size(), 1u); // a mount never measured waits for a measurement
  EXPECT_EQ(m[0].mount.mountpoint, "/dev/shm");
  EXPECT_EQ(m[0].mount.used_bytes, 120 * kMiB);

  engine.apply(resize(100, 1, 30 * kMiB, 30 * kMiB, sec(2)));
  EXPECT_EQ(engine.mounts()[0].mount.used_bytes, 130 * kMiB);

  // Measured again: the new value replaces the estimate.
  engine.reconcile_mounts({tmpfs_mount(kMntId, "/dev/shm", kDev, 1000 * kMiB, 125 * kMiB)});
  EXPECT_EQ(engine.mounts()[0].mount.used_bytes, 125 * kMiB);
}

// A filesystem that ended (Monitor's samples tell): its unheld files go
// with its name; a held file keeps it alive, memfds are not on it, and a
// file changed since the look is of a filesystem found after it.
TEST(EngineMounts, AnEndedFilesystemForgetsItsUnheldFilesAndItsName) {
  Engine engine;
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev));
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(1)));
  engine.apply(create(100, 2, "/dev/shm/held", sec(1)));
  engine.apply(open_file(200, 2, "/dev/shm/held", sec(2)));
  engine.apply(memfd(400, 7, "buf", sec(1), 0)); // 400 lives on
  engine.apply(exit_of(100, sec(3)));
  ASSERT_EQ(orphan_paths(engine, sec(1000), 0), std::vector<std::string>{"/dev/shm/a"});
  EXPECT_EQ(engine.file_devs(), (std::vector<uint32_t>{1, kDev}));

  engine.reconcile_mounts({});
  EXPECT_EQ(engine.forget_filesystem(kDev, sec(10)), 1u);
  EXPECT_FALSE(engine.segment(file_key(1)));
  EXPECT_TRUE(orphan_paths(engine, sec(1000), 0).empty());
  EXPECT_EQ(engine.totals(sec(1000), 0).tmpfs.bytes, 0u);
  EXPECT_TRUE(engine.segment(file_key(2))); // held: the filesystem lives on
  EXPECT_TRUE(engine.segment(file_key(7, 1)));
  EXPECT_EQ(engine.forget_filesystem(1, sec(10)), 0u); // memfds are on no mount
  // Its holder goes: now it ends, and its name with it.
  engine.apply(exit_of(200, sec(11)));
  EXPECT_EQ(engine.forget_filesystem(kDev, sec(12)), 1u);
  EXPECT_EQ(engine.file_devs(), std::vector<uint32_t>{1});
  // The device number again, another filesystem: no old name, no old file.
  engine.apply(create(500, 3, "/x/new", sec(20)));
  auto s = engine.segment(file_key(3));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->mountpoint, "");
  // Changed after the look: not the ended filesystem's.
  EXPECT_EQ(engine.forget_filesystem(kDev, sec(15)), 0u);
  EXPECT_TRUE(engine.segment(file_key(3)));
}

// A device number given to a new filesystem (the old one ended between two
// samples): the fsid tells them apart, and the old one's files and name go;
// a file of the new one seen after the look stays.
TEST(EngineMounts, AReusedDeviceNumberInheritsNoFileAndNoName) {
  Engine engine;
  MountState mask = tmpfs_mount(40, "/sys/firmware", 50);
  mask.fsid = 0xaaaa;
  engine.reconcile_mounts({mask}, sec(1));
  Event old = create(100, 2, "/sys/firmware/x", sec(2));
  old.dev = 50;
  old.mnt_id = 40;
  engine.apply(old);
  engine.apply(exit_of(100, sec(3)));
  ASSERT_TRUE(engine.segment(file_key(2, 50)));

  MountState shm = tmpfs_mount(41, "/dev/shm", 50);
  shm.mntns = 2;
  shm.fsid = 0xbbbb;
  Event fresh = create(200, 3, "/dev/shm/y", sec(12));
  fresh.dev = 50;
  fresh.mnt_id = 0;
  engine.apply(fresh); // after the look below began
  EXPECT_EQ(engine.reconcile_mounts({shm}, sec(10)), 1u);
  EXPECT_FALSE(engine.segment(file_key(2, 50)));
  auto s = engine.segment(file_key(3, 50));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->mountpoint, "/dev/shm");
  // The same filesystem again: nothing more goes.
  EXPECT_EQ(engine.reconcile_mounts({shm}, sec(20)), 0u);
  EXPECT_TRUE(engine.segment(file_key(3, 50)));
  // A kernel that gives no fsid says nothing either way.
  shm.fsid = 0;
  EXPECT_EQ(engine.reconcile_mounts({shm}, sec(30)), 0u);
}

TEST(EngineMounts, GrowthUsesOnlyTheWindow) {
  EngineConfig cfg;
  cfg.growth_window_ns = sec(10);
  Engine engine(cfg);
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev, 100 * kMiB));
  engine.sample_mounts(sec(0));
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, 50 * kMiB, 50 * kMiB, sec(1)));
  engine.sample_mounts(sec(1));
  EXPECT_GT(engine.mounts()[0].growth_bytes_per_s, 0.0);
  for (int t = 2; t <= 30; t += 2)
    engine.sample_mounts(sec(t));
  auto m = engine.mounts()[0];
  EXPECT_EQ(m.growth_bytes_per_s, 0.0); // the jump left the window
  EXPECT_FALSE(m.seconds_to_full);
}

// --- keys and scale ----------------------------------------------------------

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

} // namespace
} // namespace shmbpf

namespace shmbpf {
namespace {

TEST(EngineQueries, SegmentsWithTimeCarryAgeAndOrphanVerdict) {
  Engine engine = with_host_shm();
  engine.apply(create(100, 1, "/dev/shm/left", sec(10)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(10)));
  engine.apply(create(200, 2, "/dev/shm/kept", sec(10)));
  engine.apply(exit_of(100, sec(11)));

  auto v = engine.segments({}, sec(100), sec(60));
  ASSERT_EQ(v.size(), 2u); // sorted by path
  EXPECT_EQ(v[0].path, "/dev/shm/kept");
  EXPECT_FALSE(v[0].orphan); // creator 200 is alive and holds it
  EXPECT_EQ(v[1].path, "/dev/shm/left");
  EXPECT_TRUE(v[1].orphan);
  EXPECT_EQ(v[1].age_ns, sec(90));
  // Too young for this min-age: not an orphan yet.
  EXPECT_FALSE(engine.segments({}, sec(30), sec(60))[1].orphan);
  // Without a time nothing is judged.
  EXPECT_FALSE(engine.segments()[1].age_ns.has_value());
}

TEST(EngineQueries, TotalsByKindOrphansRatesAndSigbus) {
  Engine engine = with_host_shm();
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(1)));
  engine.apply(memfd(100, 2, "buf", sec(1), 0));
  engine.apply(unlink_file(100, "/dev/shm/a", sec(2)));
  engine.apply(create(200, 3, "/dev/shm/b", sec(2)));
  engine.apply(resize(200, 3, 2 * kMiB, 2 * kMiB, sec(2)));
  engine.apply(exit_of(200, sec(3)));
  Event bus = process_event(EventType::sigbus, 100, sec(3));
  bus.si_code = 2;
  engine.apply(bus);

  EngineTotals t = engine.totals(sec(100), sec(60));
  EXPECT_EQ(t.tmpfs.segments, 2u); // a (unlinked, held by 100) and b
  EXPECT_EQ(t.tmpfs.bytes, 3 * kMiB);
  EXPECT_EQ(t.memfd.segments, 1u);
  EXPECT_EQ(t.sysv.segments, 0u);
  EXPECT_EQ(t.orphans, 1u); // b: creator exited, nobody holds it
  EXPECT_EQ(t.orphan_bytes, 2 * kMiB);
  EXPECT_EQ(t.creates, 3u);
  EXPECT_EQ(t.unlinks, 1u);
  EXPECT_EQ(t.sigbus, 1u);
  // Rates survive the exit of the processes that made them.
  EXPECT_GT(engine.totals(sec(4), 0).create_rate, 0.0);
}

// A cgroup v1-only host: the scan names a process's cgroup by its v1 path
// (path_cgroup_id); the kernel's v2 id that its events carry is the v2
// root's and must not take the container away.
TEST(Engine, ACgroupV1PathIdOutlivesTheKernelsV2Id) {
  const std::string docker_id(64, 'd');
  const uint64_t v1 = path_cgroup_id("/docker/" + docker_id);
  ASSERT_TRUE(is_path_cgroup_id(v1));
  Engine engine;
  engine.set_cgroup_path(v1, "/docker/" + docker_id);
  engine.add_process(100, 1, 0, "app", v1, 0);
  Event e = create(100, 1, "/dev/shm/v1", sec(1));
  e.cgroup_id = 1; // the v2 root
  engine.apply(e);
  EXPECT_EQ(engine.process(100)->container_id, docker_id);
  EXPECT_EQ(engine.segment(file_key(1))->creator.container_id, docker_id);
  // Where the kernel's ids are real (v2), an event's id still moves a
  // process to its new cgroup.
  engine.set_cgroup_path(7, "/system.slice/x.service");
  engine.add_process(200, 1, 0, "svc", 7, 0);
  e = create(200, 2, "/dev/shm/v2", sec(1));
  e.cgroup_id = 8;
  engine.set_cgroup_path(8, "/system.slice/docker-" + docker_id + ".scope");
  engine.apply(e);
  EXPECT_EQ(engine.process(200)->container_id, docker_id);
}

// On a v1-only host a process forked after the last scan has no path-made
// id of its own: it starts in its parent's cgroups, and what it creates is
// its parent's container's, even when it exits before any rescan.
TEST(Engine, ACgroupV1ChildNoScanSawTakesItsParentsPathId) {
  const std::string docker_id(64, 'e');
  const uint64_t v1 = path_cgroup_id("/docker/" + docker_id);
  Engine engine;
  engine.set_cgroup_path(v1, "/docker/" + docker_id);
  engine.set_cgroup_path(1, "/");
  engine.add_process(100, 1, 0, "sh", v1, 0);
  Event e = create(101, 1, "/dev/shm/child", sec(1));
  e.ppid = 100;
  e.cgroup_id = 1; // the v2 root
  engine.apply(e);
  EXPECT_EQ(engine.process(101)->container_id, docker_id);
  Event gone = process_event(EventType::exit, 101, sec(2));
  gone.ppid = 100;
  gone.cgroup_id = 1;
  engine.apply(gone);
  EXPECT_EQ(engine.segment(file_key(1))->creator.container_id, docker_id);

  // A child of a process whose id is the kernel's keeps the kernel's.
  engine.add_process(200, 1, 0, "init", 1, 0);
  e = create(201, 2, "/dev/shm/host", sec(3));
  e.ppid = 200;
  e.cgroup_id = 1;
  engine.apply(e);
  EXPECT_EQ(engine.process(201)->container_id, "");
  EXPECT_EQ(engine.segment(file_key(2))->creator.container_id, "");
  // Nor does a process the engine knew already take its parent's.
  engine.add_process(300, 1, 0, "svc", 1, 0);
  e = create(300, 3, "/dev/shm/svc", sec(4));
  e.ppid = 100;
  e.cgroup_id = 1;
  engine.apply(e);
  EXPECT_EQ(engine.process(300)->container_id, "");
}

TEST(Engine, ContainerNamesOncePerIdAndOnEveryView) {
  const std::string docker_id(64, 'a');
  const std::string cri_id(64, 'c');
  const std::string pod = "1234abcd-5678-90ab-cdef-1234567890ab";
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + docker_id + ".scope");
  engine.set_cgroup_path(12, "/kubepods/burstable/pod" + pod + "/" + cri_id);
  engine.set_cgroup_path(13, "/user.slice");
  // Each container once, the host never.
  auto unnamed = engine.unnamed_containers();
  ASSERT_EQ(unnamed.size(), 2u);
  EXPECT_EQ(unnamed[0].id, docker_id);
  EXPECT_EQ(unnamed[1].id, cri_id);
  EXPECT_EQ(unnamed[1].pod_uid, pod);

  auto in = [](Event e, uint64_t cgroup) {
    e.cgroup_id = cgroup;
    return e;
  };
  engine.apply(in(create(100, 1, "/dev/shm/d1", sec(1)), 11));
  engine.apply(in(create(200, 2, "/dev/shm/k1", sec(1)), 12));
  engine.set_container_name(docker_id, ContainerName{"web-1", "", "", ""});
  engine.set_container_name(cri_id, ContainerName{"api", "api-6b9c", "shop", "other-uid"});
  EXPECT_TRUE(engine.unnamed_containers().empty());

  auto rows = engine.containers(sec(1));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].name, "web-1");
  EXPECT_EQ(rows[1].pod, "");
  EXPECT_EQ(rows[2].name, "api");
  EXPECT_EQ(rows[2].pod, "api-6b9c");
  EXPECT_EQ(rows[2].pod_namespace, "shop");
  EXPECT_EQ(rows[2].pod_uid, pod); // the cgroup's uid over the file's
  EXPECT_EQ(engine.segment(file_key(1))->container.name, "web-1");
  EXPECT_EQ(engine.process(200)->container_name, "api");
  EXPECT_EQ(engine.process(200)->pod_namespace, "shop");

  // A cgroup of a known container takes its name without a new lookup; a
  // container whose files said nothing is not looked up again.
  engine.set_cgroup_path(14, "/system.slice/docker-" + docker_id + ".scope/init");
  engine.set_container_name(std::string(64, 'e'), ContainerName{});
  engine.set_cgroup_path(15, "/system.slice/docker-" + std::string(64, 'e') + ".scope");
  EXPECT_TRUE(engine.unnamed_containers().empty());
  engine.apply(in(create(101, 3, "/dev/shm/d2", sec(2)), 14));
  EXPECT_EQ(engine.segment(file_key(3))->container.name, "web-1");

  // --container takes a name as well as an id prefix.
  SegmentFilter by_name;
  by_name.container = "api";
  auto segs = engine.segments(by_name);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].path, "/dev/shm/k1");
}

TEST(Engine, EmptyDirVolumeBelongsToItsPod) {
  const std::string pod = "1234abcd-5678-90ab-cdef-1234567890ab";
  const std::string volume =
      "/var/lib/kubelet/pods/" + pod + "/volumes/kubernetes.io~empty-dir/cache";
  Engine engine;
  engine.set_mount(tmpfs_mount(50, volume, 77));
  engine.set_mount(tmpfs_mount(51, "/run/user/1000", 78));
  auto owner = [&](const std::string &mountpoint) {
    for (const MountUsage &m : engine.mounts())
      if (m.mount.mountpoint == mountpoint)
        return m.container;
    return ContainerRef{"missing", "", ""};
  };
  EXPECT_EQ(owner(volume), (ContainerRef{pod, "kubernetes", pod}));
  EXPECT_EQ(owner("/run/user/1000"), ContainerRef{});
  // Once one of its containers is named, the volume carries the pod's name.
  const std::string ctr(64, 'c');
  engine.set_cgroup_path(12, "/kubepods/burstable/pod" + pod + "/" + ctr);
  engine.set_container_name(ctr, ContainerName{"api", "api-6b9c", "shop", pod});
  const ContainerRef named = owner(volume);
  EXPECT_EQ(named.id, pod);
  EXPECT_EQ(named.pod, "api-6b9c");
  EXPECT_EQ(named.pod_namespace, "shop");
  EXPECT_EQ(named.name, ""); // the pod's volume, not one container's
}

TEST(EngineQueries, SegmentOfUnknownCreatorBelongsToItsMountsContainer) {
  const std::string id(64, 'a');
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + id + ".scope");
  engine.set_cgroup_path(12, "/user.slice");
  engine.set_mount({40, 7001, "/dev/shm", 50, 64 * kMiB, 0}); // the container's own /dev/shm
  engine.set_mount({kMntId, 7000, "/dev/shm", kDev, 0, 0});   // the host's
  engine.add_process(500, 1, 0, "app", 11, 7001);
  engine.add_process(600, 1, 0, "bash", 12, 7000);
  TmpfsFile in_container = existing(9, "/dev/shm/c", 4096);
  in_container.dev = 50;
  engine.add_existing_file(in_container, 40, "/dev/shm");
  engine.add_existing_file(existing(8, "/dev/shm/h", 4096), kMntId, "/dev/shm");

  auto c = engine.segment(file_key(9, 50));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->container.id, id);
  EXPECT_EQ(c->container.runtime, "docker");
  EXPECT_EQ(engine.segment(file_key(8))->container.id, "");

  SegmentFilter f;
  f.container = id.substr(0, 12);
  auto v = engine.segments(f);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].key, file_key(9, 50));
  auto rows = engine.containers();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].id, id);
  EXPECT_EQ(rows[1].segments, 1u);

  // A host process joining that namespace makes it ambiguous: no container.
  engine.add_process(601, 1, 0, "nsenter", 12, 7001);
  EXPECT_EQ(engine.segment(file_key(9, 50))->container.id, "");
}

TEST(EngineQueries, ReconcileHoldersDropsClosedFdsAndCollectsUnlinked) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(1)));
  engine.apply(create(100, 2, "/dev/shm/b", sec(1)));
  engine.apply(unlink_file(100, "/dev/shm/b", sec(2)));
  engine.add_process(200, 1, 0, "peer", 0, 0);
  // The scan: 100 closed everything (no event says so), 200 holds a.
  engine.reconcile_holders({{200, file_key(1)}, {200, file_key(77)}});
  EXPECT_EQ(engine.segment(file_key(1))->holders, (Pids{200}));
  EXPECT_FALSE(engine.segment(file_key(2))); // unlinked and unheld: gone
  EXPECT_EQ(engine.process(100)->segments_held, 0u);
}

// A process that created thousands of files and closed most of them
// unseen: one rescan of its fds drops exactly the closed ones, collects the
// unlinked ones nobody else holds, and keeps its held list exact.
TEST(EngineQueries, ReconcileProcessFilesDropsWhatAProcessClosed) {
  Engine engine;
  constexpr uint64_t kFiles = 3000;
  for (uint64_t ino = 1; ino <= kFiles; ++ino) {
    const std::string path = "/dev/shm/f" + std::to_string(ino);
    engine.apply(create(100, ino, path, sec(1)));
    if (ino % 7 == 0)
      engine.apply(open_file(200, ino, path, sec(1)));
    if (ino % 2 == 0)
      engine.apply(unlink_file(100, path, sec(2), ino));
  }
  std::vector<SegmentKey> still_open;
  for (uint64_t ino = 3; ino <= kFiles; ino += 3)
    still_open.push_back(file_key(ino));
  ASSERT_TRUE(engine.reconcile_process_files(100, still_open));
  EXPECT_FALSE(engine.reconcile_process_files(999, {})); // unknown process
  size_t held = 0;
  for (uint64_t ino = 1; ino <= kFiles; ++ino) {
    auto s = engine.segment(file_key(ino));
    const bool open = ino % 3 == 0, peer = ino % 7 == 0, linked = ino % 2 != 0;
    ASSERT_EQ(s.has_value(), open || peer || linked) << ino;
    if (!s)
      continue;
    Pids want;
    if (open)
      want.push_back(100);
    if (peer)
      want.push_back(200);
    EXPECT_EQ(s->holders, want) << ino;
    std::vector<uint32_t> seen;
    engine.for_each_holder(file_key(ino), [&](uint32_t pid) { seen.push_back(pid); });
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, want) << ino;
    held += open;
  }
  EXPECT_EQ(engine.process(100)->segments_held, held);
  // The held list stayed exact: an exit releases what is left, and only that.
  engine.apply(exit_of(100, sec(3)));
  for (uint64_t ino = 1; ino <= kFiles; ++ino) {
    auto s = engine.segment(file_key(ino));
    const bool peer = ino % 7 == 0, linked = ino % 2 != 0;
    ASSERT_EQ(s.has_value(), peer || linked) << ino;
  }
}

TEST(EngineQueries, ReconcileMountsForgetsUnmounted) {
  Engine engine;
  engine.set_mount({40, 7001, "/dev/shm", 50, 64 * kMiB, 0});
  engine.set_mount({kMntId, 7000, "/dev/shm", kDev, 0, 0});
  engine.reconcile_mounts({{kMntId, 7000, "/dev/shm", kDev, 0, 4096}});
  auto m = engine.mounts();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].mount.mnt_id, kMntId);
  EXPECT_EQ(m[0].mount.used_bytes, 4096u);
}

// --- the segment table and its indexes under churn ----------------------------

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
