// The live model: a Session's events applied to an Engine that was
// bootstrapped from a scan, kept converging to the kernel's truth by
// periodic rescans and by a rescan right after the kernel lost records.
// What `shmbpf top` (and any long-running consumer) reads.
#pragma once

#include "model/engine.hpp"
#include "probe/session.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shmbpf {

struct MonitorOptions {
  ProbeOptions probe;
  // Full rescans of /proc, every tmpfs and /proc/sysvipc/shm. A rescan also
  // happens at the first poll after the kernel reports lost records.
  std::chrono::milliseconds reconcile_every{30'000};
  // The least time between two rescans caused by lost records. The gap
  // also grows with what a rescan costs (kLossRescanShare), so that with
  // many files the rescans cannot take most of the consumer's time and
  // cause more loss.
  std::chrono::milliseconds loss_reconcile_gap{2'000};
  // Mount usage samples for growth rates and time-to-full.
  std::chrono::milliseconds sample_every{1'000};
};

struct MonitorStats {
  uint64_t events = 0;        // events applied to the engine
  uint64_t lost = 0;          // records the kernel could not deliver
  uint64_t decode_errors = 0; // records the decoder rejected
  uint64_t reconciles = 0;    // full rescans, the bootstrap included
  uint64_t loss_reconciles = 0;
  // Filesystems scanned again at start because files came or went on them
  // while the probe loaded (the first scan runs meanwhile).
  uint64_t start_rescans = 0;
};

class Monitor {
public:
  using EventFn = std::function<void(const Event &)>;

  // Loads the BPF probe (throws FatalError like Probe), then bootstraps the
  // engine from a scan of what already exists.
  explicit Monitor(const MonitorOptions &opts);

  // Waits up to timeout_ms for events and applies them; samples mounts and
  // reconciles when due. Returns events applied, or -errno (-EINTR on a
  // signal).
  int poll(int timeout_ms);
  // Applies everything the kernel has pending now (frees included).
  void drain();
  // Drains, then rescans everything and reconciles the engine with it.
  void reconcile();

  // Called for each event after the engine applied it (optional).
  void set_observer(EventFn fn) { observer_ = std::move(fn); }

  const Engine &engine() const { return engine_; }
  MonitorStats stats() const;
  const Session &session() const { return session_; }
  // CLOCK_BOOTTIME now, in the engine's time base.
  static uint64_t now_ns();

private:
  // A full scan and the wall-clock second it began.
  struct TimedScan {
    int64_t started_s = 0;
    SystemScan scan;
  };
  Monitor(const MonitorOptions &opts, std::shared_ptr<TimedScan> first,
          std::future<TimedScan> scanning);
  // Brings a scan made before attach up to date with a listing made after:
  // each filesystem whose files differ is scanned again. False when the
  // listing has a filesystem the scan lacks.
  bool catch_up(SystemScan &scan, const std::vector<SeedKey> &listed);
  void apply(Event &e);
  void rescan();
  void maybe_sample();
  void resolve_cgroups();
  void resolve_cgroups(const std::vector<uint64_t> &candidates);
  void watch(const Event &e);
  void refresh_usage();
  void refresh_holders();

  Session session_;
  Engine engine_;
  EventFn observer_;
  MonitorOptions opts_;
  MonitorStats stats_;
  uint64_t lost_seen_ = 0;
  // CLOCK_REALTIME seconds when the last scan began: files modified since
  // may have had their creation lost and are seeded by the next rescan.
  int64_t last_scan_start_s_ = 0;
  // Wall time the last rescan took; spaces out loss rescans.
  std::chrono::steady_clock::duration last_rescan_cost_{};
  // cgroup ids events carried; a new one gets resolved within 100 ms.
  std::unordered_set<uint64_t> seen_cgroups_;
  std::vector<uint64_t> new_cgroups_;
  uint64_t last_cgroup_ = 0;
  std::unordered_map<uint64_t, int> cgroup_tries_;
  // Files touched by recent events, re-stat'ed every sample: no event
  // reports the pages that writes and faults add. Bounded; oldest go first.
  struct Watched {
    std::string path;     // as process pid saw it
    bool has_path = true; // false once unlinked (or not found): no stat
    uint32_t pid = 0;
    uint64_t last_event_ns = 0;
  };
  std::unordered_map<SegmentKey, Watched, SegmentKeyHash> watched_;
  size_t holder_cursor_ = 0;
  std::chrono::steady_clock::time_point last_reconcile_{};
  std::chrono::steady_clock::time_point last_sample_{};
  std::chrono::steady_clock::time_point last_resolve_{};
  std::chrono::steady_clock::time_point last_full_resolve_{};
};

} // namespace shmbpf
