// `shmbpf serve --reap`: reap's rules run by the daemon itself, every
// --reap-interval seconds, on its live model (which knows each creator it
// saw exit): the plan is made on the consumer thread, the checks and
// removals on a thread of their own, so the ring buffer is never left
// unread; every outcome is logged, exported and counted.
#pragma once

#include "daemon/exporter.hpp"
#include "daemon/log.hpp"
#include "live/monitor.hpp"
#include "model/reap.hpp"
#include "views/metrics.hpp"

#include <chrono>
#include <future>
#include <mutex>
#include <string_view>
#include <vector>

namespace shmbpf {

struct ServeReapSetting {
  static constexpr double kDefaultIntervalS = 300;
  static constexpr const char *kHelp =
      "Free orphaned shared memory every --reap-interval seconds, with reap's rules and "
      "checks (docs/REAP.md); off by default";
};

class ServeReaper {
public:
  ServeReaper(ReapFilter filter, std::chrono::milliseconds interval, Log &log);
  // Waits for a run under way.
  ~ServeReaper();
  ServeReaper(const ServeReaper &) = delete;
  ServeReaper &operator=(const ServeReaper &) = delete;

  // --- the consumer thread (it alone changes the engine) ---------------------
  // Starts a run when one is due and none is under way; takes the outcomes
  // of a run that finished: logged, handed to exporter (may be null),
  // counted.
  void after_poll(const Monitor &mon, Exporter *exporter);
  // Waits for a run under way and takes its outcomes (the loop ends).
  void finish(Exporter *exporter);

  // --- any thread ------------------------------------------------------------
  ReapCounters counters() const;

private:
  void take(std::vector<ReapOutcome> outcomes, Exporter *exporter);

  ReapFilter filter_;
  std::chrono::milliseconds interval_;
  Log &log_;
  std::chrono::steady_clock::time_point due_;
  std::future<std::vector<ReapOutcome>> running_;
  mutable std::mutex mu_;
  ReapCounters counters_;
};

} // namespace shmbpf
