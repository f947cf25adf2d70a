#include "live/leak_window.hpp"

#include "live/container_names.hpp"
#include "live/session.hpp"
#include "model/apply_scan.hpp"
#include "sources/clock.hpp"
#include "sources/system_scan.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

namespace shmbpf {

namespace {

// The kernel's SIGBUS faults while a window is watched: a Session whose
// sigbus events go to the engine (the scans see everything else). Without
// BPF the window is still watched for growth, and the report says why
// faults were not.
class FaultWatch {
public:
  FaultWatch(Engine &engine, std::string_view hooks, std::string &unwatched) : engine_(engine) {
    ProbeOptions probe;
    probe.command = "leaks";
    // Faults are in both sets: the light one costs other syscalls nothing.
    HookSetting::apply(probe, hooks, HookSet::light);
    try {
      session_.emplace(probe);
    } catch (const FatalError &e) {
      unwatched = e.what();
    }
  }

  // Until deadline: reads faults as they come, or just sleeps.
  void until(std::chrono::steady_clock::time_point deadline) {
    while (session_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return;
      const int n =
          session_->poll(static_cast<int>(std::min<int64_t>(left.count(), 250)), [&](Event &e) {
            if (e.type == EventType::sigbus)
              engine_.apply(e);
          });
      if (n < 0 && n != -EINTR)
        break;
    }
    std::this_thread::sleep_until(deadline);
  }

private:
  Engine &engine_;
  std::optional<Session> session_;
};

} // namespace

LeakWindow watch_leak_window(Engine &engine, uint64_t now, double window_s, std::string_view hooks,
                             const RuntimeRoots &roots) {
  LeakWindow w;
  w.window_s = window_s;
  w.samples.push_back(sample_usage(engine, now));
  w.end_ns = now;
  FaultWatch faults(engine, hooks, w.unwatched);
  w.start_ns = boottime_ns();
  const auto start = std::chrono::steady_clock::now();
  const auto window = std::chrono::duration<double>(window_s);
  for (int i = 1;; ++i) {
    faults.until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::min(window, std::chrono::duration<double>(i))));
    w.end_ns = boottime_ns();
    reconcile(engine, scan_system(), w.end_ns);
    name_containers(engine, roots);
    w.samples.push_back(sample_usage(engine, w.end_ns));
    if (std::chrono::steady_clock::now() - start >= window)
      break;
  }
  return w;
}

void LeakWindow::report_into(LeakReport &report, const Engine &engine) const {
  report.growth = find_growth(samples);
  // Watched for the whole window: complete, whatever the scans took.
  report.window = GrowthWindow{
      window_s, static_cast<double>(samples.back().t_ns - samples.front().t_ns) / 1'000'000'000.0,
      samples.size(), true};
  report.bus_errors = bus_error_mounts(engine.sigbus_since(start_ns));
  report.bus_errors_unwatched = unwatched;
}

} // namespace shmbpf
