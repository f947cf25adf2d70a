// `leaks --window S`: the machine rescanned once a second for S seconds,
// for growth, and the kernel's SIGBUS faults read meanwhile (BPF, when it
// loads), for the mounts whose files they hit.
#pragma once

#include "model/engine.hpp"
#include "model/leaks.hpp"
#include "sources/runtime_names.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

struct LeakWindow {
  double window_s = 0;
  std::vector<UsageSample> samples; // the first taken before the watch began
  uint64_t start_ns = 0;            // boottime when it began
  uint64_t end_ns = 0;              // boottime of the last rescan
  std::string unwatched;            // why faults were not watched; "" when they were

  // The window's findings in report: growth, the span, the faults' mounts.
  void report_into(LeakReport &report, const Engine &engine) const;
};

// Watches for window_s seconds from an engine filled at now; hooks is the
// --hooks setting for the fault watch.
LeakWindow watch_leak_window(Engine &engine, uint64_t now, double window_s, std::string_view hooks,
                             const RuntimeRoots &roots);

} // namespace shmbpf
