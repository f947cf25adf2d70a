// `shmbpf audit`: where shared memory breaks a container host's isolation.
// A snapshot from the same scans as `ls`; with --watch, the execs of the
// next seconds too (BPF), then a second snapshot.
#include "cli/app.hpp"

#include "live/audit_gather.hpp"
#include "live/audit_watch.hpp"
#include "model/audit.hpp"
#include "terminal/output.hpp"
#include "views/audit_view.hpp"

#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <utility>

namespace shmbpf {

int run_audit(const AuditOptions &opts) {
  if (geteuid() != 0)
    std::fprintf(stderr, "shmbpf: note: not root: other users' processes and other "
                         "namespaces may be missing (sudo shmbpf audit sees everything)\n");
  const AuditScan scan = gather_audit(opts.runtime_roots);
  std::vector<Finding> findings = opts.selection.of(audit_snapshot(scan));
  Output out;
  if (opts.watch_s > 0) {
    if (!opts.json)
      for (const Finding &f : findings)
        out.write(audit_finding_text(f));
    const ExecWatchOptions watch{opts.watch_s, opts.ring_buffer_bytes, opts.hooks, opts.verbose,
                                 opts.runtime_roots};
    watch_execs(watch, scan, opts.selection, findings, [&](const Finding &f) {
      if (!opts.json)
        out.write(audit_finding_text(f));
    });
    // What the watch brought besides execs (a container started meanwhile):
    // findings of a second snapshot whose rule and container are new.
    std::set<std::pair<std::string, std::string>> known;
    for (const Finding &f : findings)
      known.emplace(f.rule, f.container ? f.container->id : "");
    for (Finding &f : opts.selection.of(audit_snapshot(gather_audit(opts.runtime_roots)))) {
      if (known.contains({f.rule, f.container ? f.container->id : ""}))
        continue;
      if (!opts.json)
        out.write(audit_finding_text(f));
      findings.push_back(std::move(f));
    }
    if (!opts.json)
      out.write(audit_counts_text(findings));
  }
  if (opts.json)
    out.write(audit_json(findings,
                         opts.watch_s > 0 ? std::optional<double>(opts.watch_s) : std::nullopt));
  else if (opts.watch_s <= 0)
    out.write(audit_text(findings));
  out.check();

  const std::optional<Severity> fail_on = parse_severity(opts.fail_on);
  if (!fail_on)
    return 0; // "none"
  for (const Finding &f : findings)
    if (f.severity >= *fail_on)
      return 1;
  return 0;
}

} // namespace shmbpf
