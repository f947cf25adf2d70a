#include "views/table.hpp"

#include "views/text_width.hpp"

#include <algorithm>

namespace shmbpf {

namespace {

constexpr std::size_t min_shrunk = 8; // a cut column keeps this many cells

} // namespace

std::vector<std::string> table_lines(const Table &t, std::size_t width) {
  const std::size_t n = t.columns.size();
  // Each cell measured once: the widths size the columns and pad the cells.
  std::vector<std::size_t> cell_width(t.rows.size() * n, 0);
  std::vector<std::size_t> w(n);
  for (std::size_t i = 0; i < n; ++i)
    w[i] = terminal_width(t.columns[i].title);
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    for (std::size_t i = 0; i < n && i < t.rows[r].size(); ++i) {
      const std::size_t cw = terminal_width(t.rows[r][i]);
      cell_width[r * n + i] = cw;
      w[i] = std::max(w[i], cw);
    }
  std::vector<bool> shown_col(n, true);
  if (width > 0) {
    std::size_t total = n ? (n - 1) * t.gap : 0;
    for (std::size_t x : w)
      total += x;
    for (std::size_t i = n; i-- > 0 && total > width;)
      if (t.columns[i].optional) {
        shown_col[i] = false;
        total -= w[i] + t.gap;
      }
    for (std::size_t i = 0; i < n && total > width; ++i) {
      if (!t.columns[i].shrink || w[i] <= min_shrunk)
        continue;
      const std::size_t cut = std::min(total - width, w[i] - min_shrunk);
      w[i] -= cut;
      total -= cut;
    }
  }

  std::size_t last = n;
  for (std::size_t i = 0; i < n; ++i)
    if (shown_col[i])
      last = i;
  auto line = [&](auto cell) {
    std::string out;
    bool first = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (!shown_col[i])
        continue;
      const auto [text, text_cells] = cell(i);
      const Column &c = t.columns[i];
      std::string cut;
      std::string_view shown = text;
      std::size_t shown_width = text_cells;
      if (text_cells > w[i]) {
        cut = fit_text(text, w[i], c.keep_tail);
        shown = cut;
        shown_width = terminal_width(cut);
      }
      const std::size_t pad = w[i] - shown_width;
      if (!first)
        out.append(t.gap, ' ');
      first = false;
      if (c.align == Align::right)
        out.append(pad, ' ');
      out += shown;
      if (c.align == Align::left && i != last)
        out.append(pad, ' ');
    }
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    if (width > 0 && terminal_width(out) > width)
      out.resize(fit_head(out, width).size());
    return out;
  };

  std::vector<std::string> out;
  out.reserve(t.rows.size() + 1);
  out.push_back(line([&](std::size_t i) {
    return std::pair{t.columns[i].title, terminal_width(t.columns[i].title)};
  }));
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto &row = t.rows[r];
    out.push_back(line([&](std::size_t i) {
      return i < row.size() ? std::pair{std::string_view(row[i]), cell_width[r * n + i]}
                            : std::pair{std::string_view(), std::size_t{0}};
    }));
  }
  return out;
}

std::string table_text(const Table &t, std::size_t width) {
  std::string out;
  for (const std::string &l : table_lines(t, width)) {
    out += l;
    out += '\n';
  }
  return out;
}

} // namespace shmbpf
