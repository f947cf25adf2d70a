// The mount namespaces the live model's samples read mount usage through
// (live/monitor). A walk of every process finds them: every 10 s, at each
// rescan, and at the next sample after an event from a namespace not among
// them; the samples between read the same representatives' mount tables
// only. Pure: the caller passes the time.
#pragma once

#include "sources/namespaces.hpp"

#include <chrono>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace shmbpf {

class KnownNamespaces {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kWalkEvery = std::chrono::seconds(10);

  // An applied event's namespace (0: none).
  void saw(uint32_t mntns) {
    if (mntns == last_ || mntns == 0)
      return;
    last_ = mntns;
    if (!known_.contains(mntns))
      walk_ = true;
  }
  // Whether the next sample walks every process.
  bool walk_due(Clock::time_point now) const;
  // What a sample or a rescan found; walked: by a walk that began at when.
  void replace(std::vector<MountNamespace> list, bool walked, Clock::time_point when);
  const std::vector<MountNamespace> &list() const { return list_; }

private:
  std::vector<MountNamespace> list_;
  std::unordered_set<uint32_t> known_;
  uint32_t last_ = 0;
  bool walk_ = true;
  Clock::time_point last_walk_{};
};

} // namespace shmbpf
