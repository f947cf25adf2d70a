// `shmbpf ls`: what exists now, from a scan of /proc and every tmpfs mount.
#include "cli/app.hpp"

#include "daemon/api_client.hpp"

#include "live/clock.hpp"
#include "live/container_names.hpp"
#include "model/apply_scan.hpp"
#include "model/engine.hpp"
#include "model/leaks.hpp"
#include "sources/namespaces.hpp"
#include "sources/system_scan.hpp"
#include "sources/users.hpp"
#include "terminal/output.hpp"
#include "views/columns.hpp"
#include "views/ls_view.hpp"
#include "views/relations.hpp"
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
  engine.sample_mounts(now);

  std::string out;
  Output output;
  // What the container and mount tables' columns need to know: whose mount
  // namespace is whose (the host's is shmbpf's own).
  auto relations = [&](const std::vector<ProcessInfo> &procs,
                       const std::vector<MountUsage> &mounts) {
    return Relations(procs, mounts, mount_namespace_of(static_cast<int>(getpid())));
  };
  if (query.by == ListBy::processes) {
    // Only processes with shared memory: ps lists the others.
    auto v = engine.processes(now);
    std::erase_if(v, [](const ProcessInfo &p) {
      return p.segments_created == 0 && p.segments_held == 0 && p.sysv_attachments == 0;
    });
    if (query.json) {
      out = processes_json(v);
    } else {
      LoginNames names;
      out = processes_table(v, user_names(v, [&](uint32_t uid) { return names.name_of(uid); }));
    }
  } else if (query.by == ListBy::containers) {
    auto v = engine.containers(now);
    if (query.json) {
      out = containers_json(v);
    } else {
      const auto procs = engine.processes(now);
      const auto mounts = engine.mounts();
      out = containers_table(v, relations(procs, mounts));
    }
  } else if (query.by == ListBy::mounts) {
    auto v = engine.mounts();
    if (query.json) {
      out = mounts_json(v);
    } else {
      const auto procs = engine.processes(now);
      out = mounts_table(v, relations(procs, v));
    }
  } else {
    const SegmentFilter f = query.filter();
    // The orphan verdict uses leaks' default --min-age.
    constexpr auto kOrphanMinAge = static_cast<uint64_t>(kLeakMinAgeS * 1e9);
    if (query.json) {
      // Written as the rows are made: no list of 100,000 rows first.
      auto each = [&](const std::function<void(const SegmentInfo &)> &fn) {
        engine.for_each_segment(f, now, kOrphanMinAge, [&](SegmentInfo &&s) { fn(s); });
      };
      segments_json(each, now, [&](std::string_view piece) { output.write(piece); });
    } else {
      out = segments_table(
          kept_until_exit<std::vector<SegmentInfo>>(engine.segments(f, now, kOrphanMinAge)), now);
    }
  }
  output.write(out);
  output.check(); // a full disk is an error; a reader gone (`| head`) is not
  return 0;
}

} // namespace shmbpf
