// The one table renderer (views/table.hpp) and the terminal widths it lays
// out with (views/text_width.hpp).
#include "views/table.hpp"
#include "views/text_width.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shmbpf {
namespace {

using Lines = std::vector<std::string>;

Table sizes(std::size_t gap) {
  return Table{{{"NAME"}, {"SIZE", Align::right}, {"NOTE"}},
               {{"a", "1", "x"}, {"longer", "100", ""}, {"b"}},
               gap};
}

TEST(Table, ColumnsAsWideAsTheirWidestCellAndNoTrailingBlanks) {
  EXPECT_EQ(table_lines(sizes(2)), (Lines{"NAME    SIZE  NOTE", //
                                          "a          1  x",    //
                                          "longer   100",       // empty last cell: no blanks
                                          "b"}));               // missing cells are blank
  EXPECT_EQ(table_lines(sizes(1)), (Lines{"NAME   SIZE NOTE",   //
                                          "a         1 x",      //
                                          "longer  100",        //
                                          "b"}));
  EXPECT_EQ(table_text(sizes(2)), "NAME    SIZE  NOTE\na          1  x\nlonger   100\nb\n");
  // A width the table fits in changes nothing.
  EXPECT_EQ(table_lines(sizes(2), 80), table_lines(sizes(2)));
  // No rows: the titles alone.
  EXPECT_EQ(table_text(Table{{{"A"}, {"B", Align::right}}, {}, 2}), "A  B\n");
}

TEST(Table, WidthsAreTerminalCells) {
  // Wide characters take two cells, combining marks none: the columns still
  // line up on screen.
  const Table t{{{"NAME"}, {"N", Align::right}}, {{"日本", "1"}, {"e\u0301t\u00e9", "22"}}, 1};
  EXPECT_EQ(table_lines(t), (Lines{"NAME  N", //
                                   "日本  1", //
                                   "e\u0301t\u00e9  22"}));
}

TEST(Table, LimitedWidthCutsTheShrinkableColumnsFirst) {
  const std::string path = "/dev/shm/a_rather_long_directory/and_a_file_name_0";
  Table t{{{"PATH", Align::left, true, true}, {"KIND"}, {"COMM", Align::left, true}, {"N"}},
          {{path, "tmpfs", "python3-worker", "7"}, {"/short", "memfd", "x", "12"}},
          1};
  const Lines lines = table_lines(t, 40);
  ASSERT_EQ(lines.size(), 3u);
  for (const std::string &l : lines)
    EXPECT_LE(terminal_width(l), 40u) << l;
  // The path keeps its end, the other columns are whole and aligned.
  EXPECT_EQ(lines[1], ".." + path.substr(path.size() - 14) + " tmpfs python3-worker 7");
  EXPECT_EQ(lines[0].find("KIND"), lines[1].find("tmpfs"));
  EXPECT_EQ(lines[2].find("memfd"), lines[1].find("tmpfs"));

  // Narrower: the path stops at 8 cells, then the next shrinkable column
  // gives up room, cut at its end.
  const Lines narrow = table_lines(t, 28);
  EXPECT_EQ(narrow[1], "..name_0 tmpfs python3-.. 7");
  for (const std::string &l : narrow)
    EXPECT_LE(terminal_width(l), 28u) << l;

  // Narrower still: nothing left to shrink, so every line is cut to the width.
  const Lines tiny = table_lines(t, 12);
  EXPECT_EQ(tiny[0], "PATH     KIN");
  EXPECT_EQ(tiny[1], "..name_0 tmp");
}

// An optional column goes, rightmost first, before any column is cut; with
// room it stays, and with no limit it is always there.
TEST(Table, OptionalColumnsGoFirstWhenTheWidthIsLimited) {
  Column id{"ID"};
  id.optional = true;
  Column extra{"EXTRA"};
  extra.optional = true;
  Column path{"PATH"};
  path.shrink = true;
  path.keep_tail = true;
  const Table t{
      {path, {"SIZE", Align::right}, id, extra}, {{"/dev/shm/torch_1_2_3", "4K", "3f2a", "x"}}, 1};
  EXPECT_EQ(table_lines(t),
            (Lines{"PATH                 SIZE ID   EXTRA", "/dev/shm/torch_1_2_3   4K 3f2a x"}));
  EXPECT_EQ(table_lines(t, 36), table_lines(t));
  // EXTRA goes first, then ID; PATH keeps its width while they can go.
  EXPECT_EQ(table_lines(t, 32), (Lines{"PATH                 SIZE ID", //
                                       "/dev/shm/torch_1_2_3   4K 3f2a"}));
  EXPECT_EQ(table_lines(t, 25), (Lines{"PATH                 SIZE", //
                                       "/dev/shm/torch_1_2_3   4K"}));
  // Only then is PATH cut, from its start.
  const Lines narrow = table_lines(t, 15);
  EXPECT_EQ(narrow[1].find("3f2a"), std::string::npos);
  EXPECT_NE(narrow[1].find("4K"), std::string::npos);
  EXPECT_LE(terminal_width(narrow[1]), 15u);
}

TEST(TextWidth, CellsOfCodePoints) {
  EXPECT_EQ(terminal_width(""), 0u);
  EXPECT_EQ(terminal_width("abc"), 3u);
  EXPECT_EQ(terminal_width("日本"), 4u);
  EXPECT_EQ(terminal_width("e\u0301"), 1u);    // combining acute accent
  EXPECT_EQ(terminal_width("a\u200bb"), 2u);   // zero-width space
  EXPECT_EQ(terminal_width("\U0001F600"), 2u); // emoji
  EXPECT_EQ(terminal_width("pythön"), 6u);
  std::size_t i = 0;
  EXPECT_EQ(next_code_point("日x", i), U'日');
  EXPECT_EQ(i, 3u);
  EXPECT_EQ(next_code_point("日x", i), U'x');
}

TEST(TextWidth, FittingNeverSplitsACharacter) {
  EXPECT_EQ(fit_head("日本語", 5), "日本");
  EXPECT_EQ(fit_head("日本語", 1), "");
  EXPECT_EQ(fit_head("abc", 10), "abc");
  EXPECT_EQ(fit_text("abcdef", 6), "abcdef");
  EXPECT_EQ(fit_text("abcdefgh", 6), "abcd..");
  EXPECT_EQ(fit_text("abcdefgh", 6, true), "..efgh");
  EXPECT_EQ(fit_text("日本語のファイル", 7), "日本..");
  EXPECT_EQ(fit_text("日本語のファイル", 7, true), "..イル");
  EXPECT_EQ(fit_text("abcdef", 2), "..");
  EXPECT_EQ(fit_text("abcdef", 0), "");
}

} // namespace
} // namespace shmbpf
