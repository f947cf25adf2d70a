// The one table renderer of the views: `ls`, `leaks` and `top` (on screen
// and in batch mode) lay out their rows through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

enum class Align : uint8_t { left, right };

struct Column {
  std::string_view title; // a literal: tables outlive no column set
  Align align = Align::left;
  bool shrink = false;    // gives up room first when the width is limited
  bool keep_tail = false; // when cut, keeps the end (paths)
  bool optional = false;  // left out, rightmost first, when the width cannot hold it
};

struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows; // escaped cells; missing ones are blank
  std::size_t gap = 2;                        // blanks between columns
};

// The title line, then one line per row, without trailing blanks. Every
// column is as wide as its widest cell (in terminal cells, see
// text_width.hpp). width 0 means no limit; otherwise optional columns are
// left out, rightmost first, then the shrinkable columns give up room, left
// to right and not below 8 cells, and what is still too wide is cut at the
// end of the line.
std::vector<std::string> table_lines(const Table &t, std::size_t width = 0);

// table_lines, each line ending in '\n'.
std::string table_text(const Table &t, std::size_t width = 0);

} // namespace shmbpf
