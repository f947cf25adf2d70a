#include "daemon/serve_loop.hpp"

#include "facts/result.hpp"
#include "model/leaks.hpp"
#include "sources/clock.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

namespace shmbpf {

namespace {

using Clock = std::chrono::steady_clock;

// Lost records and rejected ones are logged at most this often, summed.
constexpr auto kLossLogEvery = std::chrono::seconds(10);
// The state is saved at most this often while running (and at the end).
constexpr auto kStateSaveEvery = std::chrono::seconds(60);
// Usage samples for growth (leaks --window over the socket) follow the
// monitor's once-a-second sample, but may take at most 1/this of a CPU: a
// sample walks every segment twice, about 2 ms with 100,000 of them, so
// those are kept every few seconds instead (docs/BENCHMARKS.md).
constexpr int kUsageShare = 2000;

// Saves the engine's observed creations unless they are what was saved
// last; logs a failure (the next save tries again).
void save_state(const Monitor &mon, const ServeLoopOptions &opts, Log &log, std::string &last,
                bool final) {
  const SavedState st = collect_state(mon.engine(), opts.boot_id);
  std::string text = format_state(st);
  if (text == last && !final)
    return;
  Result<void> saved = opts.state->save(text);
  if (!saved) {
    log.error("could not save the state: " + saved.error());
    return;
  }
  if (final)
    log.info("state saved: " + std::to_string(st.segments.size()) + " segments in " +
             opts.state->path());
  last = std::move(text);
}

std::string ready_line(const Monitor &mon) {
  const Engine &engine = mon.engine();
  const Probe &probe = mon.session().probe();
  size_t on = 0;
  for (const HookStatus &h : probe.hooks())
    on += !h.program.empty();
  const EngineTotals t = engine.totals(Monitor::now_ns(), 0);
  return "ready: " + std::to_string(on) + " of " + std::to_string(probe.hooks().size()) +
         " hooks of the " + std::string(hook_set_name(probe.hook_set())) + " set attached; " +
         std::to_string(engine.segment_count()) + " segments (" + std::to_string(t.orphans) +
         " orphaned), " + std::to_string(engine.mounts().size()) + " tmpfs mounts, " +
         std::to_string(engine.stats().processes) + " processes";
}

} // namespace

int run_serve_loop(Monitor &mon, Endpoints &endpoints, Log &log, const ServeLoopOptions &opts) {
  endpoints.attach(mon, opts.host_mntns);
  struct Detach {
    Endpoints &e;
    Monitor &mon;
    ~Detach() {
      e.detach();
      mon.set_observer({});
    }
  } detach{endpoints, mon};
  Exporter *exporter = opts.exporter;
  if (exporter)
    mon.set_observer([exporter, &mon](const Event &e) { exporter->event(e, mon.engine()); });

  mon.drain();
  // The consumer is the only thread that changes the engine: it reads it
  // without the lock.
  uint64_t samples_seen = mon.stats().samples;
  Clock::time_point usage_due{};
  const auto take_usage = [&] {
    const auto cpu0 = thread_cpu();
    opts.usage->add(sample_usage(mon.engine(), Monitor::now_ns()));
    const auto gap = rescan_gap(std::chrono::seconds(1), thread_cpu() - cpu0, kUsageShare);
    // The monitor samples once a second: due a little early, or a 1 s gap
    // would often miss its sample by a hair and wait for the next.
    usage_due = Clock::now() + gap - std::chrono::milliseconds(200);
  };
  if (opts.usage)
    take_usage();
  endpoints.heartbeat();
  endpoints.set_ready();
  log.info(ready_line(mon));

  MonitorStats logged = mon.stats();
  auto last_log = Clock::now();
  auto last_save = Clock::now();
  std::string saved_text;
  while (!opts.stop_requested()) {
    const int n = mon.poll(100);
    if (n < 0 && n != -EINTR)
      throw FatalError("reading the ring buffer", std::strerror(-n));
    endpoints.heartbeat();
    if (opts.usage) {
      // After the monitor's sample: file sizes and mount usage are fresh.
      if (const uint64_t taken = mon.stats().samples;
          taken != samples_seen && Clock::now() >= usage_due) {
        samples_seen = taken;
        take_usage();
      }
    }
    if (opts.reaper)
      opts.reaper->after_poll(mon, exporter);
    if (exporter)
      exporter->after_poll(mon);
    if (opts.take_hangup && opts.take_hangup()) {
      if (exporter) {
        log.info("SIGHUP: reopening the export file " + exporter->path());
        exporter->request_reopen();
      } else {
        log.info("SIGHUP: nothing to reopen (no export file); still running");
      }
    }
    if (opts.state && Clock::now() - last_save >= kStateSaveEvery) {
      save_state(mon, opts, log, saved_text, false);
      last_save = Clock::now();
    }
    if (Clock::now() - last_log < kLossLogEvery)
      continue;
    const MonitorStats s = mon.stats();
    if (s.lost != logged.lost)
      log.warn("the kernel lost " + std::to_string(s.lost - logged.lost) +
               " records (ring buffer full; " + std::to_string(s.lost) +
               " since start): rescanning to catch up; a larger --ring-buffer-size helps");
    if (s.decode_errors != logged.decode_errors)
      log.warn(std::to_string(s.decode_errors - logged.decode_errors) +
               " records rejected by the decoder (" + std::to_string(s.decode_errors) +
               " since start)");
    logged = s;
    last_log = Clock::now();
  }
  if (opts.reaper)
    opts.reaper->finish(exporter);
  // What the kernel holds now, for the export's last records.
  mon.drain();
  if (exporter)
    exporter->after_poll(mon, /*last=*/true);
  if (opts.state) {
    // Files created since the last rescan have no birth yet: one more
    // rescan gives it to them.
    mon.reconcile();
    save_state(mon, opts, log, saved_text, true);
  }
  return 0;
}

} // namespace shmbpf
