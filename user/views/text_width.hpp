// How much room escaped text takes on a terminal, and how to make it fit.
// Escaped text (escape_text) is valid UTF-8, so these walk it without
// validating: what they are given must have been escaped first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shmbpf {

// The code point starting at s[i]; i moves past it.
char32_t next_code_point(std::string_view s, std::size_t &i);

// Terminal cells of one code point: 2 for wide East Asian characters and
// emoji, 0 for combining marks and zero-width characters, 1 otherwise.
std::size_t code_point_width(char32_t c);

// Terminal cells of escaped text.
std::size_t terminal_width(std::string_view s);

// The longest prefix of s that fits in max cells (never a partial character).
std::string_view fit_head(std::string_view s, std::size_t max);

// s in at most max cells: unchanged when it fits, else cut at the end and
// marked "..", or (keep_tail, for paths whose last part matters most) cut at
// the start and marked "..".
std::string fit_text(std::string_view s, std::size_t max, bool keep_tail = false);

} // namespace shmbpf
