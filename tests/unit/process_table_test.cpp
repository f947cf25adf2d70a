// The engine's process table on its own: incarnation serials, what an
// event's header tells of a process, and holds dropped by key.
#include "model/process_table.hpp"

#include "facts/scan.hpp"
#include "synthetic_events.hpp"

#include <gtest/gtest.h>

#include <set>

namespace shmbpf {
namespace {

using test::process_event;

TEST(ProcessTable, EachIncarnationHasASerialOfItsOwnNeverZero) {
  ProcessTable t;
  const uint32_t first = t.entry(100).serial;
  EXPECT_NE(first, 0u);
  EXPECT_EQ(t.entry(100).serial, first); // the same process
  EXPECT_TRUE(t.alive(100, first));
  EXPECT_TRUE(t.alive(100, 0)); // any incarnation
  EXPECT_FALSE(t.alive(200, 0));

  t.erase(t.find(100));
  EXPECT_FALSE(t.alive(100, first));
  const uint32_t second = t.entry(100).serial; // the pid reused
  EXPECT_NE(second, first);
  EXPECT_FALSE(t.alive(100, first));
  EXPECT_TRUE(t.alive(100, second));

  // A fresh serial is no process's.
  std::set<uint32_t> seen{first, second};
  for (int i = 0; i < 100; ++i)
    EXPECT_TRUE(seen.insert(t.fresh_serial()).second);
  EXPECT_FALSE(t.alive(100, t.fresh_serial()));
  EXPECT_EQ(t.size(), 1u);
}

TEST(ProcessTable, AnEventsHeaderDescribesItsProcess) {
  ProcessTable t;
  Event e = process_event(EventType::open, 100, 1);
  e.cgroup_id = 11;
  e.mntns = 4026531840u;
  e.ipcns = 4026531839u;
  const ProcessTable::Process &p = t.touch(e);
  EXPECT_EQ(p.comm, "p100");
  EXPECT_EQ(p.uid, 1000u);
  EXPECT_EQ(p.ppid, 1u);
  EXPECT_EQ(p.cgroup_id, 11u);
  EXPECT_EQ(p.mntns, 4026531840u);
  EXPECT_EQ(p.ipcns, 4026531839u);

  // What an event does not say stays as it was.
  Event quiet = process_event(EventType::exit, 100, 2);
  quiet.comm.clear();
  t.touch(quiet);
  EXPECT_EQ(t.find(100)->second.comm, "p100");
  EXPECT_EQ(t.find(100)->second.cgroup_id, 11u);
  EXPECT_EQ(t.find(100)->second.mntns, 4026531840u);
}

TEST(ProcessTable, OnACgroupV1HostAChildStartsInItsParentsPathMadeCgroup) {
  ProcessTable t;
  const uint64_t v1_id = kPathCgroupIdBit | 0x1234;
  t.entry(100).cgroup_id = v1_id; // as a scan gave it
  Event child = process_event(EventType::open, 101, 1);
  child.ppid = 100;
  child.cgroup_id = 1; // the kernel's v2 id: the v2 root's, saying nothing
  EXPECT_EQ(t.touch(child).cgroup_id, v1_id);
  // The parent keeps its path-made id whatever its events say.
  Event parent = process_event(EventType::open, 100, 2);
  parent.cgroup_id = 1;
  EXPECT_EQ(t.touch(parent).cgroup_id, v1_id);
  // A child of a parent with a kernel id takes its own event's.
  t.entry(200).cgroup_id = 77;
  Event other = process_event(EventType::open, 201, 3);
  other.ppid = 200;
  other.cgroup_id = 78;
  EXPECT_EQ(t.touch(other).cgroup_id, 78u);
}

TEST(ProcessTable, AHoldIsForgottenByKeyWithItsAttachments) {
  ProcessTable t;
  const SegmentKey a = SegmentKey::file(26, 1), b = SegmentKey::file(26, 2);
  const SegmentKey shm = SegmentKey::sysv(4026531839u, 7);
  ProcessTable::Process &p = t.entry(100);
  p.held = {{a, true}, {b, false}, {shm, false}};
  p.attachments = {{0x1000, shm}, {0x2000, shm}};
  t.forget_hold(100, shm);
  ASSERT_EQ(p.held.size(), 2u);
  EXPECT_TRUE(p.attachments.empty());
  t.forget_hold(100, a);
  ASSERT_EQ(p.held.size(), 1u);
  EXPECT_EQ(p.held[0].key, b);
  EXPECT_FALSE(p.held[0].keep_on_exec);
  t.forget_hold(100, a); // not held: nothing
  t.forget_hold(999, b); // unknown process: nothing
  EXPECT_EQ(p.held.size(), 1u);
}

} // namespace
} // namespace shmbpf
