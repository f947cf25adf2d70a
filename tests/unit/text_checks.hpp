// Checks on text that the views produce from kernel-supplied strings.
#pragma once

#include <string_view>

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

} // namespace shmbpf::test
