// SIGBUS faults in the model: their cause, and what the engine keeps of
// them per mount, per container and as totals, from synthetic events.
#include "model/bus_errors.hpp"
#include "model/engine.hpp"
#include "synthetic_events.hpp"
#include "views/format.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

using test::process_event;

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB, kSec = 1'000'000'000;
const std::string kCtr(64, 'd');

// pid faulted on the file ino of device dev (mount mnt_id) at offset.
Event fault(uint32_t pid, uint64_t ts, uint32_t dev, uint32_t mnt_id, uint64_t ino,
            const std::string &name, uint64_t offset, uint64_t size) {
  Event e = process_event(EventType::sigbus, pid, ts);
  e.target_pid = pid;
  e.si_code = 2; // BUS_ADRERR
  e.fault = FaultLookup::file;
  e.kind = Kind::tmpfs;
  e.fs = kFsTmpfs;
  e.dev = dev;
  e.mnt_id = mnt_id;
  e.ino = ino;
  e.name = name;
  e.offset = offset;
  e.size = size;
  e.addr = 0x7f0000000000 + offset;
  e.mount_size = 64 * kMiB;
  e.mount_used = 64 * kMiB;
  return e;
}

TEST(BusCause, FromWhatTheKernelSaw) {
  Event e = fault(1, 1, 26, 25, 7, "/x", 64 * kMiB, 128 * kMiB);
  EXPECT_EQ(bus_cause(e), BusCause::mount_full);
  e.beyond_eof = true;
  EXPECT_EQ(bus_cause(e), BusCause::beyond_eof);
  e.beyond_eof = false;
  e.fs = kFsHugetlbfs;
  EXPECT_EQ(bus_cause(e), BusCause::no_huge_pages);
  e.fs = kFsTmpfs;
  e.mount_size = 0; // an unlimited tmpfs cannot be full
  EXPECT_EQ(bus_cause(e), BusCause::unknown);
  e.fault = FaultLookup::unknown;
  EXPECT_EQ(bus_cause(e), BusCause::unknown);
  EXPECT_EQ(to_string(BusCause::mount_full), "mount-full");
}

class BusErrors : public ::testing::Test {
protected:
  void SetUp() override {
    engine.set_cgroup_path(11, "/docker/" + kCtr);
    engine.reconcile_mounts({{25, 4026531840u, "/dev/shm", 26, 64 * kMiB, 64 * kMiB, true},
                             {40, 4026532001u, "/dev/shm", 50, 64 * kMiB, 0, true}});
  }
  Engine engine;
};

TEST_F(BusErrors, LastFaultPerMountAndContainerAndTotals) {
  Event host = fault(100, 10 * kSec, 26, 25, 7, "/torch_100_a_0", 64 * kMiB, 128 * kMiB);
  engine.apply(host);
  Event ctr = fault(200, 20 * kSec, 50, 40, 9, "/torch_200_b_1", 4 * kMiB, 8 * kMiB);
  ctr.cgroup_id = 11;
  engine.apply(ctr);
  Event again = fault(101, 30 * kSec, 26, 25, 8, "/torch_101_c_2", 65 * kMiB, 66 * kMiB);
  engine.apply(again);
  // kill -BUS is not a fault.
  Event killed = process_event(EventType::sigbus, 102, 31 * kSec);
  killed.si_code = 0;
  engine.apply(killed);

  EXPECT_EQ(engine.sigbus(), 3u);
  const EngineTotals t = engine.totals(40 * kSec, 0);
  EXPECT_EQ(t.sigbus, 3u);
  ASSERT_TRUE(t.last_sigbus);
  EXPECT_EQ(t.last_sigbus->pid, 101u);

  for (const MountUsage &m : engine.mounts()) {
    SCOPED_TRACE(m.mount.mnt_id);
    ASSERT_TRUE(m.last_sigbus);
    if (m.mount.dev == 26) {
      EXPECT_EQ(m.sigbus, 2u);
      EXPECT_EQ(m.last_sigbus->path, "/dev/shm/torch_101_c_2");
      EXPECT_EQ(m.last_sigbus->mountpoint, "/dev/shm");
      EXPECT_EQ(m.last_sigbus->cause, BusCause::mount_full);
      EXPECT_EQ(m.last_sigbus->container.id, "");
    } else {
      EXPECT_EQ(m.sigbus, 1u);
      EXPECT_EQ(m.last_sigbus->pid, 200u);
      EXPECT_EQ(m.last_sigbus->container.id, kCtr);
      EXPECT_EQ(m.last_sigbus->offset, 4 * kMiB);
    }
  }
  for (const ContainerInfo &c : engine.containers(40 * kSec)) {
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.sigbus, c.id.empty() ? 2u : 1u);
    ASSERT_TRUE(c.last_sigbus);
    EXPECT_EQ(c.last_sigbus->pid, c.id.empty() ? 101u : 200u);
  }

  // The exporter's groups: by container and mountpoint.
  const auto groups = engine.sigbus_groups();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].mountpoint, "");
  EXPECT_EQ(groups[0].count, 0u);
  EXPECT_EQ(groups[1].mountpoint, "/dev/shm");
  EXPECT_EQ(groups[1].container.id, "");
  EXPECT_EQ(groups[1].count, 2u);
  EXPECT_EQ(groups[2].container.id, kCtr);
  EXPECT_EQ(groups[2].count, 1u);

  const auto since = engine.sigbus_since(15 * kSec);
  ASSERT_EQ(since.size(), 2u);
  EXPECT_EQ(since[0].pid, 200u);

  EXPECT_EQ(bus_error_text(*t.last_sigbus, 40 * kSec),
            "10s ago, pid 101 (p101): /dev/shm/torch_101_c_2 at 65M of 66M, mount-full (64M of "
            "64M used)");
}

// In a container: the pid its own namespace gives (what its logs print),
// the container by name, and the host's pid; by id while unnamed.
TEST(BusErrorText, AContainersFaultNamesItsPidTheContainerAndTheHostsPid) {
  BusError b;
  b.ts_ns = kSec;
  b.pid = 81234;
  b.ns_pid = 7;
  b.comm = "pt_data_worker";
  b.fault = FaultLookup::anon;
  b.container.id = std::string(64, 'c');
  EXPECT_EQ(bus_error_text(b, 3 * kSec), "2s ago, pid 7 in container cccccccccccc (host pid "
                                         "81234) (pt_data_worker): an anonymous mapping");
  b.container.name = "trainer";
  EXPECT_EQ(bus_error_text(b, 3 * kSec), "2s ago, pid 7 in container trainer (host pid 81234) "
                                         "(pt_data_worker): an anonymous mapping");
  b.ns_pid = 0; // not known: the host's alone
  EXPECT_EQ(bus_error_text(b, 3 * kSec),
            "2s ago, container trainer (host pid 81234) (pt_data_worker): an anonymous mapping");
}

TEST_F(BusErrors, AFaultWithoutAFileCountsWithoutAMount) {
  Event e = process_event(EventType::sigbus, 100, kSec);
  e.si_code = 2;
  e.fault = FaultLookup::anon;
  e.addr = 0x1000;
  engine.apply(e);
  EXPECT_EQ(engine.sigbus(), 1u);
  for (const MountUsage &m : engine.mounts())
    EXPECT_EQ(m.sigbus, 0u);
  const auto groups = engine.sigbus_groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 1u);
  EXPECT_EQ(bus_error_text(engine.sigbus_since(0).at(0), 3 * kSec),
            "2s ago, pid 100 (p100): an anonymous mapping");
}

TEST_F(BusErrors, OnlyTheLatestFaultsAreRemembered) {
  for (uint64_t i = 0; i < BusErrorLog::kRecent + 10; ++i)
    engine.apply(fault(100, (i + 1) * kSec, 26, 25, 7, "/x", 0, 1));
  EXPECT_EQ(engine.sigbus(), BusErrorLog::kRecent + 10);
  const auto all = engine.sigbus_since(0);
  ASSERT_EQ(all.size(), BusErrorLog::kRecent);
  EXPECT_EQ(all.front().ts_ns, 11 * kSec);
}

} // namespace
} // namespace shmbpf
