#include "views/program_stats.hpp"

#include <algorithm>
#include <cstdio>

namespace shmbpf {

std::string hooks_in_use_text(HookSet set, const std::vector<HookStatus> &hooks) {
  std::string out = "shmbpf: " + std::string(hook_set_name(set)) + " hooks:";
  const char *sep = " ";
  for (const HookStatus &h : hooks)
    if (!h.program.empty()) {
      out += sep + h.hook;
      sep = ", ";
    }
  return out + "\n";
}

std::string program_stats_text(std::vector<ProgramStats> stats, double seconds) {
  std::erase_if(stats, [](const ProgramStats &p) { return p.runs == 0; });
  std::sort(stats.begin(), stats.end(), [](const ProgramStats &a, const ProgramStats &b) {
    return a.run_time_ns != b.run_time_ns ? a.run_time_ns > b.run_time_ns : a.hook < b.hook;
  });
  uint64_t total_ns = 0, total_runs = 0;
  for (const ProgramStats &p : stats) {
    total_ns += p.run_time_ns;
    total_runs += p.runs;
  }
  char line[192];
  std::string out;
  std::snprintf(line, sizeof(line),
                "shmbpf: %.1f ms in BPF programs over %.1f s (%.2f%% of one CPU), %llu runs\n",
                static_cast<double>(total_ns) / 1e6, seconds,
                seconds > 0 ? static_cast<double>(total_ns) / (seconds * 1e7) : 0.0,
                static_cast<unsigned long long>(total_runs));
  out += line;
  if (stats.empty())
    return out;
  std::snprintf(line, sizeof(line), "  %-44s %12s %8s %10s\n", "HOOK", "RUNS", "NS/RUN",
                "TOTAL MS");
  out += line;
  for (const ProgramStats &p : stats) {
    std::snprintf(line, sizeof(line), "  %-44s %12llu %8llu %10.1f\n", p.hook.c_str(),
                  static_cast<unsigned long long>(p.runs),
                  static_cast<unsigned long long>(p.run_time_ns / p.runs),
                  static_cast<double>(p.run_time_ns) / 1e6);
    out += line;
  }
  return out;
}

} // namespace shmbpf
