// `shmbpf reap`: frees orphaned shared memory (a dry run unless --yes), from
// a scan of /proc and every tmpfs mount, each removal checked again at the
// moment it is made; exit status 0 (all freed), 1 (something skipped), 2
// (error).
#include "cli/app.hpp"
#include "cli/options.hpp"
#include "cli/snapshot.hpp"

#include "actions/reaper.hpp"
#include "daemon/api_client.hpp"
#include "daemon/unix_socket.hpp"
#include "live/clock.hpp"
#include "sources/clock.hpp"
#include "terminal/output.hpp"
#include "views/escape.hpp"
#include "views/export_view.hpp"
#include "views/reap_view.hpp"

#include <unistd.h>

#include <cstdio>

namespace shmbpf {

namespace {

// A daemon running here keeps the audit trail: it is sent every outcome
// of a reap that changed something, as its export's reap records.
void tell_daemon(const std::string &socket, const std::vector<ReapOutcome> &outcomes) {
  if (socket.empty() || outcomes.empty() || probe_socket(socket) != 0)
    return; // no daemon there
  const std::string token = read_socket_token(socket);
  if (token.empty()) {
    std::fprintf(stderr,
                 "shmbpf: note: shmbpf serve at %s keeps no reap records (no --export-file, or "
                 "its token is unreadable)\n",
                 escape_text(socket).c_str());
    return;
  }
  ExportFormatter fmt(TraceClock{boot_to_realtime_ns()});
  std::string body;
  const uint64_t now = boottime_ns();
  for (const ReapOutcome &o : outcomes)
    fmt.append_reap(body, now, o, "reap", static_cast<uint32_t>(getpid()));
  const PostReply reply = api_post(socket, "/v1/reaped", body, token);
  if (reply.status != 200)
    std::fprintf(stderr, "shmbpf: warning: shmbpf serve at %s did not take the reap records: %s\n",
                 escape_text(socket).c_str(),
                 escape_text(reply.status
                                 ? "HTTP " + std::to_string(reply.status) + ": " + reply.body
                                 : reply.body)
                     .c_str());
}

} // namespace

void add_reap_command(CLI::App &app, ReapOptions &r) {
  auto *reap = app.add_subcommand(
      "reap", "Free leaked shared memory: unlink orphaned tmpfs files and remove orphaned System V "
              "segments (nobody holds or maps them, their creator is gone), in every mount and "
              "IPC namespace, each checked again at the moment of removal (docs/REAP.md). A dry "
              "run unless --yes. Exit status 0: everything selected was freed (or would be), 1: "
              "something was skipped, 2: error. Needs root.");
  reap->add_flag("-y,--yes", r.yes, "Free them; without it, only say what would be freed");
  reap->add_option("--min-age", r.min_age_s, "Only orphans at least this many seconds old")
      ->check(number_in(0, kNoLimit))
      ->capture_default_str();
  add_match_option(reap, r.match);
  add_container_option(reap, r.container, "orphans");
  reap->add_option("--mount", r.mount, "Only orphans on this mount point");
  reap->add_option("--kind", r.kind,
                   "Only this kind: tmpfs (files, hugetlbfs too) or sysv (memfds are never "
                   "reaped: they have no name to remove)")
      ->check(CLI::IsMember({"tmpfs", "sysv"}));
  reap->add_flag("--all-mounts", r.all_mounts,
                 "Also free files on tmpfs mounts that are not shared memory (/run, /tmp); by "
                 "default only /dev/shm mounts, SysV, hugetlbfs and known shared-memory names");
  reap->add_flag("--json", r.json, "Print JSON");
  add_runtime_root_option(reap, r.runtime_roots);
  reap->add_option("--daemon-socket", r.daemon_socket,
                   "With --yes, a shmbpf serve listening on this socket is sent what was freed "
                   "and skipped, for its --export-file ('' for none)")
      ->check(socket_path(true))
      ->capture_default_str();
}

int run_reap(const ReapOptions &opts) {
  // Without root, other users' holders are invisible: their files would
  // look orphaned. Refused, not warned about.
  if (geteuid() != 0) {
    std::fprintf(stderr, "shmbpf: reap needs root: without it, other users' processes cannot be "
                         "inspected, so files they hold would look orphaned (use sudo)\n");
    return status(Exit::refused);
  }
  const EngineConfig cfg = engine_config_now();
  const uint64_t now = cfg.start_ns;
  Engine engine(cfg);
  fill_from_scan(engine, opts.runtime_roots);

  ReapFilter filter;
  filter.min_age_s = opts.min_age_s;
  filter.match = opts.match;
  if (opts.container)
    filter.container = *opts.container == "host" ? std::string() : *opts.container;
  filter.mount = opts.mount;
  if (opts.kind)
    filter.kind = parse_kind(*opts.kind);
  filter.all_mounts = opts.all_mounts;
  const ReapPlan plan = plan_reap(engine, now, filter);
  const std::vector<ReapOutcome> outcomes = reap(plan, opts.yes);
  if (opts.yes)
    tell_daemon(opts.daemon_socket, outcomes);

  Output output;
  output.write(opts.json ? reap_json(outcomes, plan, opts.yes, now)
                         : reap_text(outcomes, plan, opts.yes, now));
  output.check();
  return status(reap_totals(outcomes).skipped == 0 ? Exit::ok : Exit::found);
}

} // namespace shmbpf
