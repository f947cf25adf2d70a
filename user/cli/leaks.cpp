// `shmbpf leaks`: orphaned segments and steady growth, from scans of /proc
// and every tmpfs mount; exit status 0 (none), 1 (leaks), 2 (error).
#include "cli/app.hpp"
#include "cli/snapshot.hpp"

#include "daemon/api_client.hpp"

#include "live/clock.hpp"
#include "live/container_names.hpp"
#include "live/session.hpp"
#include "model/apply_scan.hpp"
#include "model/leaks.hpp"
#include "sources/clock.hpp"
#include "sources/system_scan.hpp"
#include "terminal/output.hpp"
#include "views/leaks_view.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

namespace shmbpf {

namespace {

// Seconds as the API takes them: the shortest text that reads back the same.
std::string seconds_param(double s) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, s);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(s);
}

// Orphans in a running daemon's model, and growth over its usage samples
// of the window, reported by the same views; the exit status as the report
// says. A window longer than the daemon keeps is its 400, status 2.
int run_leaks_remote(const LeaksOptions &opts, const std::string &socket) {
  QueryFields q;
  if (!opts.json)
    q.emplace("format", "text");
  q.emplace("min_age", seconds_param(opts.min_age_s));
  if (opts.window_s > 0)
    q.emplace("window", seconds_param(opts.window_s));
  if (opts.match)
    q.emplace("match", *opts.match);
  if (opts.all_mounts)
    q.emplace("all_mounts", "1");
  const ApiReply reply = api_get(socket, "/v1/leaks", q);
  Output output;
  output.write(reply.body);
  output.check();
  return reply.leaking ? 1 : 0;
}

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

int run_leaks(const LeaksOptions &opts) {
  if (opts.server)
    return run_leaks_remote(opts, *opts.server);
  if (geteuid() != 0)
    std::fprintf(stderr, "shmbpf: note: not root: holders in other users' processes are not "
                         "visible, so their segments may look orphaned (use sudo)\n");
  const EngineConfig cfg = engine_config_now();
  uint64_t now = cfg.start_ns;
  Engine engine(cfg);
  fill_from_scan(engine, opts.runtime_roots);

  // Growth needs time: rescan once a second over the window, and watch for
  // SIGBUS faults meanwhile.
  std::vector<UsageSample> samples{sample_usage(engine, now)};
  std::string unwatched;
  std::optional<FaultWatch> faults;
  if (opts.window_s > 0)
    faults.emplace(engine, opts.hooks, unwatched);
  const uint64_t window_start = boottime_ns();
  const auto start = std::chrono::steady_clock::now();
  const auto window = std::chrono::duration<double>(opts.window_s);
  for (int i = 1; opts.window_s > 0; ++i) {
    auto next = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::min(window, std::chrono::duration<double>(i)));
    faults->until(next);
    now = boottime_ns();
    reconcile(engine, scan_system(), now);
    name_containers(engine, opts.runtime_roots);
    samples.push_back(sample_usage(engine, now));
    if (std::chrono::steady_clock::now() - start >= window)
      break;
  }

  const auto min_age_ns = static_cast<uint64_t>(std::llround(opts.min_age_s * 1e9));
  LeakReport report = summarize_orphans(
      engine.orphans(now, min_age_ns,
                     opts.all_mounts ? OrphanScope::all_mounts : OrphanScope::shared_memory),
      opts.match.value_or(""));
  if (opts.window_s > 0) {
    report.growth = find_growth(samples);
    // Watched for the whole window: complete, whatever the scans took.
    report.window = GrowthWindow{opts.window_s,
                                 static_cast<double>(samples.back().t_ns - samples.front().t_ns) /
                                     1'000'000'000.0,
                                 samples.size(), true};
    report.bus_errors = bus_error_mounts(engine.sigbus_since(window_start));
    report.bus_errors_unwatched = unwatched;
  }
  std::string out = opts.json ? leaks_json(report, now)
                              : leaks_text(report, now, static_cast<uint64_t>(opts.min_age_s));
  Output output;
  output.write(out);
  output.check(); // a report that did not get out is an error, not "no leak"
  return report.leaking() ? 1 : 0;
}

} // namespace shmbpf
