// The engine's failure log on its own: SIGBUS faults and no-space failures,
// by filesystem and by (mountpoint, cgroup).
#include "model/failure_log.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace shmbpf {
namespace {

TEST(FailureLog, CountsNoSpaceByFilesystemAndByMountpointAndCgroup) {
  FailureLog log;
  log.record_nospace(26, "/dev/shm", 11);
  log.record_nospace(26, "/dev/shm", 11);
  log.record_nospace(26, "/dev/shm", 12);
  log.record_nospace(1, "", 11); // a memfd's
  EXPECT_EQ(log.nospace_on(26), 3u);
  EXPECT_EQ(log.nospace_on(1), 1u);
  EXPECT_EQ(log.nospace_on(27), 0u);
  const FailureCounts &c = log.nospace_counts();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.at({"/dev/shm", 11}), 2u);
  EXPECT_EQ(c.at({"/dev/shm", 12}), 1u);
  EXPECT_EQ(c.at({"", 11}), 1u);
  EXPECT_EQ(log.bus_errors().total(), 0u); // the two failures are apart
}

TEST(FailureLog, KeepsEveryFaultItIsGiven) {
  FailureLog log;
  BusError b;
  b.ts_ns = 5;
  b.pid = 100;
  b.cgroup_id = 11;
  b.fault = FaultLookup::file;
  b.dev = 26;
  b.mountpoint = "/dev/shm";
  log.record_sigbus(b);
  b.ts_ns = 6;
  b.fault = FaultLookup::unknown; // no file: counted, not by filesystem
  b.mountpoint.clear();
  log.record_sigbus(b);
  const BusErrorLog &bus = log.bus_errors();
  EXPECT_EQ(bus.total(), 2u);
  ASSERT_EQ(bus.recent().size(), 2u);
  EXPECT_EQ(bus.recent().back().ts_ns, 6u);
  ASSERT_EQ(bus.by_dev().count(26), 1u);
  EXPECT_EQ(bus.by_dev().at(26).count, 1u);
  EXPECT_EQ(bus.by_cgroup().at(11).count, 2u);
  EXPECT_EQ(bus.counts().at({"/dev/shm", 11}), 1u);
  EXPECT_EQ(bus.counts().at({"", 11}), 1u);
  EXPECT_TRUE(log.nospace_counts().empty());
}

} // namespace
} // namespace shmbpf
