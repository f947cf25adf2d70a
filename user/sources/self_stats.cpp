#include "sources/self_stats.hpp"

#include "sources/clock.hpp"
#include "sources/small_file.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>

namespace shmbpf {

namespace {

// Entries of /proc/self/fd but its own directory's fd.
uint64_t count_open_fds() {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return 0;
  uint64_t n = 0;
  while (const dirent *e = readdir(d))
    if (e->d_name[0] != '.')
      ++n;
  closedir(d);
  return n > 0 ? n - 1 : 0;
}

} // namespace

std::optional<SelfStats> parse_self_stat(std::string_view stat, long ticks_per_s, long page_size,
                                         int64_t boot_to_realtime_ns) {
  // The command name is in parentheses and may hold anything, spaces and
  // parentheses too: the fields start after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_s <= 0 || page_size <= 0)
    return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  // Fields 3 (state) onwards; utime 14, stime 15, starttime 22, vsize 23, rss 24.
  uint64_t field[25] = {};
  for (int i = 3; i <= 24; ++i) {
    while (!rest.empty() && rest.front() == ' ')
      rest.remove_prefix(1);
    const size_t end = std::min(rest.find(' '), rest.size());
    if (end == 0)
      return std::nullopt;
    if (i != 3) {
      // Every field SelfStats takes is unsigned; others may be negative.
      const std::string_view token = rest.substr(0, end);
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
      if (ec == std::errc() && p == token.data() + token.size())
        field[i] = v;
      else if (i == 14 || i == 15 || i >= 22)
        return std::nullopt;
    }
    rest.remove_prefix(end);
  }
  SelfStats s;
  const double tick = 1.0 / static_cast<double>(ticks_per_s);
  s.cpu_seconds = static_cast<double>(field[14] + field[15]) * tick;
  s.virtual_bytes = field[23];
  s.resident_bytes = field[24] * static_cast<uint64_t>(page_size);
  s.start_time_seconds =
      static_cast<double>(field[22]) * tick + static_cast<double>(boot_to_realtime_ns) / 1e9;
  return s;
}

std::optional<SelfStats> read_self_stats() {
  const std::optional<std::string> stat = read_small_file("/proc/self/stat", 4096);
  if (!stat)
    return std::nullopt;
  std::optional<SelfStats> s =
      parse_self_stat(*stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), boot_to_realtime_ns());
  if (!s)
    return std::nullopt;
  s->open_fds = count_open_fds();
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    s->max_fds = lim.rlim_cur == RLIM_INFINITY ? 0 : static_cast<uint64_t>(lim.rlim_cur);
  return s;
}

} // namespace shmbpf
