// The engine's event rules (model/engine_events.cpp): a tmpfs file's and a
// memfd's life from create to the last free, holders, exec and exit,
// renames and links, System V segments, and SIGBUS faults.
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

} // namespace
} // namespace shmbpf
