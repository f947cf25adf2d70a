// The paged segments view: rows read from the engine around the selection
// give the frames of the full list.
#include "views/top_frame.hpp"
#include "views/top_json.hpp"
#include "views/top_rows.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

// The paged query must show exactly what a snapshot of every segment shows:
// every sort, with and without filters, the selection followed by id or
// placed by index, on a screen and in batch mode, and the JSON frame.
TEST(TopRows, PagedSegmentsGiveTheFramesOfTheFullList) {
  const Engine engine = paging_engine();
  const uint64_t at = 20 * sec;
  const TopSnapshot full = every_segment(engine, at);
  ASSERT_GT(full.segments.size(), 700u);
  int compared = 0;
  for (TopSort sort : {TopSort::bytes, TopSort::count, TopSort::rate, TopSort::age}) {
    for (int filter = 0; filter < 4; ++filter) {
      for (std::size_t sel : {std::size_t{0}, std::size_t{5}, std::size_t{300}, std::size_t{729},
                              std::size_t{5000}}) {
        for (bool by_id : {false, true}) {
          TopState st;
          st.view = TopView::segments;
          st.sort = sort;
          st.height = 30;
          if (filter == 1)
            st.filter = "TORCH";
          if (filter == 2)
            st.pid = 205;
          if (filter == 3)
            st.container = std::string(); // the host
          st.selected = sel;
          if (by_id) {
            // The id of some row of the full list, at another index.
            TopState probe = st;
            build_top_frame(full, probe);
            st.selected_id = probe.selected_id;
            st.selected = 3;
          }
          TopState a = st, b = st;
          const TopFrame fa = build_top_frame(full, a);
          TopSnapshot paged;
          paged.now_ns = at;
          fill_segment_page(paged, engine, st, 0, false);
          EXPECT_LT(paged.segments.size(), 200u);
          const TopFrame fb = build_top_frame(paged, b);
          EXPECT_FALSE(b.page_miss);
          EXPECT_EQ(top_text(fa), top_text(fb)) << "sort " << to_string(sort) << " filter "
                                                << filter << " sel " << sel << " id " << by_id;
          EXPECT_EQ(a.selected, b.selected);
          EXPECT_EQ(a.scroll, b.scroll);
          EXPECT_EQ(a.rows, b.rows);
          EXPECT_EQ(a.selected_id, b.selected_id);
          ++compared;

          // Batch mode and --json: every row.
          TopState ja = st, jb = st;
          ja.height = jb.height = 0;
          ja.width = jb.width = 0;
          TopSnapshot every;
          every.now_ns = at;
          fill_segment_page(every, engine, st, 0, true);
          EXPECT_EQ(top_json(full, ja), top_json(every, jb));
          EXPECT_EQ(top_text(build_top_frame(full, ja)), top_text(build_top_frame(every, jb)));
        }
      }
    }
  }
  EXPECT_EQ(compared, 4 * 4 * 5 * 2);
}

// Paging down past the rows a page holds asks for another page, which then
// gives the frame of the full list.
TEST(TopRows, PagedSegmentsReportAMissAndRecover) {
  const Engine engine = paging_engine();
  const uint64_t at = 20 * sec;
  const TopSnapshot full = every_segment(engine, at);
  TopState st;
  st.view = TopView::segments;
  st.height = 24;
  TopSnapshot paged;
  paged.now_ns = at;
  fill_segment_page(paged, engine, st, 0, false);
  TopState a = st, b = st;
  build_top_frame(full, a);
  build_top_frame(paged, b);
  for (int i = 0; i < 10; ++i) {
    top_handle_key(a, top_key::page_down);
    top_handle_key(b, top_key::page_down);
  }
  const std::string want = top_text(build_top_frame(full, a));
  build_top_frame(paged, b);
  EXPECT_TRUE(b.page_miss);
  fill_segment_page(paged, engine, b, 0, false);
  EXPECT_EQ(top_text(build_top_frame(paged, b)), want);
  EXPECT_FALSE(b.page_miss);
}

} // namespace
} // namespace shmbpf::test
