// ls's lists as ls prints them and the daemon's /v1/ lists answer them:
// which rows each takes from the engine, and the table or the document.
#include "views/listing.hpp"

#include "synthetic_events.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

// Process 10 made two memfds; process 20 runs with no shared memory.
Engine two_processes() {
  Engine engine;
  engine.apply(test::created_memfd(10, 501, "weights", 1 * kSec));
  engine.apply(test::created_memfd(10, 502, "cache", 2 * kSec));
  engine.apply(test::process_event(EventType::exec, 20, 3 * kSec));
  return engine;
}

TEST(Listing, SegmentsAreFilteredByTheQuery) {
  const Engine engine = two_processes();
  LsQuery q;
  q.json = true;
  q.match = "*weights*";
  const Listing l = take_listing(engine, q, 10 * kSec, 0);
  ASSERT_EQ(l.segments.size(), 1u);
  EXPECT_EQ(l.segments[0].path, "memfd:weights");
  EXPECT_TRUE(l.processes.empty()); // a segment list takes nothing else
  const auto doc = nlohmann::json::parse(listing_output(l, q, {}));
  ASSERT_EQ(doc["segments"].size(), 1u);
  EXPECT_EQ(doc["segments"][0]["path"], "memfd:weights");
}

TEST(Listing, ProcessesOnlyThoseWithSharedMemory) {
  const Engine engine = two_processes();
  LsQuery q;
  q.by = ListBy::processes;
  const Listing l = take_listing(engine, q, 10 * kSec, 0);
  ASSERT_EQ(l.processes.size(), 1u);
  EXPECT_EQ(l.processes[0].pid, 10u);
  const std::string table = listing_output(l, q, {{1000u, "alice"}});
  EXPECT_NE(table.find("alice"), std::string::npos) << table;
  EXPECT_EQ(table.find("p20"), std::string::npos) << table;
}

TEST(Listing, ATextTableTakesWhatItsColumnsRelateTo) {
  const Engine engine = two_processes();
  LsQuery q;
  q.by = ListBy::containers;
  const Listing text = take_listing(engine, q, 10 * kSec, 7);
  EXPECT_EQ(text.processes.size(), 2u); // every process, for the relations
  EXPECT_EQ(text.host_mntns, 7u);
  q.json = true;
  const Listing json = take_listing(engine, q, 10 * kSec, 7);
  EXPECT_TRUE(json.processes.empty());
  EXPECT_TRUE(json.mounts.empty());
  q.by = ListBy::mounts;
  EXPECT_TRUE(take_listing(engine, q, 10 * kSec, 7).processes.empty());
}

} // namespace
} // namespace shmbpf
