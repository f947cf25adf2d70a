// The engine's mount table on its own: each filesystem's share of the known
// segments, the names shown for a mount or device, a mount's usage and
// growth, and a device number reused by another filesystem.
#include "model/mount_table.hpp"

#include "engine_fixture.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shmbpf {
namespace {

using test::kMiB;
using test::kSec;

// A tmpfs mount as the engine's tests make them, of filesystem fsid.
MountState mount(uint32_t mnt_id, std::string mountpoint, uint32_t dev, uint64_t limit = 0,
                 uint64_t used = 0, uint64_t fsid = 0) {
  MountState m = test::tmpfs_mount(mnt_id, std::move(mountpoint), dev, limit, used);
  m.fsid = fsid;
  return m;
}

MountTable table() { return MountTable(60 * kSec, 240); }

TEST(MountTable, CountsEachFilesystemsSegmentsAndBytesAndNeverWraps) {
  MountTable t = table();
  t.add_segment(26);
  t.add_segment(26);
  t.add_segment(27);
  t.change_bytes(26, 0, 4 * kMiB);
  t.change_bytes(26, 0, 2 * kMiB);
  t.change_bytes(26, 4 * kMiB, kMiB); // the first file shrank
  EXPECT_EQ(t.tracked_bytes(26), 3 * kMiB);
  EXPECT_EQ(t.segments(26), 2u);
  EXPECT_EQ(t.file_devs(), (std::vector<uint32_t>{26, 27}));

  t.remove_segment(27, 0);
  EXPECT_EQ(t.file_devs(), (std::vector<uint32_t>{26}));
  // A lost event must not wrap a count below zero.
  t.remove_segment(27, kMiB);
  EXPECT_EQ(t.segments(27), 0u);
  EXPECT_EQ(t.tracked_bytes(27), 0u);
  t.change_bytes(27, 5 * kMiB, 0);
  EXPECT_EQ(t.tracked_bytes(27), 0u);
  EXPECT_EQ(t.tracked_bytes(99), 0u); // an unknown device
}

TEST(MountTable, AMountsNameComesFirstThenItsFilesystemsFirstName) {
  MountTable t = table();
  t.name(0, 26, "/dev/shm");
  t.name(0, 26, "/other"); // a name given stays
  t.name(0, 27, "");       // no name is no name
  EXPECT_EQ(t.mountpoint(0, 26), "/dev/shm");
  EXPECT_EQ(t.mountpoint(40, 26), "/dev/shm"); // an unknown mount: its filesystem's
  EXPECT_EQ(t.mountpoint(0, 27), "");

  t.set(mount(40, "/run/bind", 26));
  EXPECT_EQ(t.mountpoint(40, 26), "/run/bind");
  EXPECT_EQ(t.mountpoint(0, 26), "/dev/shm");
  // A mount gone takes its name; its filesystem keeps one.
  t.keep_only({});
  EXPECT_EQ(t.mountpoint(40, 26), "/dev/shm");
  EXPECT_EQ(t.mount(40), nullptr);
}

TEST(MountTable, UsageIsTheMeasurementMovedByTheTrackedBytesSince) {
  MountTable t = table();
  t.add_segment(26);
  t.change_bytes(26, 0, 2 * kMiB);
  t.set(mount(25, "/dev/shm", 26, 64 * kMiB, 10 * kMiB));
  t.change_bytes(26, 2 * kMiB, 6 * kMiB); // 4 MiB more since the measurement

  std::vector<MountUsage> u = t.usage();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].mount.used_bytes, 14 * kMiB);
  EXPECT_EQ(u[0].tracked_bytes, 6 * kMiB);
  EXPECT_EQ(u[0].segments, 1u);
  ASSERT_TRUE(u[0].percent);
  EXPECT_DOUBLE_EQ(*u[0].percent, 100.0 * 14 / 64);
  EXPECT_EQ(u[0].growth_bytes_per_s, 0); // no samples yet
  EXPECT_FALSE(u[0].seconds_to_full);

  // Frees below the measurement's baseline never make usage negative.
  t.set(mount(25, "/dev/shm", 26, 64 * kMiB, 0)); // measured with 6 MiB tracked
  t.change_bytes(26, 6 * kMiB, 0);
  EXPECT_EQ(t.usage()[0].mount.used_bytes, 0u);
}

TEST(MountTable, AnUnmeasuredMountKeepsItsLastMeasurementOrWaitsForOne) {
  MountTable t = table();
  MountState unmeasured = mount(25, "/dev/shm", 26, 64 * kMiB);
  unmeasured.used_known = false;
  t.set(unmeasured);
  EXPECT_TRUE(t.usage().empty()); // never measured: nothing to show yet
  EXPECT_EQ(t.mountpoint(25, 26), "/dev/shm");

  t.set(mount(25, "/dev/shm", 26, 64 * kMiB, 8 * kMiB));
  unmeasured.size_limit = 128 * kMiB; // the rest of the state is news
  t.set(unmeasured);
  std::vector<MountUsage> u = t.usage();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].mount.used_bytes, 8 * kMiB);
  EXPECT_EQ(u[0].mount.size_limit, 128 * kMiB);
  EXPECT_TRUE(u[0].mount.used_known);
}

TEST(MountTable, GrowthIsTheSlopeOverTheWindowAndGivesTheTimeToFull) {
  MountTable t(10 * kSec, 240);
  t.add_segment(26);
  t.set(mount(25, "/dev/shm", 26, 100 * kMiB, 0));
  // 1 MiB a second for 20 s, sampled every second: the window keeps 10 s.
  for (uint64_t s = 0; s <= 20; ++s) {
    t.change_bytes(26, s == 0 ? 0 : (s - 1) * kMiB, s * kMiB);
    t.sample(s * kSec);
  }
  std::vector<MountUsage> u = t.usage();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_NEAR(u[0].growth_bytes_per_s, static_cast<double>(kMiB), 1.0);
  ASSERT_TRUE(u[0].seconds_to_full);
  EXPECT_NEAR(*u[0].seconds_to_full, 80.0, 0.01);

  // A mount that shrinks is not filling.
  for (uint64_t s = 21; s <= 40; ++s) {
    t.change_bytes(26, 20 * kMiB, 0);
    t.sample(s * kSec);
  }
  EXPECT_EQ(t.usage()[0].growth_bytes_per_s, 0);
  EXPECT_FALSE(t.usage()[0].seconds_to_full);
}

// What a container's /dev/shm must hold: the most it held, past the
// growth window and after it shrank.
TEST(MountTable, ThePeakIsTheMostAMeasurementOrSampleFound) {
  MountTable t(10 * kSec, 240);
  t.add_segment(26);
  t.set(mount(25, "/dev/shm", 26, 64 * kMiB, 2 * kMiB));
  EXPECT_EQ(t.usage()[0].peak_used_bytes, 2 * kMiB);
  t.change_bytes(26, 0, 30 * kMiB); // 32 MiB now, by the events
  t.sample(1 * kSec);
  t.change_bytes(26, 30 * kMiB, 0);
  for (uint64_t s = 2; s <= 30; ++s)
    t.sample(s * kSec);
  EXPECT_EQ(t.usage()[0].mount.used_bytes, 2 * kMiB);
  EXPECT_EQ(t.usage()[0].peak_used_bytes, 32 * kMiB);
  t.set(mount(25, "/dev/shm", 26, 64 * kMiB, 40 * kMiB)); // measured higher between samples
  EXPECT_EQ(t.usage()[0].peak_used_bytes, 40 * kMiB);
  // The id given to another filesystem's mount: its own peak only.
  t.set(mount(25, "/dev/shm", 27, 64 * kMiB, 1 * kMiB));
  EXPECT_EQ(t.usage()[0].peak_used_bytes, 1 * kMiB);
  EXPECT_EQ(t.usage()[0].growth_bytes_per_s, 0);
}

TEST(MountTable, SamplesAreCappedInNumber) {
  MountTable t(3600 * kSec, 3);
  t.add_segment(26);
  t.set(mount(25, "/dev/shm", 26, 0, 0));
  // Flat, then a jump: with only the last three samples kept, the slope is
  // the jump's.
  for (uint64_t s = 0; s < 10; ++s)
    t.sample(s * kSec);
  t.change_bytes(26, 0, 3 * kMiB);
  t.sample(10 * kSec);
  t.change_bytes(26, 3 * kMiB, 6 * kMiB);
  t.sample(11 * kSec);
  EXPECT_NEAR(t.usage()[0].growth_bytes_per_s, 3.0 * kMiB, 1.0);
  EXPECT_FALSE(t.usage()[0].seconds_to_full); // unlimited: never full
}

TEST(MountTable, ADeviceNumberGivenToAnotherFilesystemLosesItsName) {
  MountTable t = table();
  t.add_segment(26);
  EXPECT_FALSE(t.changed_filesystem(mount(25, "/dev/shm", 26, 0, 0, 0))); // fsid unknown
  t.set(mount(25, "/dev/shm", 26, 0, 0, 0xaaaa));
  EXPECT_FALSE(t.changed_filesystem(mount(25, "/dev/shm", 26, 0, 0, 0xaaaa)));

  EXPECT_TRUE(t.changed_filesystem(mount(41, "/var/lib/x/shm", 26, 0, 0, 0xbbbb)));
  EXPECT_EQ(t.mountpoint(0, 26), "");
  t.refile(26, 0xbbbb);
  EXPECT_FALSE(t.changed_filesystem(mount(41, "/var/lib/x/shm", 26, 0, 0, 0xbbbb)));

  // A device with segments left keeps its name; an empty one is forgotten.
  t.name(0, 26, "/var/lib/x/shm");
  t.forget_if_empty(26);
  EXPECT_EQ(t.mountpoint(0, 26), "/var/lib/x/shm");
  t.remove_segment(26, 0);
  t.forget_if_empty(26);
  EXPECT_EQ(t.mountpoint(0, 26), "");
  // ...with its fsid: the next filesystem under that number is news, not a change.
  EXPECT_FALSE(t.changed_filesystem(mount(42, "/x", 26, 0, 0, 0xcccc)));
}

TEST(MountTable, KeepsTheScanGapsItIsGiven) {
  MountTable t = table();
  ScanGap g;
  g.dev = 26;
  g.mountpoint = "/dev/shm";
  t.set_scan_gaps({g});
  ASSERT_EQ(t.scan_gaps().size(), 1u);
  EXPECT_EQ(t.scan_gaps()[0].mountpoint, "/dev/shm");
  t.set_scan_gaps({});
  EXPECT_TRUE(t.scan_gaps().empty());
}

} // namespace
} // namespace shmbpf
