// `shmbpf serve`: the checked options handed to the daemon (daemon/daemon),
// which binds what can be refused before BPF loads, then runs until SIGTERM
// or SIGINT.
#include "cli/app.hpp"

#include "daemon/daemon.hpp"
#include "live/signals.hpp"

#include <cmath>

namespace shmbpf {

namespace {

DaemonConfig daemon_config(const ServeOptions &opts) {
  DaemonConfig c;
  c.version = SHMBPF_VERSION;
  // Each value was checked by its option already.
  c.listen = ListenSetting::parse(opts.listen).value();
  c.export_file = opts.export_file;
  if (!c.export_file.empty())
    c.export_limits = {ExportFileSetting::max_bytes(opts.export_max_size_mb).value(),
                       opts.export_max_backups};
  c.socket = opts.no_socket ? std::string() : opts.socket;
  if (opts.socket_group)
    c.socket_group = socket_group(*opts.socket_group).value();
  c.state_dir = opts.no_state ? std::string() : opts.state_dir;
  c.runtime_roots = opts.runtime_roots;
  if (opts.reap) {
    c.reap = ReapFilter{};
    c.reap->min_age_s = opts.reap_min_age_s;
    c.reap->match = opts.reap_match;
    c.reap_interval =
        std::chrono::milliseconds(static_cast<int64_t>(std::llround(opts.reap_interval_s * 1000)));
  }
  c.ring_buffer_bytes = opts.ring_buffer_bytes;
  c.hooks = opts.hooks;
  c.verbose = opts.verbose;
  return c;
}

} // namespace

int run_serve(const ServeOptions &opts) {
  DaemonConfig config = daemon_config(opts);
  // Refused before anything is bound or loaded.
  require_bpf_privileges("serve");
  Log log;
  Daemon daemon(std::move(config), log);
  install_daemon_signals();
  return daemon.run({stop_requested, take_hangup, stop_signal_name});
}

} // namespace shmbpf
