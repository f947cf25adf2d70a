// `shmbpf serve` assembled: what can be refused is opened and bound first
// (the export file, the state directory, the port, the unix socket), while
// nothing is loaded; then the live model is loaded with HTTP answering
// /healthz already, and the daemon's loop (serve_loop) runs until a signal.
#pragma once

#include "daemon/endpoints.hpp"
#include "daemon/exporter.hpp"
#include "daemon/http_server.hpp"
#include "daemon/listen.hpp"
#include "daemon/local_api.hpp"
#include "daemon/log.hpp"
#include "daemon/serve_reaper.hpp"
#include "daemon/state_file.hpp"
#include "daemon/usage_log.hpp"
#include "daemon/web_config.hpp"
#include "model/reap.hpp"
#include "sources/runtime_names.hpp"

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace shmbpf {

// What serve is told, as plain values the command line has checked.
struct DaemonConfig {
  AgentIdentity agent; // version, revision and the metrics' node label
  ListenAddress listen;
  std::string web_config_file; // "": plain HTTP, no basic auth
  std::string export_file;     // "": no export
  ExportLimits export_limits;
  std::string socket; // "": no unix socket (and no JSON API)
  std::optional<gid_t> socket_group;
  std::string state_dir; // "": nothing kept across restarts
  RuntimeRoots runtime_roots;
  std::optional<ReapFilter> reap; // --reap: orphans freed every reap_interval
  std::chrono::milliseconds reap_interval{0};
  size_t ring_buffer_bytes = 0;
  std::string hooks = "auto";
  bool verbose = false;
};

// How the process is asked to stop: by the signal handlers in production.
struct DaemonSignals {
  std::function<bool()> stop_requested;
  std::function<bool()> take_hangup; // true once per SIGHUP: reopen the export file
  std::function<const char *()> stop_name;
};

class Daemon {
public:
  // Opens and binds; throws FatalError (exit status 2) on what the config
  // names but cannot be had. Nothing of BPF's is loaded yet.
  Daemon(DaemonConfig config, Log &log);
  ~Daemon();
  Daemon(const Daemon &) = delete;
  Daemon &operator=(const Daemon &) = delete;

  // Loads the model and serves until signals.stop_requested(): 0, or 1
  // when the export file took nothing for 10 s by then (the process then
  // ends here, with _exit: a writer blocked in write(2) still uses it).
  int run(const DaemonSignals &signals);

private:
  WebSecurity load_web_config();
  void open_files();
  void bind_socket();
  void log_start() const;

  DaemonConfig config_;
  Log &log_;
  bool small_pages_ = false; // transparent huge pages turned off for this process
  std::string web_note_;     // what the port asks of clients ("" for nothing), for the log
  bool https_ = false;
  std::unique_ptr<Exporter> exporter_;
  std::unique_ptr<StateFile> state_;
  std::optional<SavedState> saved_;
  std::string state_note_; // why the saved state is not used
  std::unique_ptr<ServeReaper> reaper_;
  Endpoints endpoints_;
  UsageLog usage_; // for /v1/leaks?window=S, kept only when the API is served
  LocalApi api_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpServer> local_;
  std::string token_; // root's proof for POST /v1/reaped, beside the socket
};

} // namespace shmbpf
