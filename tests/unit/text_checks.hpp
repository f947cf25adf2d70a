// Checks on text that the views produce from kernel-supplied strings.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf::test {

// Whether s holds a raw C0 control byte or DEL, any of which could move a
// terminal's cursor or end a JSON line.
inline bool has_raw_control(std::string_view s) {
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f)
      return true;
  }
  return false;
}

// The blank-separated words of a table line.
inline std::vector<std::string> fields_of(const std::string &line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;)
    out.push_back(f);
  return out;
}

} // namespace shmbpf::test
