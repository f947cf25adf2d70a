#include "views/scan_notes.hpp"

#include "views/escape.hpp"

namespace shmbpf {

std::vector<std::string> scan_shortfall_lines(const std::vector<ScanGap> &gaps) {
  std::vector<std::string> out;
  for (const ScanGap &g : gaps) {
    if (!g.shortfall.any())
      continue;
    std::string line = escape_text(g.mountpoint) + ": not every file was scanned (";
    if (g.shortfall.file_limit)
      line += "stopped at the most files a scan lists";
    if (g.shortfall.dirs_too_deep != 0) {
      if (g.shortfall.file_limit)
        line += "; ";
      line += std::to_string(g.shortfall.dirs_too_deep) +
              " directories nested too deep were not entered";
    }
    line += "): segments there are missing from this report";
    out.push_back(std::move(line));
  }
  return out;
}

std::vector<std::string> scan_shortfall_lines(const std::vector<ScannedFs> &filesystems) {
  std::vector<ScanGap> gaps;
  for (const ScannedFs &fs : filesystems)
    gaps.push_back({fs.dev, fs.mountpoint, fs.shortfall});
  return scan_shortfall_lines(gaps);
}

} // namespace shmbpf
