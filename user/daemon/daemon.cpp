#include "daemon/daemon.hpp"

#include "daemon/serve_loop.hpp"
#include "daemon/unix_socket.hpp"
#include "facts/result.hpp"
#include "live/kernel_notes.hpp"
#include "live/memory.hpp"
#include "live/monitor.hpp"
#include "model/state.hpp"
#include "sources/clock.hpp"
#include "sources/namespaces.hpp"
#include "views/escape.hpp"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace shmbpf {

namespace {

// How long a stop waits for the export file to take the last records.
constexpr std::chrono::seconds kExportFlushLimit{10};

std::string seconds_text(std::chrono::milliseconds ms) {
  return std::to_string(std::llround(static_cast<double>(ms.count()) / 1000));
}

} // namespace

Daemon::Daemon(DaemonConfig config, Log &log)
    : config_(std::move(config)), log_(log), endpoints_(config_.agent), api_(endpoints_, &usage_) {
  // Before the tables grow: a daemon keeps them for days, and is started
  // once (docs/BENCHMARKS.md, finding 27).
  small_pages_ = disable_huge_pages();
  WebSecurity web = load_web_config();
  open_files();
  endpoints_.set_exporter(exporter_.get());
  if (config_.reap) {
    reaper_ = std::make_unique<ServeReaper>(*config_.reap, config_.reap_interval, log_);
    endpoints_.set_reaper(reaper_.get());
  }
  // TCP knows only the paths without segment names; the socket's API adds
  // the rest.
  http_ = std::make_unique<HttpServer>(
      config_.listen,
      [this](std::string_view path, const HttpQuery &) { return endpoints_.get(path); },
      std::move(web));
  bind_socket();
}

Daemon::~Daemon() {
  local_.reset(); // no request may find the token gone
  if (!token_.empty())
    remove_socket_token(config_.socket, token_);
}

// --web-config-file and the files it names, read first: a bad one is
// refused before anything else is opened.
WebSecurity Daemon::load_web_config() {
  if (config_.web_config_file.empty())
    return {};
  auto web = WebConfigSetting::load(config_.web_config_file);
  if (!web)
    throw FatalError(std::string(WebConfigSetting::kFlag) + " " +
                         escape_text(config_.web_config_file),
                     web.error(), Exit::refused);
  https_ = web->tls.has_value();
  std::vector<std::string> notes;
  if (web->tls && !web->tls->client_ca_pem.empty())
    notes.push_back("client certificates required");
  if (!web->users.empty())
    notes.push_back("basic auth for " + std::to_string(web->users.size()) + " user" +
                    (web->users.size() == 1 ? "" : "s") + " (not /healthz, /readyz)");
  for (const std::string &n : notes)
    web_note_ += (web_note_.empty() ? "" : ", ") + n;
  return std::move(*web);
}

// The export file and the state directory: a path that cannot be written
// is refused with nothing bound or loaded. The state is read now, and
// restored into the engine once its first scan is applied.
void Daemon::open_files() {
  if (!config_.export_file.empty()) {
    auto file = RotatingFile::open(config_.export_file, config_.export_limits);
    if (!file)
      throw FatalError("--export-file", file.error(), Exit::refused);
    exporter_ =
        std::make_unique<Exporter>(std::move(*file), TraceClock{boot_to_realtime_ns()}, log_);
  }
  if (!config_.state_dir.empty()) {
    auto file = StateFile::open(config_.state_dir);
    if (!file)
      throw FatalError("--state-dir", file.error(), Exit::refused);
    state_ = std::make_unique<StateFile>(std::move(*file));
    saved_ = state_->load(&state_note_);
  }
}

// The JSON API on the unix socket, and with an export file root's token for
// POST /v1/reaped, written beside the socket once the socket is ours.
void Daemon::bind_socket() {
  if (config_.socket.empty())
    return;
  const std::string where = "socket " + escape_text(config_.socket);
  std::string token;
  if (exporter_) {
    auto made = new_socket_token();
    if (!made)
      throw FatalError(where, made.error(), Exit::refused);
    token = *made;
    api_.take_reap_records(exporter_.get(), token);
  }
  local_ = std::make_unique<HttpServer>(
      UnixSocketAddress{config_.socket, config_.socket_group},
      [this](std::string_view path, const HttpQuery &q) { return api_.get(path, q); },
      [this](std::string_view path, std::string_view body, std::string_view t) {
        return api_.post(path, body, t);
      });
  if (!token.empty()) {
    if (auto written = write_socket_token(config_.socket, token); !written)
      throw FatalError(where, written.error(), Exit::refused);
    token_ = token;
  }
}

void Daemon::log_start() const {
  const std::string &socket = config_.socket;
  log_.info(
      "version " + config_.agent.version + " (revision " + config_.agent.revision + ")" +
      (config_.agent.node.empty() ? std::string() : ", node " + escape_text(config_.agent.node)) +
      ", listening on " + (https_ ? "https://" : "http://") + config_.listen.text() +
      " (/metrics, /healthz, /readyz" + (web_note_.empty() ? "" : "; " + web_note_) + ")" +
      (socket.empty() ? std::string(", no unix socket")
                      : " and " + escape_text(socket) + " (the JSON API, /v1/)") +
      "; loading BPF and scanning");
  if (exporter_)
    log_.info("exporting events to " + exporter_->path());
  if (config_.reap)
    log_.info(
        "reaping orphans older than " + std::to_string(std::llround(config_.reap->min_age_s)) +
        " s every " + seconds_text(config_.reap_interval) + " s" +
        (config_.reap->match ? " whose path matches " + escape_text(*config_.reap->match) : ""));
  if (state_)
    log_.info("keeping state in " + escape_text(state_->path()));
  if (!small_pages_)
    log_.warn("transparent huge pages stay on (prctl refused): more memory per segment");
  if (!state_note_.empty())
    log_.warn("ignoring the saved state: " + escape_text(state_note_));
}

int Daemon::run(const DaemonSignals &signals) {
  log_start();
  MonitorOptions mopts;
  mopts.probe.command = "serve";
  mopts.probe.ring_buffer_bytes = config_.ring_buffer_bytes;
  mopts.probe.verbose = config_.verbose;
  HookSetting::apply(mopts.probe, config_.hooks, HookSet::light);
  const std::string boot_id = current_boot_id();
  RestoreStats restored;
  if (saved_)
    mopts.after_bootstrap = [&](Engine &engine, const SystemScan &scan) {
      restored = restore_state(engine, scan, *saved_, boot_id);
    };
  mopts.runtime_roots = config_.runtime_roots;
  Monitor mon(mopts);
  if (saved_)
    log_.info("state: " + std::to_string(restored.applied) +
              " segments keep the creator a previous run saw, " +
              std::to_string(restored.unmatched) + " saved ones are gone or not the same; " +
              std::to_string(restored.mount_peaks) + " mounts keep their peak");
  for (const std::string &note : kernel_notes(mon.session().probe(), config_.verbose))
    log_.info(note);

  ServeLoopOptions lopts;
  lopts.stop_requested = signals.stop_requested;
  lopts.take_hangup = signals.take_hangup;
  lopts.host_mntns = host_mount_namespace();
  lopts.exporter = exporter_.get();
  lopts.state = state_.get();
  lopts.boot_id = boot_id;
  lopts.usage = local_ ? &usage_ : nullptr;
  lopts.reaper = reaper_.get();
  const int status = run_serve_loop(mon, endpoints_, log_, lopts);
  const MonitorStats stats = mon.stats();
  std::string summary = std::string(signals.stop_name()) + ": stopping after " +
                        std::to_string(stats.events) + " events, " + std::to_string(stats.lost) +
                        " lost";
  if (exporter_) {
    // Everything handed over goes to the file first, unless the disk takes
    // nothing (a hung NFS mount): then stopping is worth more than waiting.
    const bool flushed = exporter_->close_within(kExportFlushLimit);
    const ExportCounters c = exporter_->counters();
    summary += "; " + std::to_string(c.records) + " records exported, " +
               std::to_string(c.dropped) + " dropped";
    if (!flushed) {
      log_.error(summary + "; the export file took nothing for " +
                 std::to_string(kExportFlushLimit.count()) +
                 " s: the records still waiting are lost");
      // Its writer is blocked in write(2) and uses the exporter, and the
      // log, if it ever returns: nothing may be destroyed under it. The
      // kernel lets go of the programs, the port and the files.
      std::_Exit(1);
    }
  }
  log_.info(summary);
  return status;
}

} // namespace shmbpf
