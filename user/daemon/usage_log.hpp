// `shmbpf serve`'s usage history: a sample of the live model taken by the
// consumer after the monitor's samples (once a second, or less often when a
// sample costs more than serve_loop's share of a CPU),
// windows of it read by the local API's threads for /v1/leaks?window=S.
// The history and the growth rule are the model's (model/usage_history).
#pragma once

#include "model/usage_history.hpp"

#include <mutex>

namespace shmbpf {

class UsageLog {
public:
  explicit UsageLog(HistoryLimits limits = {}) : history_(limits) {}

  void add(const UsageSample &sample) {
    std::lock_guard lock(mu_);
    history_.add(sample);
  }
  // Shares the samples: growth is judged from it after the lock is let go,
  // so a reader holds up the consumer only for the copy of a few pointers.
  UsageWindow window(uint64_t window_ns) const {
    std::lock_guard lock(mu_);
    return history_.window(window_ns);
  }
  // The longest window that can be asked for, in seconds.
  double keep_s() const { return static_cast<double>(history_.limits().keep_ns) / 1e9; }

private:
  mutable std::mutex mu_;
  UsageHistory history_;
};

} // namespace shmbpf
