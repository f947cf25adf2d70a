// `shmbpf trace`: one line (or JSON object) per event, until a signal or
// --duration.
#include "cli/app.hpp"
#include "cli/options.hpp"
#include "live/kernel_notes.hpp"
#include "live/signals.hpp"

#include "live/session.hpp"
#include "terminal/trace_loop.hpp"

namespace shmbpf {

void add_trace_command(CLI::App &app, TraceOptions &t) {
  auto *trace =
      app.add_subcommand("trace", "Print every shared-memory event as it happens (needs root).");
  trace->add_option("-p,--pid", t.filter.pids, "Only events of these process ids (repeatable)")
      ->check(positive_integer("a process id"));
  trace->add_option("--comm", t.filter.comms, "Only events of processes with this command name");
  trace->add_option("--kind", t.filter.kinds, "Only this kind of shared memory")
      ->check(CLI::IsMember(kind_names()));
  trace->add_option("--event", t.filter.events, "Only these events")
      ->check(CLI::IsMember(event_type_names()));
  trace->add_option("--duration", t.duration_s, "Stop after this many seconds")
      ->check(number_in(0, kNoLimit, true));
  add_ring_buffer_option(trace, t.ring_buffer_bytes);
  add_hooks_option(trace, t.hooks, "full");
  trace->add_flag("--json", t.json, "Print one JSON object per event (NDJSON)");
  trace->add_flag("--stats", t.stats,
                  "At exit, print the time spent in shmbpf's BPF programs, per hook (turns "
                  "on the kernel's BPF run-time statistics while tracing, which adds two "
                  "clock reads to every run)");
  add_verbose_flag(trace, t.verbose);
}

int run_trace(const TraceOptions &opts) {
  ProbeOptions popts;
  popts.ring_buffer_bytes = opts.ring_buffer_bytes;
  popts.verbose = opts.verbose;
  popts.run_stats = opts.stats;
  HookSetting::apply(popts, opts.hooks, HookSet::full);
  Session session(popts);
  install_stop_signals();
  tell_kernel_notes(session.probe(), opts.verbose);

  return run_trace_loop(session, {opts.filter, opts.json, opts.duration_s, opts.stats});
}

} // namespace shmbpf
