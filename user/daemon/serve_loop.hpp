// `shmbpf serve`'s loop: the live monitor kept running, its readiness and
// the consumer's heartbeat handed to the HTTP endpoints, notable things
// logged, until a signal asks to stop.
#pragma once

#include "daemon/endpoints.hpp"
#include "daemon/exporter.hpp"
#include "daemon/log.hpp"
#include "daemon/serve_reaper.hpp"
#include "daemon/state_file.hpp"
#include "daemon/usage_log.hpp"
#include "live/monitor.hpp"

#include <functional>
#include <string>

namespace shmbpf {

struct ServeLoopOptions {
  std::function<bool()> stop_requested;
  // True once per SIGHUP received: the export file is reopened.
  std::function<bool()> take_hangup;
  uint32_t host_mntns = 0; // shmbpf's own mount namespace: its mounts are the host's
  // --export-file: every event, loss and orphan change goes to it (and
  // what is pending when the loop stops). Null: no export.
  Exporter *exporter = nullptr;
  // --state-dir: the observed creations saved every minute when they
  // changed, and at the end after a last rescan. Null: nothing saved.
  const StateFile *state = nullptr;
  std::string boot_id;
  // A usage sample of the model goes to it after each of the monitor's
  // samples (and one when ready). Null: none kept.
  UsageLog *usage = nullptr;
  // --reap: orphans freed every interval (its outcomes exported). Null: never.
  ServeReaper *reaper = nullptr;
};

// Drains what the kernel has, marks the endpoints ready, then polls until
// stop_requested(), and drains again. The endpoints are detached from mon,
// and the exporter from its events, before it returns; the exporter has
// been handed everything (its close() writes it).
// Returns the exit status; throws FatalError when the ring buffer fails.
int run_serve_loop(Monitor &mon, Endpoints &endpoints, Log &log, const ServeLoopOptions &opts);

} // namespace shmbpf
