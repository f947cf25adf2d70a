// What keys do to `shmbpf top`'s state, and what each asks of the loop:
// nothing, a redraw, or a new snapshot.
#include "views/top_frame.hpp"
#include "views/top_state.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

TEST(TopState, FilterIsCaseInsensitiveAndTypedWithSlash) {
  auto snap = snapshot();
  TopState st; // interactive: 80x24
  ASSERT_NE(top_handle_key(st, '/'), TopAction::none);
  EXPECT_TRUE(st.editing_filter);
  for (char c : std::string("TRAIN"))
    ASSERT_NE(top_handle_key(st, c), TopAction::none);
  TopFrame f = build_top_frame(snap, st);
  EXPECT_EQ(f.lines.back().style, TopStyle::help);
  EXPECT_TRUE(contains(f.lines.back().text, "Filter: TRAIN_")) << f.lines.back().text;
  auto rows = rows_after(f, "PID");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(contains(rows[0], "trainer"));

  ASSERT_NE(top_handle_key(st, top_key::backspace), TopAction::none);
  EXPECT_EQ(st.filter, "TRAI");
  ASSERT_NE(top_handle_key(st, top_key::enter), TopAction::none); // keep it
  EXPECT_FALSE(st.editing_filter);
  EXPECT_EQ(st.filter, "TRAI");
  f = build_top_frame(snap, st);
  EXPECT_TRUE(contains(f.lines[0].text, "filter: TRAI"));
  // 'q' typed into the filter prompt is text, outside it quits.
  ASSERT_NE(top_handle_key(st, '/'), TopAction::none);
  ASSERT_NE(top_handle_key(st, 'q'), TopAction::none);
  EXPECT_FALSE(st.quit);
  EXPECT_EQ(st.filter, "TRAIq");
  ASSERT_NE(top_handle_key(st, top_key::escape), TopAction::none); // Esc clears
  EXPECT_EQ(st.filter, "");
  rows = rows_after(build_top_frame(snap, st), "PID");
  EXPECT_EQ(rows.size(), 3u);

  st.filter = "nomatch";
  f = build_top_frame(snap, st);
  EXPECT_TRUE(line_with(f, "no row matches the filter"));
  ASSERT_NE(top_handle_key(st, 'q'), TopAction::none);
  EXPECT_TRUE(st.quit);
}

TEST(TopState, HelpScreenListsKeys) {
  auto snap = snapshot();
  TopState st;
  st.height = 50;
  ASSERT_NE(top_handle_key(st, 'h'), TopAction::none);
  TopFrame f = build_top_frame(snap, st);
  for (const char *k : {"  p  processes", "  c  containers", "  m  mounts", "  s  segments",
                        "  b  bytes", "  /        filter", "  q        quit"})
    EXPECT_TRUE(line_with(f, k)) << k << "\n" << top_text(f);
  ASSERT_NE(top_handle_key(st, 'x'), TopAction::none); // any key closes it
  EXPECT_FALSE(st.help);
  ASSERT_NE(top_handle_key(st, '?'), TopAction::none);
  EXPECT_TRUE(st.help);
}

TEST(TopState, ParseViewNames) {
  EXPECT_EQ(parse_top_view("process"), TopView::processes);
  EXPECT_EQ(parse_top_view("container"), TopView::containers);
  EXPECT_EQ(parse_top_view("mount"), TopView::mounts);
  EXPECT_EQ(parse_top_view("segments"), TopView::segments);
  EXPECT_FALSE(parse_top_view("bogus"));
}

// Each key says what the loop must do: nothing, draw the same snapshot
// again, or take a new one because the snapshot no longer holds what the
// screen shows (the paged segments view's rows depend on filter and sort,
// the details need every segment).
TEST(TopState, KeysSayWhetherToRedrawOrRefetch) {
  TopState st; // on a screen: the segments view is paged
  EXPECT_EQ(segment_copy(st), SegmentCopy::none);
  EXPECT_EQ(top_handle_key(st, 'x'), TopAction::none);
  EXPECT_EQ(top_handle_key(st, top_key::escape), TopAction::none); // no filter to clear
  EXPECT_EQ(top_handle_key(st, 'c'), TopAction::redraw);           // containers: no segments
  EXPECT_EQ(top_handle_key(st, 'a'), TopAction::redraw);           // sorted from the snapshot
  EXPECT_EQ(top_handle_key(st, '/'), TopAction::redraw);
  EXPECT_EQ(top_handle_key(st, 'd'), TopAction::redraw); // filtered from the snapshot
  EXPECT_EQ(top_handle_key(st, top_key::enter), TopAction::redraw);
  EXPECT_EQ(top_handle_key(st, top_key::escape), TopAction::redraw); // clears "d"

  EXPECT_EQ(top_handle_key(st, 's'), TopAction::refetch); // a page of segments
  EXPECT_EQ(segment_copy(st), SegmentCopy::page);
  EXPECT_EQ(top_handle_key(st, 's'), TopAction::redraw);  // already there
  EXPECT_EQ(top_handle_key(st, 'b'), TopAction::refetch); // the page is in sort order
  EXPECT_EQ(top_handle_key(st, 'b'), TopAction::redraw);  // the same order
  EXPECT_EQ(top_handle_key(st, '/'), TopAction::redraw);
  EXPECT_EQ(top_handle_key(st, 'x'), TopAction::refetch); // the page is filtered
  EXPECT_EQ(top_handle_key(st, top_key::enter), TopAction::redraw);
  EXPECT_EQ(st.filter, "x");
  EXPECT_EQ(top_handle_key(st, top_key::escape), TopAction::refetch); // clears it
  EXPECT_EQ(st.filter, "");

  // Moving the selection draws again (a move past the page shows up as
  // page_miss when the frame is built).
  st.rows = 10;
  EXPECT_EQ(top_handle_key(st, top_key::down), TopAction::redraw);
  st.selected_id = "s:0:22:1";
  EXPECT_EQ(top_handle_key(st, top_key::enter), TopAction::refetch); // details: every segment
  EXPECT_EQ(segment_copy(st), SegmentCopy::every);
  EXPECT_EQ(top_handle_key(st, top_key::down), TopAction::redraw); // scrolls the details
  EXPECT_EQ(top_handle_key(st, 'h'), TopAction::redraw);
  EXPECT_EQ(top_handle_key(st, 'z'), TopAction::redraw);              // closes the help
  EXPECT_EQ(top_handle_key(st, top_key::escape), TopAction::refetch); // back to the page
  EXPECT_FALSE(st.details);
  EXPECT_EQ(top_handle_key(st, 'p'), TopAction::refetch); // no segments any more
  EXPECT_EQ(segment_copy(st), SegmentCopy::none);
  EXPECT_EQ(top_handle_key(st, 'q'), TopAction::redraw);
  EXPECT_TRUE(st.quit);

  // Batch mode (no height) copies every row of the segments view.
  TopState batch = batch_state();
  batch.view = TopView::segments;
  EXPECT_EQ(segment_copy(batch), SegmentCopy::all_rows);
}

TEST(TopState, SpacePagesDownExceptInTheFilter) {
  TopState st;
  st.rows = 100;
  st.page_rows = 10;
  EXPECT_EQ(top_handle_key(st, ' '), TopAction::redraw);
  EXPECT_EQ(st.selected, 10u);
  EXPECT_EQ(top_handle_key(st, '/'), TopAction::redraw);
  EXPECT_EQ(top_handle_key(st, 'a'), TopAction::redraw);
  EXPECT_EQ(top_handle_key(st, ' '), TopAction::redraw);
  EXPECT_EQ(top_handle_key(st, 'b'), TopAction::redraw);
  EXPECT_EQ(st.filter, "a b");
  EXPECT_EQ(st.selected, 0u); // a new filter starts at the top
}

// A key that means nothing in the details leaves them open; a view key
// leaves them for that view.
TEST(TopState, OnlyViewAndSortKeysLeaveTheDetails) {
  TopState st;
  st.rows = 3;
  st.selected_id = "p:100";
  ASSERT_EQ(top_handle_key(st, top_key::enter), TopAction::refetch);
  ASSERT_TRUE(st.details);
  EXPECT_EQ(top_handle_key(st, 'x'), TopAction::none);
  EXPECT_TRUE(st.details);
  EXPECT_EQ(top_handle_key(st, 'n'), TopAction::refetch);
  EXPECT_FALSE(st.details);
  EXPECT_EQ(st.sort, TopSort::count);
}

} // namespace
} // namespace shmbpf::test
