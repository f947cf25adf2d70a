// `shmbpf audit`: where shared memory breaks a container host's isolation.
// A snapshot from the same scans as `ls`; with --watch, the execs of the
// next seconds too (BPF), then a second snapshot.
#include "cli/app.hpp"
#include "cli/options.hpp"

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

void add_audit_command(CLI::App &app, AuditOptions &a) {
  auto *audit = app.add_subcommand(
      "audit", "Audit a container host's shared memory: containers in the host's IPC namespace "
               "or sharing one, the host's /dev/shm mounted in a container, segments shared "
               "across containers, shm mounts without a bound or without nodev/nosuid/noexec, "
               "programs run from /dev/shm or a memfd, world-writable segments (docs/AUDIT.md). "
               "A snapshot of /proc and every mount (no BPF needed); --watch also judges the "
               "execs of the next seconds. Exit status 0: no finding at or above --fail-on, 1: "
               "findings, 2: error.");
  audit->add_flag("--json", a.json, "Print JSON");
  audit
      ->add_option("--fail-on", a.fail_on,
                   "The lowest severity that makes the exit status 1 (none: findings never do)")
      ->check(CLI::IsMember({"low", "medium", "high", "none"}))
      ->capture_default_str();
  audit
      ->add_option("--watch", a.watch_s,
                   "Also load the BPF programs and judge every exec for this many seconds, then "
                   "take a second snapshot (needs root)")
      ->check(number_in(1, 86400));
  std::vector<std::string> rule_ids;
  for (const RuleInfo &r : audit_rules())
    rule_ids.emplace_back(r.id);
  audit->add_option("--rule", a.selection.rules, "Only this rule (repeatable)")
      ->check(CLI::IsMember(rule_ids));
  audit
      ->add_option("--container", a.selection.container,
                   "Only findings about this container (id, id prefix of 4 or more, or its "
                   "runtime's name; \"host\" for the host)")
      ->transform(container_id_transform());
  add_runtime_root_option(audit, a.runtime_roots);
  add_ring_buffer_option(audit, a.ring_buffer_bytes);
  add_hooks_option(audit, a.hooks, "light where the kernel has it, else full")->needs("--watch");
  add_verbose_flag(audit, a.verbose);
}

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
    return status(Exit::ok); // "none"
  for (const Finding &f : findings)
    if (f.severity >= *fail_on)
      return status(Exit::found);
  return status(Exit::ok);
}

} // namespace shmbpf
