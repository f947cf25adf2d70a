// The live model: a Session's events applied to an Engine that was
// bootstrapped from a scan, kept converging to the kernel's truth by
// periodic rescans and by a rescan right after the kernel lost records.
// What `shmbpf top` (and any long-running consumer) reads.
#pragma once

#include "decode/event.hpp"
#include "live/file_watch.hpp"
#include "live/gather.hpp"
#include "live/held_events.hpp"
#include "live/known_namespaces.hpp"
#include "live/new_cgroups.hpp"
#include "live/oom_reads.hpp"
#include "live/rescan_schedule.hpp"
#include "live/session.hpp"
#include "model/engine.hpp"
#include "sources/runtime_names.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shmbpf {

struct MonitorOptions {
  ProbeOptions probe;
  // Full rescans of /proc, every tmpfs and /proc/sysvipc/shm. A rescan also
  // happens at the first poll after the kernel reports lost records. The
  // period grows with what a rescan costs (kIdleRescanShare): with hundreds
  // of thousands of files, a rescan every 30 s would be most of an idle
  // daemon's CPU.
  std::chrono::milliseconds reconcile_every{30'000};
  // The same with the light hook set, which sees no open of an existing
  // file, no close and no System V call: only rescans find them.
  std::chrono::milliseconds light_reconcile_every{5'000};
  // The least time between two rescans caused by lost records. The gap
  // also grows with what a rescan costs (kLossRescanShare), so that with
  // many files the rescans cannot take most of the consumer's time and
  // cause more loss.
  std::chrono::milliseconds loss_reconcile_gap{2'000};
  // Mount usage samples for growth rates and time-to-full.
  std::chrono::milliseconds sample_every{1'000};
  // Called once the engine is bootstrapped from the first scan, before any
  // event is applied (serve's saved state is restored there).
  std::function<void(Engine &, const SystemScan &)> after_bootstrap;
  // Where the container runtimes keep the files that name containers.
  RuntimeRoots runtime_roots;
  // Called on the worker thread before each gather reads anything (tests).
  std::function<void()> before_gather;
};

struct MonitorStats {
  uint64_t events = 0; // events applied to the engine
  // The same by type, indexed by EventType's value.
  std::array<uint64_t, kEventTypeSlots> by_type{};
  uint64_t lost = 0;          // records the kernel could not deliver
  uint64_t decode_errors = 0; // records the decoder rejected
  uint64_t reconciles = 0;    // full rescans, the bootstrap included
  uint64_t samples = 0;       // samples applied (re-stats, holders, mount usage)
  uint64_t loss_reconciles = 0;
  // Filesystems scanned again at start because files came or went on them
  // while the probe loaded (the first scan runs meanwhile).
  uint64_t start_rescans = 0;
  // The longest time the consumer thread spent on anything but reading the
  // ring buffer within one poll() or drain(): applying a gather's results
  // and the events held meanwhile, say. Longer than the ring holds, and
  // records are lost.
  uint64_t longest_stall_ns = 0;
  uint64_t held_peak = 0; // most events held back during one gather
  // Files forgotten because their filesystem ended (a tmpfs unmounted, a
  // container's mount namespace gone with its /dev/shm).
  uint64_t ended_files = 0;
};

class Monitor {
public:
  using EventFn = std::function<void(const Event &)>;

  // Loads the BPF probe (throws FatalError like Probe), then bootstraps the
  // engine from a scan of what already exists.
  explicit Monitor(const MonitorOptions &opts);

  // Waits up to timeout_ms for events and applies them; samples mounts and
  // reconciles when due. The file, /proc and mount reads of a sample or a
  // rescan run on a worker thread: meanwhile events are read and held back,
  // and applied in order once the gathered state is. Returns events
  // applied, or -errno (-EINTR on a signal).
  int poll(int timeout_ms);
  // Finishes a gather under way, then applies everything the kernel has
  // pending now (frees included).
  void drain();
  // Drains, then rescans everything and reconciles the engine with it.
  void reconcile();

  // Called for each event after the engine applied it (optional).
  void set_observer(EventFn fn) { observer_ = std::move(fn); }

  // The engine and the counters, for the thread that calls poll() (top's
  // loops). Other threads use read().
  const Engine &engine() const { return engine_; }
  MonitorStats stats() const;
  // Runs fn(engine, stats) under the monitor's lock, from any thread, and
  // returns what fn returns. poll(), drain() and reconcile() hold that lock
  // while they change the engine, never while poll() waits for records: fn
  // should copy what it needs and return, and format it after.
  template <class Fn> auto read(Fn &&fn) const {
    std::lock_guard lock(mu_);
    return fn(static_cast<const Engine &>(engine_), stats());
  }
  const Session &session() const { return session_; }
  // CLOCK_BOOTTIME now, in the engine's time base.
  static uint64_t now_ns();

private:
  // A full scan and the wall-clock second it began.
  struct TimedScan {
    int64_t started_s = 0;
    SystemScan scan;
    std::chrono::nanoseconds cpu{}; // the scan's thread's CPU time
  };
  Monitor(const MonitorOptions &opts, std::shared_ptr<TimedScan> first,
          std::future<TimedScan> scanning);
  // Brings a scan made before attach up to date with a listing made after:
  // each filesystem whose files differ is scanned again. False when the
  // listing has a filesystem the scan lacks.
  bool catch_up(SystemScan &scan, const std::vector<SeedKey> &listed);
  void drain_locked();

  // Every event read goes through here: applied, or held back in order
  // while a gather runs and until the ones held before it are applied.
  void on_event(Event &e);
  void apply(Event &e);
  // Applies up to n held events, oldest first.
  void apply_held(size_t n) {
    held_.take(n, [this](Event &e) { apply(e); });
  }
  // Runs g's reads on a worker thread (live/gather.hpp), which never
  // touches the engine.
  void start_gather(Gather g);
  // Applies the gather's result; the events held back meanwhile follow.
  void finish_gather();
  // A gather's result applied, one per request type; g carries when it
  // began and what its reads cost.
  void apply_result(CgroupGather &, const Gather &) {}
  void apply_result(RescanGather &r, const Gather &g);
  void apply_result(HoldersGather &h, const Gather &g);
  void apply_result(SampleGather &s, const Gather &g);
  SampleGather sample_request();
  void note_stall(std::chrono::steady_clock::time_point since);

  // Held by the consumer while it reads records and changes the engine,
  // and by read(). Lock order (docs/ARCHITECTURE.md, Locks): taken inside
  // Endpoints' lock, never around it.
  mutable std::mutex mu_;
  Session session_;
  Engine engine_;
  EventFn observer_;
  MonitorOptions opts_;
  MonitorStats stats_;
  // CLOCK_REALTIME seconds when the last scan began: files modified since
  // may have had their creation lost and are seeded by the next rescan.
  int64_t last_scan_start_s_ = 0;
  RescanSchedule schedule_;
  NewCgroups cgroups_;
  KnownNamespaces namespaces_;
  FileWatch watch_;
  OomFiles oom_files_;     // an OOM kill's files counted again before it is applied
  ContainerMemory memory_; // each container's memory cgroup, read at samples
  // A gather under way, and the events read since it began and not yet
  // applied.
  std::future<Gather> gather_;
  std::atomic<bool> gather_done_{false}; // set by the worker as it ends
  HeldEvents held_;
};

} // namespace shmbpf
