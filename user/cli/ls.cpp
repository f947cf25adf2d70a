// `shmbpf ls`: what exists now, from a scan of /proc and every tmpfs mount.
#include "cli/app.hpp"

#include "model/engine.hpp"
#include "sources/bootstrap.hpp"
#include "sources/clock.hpp"
#include "views/ls_view.hpp"

#include <unistd.h>

#include <cstdio>

namespace shmbpf {

int run_ls(const LsOptions &opts) {
  if (geteuid() != 0)
    std::fprintf(stderr, "shmbpf: note: not root: other users' processes and other "
                         "namespaces may be missing (sudo shmbpf ls sees everything)\n");
  const EngineConfig cfg = engine_config_now();
  const uint64_t now = cfg.start_ns;
  Engine engine(cfg);
  bootstrap(engine, scan_system());
  engine.sample_mounts(now);

  std::string out;
  if (opts.by == "process") {
    // Only processes with shared memory: ps lists the others.
    auto v = engine.processes(now);
    std::erase_if(v, [](const ProcessInfo &p) {
      return p.segments_created == 0 && p.segments_held == 0 && p.sysv_attachments == 0;
    });
    out = opts.json ? processes_json(v) : processes_table(v);
  } else if (opts.by == "container") {
    auto v = engine.containers(now);
    out = opts.json ? containers_json(v) : containers_table(v);
  } else if (opts.by == "mount") {
    auto v = engine.mounts();
    out = opts.json ? mounts_json(v) : mounts_table(v);
  } else {
    SegmentFilter f;
    f.pid = opts.pid;
    if (opts.container)
      f.container = *opts.container == "host" ? std::string() : *opts.container;
    f.mount = opts.mount;
    if (opts.kind)
      f.kind = parse_kind(*opts.kind);
    f.path_glob = opts.match;
    // The orphan verdict uses leaks' default --min-age.
    auto v = engine.segments(f, now, 60'000'000'000);
    out = opts.json ? segments_json(v, now) : segments_table(v, now);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

} // namespace shmbpf
