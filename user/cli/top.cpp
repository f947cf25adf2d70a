// `shmbpf top`: options -> the first state of the screen -> the live model's
// loop (terminal/top_loop), drawn with ncurses or printed in batch mode.
#include "cli/app.hpp"
#include "cli/kernel_notes.hpp"
#include "cli/signals.hpp"

#include "facts/result.hpp"
#include "live/monitor.hpp"
#include "probe/probe.hpp"
#include "terminal/top_loop.hpp"
#include "views/top_state.hpp"

#include <unistd.h>

#include <cstdio>

namespace shmbpf {

namespace {

TopState initial_state(const TopOptions &opts) {
  TopState st;
  if (auto v = parse_top_view(opts.by))
    st.view = *v;
  st.pid = opts.pid;
  if (opts.container)
    st.container = *opts.container == "host" ? std::string() : *opts.container;
  st.delay_s = opts.delay_s;
  return st;
}

} // namespace

int run_top(const TopOptions &opts) {
  const bool batch = opts.batch || opts.json; // --json implies frames on stdout
  if (!batch && !isatty(STDOUT_FILENO))
    throw FatalError("top",
                     "standard output is not a terminal; use -b for batch mode "
                     "(plain-text frames) or -b --json (one JSON object per frame)",
                     2);
  // Before the Monitor starts its first scan: a refusal then costs nothing.
  require_bpf_privileges("top");

  MonitorOptions mopts;
  mopts.probe.command = "top";
  mopts.probe.ring_buffer_bytes = opts.ring_buffer_bytes;
  mopts.probe.verbose = opts.verbose;
  Monitor mon(mopts);
  tell_kernel_notes(mon.session().probe(), opts.verbose);
  // Before ncurses starts: it only installs its own SIGINT/SIGTERM handlers
  // where the default action is still in place, so ours win and the loop
  // ends through the screen's destructor, which restores the terminal.
  install_stop_signals();
  const auto feed = monitor_feed(mon);
  return run_top_loop(*feed, initial_state(opts),
                      {batch, opts.json, opts.iterations, stop_requested});
}

} // namespace shmbpf
