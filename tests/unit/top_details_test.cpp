// The details screens of `shmbpf top`, opened with Enter on a row.
#include "views/top_frame.hpp"
#include "views/top_json.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

TEST(TopDetails, SegmentDetailsListCreatorEveryHolderAndFullPath) {
  auto snap = snapshot();
  const std::string long_path = "/dev/shm/" + std::string(150, 'x') + "_end";
  snap.segments[0].path = long_path;
  snap.segments[0].holders = {100, 200, 400};
  TopState st;
  st.width = 200;
  st.height = 40;
  st.view = TopView::segments;
  build_top_frame(snap, st);
  ASSERT_NE(top_handle_key(st, top_key::enter), TopAction::none);
  EXPECT_TRUE(st.details);
  TopFrame f = build_top_frame(snap, st);
  const std::string text = top_text(f);
  EXPECT_TRUE(line_with(f, "path:          " + long_path)) << text;
  EXPECT_TRUE(line_with(f, "creator:       100/python3")) << text;
  EXPECT_TRUE(line_with(f, "holders:       3")) << text;
  EXPECT_TRUE(line_with(f, "  100  python3"));
  EXPECT_TRUE(line_with(f, "  200  trainer"));
  EXPECT_TRUE(line_with(f, "  400  worker"));
  ASSERT_NE(top_handle_key(st, top_key::escape), TopAction::none);
  EXPECT_FALSE(st.details);
  f = build_top_frame(snap, st);
  EXPECT_TRUE(line_with(f, "PATH/NAME"));
}

// A file with hard links: how many names it has, and the others known, in
// the details and in the JSON rows.
TEST(TopDetails, SegmentDetailsNameEveryLink) {
  auto snap = snapshot();
  snap.segments[0].nlink = 3;
  snap.segments[0].other_paths = {"/dev/shm/second", "/dev/shm/third\x1b"};
  TopState st;
  st.width = 200;
  st.height = 40;
  st.view = TopView::segments;
  build_top_frame(snap, st);
  ASSERT_NE(top_handle_key(st, top_key::enter), TopAction::none);
  TopFrame f = build_top_frame(snap, st);
  const std::string text = top_text(f);
  EXPECT_TRUE(line_with(f, "nlink:         3, also:")) << text;
  EXPECT_TRUE(line_with(f, "  /dev/shm/second")) << text;
  EXPECT_TRUE(line_with(f, "  /dev/shm/third\\x1b")) << text;

  TopState batch = batch_state();
  batch.view = TopView::segments;
  const json j = json::parse(top_json(snap, batch));
  bool found = false;
  for (const json &row : j["rows"])
    if (row["path"] == snap.segments[0].path) {
      found = true;
      EXPECT_EQ(row["nlink"], 3);
      EXPECT_EQ(row["other_paths"], json::array({"/dev/shm/second", "/dev/shm/third\\x1b"}));
    }
  EXPECT_TRUE(found) << j.dump();
}

TEST(TopDetails, ProcessDetailsListItsSegments) {
  auto snap = snapshot();
  TopState st;
  st.width = 120;
  st.height = 40;
  build_top_frame(snap, st); // python3 (pid 100) is first by bytes
  ASSERT_EQ(st.selected_id, "p:100");
  ASSERT_NE(top_handle_key(st, top_key::enter), TopAction::none);
  TopFrame f = build_top_frame(snap, st);
  const std::string text = top_text(f);
  EXPECT_TRUE(line_with(f, "comm:          python3")) << text;
  EXPECT_TRUE(line_with(f, "2 segment(s):")) << text;
  EXPECT_TRUE(line_with(f, "torch_100_a_0"));
  EXPECT_TRUE(line_with(f, "torch_100_a_1"));
  EXPECT_FALSE(line_with(f, "model.bin"));
  // The process exits: the details say so instead of showing stale data.
  snap.processes.erase(snap.processes.begin());
  f = build_top_frame(snap, st);
  EXPECT_TRUE(line_with(f, "gone")) << top_text(f);
  // A view key leaves the details.
  ASSERT_NE(top_handle_key(st, 'c'), TopAction::none);
  EXPECT_FALSE(st.details);
  EXPECT_EQ(st.view, TopView::containers);
}

} // namespace
} // namespace shmbpf::test
