// `shmbpf top`'s producers view: live segments grouped by who made them,
// as their names tell (torch, nccl, postgres...), counted by the engine
// under top's pid and container filters, in the frame, the JSON and the
// details, reached with `w` and `--by producer`.
#include "views/top_details.hpp"
#include "views/top_frame.hpp"
#include "views/top_json.hpp"
#include "views/top_wire.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

constexpr FileAt kShm{26, 25};

// Two NCCL files (one its live creator holds, one whose creator exited),
// a PostgreSQL segment of a live server, an unnamed file.
Engine producers_engine() {
  Engine engine;
  engine.set_mount({25, host_ns, "/dev/shm", 26, 64u << 20, 0, true});
  uint64_t ts = 10 * sec;
  engine.apply(created_file(kShm, 100, 1, "/dev/shm/nccl-a8Kq2Z", 4 << 20, ts++));
  engine.apply(created_file(kShm, 101, 2, "/dev/shm/nccl-Zq81xY", 2 << 20, ts++));
  engine.apply(process_event(EventType::exit, 101, ts++));
  engine.apply(created_file(kShm, 200, 3, "/dev/shm/PostgreSQL.271741757", 1 << 20, ts++));
  engine.apply(created_file(kShm, 300, 4, "/dev/shm/scratch", 4096, ts++));
  return engine;
}

TopSnapshot snapshot_for(const Engine &engine, const TopState &st) {
  TopCounters c;
  c.now_ns = 20 * sec;
  c.host_mntns = host_ns;
  return take_top_snapshot(engine, c, st, [](uint32_t) { return std::string(); });
}

TEST(TopProducers, TheEngineCountsSegmentsOrphansAndLiveCreatorsByProducer) {
  const Engine engine = producers_engine();
  const std::vector<ProducerInfo> all = engine.producers({}, 20 * sec, 0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].pattern, NamePattern::none);
  EXPECT_EQ(all[1].pattern, NamePattern::nccl);
  EXPECT_EQ(all[1].segments, 2u);
  EXPECT_EQ(all[1].bytes, 6u << 20);
  EXPECT_EQ(all[1].orphans, 1u);
  EXPECT_EQ(all[1].orphan_bytes, 2u << 20);
  EXPECT_EQ(all[1].creators, 1u);
  EXPECT_EQ(all[2].pattern, NamePattern::postgres);
  EXPECT_EQ(all[2].orphans, 0u);
  // Under top's -p: only what that process made or holds.
  SegmentFilter of_pid;
  of_pid.pid = 200;
  const auto one = engine.producers(of_pid, 20 * sec, 0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].pattern, NamePattern::postgres);
}

TEST(TopProducers, TheViewShowsEachProducerWithItsOrphansAndWhatItIs) {
  const Engine engine = producers_engine();
  TopState st = batch_state();
  ASSERT_EQ(parse_top_view("producer"), TopView::producers);
  st.view = *parse_top_view("producers");
  const TopSnapshot snap = snapshot_for(engine, st);
  const TopFrame f = build_top_frame(snap, st);
  const std::vector<std::string> rows = rows_after(f, "PRODUCER");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].starts_with("nccl ")) << rows[0]; // the most bytes first
  EXPECT_TRUE(contains(rows[0], "NVIDIA NCCL")) << rows[0];
  EXPECT_TRUE(rows[1].starts_with("postgres ")) << rows[1];
  EXPECT_TRUE(rows[2].starts_with("other ")) << rows[2];
  EXPECT_EQ(line_with(f, "nccl ")->style, TopStyle::alert); // it has an orphan
  EXPECT_EQ(line_with(f, "postgres ")->style, TopStyle::normal);

  const json j = json::parse(top_json(snap, st));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["producer"], "nccl");
  EXPECT_EQ(j["rows"][0]["orphans"], 1);
  EXPECT_EQ(j["rows"][0]["orphan_bytes"], 2 << 20);
  EXPECT_EQ(j["rows"][0]["creators"], 1);
  EXPECT_EQ(j["rows"][0]["restart_orphans"], 0);

  // The filter picks by name or by what it is.
  st.filter = "postgresql";
  EXPECT_EQ(rows_after(build_top_frame(snap, st), "PRODUCER").size(), 1u);
}

TEST(TopProducers, OtherViewsCountNoProducersAndTheKeyAsksForThem) {
  const Engine engine = producers_engine();
  TopState st;
  st.width = 160;
  st.height = 40;
  EXPECT_TRUE(snapshot_for(engine, st).producers.empty());
  EXPECT_EQ(top_handle_key(st, 'w'), TopAction::refetch);
  EXPECT_EQ(st.view, TopView::producers);
  TopSnapshot snap = snapshot_for(engine, st);
  EXPECT_EQ(snap.producers.size(), 3u);
  // The daemon gets the view through the state's fields (top --server).
  auto back = top_state_from_fields(top_state_fields(st));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->view, TopView::producers);

  // Enter: the producer's details and its segments.
  build_top_frame(snap, st);
  ASSERT_NE(top_handle_key(st, top_key::enter), TopAction::none);
  ASSERT_TRUE(st.details);
  snap = snapshot_for(engine, st);
  const Relations rel(snap.processes, snap.mounts, snap.host_mntns);
  std::string text;
  for (const TopLine &l : top_details_lines(snap, st, rel))
    text += l.text + "\n";
  EXPECT_TRUE(contains(text, "producer:")) << text;
  EXPECT_TRUE(contains(text, "nccl (NVIDIA NCCL")) << text;
  EXPECT_TRUE(contains(text, "2 segment(s):")) << text;
  EXPECT_TRUE(contains(text, "/dev/shm/nccl-Zq81xY")) << text;
  EXPECT_FALSE(contains(text, "PostgreSQL.")) << text;
}

} // namespace
} // namespace shmbpf::test
