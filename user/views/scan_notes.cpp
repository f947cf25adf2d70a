#include "views/scan_notes.hpp"

#include "views/escape.hpp"

namespace shmbpf {

std::vector<std::string> scan_shortfall_lines(const std::vector<ScannedFs> &filesystems) {
  std::vector<std::string> out;
  for (const ScannedFs &fs : filesystems) {
    if (!fs.shortfall.any())
      continue;
    std::string line = escape_text(fs.mountpoint) + ": not every file was scanned (";
    if (fs.shortfall.file_limit)
      line += "stopped at the most files a scan lists";
    if (fs.shortfall.dirs_too_deep != 0) {
      if (fs.shortfall.file_limit)
        line += "; ";
      line += std::to_string(fs.shortfall.dirs_too_deep) +
              " directories nested too deep were not entered";
    }
    line += "): segments there are missing from this report";
    out.push_back(std::move(line));
  }
  return out;
}

} // namespace shmbpf
