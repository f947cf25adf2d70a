// What `shmbpf top --server` and the daemon say to each other: query
// strings, top's state as query fields, and a frame with the state after
// it. Each encoder against its parser, and the parsers against bad input.
#include "views/top_wire.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf::test {
namespace {

TEST(QueryString, EveryByteSurvivesTheRoundTrip) {
  std::string all;
  for (int c = 0; c < 256; ++c)
    all += static_cast<char>(c);
  const QueryFields in{{"a", all}, {"name with space&=", "x+y%z"}, {"a", ""}, {"b", "plain"}};
  const std::string q = query_string(in);
  // Only unreserved characters, '%', '=' and '&' are written.
  for (char c : q)
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) ||
                std::string_view("-._~%=&").find(c) != std::string_view::npos)
        << static_cast<int>(c);
  auto out = parse_query_string(q);
  ASSERT_TRUE(out) << out.error();
  EXPECT_EQ(*out, in);
}

TEST(QueryString, PlusIsASpaceAndBadEscapesAreErrors) {
  auto f = parse_query_string("filter=a+b&&x&y=%41%62");
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->find("filter")->second, "a b");
  EXPECT_EQ(f->find("x")->second, "");
  EXPECT_EQ(f->find("y")->second, "Ab");
  EXPECT_EQ(f->size(), 3u);
  for (const char *bad : {"a=%", "a=%4", "a=%zz", "%g1=b"})
    EXPECT_FALSE(parse_query_string(bad)) << bad;
}

TEST(TopWire, StateSurvivesTheRoundTrip) {
  TopState st;
  st.view = TopView::segments;
  st.sort = TopSort::age;
  st.filter = "torch_ & =%";
  st.editing_filter = true;
  st.pid = 4242;
  st.container = ""; // the host: present but empty
  st.delay_s = 0.25;
  st.width = 132;
  st.height = 41;
  st.selected = 7;
  st.selected_id = "s:0:22:1001";
  st.scroll = 3;
  st.help = true;
  st.details = true;
  st.details_view = TopView::mounts;
  st.details_id = "m:/dev/shm\nx";
  st.details_scroll = SIZE_MAX / 2;
  st.rows = 99;
  st.page_rows = 30;
  st.page_miss = true;
  auto q = parse_query_string(query_string(top_state_fields(st)));
  ASSERT_TRUE(q) << q.error();
  auto back = top_state_from_fields(*q);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->view, st.view);
  EXPECT_EQ(back->sort, st.sort);
  EXPECT_EQ(back->filter, st.filter);
  EXPECT_EQ(back->editing_filter, st.editing_filter);
  EXPECT_EQ(back->pid, st.pid);
  ASSERT_TRUE(back->container.has_value());
  EXPECT_EQ(*back->container, "");
  EXPECT_DOUBLE_EQ(back->delay_s, st.delay_s);
  EXPECT_EQ(back->width, st.width);
  EXPECT_EQ(back->height, st.height);
  EXPECT_EQ(back->selected, st.selected);
  EXPECT_EQ(back->selected_id, st.selected_id);
  EXPECT_EQ(back->scroll, st.scroll);
  EXPECT_EQ(back->help, st.help);
  EXPECT_EQ(back->details, st.details);
  EXPECT_EQ(back->details_view, st.details_view);
  EXPECT_EQ(back->details_id, st.details_id);
  EXPECT_EQ(back->details_scroll, st.details_scroll);
  EXPECT_EQ(back->rows, st.rows);
  EXPECT_EQ(back->page_rows, st.page_rows);
  EXPECT_EQ(back->page_miss, st.page_miss);

  // Without a container the field is absent: every container, not the host.
  TopState plain;
  auto p = top_state_from_fields(top_state_fields(plain));
  ASSERT_TRUE(p) << p.error();
  EXPECT_FALSE(p->container.has_value());
  EXPECT_FALSE(p->pid.has_value());
}

TEST(TopWire, UnknownFieldsAndBadValuesAreNamed) {
  auto r = top_state_from_fields({{"colour", "red"}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("colour"), std::string::npos) << r.error();
  for (const auto &[name, value] :
       std::vector<std::pair<std::string, std::string>>{{"view", "files"},
                                                        {"sort", "size"},
                                                        {"pid", "0"},
                                                        {"pid", "12x"},
                                                        {"width", "-1"},
                                                        {"height", ""},
                                                        {"help", "yes"},
                                                        {"delay", "nan"},
                                                        {"delay", "0"}}) {
    auto bad = top_state_from_fields({{name, value}});
    ASSERT_FALSE(bad) << name << "=" << value;
    EXPECT_NE(bad.error().find(name), std::string::npos) << bad.error();
  }
}

TEST(TopWire, AFrameAndItsStateSurviveTheRoundTrip) {
  TopSnapshot snap = snapshot();
  TopState st;
  st.width = 100;
  st.height = 12;
  st.selected = 1;
  st.filter = "a\\b"; // a backslash in the filter line, escaped in the frame
  const TopFrame frame = build_top_frame(snap, st);
  ASSERT_GT(frame.lines.size(), 3u);
  auto r = parse_top_frame_reply(top_frame_reply(frame, st));
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->frame.lines.size(), frame.lines.size());
  for (std::size_t i = 0; i < frame.lines.size(); ++i) {
    EXPECT_EQ(r->frame.lines[i].text, frame.lines[i].text) << i;
    EXPECT_EQ(r->frame.lines[i].style, frame.lines[i].style) << i;
  }
  EXPECT_EQ(r->state.selected, st.selected);
  EXPECT_EQ(r->state.selected_id, st.selected_id);
  EXPECT_EQ(r->state.rows, st.rows);
  EXPECT_EQ(r->state.page_rows, st.page_rows);

  // Every style, and an empty line.
  TopFrame all;
  for (TopStyle s : {TopStyle::normal, TopStyle::title, TopStyle::alert, TopStyle::columns,
                     TopStyle::selected, TopStyle::help})
    all.lines.push_back({s == TopStyle::normal ? "" : "line", s});
  auto a = parse_top_frame_reply(top_frame_reply(all, TopState{}));
  ASSERT_TRUE(a) << a.error();
  ASSERT_EQ(a->frame.lines.size(), all.lines.size());
  for (std::size_t i = 0; i < all.lines.size(); ++i) {
    EXPECT_EQ(a->frame.lines[i].style, all.lines[i].style) << i;
    EXPECT_EQ(a->frame.lines[i].text, all.lines[i].text) << i;
  }
}

TEST(TopWire, ABrokenFrameReplyIsAnError) {
  const std::string good = top_frame_reply(TopFrame{{{"x", TopStyle::title}}}, TopState{});
  EXPECT_TRUE(parse_top_frame_reply(good));
  EXPECT_FALSE(parse_top_frame_reply(""));
  EXPECT_FALSE(parse_top_frame_reply("view=processes"));                // no state line's end
  EXPECT_FALSE(parse_top_frame_reply("view=nothing\n"));                // a bad state
  EXPECT_FALSE(parse_top_frame_reply(good.substr(0, good.size() - 1))); // cut short
  EXPECT_FALSE(parse_top_frame_reply("view=processes\nzline\n"));       // unknown style
  EXPECT_FALSE(parse_top_frame_reply("view=processes\n\n"));            // no style
}

} // namespace
} // namespace shmbpf::test
