// `shmbpf serve`: the port and the unix socket bound first (a port in use
// or a socket taken costs nothing), then the live model loaded while HTTP
// already answers /healthz, then the daemon's loop (daemon/serve_loop)
// until SIGTERM or SIGINT.
#include "cli/app.hpp"
#include "cli/kernel_notes.hpp"
#include "cli/signals.hpp"

#include "daemon/endpoints.hpp"
#include "daemon/exporter.hpp"
#include "daemon/http_server.hpp"
#include "daemon/local_api.hpp"
#include "daemon/log.hpp"
#include "daemon/serve_loop.hpp"
#include "daemon/serve_reaper.hpp"
#include "daemon/state_file.hpp"
#include "daemon/unix_socket.hpp"
#include "daemon/usage_log.hpp"
#include "facts/result.hpp"
#include "live/memory.hpp"
#include "live/monitor.hpp"
#include "model/state.hpp"
#include "probe/probe.hpp"
#include "sources/clock.hpp"
#include "sources/namespaces.hpp"
#include "views/escape.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

namespace shmbpf {

namespace {

// How long SIGTERM waits for the export file to take the last records.
constexpr std::chrono::seconds kExportFlushLimit{10};

} // namespace

int run_serve(const ServeOptions &opts) {
  // Checked by the option already; the refusals below come before anything
  // is bound or loaded.
  const ListenAddress addr = ListenSetting::parse(opts.listen).value();
  require_bpf_privileges("serve");
  // Before the tables grow: a daemon keeps them for days, and is started
  // once (docs/BENCHMARKS.md, finding 27).
  const bool small_pages = disable_huge_pages();

  Log log;
  // The export file before anything else starts: a path that cannot be
  // written is refused with nothing bound or loaded.
  std::unique_ptr<Exporter> exporter;
  if (!opts.export_file.empty()) {
    const ExportLimits limits{ExportFileSetting::max_bytes(opts.export_max_size_mb).value(),
                              opts.export_max_backups};
    auto file = RotatingFile::open(opts.export_file, limits);
    if (!file)
      throw FatalError("--export-file", file.error(), 2);
    exporter = std::make_unique<Exporter>(std::move(*file), TraceClock{boot_to_realtime_ns()}, log);
  }
  // The state directory too, and the state read now: restored into the
  // engine once its first scan is applied.
  std::unique_ptr<StateFile> state;
  std::optional<SavedState> saved;
  std::string state_note;
  if (!opts.no_state && !opts.state_dir.empty()) {
    auto file = StateFile::open(opts.state_dir);
    if (!file)
      throw FatalError("--state-dir", file.error(), 2);
    state = std::make_unique<StateFile>(std::move(*file));
    saved = state->load(&state_note);
  }
  Endpoints endpoints(SHMBPF_VERSION);
  // TCP knows only the paths without segment names; the socket's API adds
  // the rest. Both are destroyed (the socket removed) however this ends.
  endpoints.set_exporter(exporter.get());
  std::unique_ptr<ServeReaper> reaper;
  if (opts.reap) {
    ReapFilter filter;
    filter.min_age_s = opts.reap_min_age_s;
    filter.match = opts.reap_match;
    reaper = std::make_unique<ServeReaper>(
        filter,
        std::chrono::milliseconds(static_cast<int64_t>(std::llround(opts.reap_interval_s * 1000))),
        log);
    endpoints.set_reaper(reaper.get());
  }
  HttpServer http(
      addr, [&endpoints](std::string_view path, const HttpQuery &) { return endpoints.get(path); });
  // Usage samples for /v1/leaks?window=S, kept only when the API is served.
  UsageLog usage;
  LocalApi api(endpoints, &usage);
  std::unique_ptr<HttpServer> local;
  const std::string socket = opts.no_socket ? std::string() : opts.socket;
  // Root's proof for POST /v1/reaped (reap's records for the export),
  // written next to the socket once it is ours, removed at the end.
  std::string token;
  struct TokenFile {
    std::string socket, token;
    ~TokenFile() {
      if (!token.empty())
        remove_socket_token(socket, token);
    }
  } token_file;
  if (!socket.empty()) {
    UnixSocketAddress where{socket, std::nullopt};
    if (opts.socket_group)
      where.group = socket_group(*opts.socket_group).value(); // checked by the option
    if (exporter) {
      auto made = new_socket_token();
      if (!made)
        throw FatalError("socket " + escape_text(socket), made.error(), 2);
      token = *made;
      api.take_reap_records(exporter.get(), token);
    }
    local = std::make_unique<HttpServer>(
        where, [&api](std::string_view path, const HttpQuery &q) { return api.get(path, q); },
        [&api](std::string_view path, std::string_view body, std::string_view t) {
          return api.post(path, body, t);
        });
    if (!token.empty()) {
      if (auto written = write_socket_token(socket, token); !written)
        throw FatalError("socket " + escape_text(socket), written.error(), 2);
      token_file.socket = socket; // not a temporary: its destructor removes the file
      token_file.token = token;
    }
  }
  install_daemon_signals();
  log.line("version " + std::string(SHMBPF_VERSION) + ", listening on http://" + addr.text() +
           " (/metrics, /healthz, /readyz)" +
           (socket.empty() ? std::string(", no unix socket")
                           : " and " + escape_text(socket) + " (the JSON API, /v1/)") +
           "; loading BPF and scanning");
  if (exporter)
    log.line("exporting events to " + exporter->path());
  if (reaper)
    log.line("reaping orphans older than " + std::to_string(std::llround(opts.reap_min_age_s)) +
             " s every " + std::to_string(std::llround(opts.reap_interval_s)) + " s" +
             (opts.reap_match ? " whose path matches " + escape_text(*opts.reap_match) : ""));
  if (state)
    log.line("keeping state in " + escape_text(state->path()));
  if (!small_pages)
    log.line("transparent huge pages stay on (prctl refused): more memory per segment");
  if (!state_note.empty())
    log.line("ignoring the saved state: " + escape_text(state_note));

  MonitorOptions mopts;
  mopts.probe.command = "serve";
  mopts.probe.ring_buffer_bytes = opts.ring_buffer_bytes;
  mopts.probe.verbose = opts.verbose;
  HookSetting::apply(mopts.probe, opts.hooks, HookSet::light);
  const std::string boot_id = current_boot_id();
  RestoreStats restored;
  if (saved)
    mopts.after_bootstrap = [&](Engine &engine, const SystemScan &scan) {
      restored = restore_state(engine, scan, *saved, boot_id);
    };
  mopts.runtime_roots = opts.runtime_roots;
  Monitor mon(mopts);
  if (saved)
    log.line("state: " + std::to_string(restored.applied) +
             " segments keep the creator a previous run saw, " +
             std::to_string(restored.unmatched) + " saved ones are gone or not the same");
  for (const std::string &note : kernel_notes(mon.session().probe(), opts.verbose))
    log.line(note);

  ServeLoopOptions lopts;
  lopts.stop_requested = stop_requested;
  lopts.take_hangup = take_hangup;
  lopts.host_mntns = host_mount_namespace();
  lopts.exporter = exporter.get();
  lopts.state = state.get();
  lopts.boot_id = boot_id;
  lopts.usage = socket.empty() ? nullptr : &usage;
  lopts.reaper = reaper.get();
  const int status = run_serve_loop(mon, endpoints, log, lopts);
  const MonitorStats stats = mon.stats();
  std::string summary = std::string(stop_signal_name()) + ": stopping after " +
                        std::to_string(stats.events) + " events, " + std::to_string(stats.lost) +
                        " lost";
  if (exporter) {
    // Everything handed over goes to the file first, unless the disk takes
    // nothing (a hung NFS mount): then stopping is worth more than waiting.
    const bool flushed = exporter->close_within(kExportFlushLimit);
    const ExportCounters c = exporter->counters();
    summary += "; " + std::to_string(c.records) + " records exported, " +
               std::to_string(c.dropped) + " dropped";
    if (!flushed) {
      log.line(summary + "; the export file took nothing for " +
               std::to_string(kExportFlushLimit.count()) +
               " s: the records still waiting are lost");
      // Its writer is blocked in write(2) and uses the exporter, and the
      // log, if it ever returns: nothing may be destroyed under it. The
      // kernel lets go of the programs, the port and the files.
      std::_Exit(1);
    }
  }
  log.line(summary);
  return status;
}

} // namespace shmbpf
