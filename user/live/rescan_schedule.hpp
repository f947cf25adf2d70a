// When the live model reads the machine again (live/monitor): a full
// rescan every period, sooner after lost records, spaced further apart as
// rescans grow costly; a sample every second; new cgroup ids resolved
// within 100 ms. Pure: the caller passes the time.
#pragma once

#include <chrono>
#include <cstdint>

namespace shmbpf {

// The time from one rescan to the next: at least `least`, and long enough
// that rescans costing `cost` each take at most 1/share of the time.
std::chrono::steady_clock::duration rescan_gap(std::chrono::steady_clock::duration least,
                                               std::chrono::steady_clock::duration cost, int share);

struct RescanPeriods {
  std::chrono::milliseconds rescan_every{30'000};
  std::chrono::milliseconds loss_gap{2'000}; // least time between loss rescans
  std::chrono::milliseconds sample_every{1'000};
};

class RescanSchedule {
public:
  using Clock = std::chrono::steady_clock;
  // A rescan after lost records may take at most 1/kLossShare of the time,
  // periodic ones 1/kIdleShare of one CPU (docs/BENCHMARKS.md, findings 25
  // and 26).
  static constexpr int kLossShare = 10;
  static constexpr int kIdleShare = 800;

  enum class Next { nothing, rescan, loss_rescan, unlinked, sample };

  explicit RescanSchedule(RescanPeriods periods) : periods_(periods) {}
  // The first scan, applied at now, costing cpu: it spaces the first
  // periodic rescan as a rescan would.
  void began(Clock::time_point now, Clock::duration cpu);

  // What to start now, the ring buffer read and nothing gathering; lost is
  // the kernel's count of lost records so far, unlinked_due whether enough
  // unlinked files wait for their holders' rescan. A loss rescan takes the
  // loss as seen, a sample its turn.
  Next next(Clock::time_point now, uint64_t lost, bool unlinked_due);
  // New cgroup ids may be resolved (true at most every 100 ms; its turn taken).
  bool resolve_new_cgroups(Clock::time_point now);
  // Every unknown cgroup may be resolved (at most every 10 s; its turn taken).
  bool resolve_all_cgroups(Clock::time_point now);
  // A rescan's reads began at started and it was applied at done, costing cpu.
  void rescanned(Clock::time_point started, Clock::time_point done, Clock::duration cpu);

private:
  RescanPeriods periods_;
  uint64_t lost_seen_ = 0;
  Clock::time_point last_rescan_{}, last_sample_{}, last_resolve_{}, last_full_resolve_{};
  Clock::duration rescan_wall_{}; // the last rescan's wall time: spaces loss rescans
  // Its CPU time (the worker's reads, then applying them): spaces the
  // periodic ones. Wall time on a busy machine would overstate it.
  Clock::duration rescan_cpu_{};
};

} // namespace shmbpf
