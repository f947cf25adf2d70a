// `shmbpf serve`: the checked options handed to the daemon (daemon/daemon),
// which binds what can be refused before BPF loads, then runs until SIGTERM
// or SIGINT.
#include "cli/app.hpp"
#include "cli/options.hpp"
#include "cli/version.hpp"

#include "daemon/daemon.hpp"
#include "live/signals.hpp"

#include <sys/utsname.h>

#include <cmath>
#include <cstdlib>

namespace shmbpf {

namespace {

// The node label: as given, else the downward API's NODE_NAME (the
// DaemonSet sets it to spec.nodeName), else this machine's host name.
std::string node_name(const ServeOptions &opts) {
  if (opts.node_name)
    return *opts.node_name;
  if (const char *env = std::getenv("NODE_NAME"); env && *env)
    return env;
  utsname u{};
  return uname(&u) == 0 ? std::string(u.nodename) : std::string();
}

DaemonConfig daemon_config(const ServeOptions &opts) {
  DaemonConfig c;
  c.agent = {shmbpf_version(), shmbpf_revision(), node_name(opts)};
  // Each value was checked by its option already.
  c.listen = ListenSetting::parse(opts.listen).value();
  c.web_config_file = opts.web_config_file; // read by the daemon, before it binds
  c.export_file = opts.export_file;
  if (!c.export_file.empty())
    c.export_limits = {ExportFileSetting::max_bytes(opts.export_max_size_mb).value(),
                       opts.export_max_backups};
  c.socket = opts.no_socket ? std::string() : opts.socket;
  if (opts.socket_group)
    c.socket_group = socket_group(*opts.socket_group).value();
  c.state_dir = opts.no_state ? std::string() : opts.state_dir;
  c.runtime_roots = opts.runtime_roots;
  if (opts.reap) {
    c.reap = ReapFilter{};
    c.reap->min_age_s = opts.reap_min_age_s;
    c.reap->match = opts.reap_match;
    c.reap_interval =
        std::chrono::milliseconds(static_cast<int64_t>(std::llround(opts.reap_interval_s * 1000)));
  }
  c.ring_buffer_bytes = opts.ring_buffer_bytes;
  c.hooks = opts.hooks;
  c.verbose = opts.verbose;
  return c;
}

} // namespace

void add_serve_command(CLI::App &app, ServeOptions &s) {
  auto *serve = app.add_subcommand(
      "serve", "Run as the host's agent, in the foreground: the live model behind top, its "
               "numbers for Prometheus over HTTP (/metrics, /healthz, /readyz), the model itself "
               "as JSON on a unix socket (--socket; read by ls, leaks and top --server), a log "
               "on stderr and, with --export-file, an NDJSON audit trail. Stops on SIGTERM or "
               "SIGINT; SIGHUP reopens the export file (needs root).");
  const CLI::Validator listen(
      [](std::string &text) -> std::string {
        auto a = ListenSetting::parse(text);
        return a ? std::string() : a.error();
      },
      "ADDRESS:PORT");
  serve->add_option(ListenSetting::kFlag, s.listen, ListenSetting::kHelp)
      ->check(listen)
      ->capture_default_str();
  serve->add_option(WebConfigSetting::kFlag, s.web_config_file, WebConfigSetting::kHelp)
      ->check(CLI::Validator(
          [](std::string &path) -> std::string {
            return path.empty() ? "must name a file" : std::string();
          },
          "PATH"));
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
      ->check(glob_check())
      ->needs(reap_flag);
  add_ring_buffer_option(serve, s.ring_buffer_bytes);
  add_hooks_option(serve, s.hooks, "light where the kernel has it, else full");
  add_verbose_flag(serve, s.verbose);
  serve->add_option("--node-name", s.node_name,
                    "The node label on every metric (\"\" for none); by default $NODE_NAME, "
                    "else the host name");
  serve->add_option(LogSetting::kFormatFlag, s.log_format, LogSetting::kFormatHelp)
      ->check(CLI::IsMember({"text", "logfmt", "json"}))
      ->capture_default_str();
  serve->add_option(LogSetting::kLevelFlag, s.log_level, LogSetting::kLevelHelp)
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();
}

int run_serve(const ServeOptions &opts) {
  DaemonConfig config = daemon_config(opts);
  // Refused before anything is bound or loaded.
  require_bpf_privileges("serve");
  Log log(parse_log_format(opts.log_format).value(), parse_log_level(opts.log_level).value());
  Daemon daemon(std::move(config), log);
  install_daemon_signals();
  return daemon.run({stop_requested, take_hangup, stop_signal_name});
}

} // namespace shmbpf
