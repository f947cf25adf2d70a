#include "views/text_width.hpp"

#include <algorithm>

namespace shmbpf {

char32_t next_code_point(std::string_view s, std::size_t &i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t len = b0 < 0x80 ? 1 : b0 < 0xe0 ? 2 : b0 < 0xf0 ? 3 : 4;
  len = std::min(len, s.size() - i);
  char32_t cp = len == 1 ? b0 : b0 & (0x3f >> (len - 1));
  for (std::size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  i += len;
  return cp;
}

// A fixed table rather than wcwidth(3): the views must not depend on the
// process locale, and these ranges cover what file names contain in practice.
std::size_t code_point_width(char32_t c) {
  if ((c >= 0x300 && c <= 0x36f) || (c >= 0x200b && c <= 0x200f) || (c >= 0xfe00 && c <= 0xfe0f))
    return 0;
  if ((c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf) ||
      (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) ||
      (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) ||
      (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1faff) ||
      (c >= 0x20000 && c <= 0x3fffd))
    return 2;
  return 1;
}

std::size_t terminal_width(std::string_view s) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < s.size();) {
    // ASCII is nearly all of what tables hold: one cell a byte.
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++w;
      ++i;
      continue;
    }
    w += code_point_width(next_code_point(s, i));
  }
  return w;
}

std::string_view fit_head(std::string_view s, std::size_t max) {
  std::size_t i = 0, w = 0;
  while (i < s.size()) {
    std::size_t j = i;
    const std::size_t cw = code_point_width(next_code_point(s, j));
    if (w + cw > max)
      break;
    w += cw;
    i = j;
  }
  return s.substr(0, i);
}

std::string fit_text(std::string_view s, std::size_t max, bool keep_tail) {
  if (terminal_width(s) <= max)
    return std::string(s);
  if (max <= 2)
    return std::string(max, '.');
  if (!keep_tail)
    return std::string(fit_head(s, max - 2)) + "..";
  // Drop code points from the front until the rest fits.
  std::size_t i = 0;
  while (i < s.size() && terminal_width(s.substr(i)) > max - 2)
    next_code_point(s, i);
  return ".." + std::string(s.substr(i));
}

} // namespace shmbpf
