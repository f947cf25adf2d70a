// `shmbpf serve`: the port and the unix socket bound first (a port in use
// or a socket taken costs nothing), then the live model loaded while HTTP
// already answers /healthz, then the daemon's loop (daemon/serve_loop)
// until SIGTERM or SIGINT.
#include "cli/app.hpp"
#include "cli/kernel_notes.hpp"
#include "cli/signals.hpp"

#include "daemon/endpoints.hpp"
#include "daemon/http_server.hpp"
#include "daemon/local_api.hpp"
#include "daemon/log.hpp"
#include "daemon/serve_loop.hpp"
#include "live/monitor.hpp"
#include "probe/probe.hpp"
#include "sources/namespaces.hpp"
#include "views/escape.hpp"

#include <unistd.h>

#include <memory>
#include <string>

namespace shmbpf {

int run_serve(const ServeOptions &opts) {
  // Checked by the option already; the refusals below come before anything
  // is bound or loaded.
  const ListenAddress addr = ListenSetting::parse(opts.listen).value();
  require_bpf_privileges("serve");

  Log log;
  Endpoints endpoints(SHMBPF_VERSION);
  // TCP knows only the paths without segment names; the socket's API adds
  // the rest. Both are destroyed (the socket removed) however this ends.
  HttpServer http(
      addr, [&endpoints](std::string_view path, const HttpQuery &) { return endpoints.get(path); });
  const LocalApi api(endpoints);
  std::unique_ptr<HttpServer> local;
  const std::string socket = opts.no_socket ? std::string() : opts.socket;
  if (!socket.empty()) {
    UnixSocketAddress where{socket, std::nullopt};
    if (opts.socket_group)
      where.group = socket_group(*opts.socket_group).value(); // checked by the option
    local = std::make_unique<HttpServer>(
        where, [&api](std::string_view path, const HttpQuery &q) { return api.get(path, q); });
  }
  install_daemon_signals();
  log.line("version " + std::string(SHMBPF_VERSION) + ", listening on http://" + addr.text() +
           " (/metrics, /healthz, /readyz)" +
           (socket.empty() ? std::string(", no unix socket")
                           : " and " + escape_text(socket) + " (the JSON API, /v1/)") +
           "; loading BPF and scanning");

  MonitorOptions mopts;
  mopts.probe.command = "serve";
  mopts.probe.ring_buffer_bytes = opts.ring_buffer_bytes;
  mopts.probe.verbose = opts.verbose;
  Monitor mon(mopts);
  for (const std::string &note : kernel_notes(mon.session().probe(), opts.verbose))
    log.line(note);

  ServeLoopOptions lopts;
  lopts.stop_requested = stop_requested;
  lopts.take_hangup = take_hangup;
  lopts.host_mntns = mount_namespace_of(static_cast<int>(getpid()));
  const int status = run_serve_loop(mon, endpoints, log, lopts);
  const MonitorStats stats = mon.stats();
  log.line(std::string(stop_signal_name()) + ": stopping after " + std::to_string(stats.events) +
           " events, " + std::to_string(stats.lost) + " lost");
  return status;
}

} // namespace shmbpf
