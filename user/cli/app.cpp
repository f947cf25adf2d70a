#include "cli/app.hpp"

#include "facts/result.hpp"
#include "model/audit.hpp"
#include "model/glob.hpp"
#include "views/escape.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace shmbpf {

namespace {

// Whether text is a number written in decimal: digits, for a float with a
// fraction and an exponent, for a signed type with a sign. CLI11 itself
// would also read 0x10, 0o17 and 0b11, and -1 into an unsigned type as its
// largest value.
bool is_decimal(std::string_view text, bool is_signed, bool is_float) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
      ++i;
    return i > from;
  };
  if (is_signed && i < text.size() && (text[i] == '-' || text[i] == '+'))
    ++i;
  bool whole = digits();
  if (is_float && i < text.size() && text[i] == '.') {
    ++i;
    whole = digits() || whole;
  }
  if (whole && is_float && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+'))
      ++i;
    whole = digits();
  }
  return whole && i == text.size();
}

// Every numeric option of every command takes decimal numbers only.
void require_decimal(CLI::App &app) {
  for (CLI::App *sub : app.get_subcommands(std::function<bool(CLI::App *)>{}))
    require_decimal(*sub);
  for (CLI::Option *opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    const bool is_float = type.starts_with("FLOAT");
    const bool is_signed = type.starts_with("INT") || is_float;
    if (!is_float && !is_signed && !type.starts_with("UINT"))
      continue;
    opt->check(CLI::Validator(
        [=](std::string &text) -> std::string {
          if (is_decimal(text, is_signed, is_float))
            return {};
          return std::string(is_float ? "must be a number" : "must be a whole number") +
                 (is_signed ? "" : " (0 or more)") + " written in decimal, not '" + text + "'";
        },
        ""));
  }
}

// The shortest decimal form of v ("0.1", "86400").
std::string shortest(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

// A finite number from lo to hi, or above lo: nan and inf parse as
// numbers, every CLI11 range lets nan through, and its messages print the
// largest double in full.
CLI::Validator number_in(double lo, double hi, bool above_lo = false) {
  std::string range = std::isinf(hi)
                          ? (above_lo ? "above " + shortest(lo) : shortest(lo) + " or more")
                          : "from " + shortest(lo) + " to " + shortest(hi);
  return CLI::Validator(
      [=](std::string &text) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0')
          return {}; // not a number: the decimal check says so
        if (!std::isfinite(v) || v < lo || v > hi || (above_lo && v == lo))
          return "must be a number " + range + ", not " + text;
        return {};
      },
      "");
}
constexpr double kNoLimit = std::numeric_limits<double>::infinity();

// A positive whole number that fits its option; CLI11's own range check
// would print the largest double in full.
CLI::Validator positive_integer(const char *what) {
  return CLI::Validator(
      [what](std::string &text) -> std::string {
        uint64_t v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc{} || end != text.data() + text.size() || v == 0 || v > INT32_MAX)
          return std::string("must be ") + what + " (a whole number from 1 to 2147483647), not " +
                 text;
        return {};
      },
      "POSITIVE");
}

const std::vector<std::string> kKinds = {"tmpfs", "memfd", "sysv"};

// Options that several subcommands share: each defined here once.
void add_ring_buffer_option(CLI::App *cmd, size_t &bytes) {
  const CLI::Validator valid(
      [](std::string &text) -> std::string {
        size_t v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc::result_out_of_range) {
          // Too large for any limit: said with the number as given.
          const std::string why = RingBufferSetting::problem(SIZE_MAX);
          return text + why.substr(why.find(' '));
        }
        if (ec != std::errc{} || end != text.data() + text.size())
          return {}; // not a number: the decimal check says so
        return RingBufferSetting::problem(v);
      },
      "POWER-OF-TWO");
  cmd->add_option(RingBufferSetting::kFlag, bytes, RingBufferSetting::kHelp)
      ->check(valid)
      ->capture_default_str();
}

CLI::Option *add_hooks_option(CLI::App *cmd, std::string &value, const char *auto_means) {
  return cmd
      ->add_option(HookSetting::kFlag, value,
                   std::string(HookSetting::kHelp) + "; auto is " + auto_means)
      ->check(CLI::IsMember({"full", "light", "auto"}))
      ->capture_default_str();
}

void add_verbose_flag(CLI::App *cmd, bool &verbose) {
  cmd->add_flag("-v,--verbose", verbose, "Show libbpf's messages");
}

void add_container_option(CLI::App *cmd, std::optional<std::string> &container, const char *what) {
  cmd->add_option("--container", container,
                  std::string("Only ") + what +
                      " of this container (id or id prefix; \"host\" for the host)");
}

// --runtime-root RUNTIME=DIR, repeatable: where a runtime keeps the files
// that name its containers, on hosts that moved them.
void add_runtime_root_option(CLI::App *cmd, RuntimeRoots &roots) {
  const CLI::Validator valid(
      [](std::string &spec) -> std::string {
        RuntimeRoots scratch;
        auto r = set_runtime_root(scratch, spec);
        return r ? std::string() : r.error();
      },
      "RUNTIME=DIR");
  cmd->add_option_function<std::vector<std::string>>(
         "--runtime-root",
         [&roots](const std::vector<std::string> &specs) {
           for (const std::string &spec : specs)
             (void)set_runtime_root(roots, spec);
         },
         "Where a container runtime keeps the files that name its containers (repeatable; "
         "RUNTIME is one of " +
             std::string(kRuntimeRootNames) +
             "; defaults: docker=/var/lib/docker, containerd=/run/containerd, "
             "cri-o=/run/containers/storage, podman=/var/lib/containers/storage, "
             "pod-logs=/var/log/pods)")
      ->check(valid)
      ->type_name("RUNTIME=DIR");
}

const CLI::Validator kGlob([](std::string &glob) { return glob_problem(glob); }, "GLOB");

void add_match_option(CLI::App *cmd, std::optional<std::string> &glob) {
  cmd->add_option("--match", glob,
                  "Only segments whose path matches this glob (fnmatch: * also matches /)")
      ->check(kGlob);
}

// A path that can name a unix socket (SocketSetting::problem); empty
// passes when allow_empty (serve's --socket '' turns the socket off).
CLI::Validator socket_path(bool allow_empty) {
  return CLI::Validator(
      [allow_empty](std::string &text) -> std::string {
        if (text.empty() && allow_empty)
          return {};
        const std::string why = SocketSetting::problem(text);
        return why.empty() ? why : "the path " + why;
      },
      "PATH");
}

// --server [SOCKET]: read a running `shmbpf serve`'s model instead of
// scanning or loading BPF; without a value, the daemon's default socket.
CLI::Option *add_server_option(CLI::App *cmd, std::optional<std::string> &socket,
                               const std::string &what) {
  return cmd
      ->add_option("--server", socket,
                   what + " from a running shmbpf serve, through its unix socket (default " +
                       SocketSetting::kDefault +
                       "): no scan, no BPF, no root; only access to the socket")
      ->expected(0, 1)
      ->default_str(SocketSetting::kDefault)
      ->check(socket_path(false));
}

} // namespace

std::unique_ptr<CLI::App> make_app(CliOptions &opts) {
  auto app = std::make_unique<CLI::App>(
      "shmbpf: see who creates, holds and leaks shared memory (tmpfs, /dev/shm, memfd, "
      "System V), live, from the kernel.",
      "shmbpf");
  app->set_version_flag("--version", std::string("shmbpf ") + SHMBPF_VERSION);
  app->require_subcommand(1);
  // A usage error is one line, like every other error of shmbpf's.
  app->failure_message([](const CLI::App *root, const CLI::Error &e) {
    std::string cmd = "shmbpf";
    for (const CLI::App *sub : root->get_subcommands())
      cmd += " " + sub->get_name();
    // The arguments quoted in it are the user's: a newline or an escape
    // sequence in one is shown, not let through. Escaped here, once: the
    // validators above return the text as given.
    return "shmbpf: " + escape_text(e.what()) + " (see " + cmd + " --help)\n";
  });

  auto *trace =
      app->add_subcommand("trace", "Print every shared-memory event as it happens (needs root).");
  auto &t = opts.trace;
  trace->add_option("-p,--pid", t.filter.pids, "Only events of these process ids (repeatable)")
      ->check(positive_integer("a process id"));
  trace->add_option("--comm", t.filter.comms, "Only events of processes with this command name");
  trace->add_option("--kind", t.filter.kinds, "Only this kind of shared memory")
      ->check(CLI::IsMember(kKinds));
  trace->add_option("--event", t.filter.events, "Only these events")
      ->check(CLI::IsMember({"create", "open", "memfd_create", "resize", "unlink", "rename", "link",
                             "shmget", "shmat", "shmdt", "shm_rmid", "free", "sigbus", "exit",
                             "exec", "nospace"}));
  trace->add_option("--duration", t.duration_s, "Stop after this many seconds")
      ->check(number_in(0, kNoLimit, true));
  add_ring_buffer_option(trace, t.ring_buffer_bytes);
  add_hooks_option(trace, t.hooks, "full");
  trace->add_flag("--json", t.json, "Print one JSON object per event (NDJSON)");
  trace->add_flag("--stats", t.stats,
                  "At exit, print the time spent in shmbpf's BPF programs, per hook (turns "
                  "on the kernel's BPF run-time statistics while tracing, which adds two "
                  "clock reads to every run)");
  add_verbose_flag(trace, t.verbose);

  auto *ls = app->add_subcommand(
      "ls", "List shared-memory segments (or processes, containers, mounts) that exist now. "
            "A scan of /proc and every tmpfs mount: no BPF needed; as root it sees every "
            "namespace.");
  auto &l = opts.ls;
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
      ->check(CLI::IsMember(kKinds));
  add_match_option(ls, lq.match);
  ls->add_flag("--json", lq.json, "Print JSON");
  add_runtime_root_option(ls, l.runtime_roots);
  // The daemon names containers with its own --runtime-root.
  add_server_option(ls, l.server, "The list")->excludes("--runtime-root");

  auto *leaks = app->add_subcommand(
      "leaks", "Report leaked shared memory: orphaned segments (nobody holds them, their creator "
               "is gone) by mount, container and name pattern, and growth. Exit status 0: no "
               "leak, 1: leaks found, 2: error.");
  auto &k = opts.leaks;
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

  auto *top = app->add_subcommand(
      "top", "Live view of shared memory by process, container, mount or segment (needs root).");
  auto &o = opts.top;
  top->add_option("-d,--delay", o.delay_s, "Seconds between refreshes")
      ->check(number_in(0.1, 3600))
      ->capture_default_str();
  top->add_option("-p,--pid", o.pid, "Only this process")->check(positive_integer("a process id"));
  add_container_option(top, o.container, "processes and segments");
  top->add_option("--by", o.by, "Initial view (default process)")
      ->check(CLI::IsMember({"process", "container", "mount", "segments"}));
  top->add_flag("-b,--batch", o.batch, "Batch mode: print frames as plain text, no terminal");
  top->add_option("-n,--iterations", o.iterations, "Frames to print in batch mode, then exit")
      ->check(positive_integer("a count of frames"));
  top->add_flag("--json", o.json, "With -b: one JSON object per frame");
  add_runtime_root_option(top, o.runtime_roots);
  add_ring_buffer_option(top, o.ring_buffer_bytes);
  add_hooks_option(top, o.hooks, "full");
  add_verbose_flag(top, o.verbose);
  add_server_option(top, o.server, "Frames")
      ->excludes(RingBufferSetting::kFlag)
      ->excludes(HookSetting::kFlag)
      ->excludes("--verbose")
      ->excludes("--runtime-root");

  auto *doctor = app->add_subcommand(
      "doctor", "Check what this machine gives shmbpf: kernel, BTF, privileges, tracefs, which "
                "program serves each hook (the real ones are loaded and attached, then let go), "
                "the fallbacks, the tmpfs and cgroup2 mounts. Exit status 0: shmbpf can run "
                "here, 2: it cannot (the first line says why).");
  auto &d = opts.doctor;
  doctor->add_flag("--json", d.json, "Print JSON");
  add_ring_buffer_option(doctor, d.ring_buffer_bytes);
  add_hooks_option(doctor, d.hooks, "full");
  add_verbose_flag(doctor, d.verbose);

  auto *serve = app->add_subcommand(
      "serve", "Run as the host's agent, in the foreground: the live model behind top, its "
               "numbers for Prometheus over HTTP (/metrics, /healthz, /readyz), the model itself "
               "as JSON on a unix socket (--socket; read by ls, leaks and top --server), a log "
               "on stderr and, with --export-file, an NDJSON audit trail. Stops on SIGTERM or "
               "SIGINT; SIGHUP reopens the export file (needs root).");
  auto &s = opts.serve;
  const CLI::Validator listen(
      [](std::string &text) -> std::string {
        auto a = ListenSetting::parse(text);
        return a ? std::string() : a.error();
      },
      "ADDRESS:PORT");
  serve->add_option(ListenSetting::kFlag, s.listen, ListenSetting::kHelp)
      ->check(listen)
      ->capture_default_str();
  auto *export_file =
      serve->add_option(ExportFileSetting::kFlag, s.export_file, ExportFileSetting::kHelp);
  export_file->check(CLI::Validator(
      [](std::string &path) -> std::string {
        return path.empty() ? "must name a file" : std::string();
      },
      "PATH"));
  const CLI::Validator max_size(
      [](std::string &text) -> std::string {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0')
          return {}; // not a number: the conversion says so
        auto bytes = ExportFileSetting::max_bytes(v);
        return bytes ? std::string() : bytes.error() + ", not " + text;
      },
      "MIB");
  serve
      ->add_option(ExportFileSetting::kMaxSizeFlag, s.export_max_size_mb,
                   ExportFileSetting::kMaxSizeHelp)
      ->check(max_size)
      ->needs(export_file)
      ->capture_default_str();
  serve
      ->add_option(ExportFileSetting::kMaxBackupsFlag, s.export_max_backups,
                   ExportFileSetting::kMaxBackupsHelp)
      ->check(CLI::Range(0u, ExportFileSetting::kMaxMaxBackups))
      ->needs(export_file)
      ->capture_default_str();
  CLI::Option *socket = serve->add_option(SocketSetting::kFlag, s.socket, SocketSetting::kHelp)
                            ->check(socket_path(true))
                            ->capture_default_str();
  serve->add_flag("--no-socket", s.no_socket, "No unix socket: the same as --socket ''")
      ->excludes(socket);
  const CLI::Validator group(
      [](std::string &text) -> std::string {
        auto g = socket_group(text);
        return g ? std::string() : g.error();
      },
      "GROUP");
  serve
      ->add_option("--socket-group", s.socket_group,
                   "Group given the socket: its members may connect (ls, leaks, top --server); "
                   "by default only root")
      ->check(group);
  CLI::Option *state_dir =
      serve->add_option(StateDirSetting::kFlag, s.state_dir, StateDirSetting::kHelp)
          ->capture_default_str();
  serve->add_flag("--no-state", s.no_state, "Keep nothing across restarts: --state-dir ''")
      ->excludes(state_dir);
  add_runtime_root_option(serve, s.runtime_roots);
  CLI::Option *reap_flag = serve->add_flag("--reap", s.reap, ServeReapSetting::kHelp);
  serve
      ->add_option("--reap-interval", s.reap_interval_s,
                   "Seconds between the runs of --reap (the first one after this long)")
      ->check(number_in(1, 86400))
      ->needs(reap_flag)
      ->capture_default_str();
  serve
      ->add_option("--reap-min-age", s.reap_min_age_s,
                   "Only orphans at least this many seconds old are freed by --reap")
      ->check(number_in(0, kNoLimit))
      ->needs(reap_flag)
      ->capture_default_str();
  serve
      ->add_option("--reap-match", s.reap_match,
                   "Only orphans whose path matches this glob are freed by --reap (fnmatch: * "
                   "also matches /)")
      ->check(kGlob)
      ->needs(reap_flag);
  add_ring_buffer_option(serve, s.ring_buffer_bytes);
  add_hooks_option(serve, s.hooks, "light where the kernel has it, else full");
  add_verbose_flag(serve, s.verbose);

  auto *audit = app->add_subcommand(
      "audit", "Audit a container host's shared memory: containers in the host's IPC namespace "
               "or sharing one, the host's /dev/shm mounted in a container, segments shared "
               "across containers, shm mounts without a bound or without nodev/nosuid/noexec, "
               "programs run from /dev/shm or a memfd, world-writable segments (docs/AUDIT.md). "
               "A snapshot of /proc and every mount (no BPF needed); --watch also judges the "
               "execs of the next seconds. Exit status 0: no finding at or above --fail-on, 1: "
               "findings, 2: error.");
  auto &a = opts.audit;
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
  audit->add_option("--container", a.selection.container,
                    "Only findings about this container (id, id prefix of 4 or more, or its "
                    "runtime's name; \"host\" for the host)");
  add_runtime_root_option(audit, a.runtime_roots);
  add_ring_buffer_option(audit, a.ring_buffer_bytes);
  add_hooks_option(audit, a.hooks, "light where the kernel has it, else full")->needs("--watch");
  add_verbose_flag(audit, a.verbose);

  auto *reap = app->add_subcommand(
      "reap", "Free leaked shared memory: unlink orphaned tmpfs files and remove orphaned System V "
              "segments (nobody holds or maps them, their creator is gone), in every mount and "
              "IPC namespace, each checked again at the moment of removal (docs/REAP.md). A dry "
              "run unless --yes. Exit status 0: everything selected was freed (or would be), 1: "
              "something was skipped, 2: error. Needs root.");
  auto &r = opts.reap;
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
  require_decimal(*app);
  return app;
}

int run_cli(int argc, char **argv) {
  CliOptions opts;
  auto app = make_app(opts);
  // CLI11 takes an unknown word for a stray argument and says only that a
  // subcommand is required.
  if (argc > 1 && argv[1][0] != '-') {
    const CLI::App &root = *app;
    std::string known;
    bool found = false;
    for (const CLI::App *sub : root.get_subcommands(std::function<bool(const CLI::App *)>{})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->get_name() == argv[1];
    }
    if (!found) {
      std::fprintf(stderr, "shmbpf: unknown command '%s' (commands: %s; see shmbpf --help)\n",
                   escape_text(argv[1]).c_str(), known.c_str());
      return 2;
    }
  }
  // One rule for a reader that goes away (`| head`) in every command: no
  // SIGPIPE death; the write fails, the output ends quietly (Output) and
  // the command exits with the status it would have had.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version succeed; usage errors exit 2, as most tools do.
    int code = app->exit(e);
    return code == 0 ? 0 : 2;
  }
  // leaks and doctor promise 2 for every error: 1 means "leaks found".
  const int error_status = app->got_subcommand("leaks") || app->got_subcommand("doctor") ||
                                   app->got_subcommand("audit") || app->got_subcommand("reap")
                               ? 2
                               : 1;
  try {
    if (app->got_subcommand("trace"))
      return run_trace(opts.trace);
    if (app->got_subcommand("ls"))
      return run_ls(opts.ls);
    if (app->got_subcommand("leaks"))
      return run_leaks(opts.leaks);
    if (app->got_subcommand("top"))
      return run_top(opts.top);
    if (app->got_subcommand("doctor"))
      return run_doctor(opts.doctor);
    if (app->got_subcommand("serve"))
      return run_serve(opts.serve);
    if (app->got_subcommand("audit"))
      return run_audit(opts.audit);
    if (app->got_subcommand("reap"))
      return run_reap(opts.reap);
  } catch (const FatalError &e) {
    std::fprintf(stderr, "shmbpf: %s\n", e.what());
    return std::max(e.exit_code(), error_status);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "shmbpf: internal error: %s\n", e.what());
    return error_status;
  }
  return 0;
}

} // namespace shmbpf
