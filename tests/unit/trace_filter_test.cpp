// trace's -p, --comm, --kind and --event.
#include "views/trace_filter.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

TEST(TraceFilter, EachListNarrowsTheEvents) {
  TraceFilter t;
  Event e;
  e.type = EventType::create;
  e.kind = Kind::tmpfs;
  e.pid = 10;
  e.comm = "python3";
  EXPECT_TRUE(t.matches(e));
  t.pids = {11};
  EXPECT_FALSE(t.matches(e));
  t.pids = {10};
  t.comms = {"python3"};
  t.kinds = {"tmpfs"};
  t.events = {"create"};
  EXPECT_TRUE(t.matches(e));
  t.kinds = {"sysv"};
  EXPECT_FALSE(t.matches(e));
  t.kinds.clear();
  t.events = {"unlink"};
  EXPECT_FALSE(t.matches(e));

  // A SIGBUS sent to a filtered process matches even when raised elsewhere.
  TraceFilter s;
  s.pids = {20};
  Event b;
  b.type = EventType::sigbus;
  b.pid = 99;
  b.target_pid = 20;
  EXPECT_TRUE(s.matches(b));
  // An OOM kill is its victim's event too.
  b.type = EventType::oom;
  EXPECT_TRUE(s.matches(b));
  b.target_pid = 21;
  EXPECT_FALSE(s.matches(b));
}

} // namespace
} // namespace shmbpf
