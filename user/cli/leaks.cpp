// `shmbpf leaks`: orphaned segments and steady growth, from scans of /proc
// and every tmpfs mount; exit status 0 (none), 1 (leaks), 2 (error).
#include "cli/app.hpp"
#include "cli/options.hpp"
#include "cli/snapshot.hpp"

#include "daemon/api_client.hpp"

#include "live/clock.hpp"
#include "live/leak_window.hpp"
#include "model/leaks.hpp"
#include "terminal/output.hpp"
#include "views/leaks_view.hpp"

#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

namespace shmbpf {

namespace {

// Orphans in a running daemon's model, and growth over its usage samples
// of the window, reported by the same views; the exit status as the report
// says. A window longer than the daemon keeps is its 400, status 2.
int run_leaks_remote(const LeaksQuery &query, const std::string &socket) {
  const ApiReply reply = api_get(socket, std::string(LeaksQuery::kPath), query.fields());
  Output output;
  output.write(reply.body);
  output.check();
  return status(reply.leaking ? Exit::found : Exit::ok);
}

} // namespace

void add_leaks_command(CLI::App &app, LeaksOptions &k) {
  auto *leaks = app.add_subcommand(
      "leaks", "Report leaked shared memory: orphaned segments (nobody holds them, their creator "
               "is gone) by mount, container and name pattern, and growth. Exit status 0: no "
               "leak, 1: leaks found, 2: error.");
  leaks->add_option("--min-age", k.query.min_age_s, "Only segments at least this many seconds old")
      ->check(number_in(0, kNoLimit))
      ->capture_default_str();
  add_match_option(leaks, k.query.match);
  leaks
      ->add_option("--window", k.query.window_s,
                   "Watch this many seconds for growing processes, containers and mounts, and "
                   "(as root, with BPF) for mounts whose files SIGBUS faults hit (default 0: "
                   "neither); with --server, judge both over the daemon's last this many "
                   "seconds, at once (at most 900)")
      ->check(number_in(0, kNoLimit));
  leaks->add_flag("--all-mounts", k.query.all_mounts,
                  "Also judge files on tmpfs mounts that are not shared memory (/run, /tmp); "
                  "by default only /dev/shm mounts, memfds, SysV, hugetlbfs and known "
                  "shared-memory names");
  leaks->add_flag("--json", k.query.json, "Print JSON");
  add_hooks_option(leaks, k.hooks, "light where the kernel has it, else full")->needs("--window");
  add_runtime_root_option(leaks, k.runtime_roots);
  // The daemon names containers with its own --runtime-root.
  add_server_option(leaks, k.server, "Orphans, and growth over --window,")
      ->excludes("--runtime-root")
      ->excludes(HookSetting::kFlag);
}

int run_leaks(const LeaksOptions &opts) {
  const LeaksQuery &query = opts.query;
  if (opts.server)
    return run_leaks_remote(query, *opts.server);
  if (geteuid() != 0)
    std::fprintf(stderr, "shmbpf: note: not root: holders in other users' processes are not "
                         "visible, so their segments may look orphaned (use sudo)\n");
  const EngineConfig cfg = engine_config_now();
  uint64_t now = cfg.start_ns;
  Engine engine(cfg);
  fill_from_scan(engine, opts.runtime_roots);

  // Growth needs time: rescans over the window, and SIGBUS faults meanwhile.
  std::optional<LeakWindow> window;
  if (query.window_s > 0) {
    window = watch_leak_window(engine, now, query.window_s, opts.hooks, opts.runtime_roots);
    now = window->end_ns;
  }
  LeakReport report = summarize_orphans(engine.orphans(now, query.min_age_ns(), query.scope()),
                                        query.match.value_or(""));
  if (window)
    window->report_into(report, engine);
  std::string out = query.json ? leaks_json(report, now)
                               : leaks_text(report, now, static_cast<uint64_t>(query.min_age_s));
  Output output;
  output.write(out);
  output.check(); // a report that did not get out is an error, not "no leak"
  return status(report.leaking() ? Exit::found : Exit::ok);
}

} // namespace shmbpf
