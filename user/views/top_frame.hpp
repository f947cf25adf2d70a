// The screen of `shmbpf top`, built from a snapshot: the header (totals and
// mount lines), then the current view's table, a details screen or the help,
// then the key help. Pure: the same frame feeds ncurses (line by line, with
// a style per line) and batch mode (plain text). Every untrusted string is
// escaped before it lands in a line: a frame never holds a control character.
#pragma once

#include "views/table.hpp"
#include "views/top_snapshot.hpp"
#include "views/top_state.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shmbpf {

enum class TopStyle : uint8_t {
  normal,
  title,    // the first line
  alert,    // needs attention: lost events, a mount nearly full, an orphan
  columns,  // column titles
  selected, // the selection bar
  help,     // the key help line
};

struct TopLine {
  std::string text; // escaped, printable, never wider than the frame
  TopStyle style = TopStyle::normal;
};

struct TopFrame {
  std::vector<TopLine> lines;
};

// Blanks between top's columns: a screen has little room to spare.
inline constexpr std::size_t top_column_gap = 1;

// Builds the frame for state (adjusting its selection, scroll and counts).
TopFrame build_top_frame(const TopSnapshot &snap, TopState &state);

// The frame as plain text, one '\n' after each line.
std::string top_text(const TopFrame &frame);

// The lines of the help screen (what `h` shows).
std::vector<std::string> top_help_lines();

// t's lines appended to out, the titles styled as column titles.
void append_table(std::vector<TopLine> &out, const Table &t, std::size_t width);

} // namespace shmbpf
