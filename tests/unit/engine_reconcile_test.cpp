// The engine's scans (model/engine_reconcile.cpp): files, holders,
// processes, System V segments and mounts that exist, and how the tables
// converge to them after lost events, unmounts and reused device numbers.
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

} // namespace
} // namespace shmbpf
