// `shmbpf ls`: what exists now, from a scan of /proc and every tmpfs mount.
#include "cli/app.hpp"
#include "cli/options.hpp"

#include "daemon/api_client.hpp"

#include "live/clock.hpp"
#include "live/container_memory.hpp"
#include "live/container_names.hpp"
#include "model/apply_scan.hpp"
#include "sources/namespaces.hpp"
#include "sources/system_scan.hpp"
#include "sources/users.hpp"
#include "terminal/output.hpp"
#include "views/columns.hpp"
#include "views/listing.hpp"
#include "views/ls_view.hpp"
#include "views/scan_notes.hpp"

#include <unistd.h>

#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) // gcc
#define SHMBPF_LSAN 1
#elif defined(__has_feature) // clang
#if __has_feature(address_sanitizer)
#define SHMBPF_LSAN 1
#endif
#endif
#ifdef SHMBPF_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace shmbpf {

namespace {

// The process ends right after the output: the scan, the engine and the
// rows are left to exit, since freeing 100,000 of each one by one is a good
// share of a whole run. LeakSanitizer is told so, or it reports them.
template <typename T, typename... Args> T &kept_until_exit(Args &&...args) {
  T *kept = new T(std::forward<Args>(args)...);
#ifdef SHMBPF_LSAN
  __lsan_ignore_object(kept);
#endif
  return *kept;
}

// The same list from a running daemon's model, made by the same views.
int run_ls_remote(const LsQuery &query, const std::string &socket) {
  Output output;
  output.write(api_get(socket, query.path(), query.fields()).body);
  output.check();
  return 0;
}

} // namespace

void add_ls_command(CLI::App &app, LsOptions &l) {
  auto *ls = app.add_subcommand(
      "ls", "List shared-memory segments (or processes, containers, mounts) that exist now. "
            "A scan of /proc and every tmpfs mount: no BPF needed; as root it sees every "
            "namespace.");
  auto &lq = l.query;
  ls->add_option_function<std::string>(
        "--by",
        [&lq](const std::string &by) {
          lq.by = by == "process"     ? ListBy::processes
                  : by == "container" ? ListBy::containers
                  : by == "mount"     ? ListBy::mounts
                                      : ListBy::segments;
        },
        "What to list (default segments)")
      ->check(CLI::IsMember({"segments", "process", "container", "mount"}));
  ls->add_option("-p,--pid", lq.pid, "Only segments this process created or holds")
      ->check(positive_integer("a process id"));
  add_container_option(ls, lq.container, "segments");
  ls->add_option("--mount", lq.mount, "Only segments on this mount point");
  ls->add_option_function<std::string>(
        "--kind", [&lq](const std::string &kind) { lq.kind = parse_kind(kind); },
        "Only this kind of shared memory")
      ->check(CLI::IsMember(kind_names()));
  add_match_option(ls, lq.match);
  ls->add_flag("--json", lq.json, "Print JSON");
  add_runtime_root_option(ls, l.runtime_roots);
  // The daemon names containers with its own --runtime-root.
  add_server_option(ls, l.server, "The list")->excludes("--runtime-root");
}

int run_ls(const LsOptions &opts) {
  const LsQuery &query = opts.query;
  if (opts.server)
    return run_ls_remote(query, *opts.server);
  if (geteuid() != 0)
    std::fprintf(stderr, "shmbpf: note: not root: other users' processes and other "
                         "namespaces may be missing (sudo shmbpf ls sees everything)\n");
  const EngineConfig cfg = engine_config_now();
  const uint64_t now = cfg.start_ns;
  Engine &engine = kept_until_exit<Engine>(cfg);
  const SystemScan &scan = kept_until_exit<SystemScan>(scan_system());
  for (const std::string &line : scan_shortfall_lines(scan.filesystems))
    std::fprintf(stderr, "shmbpf: warning: %s\n", line.c_str());
  bootstrap(engine, scan);
  name_containers(engine, opts.runtime_roots);
  measure_containers(engine);
  engine.sample_mounts(now);

  Output output;
  const uint32_t host_mntns = mount_namespace_of(static_cast<int>(getpid()));
  if (query.by == ListBy::segments && query.json) {
    // Written as the rows are made: no list of 100,000 rows first.
    const SegmentFilter f = query.filter();
    auto each = [&](const std::function<void(const SegmentInfo &)> &fn) {
      engine.for_each_segment(f, now, kListOrphanMinAgeNs, [&](SegmentInfo &&s) { fn(s); });
    };
    segments_json(each, now, [&](std::string_view piece) { output.write(piece); });
    output.check();
    return 0;
  }
  const Listing &listing = kept_until_exit<Listing>(take_listing(engine, query, now, host_mntns));
  UserNames users;
  if (query.by == ListBy::processes && !query.json) {
    LoginNames names;
    users = user_names(listing.processes, [&](uint32_t uid) { return names.name_of(uid); });
  }
  const std::string out = listing_output(listing, query, users);
  output.write(out);
  output.check(); // a full disk is an error; a reader gone (`| head`) is not
  return 0;
}

} // namespace shmbpf
