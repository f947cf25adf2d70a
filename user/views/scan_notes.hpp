// What a scan could not cover, said to the user: a tree deeper than the
// scan goes, or more files than it lists. Pure.
#pragma once

#include "facts/scan.hpp"

#include <string>
#include <vector>

namespace shmbpf {

// One line per filesystem whose scan left something out, without a
// trailing newline; names escaped.
std::vector<std::string> scan_shortfall_lines(const std::vector<ScanGap> &gaps);
std::vector<std::string> scan_shortfall_lines(const std::vector<ScannedFs> &filesystems);

} // namespace shmbpf
