// CLI11 wiring only: options structs, the app definition, and dispatch.
// Each subcommand is a thin function over the pipeline stages.
#pragma once

#include "daemon/export_file.hpp"
#include "daemon/listen.hpp"
#include "daemon/serve_reaper.hpp"
#include "daemon/state_file.hpp"
#include "daemon/unix_socket.hpp"
#include "decode/event.hpp"
#include "model/audit.hpp"
#include "model/leaks.hpp"
#include "model/reap.hpp"
#include "probe/probe.hpp"
#include "sources/runtime_names.hpp"
#include "views/list_wire.hpp"
#include "views/trace_filter.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

struct TraceOptions {
  TraceFilter filter;    // -p, --comm, --kind, --event
  double duration_s = 0; // 0: until SIGINT/SIGTERM
  size_t ring_buffer_bytes = RingBufferSetting::kDefault;
  std::string hooks = "auto"; // --hooks: full, light or auto
  bool json = false;
  bool stats = false; // --stats: the BPF programs' run time at exit
  bool verbose = false;
};

struct LsOptions {
  LsQuery query;                     // --by, -p, --container, --mount, --kind, --match, --json
  RuntimeRoots runtime_roots;        // --runtime-root RUNTIME=DIR
  std::optional<std::string> server; // --server: read a daemon's model at this socket
};

struct LeaksOptions {
  LeaksQuery query;                  // --min-age, --match, --window, --all-mounts, --json
  std::string hooks = "auto";        // --hooks, for the SIGBUS watch of a --window
  RuntimeRoots runtime_roots;        // --runtime-root RUNTIME=DIR
  std::optional<std::string> server; // --server: read a daemon's model at this socket
};

struct TopOptions {
  double delay_s = 1; // -d: refresh interval
  std::optional<uint32_t> pid;
  std::optional<std::string> container;
  std::string by = "process"; // process, container, mount, segments
  bool batch = false;         // -b
  int iterations = 0;         // -n: frames to print in batch mode, 0 = until a signal
  bool json = false;          // with -b: one JSON object per frame
  size_t ring_buffer_bytes = RingBufferSetting::kDefault;
  std::string hooks = "auto"; // --hooks: full, light or auto
  bool verbose = false;
  RuntimeRoots runtime_roots;        // --runtime-root RUNTIME=DIR
  std::optional<std::string> server; // --server: frames from a daemon at this socket
};

struct DoctorCliOptions {
  size_t ring_buffer_bytes = RingBufferSetting::kDefault;
  std::string hooks = "auto"; // --hooks: full, light or auto
  bool json = false;
  bool verbose = false;
};

struct ServeOptions {
  std::string listen = ListenSetting::kDefault; // --listen ADDR:PORT
  std::string web_config_file;                  // --web-config-file PATH: TLS, basic auth
  std::string export_file;                      // "": no export
  double export_max_size_mb = ExportFileSetting::kDefaultMaxSizeMb;
  unsigned export_max_backups = ExportFileSetting::kDefaultMaxBackups;
  std::string socket = SocketSetting::kDefault;      // --socket PATH, "" for none
  bool no_socket = false;                            // --no-socket
  std::optional<std::string> socket_group;           // --socket-group NAME
  std::string state_dir = StateDirSetting::kDefault; // --state-dir DIR, "" for none
  bool no_state = false;                             // --no-state
  RuntimeRoots runtime_roots;                        // --runtime-root RUNTIME=DIR
  bool reap = false;                                 // --reap: free orphans periodically
  double reap_interval_s = ServeReapSetting::kDefaultIntervalS;
  double reap_min_age_s = kReapMinAgeS;
  std::optional<std::string> reap_match; // glob on the path
  size_t ring_buffer_bytes = RingBufferSetting::kDefault;
  std::string hooks = "auto"; // --hooks: full, light or auto
  bool verbose = false;
  std::optional<std::string> node_name; // --node-name; else $NODE_NAME, else the host name
  std::string log_format = "text";      // --log-format text, logfmt or json
  std::string log_level = "info";       // --log-level debug, info, warn or error
};

struct AuditOptions {
  bool json = false;
  std::string fail_on = "medium"; // low, medium, high or none
  double watch_s = 0;             // > 0: also judge the execs of this many seconds (BPF)
  AuditSelection selection;       // --rule, --container
  RuntimeRoots runtime_roots;     // --runtime-root RUNTIME=DIR
  size_t ring_buffer_bytes = RingBufferSetting::kDefault;
  std::string hooks = "auto"; // --hooks: full, light or auto
  bool verbose = false;
};

struct ReapOptions {
  bool yes = false;                     // remove; without it, a dry run
  double min_age_s = kReapMinAgeS;      // younger orphans are left alone
  std::optional<std::string> match;     // glob on the path
  std::optional<std::string> container; // id, prefix or name; "host" for the host
  std::optional<std::string> mount;     // a mountpoint
  std::optional<std::string> kind;      // tmpfs or sysv
  bool all_mounts = false;              // also /run, /tmp and other non-shm tmpfs mounts
  bool json = false;
  RuntimeRoots runtime_roots; // --runtime-root RUNTIME=DIR
  // A shmbpf serve listening here is sent the outcomes for its export file.
  std::string daemon_socket = SocketSetting::kDefault;
};

struct CompletionOptions {
  std::string shell; // bash, zsh or fish
};

struct CliOptions {
  TraceOptions trace;
  LsOptions ls;
  LeaksOptions leaks;
  TopOptions top;
  DoctorCliOptions doctor;
  ServeOptions serve;
  AuditOptions audit;
  ReapOptions reap;
  CompletionOptions completion;
};

// Builds the app; parsed values land in opts. Subcommands are named "trace".
std::unique_ptr<CLI::App> make_app(CliOptions &opts);

// Each command's options, added to app.
void add_trace_command(CLI::App &app, TraceOptions &t);
void add_ls_command(CLI::App &app, LsOptions &l);
void add_leaks_command(CLI::App &app, LeaksOptions &k);
void add_top_command(CLI::App &app, TopOptions &o);
void add_doctor_command(CLI::App &app, DoctorCliOptions &d);
void add_serve_command(CLI::App &app, ServeOptions &s);
void add_audit_command(CLI::App &app, AuditOptions &a);
void add_reap_command(CLI::App &app, ReapOptions &r);
void add_completion_command(CLI::App &app, CompletionOptions &o);

// Parses and runs; returns the process exit status.
int run_cli(int argc, char **argv);

// `shmbpf trace`: returns the exit status.
int run_trace(const TraceOptions &opts);

// `shmbpf ls`: returns the exit status.
int run_ls(const LsOptions &opts);

// `shmbpf leaks`: 0 no leak, 1 leaks found, 2 error.
int run_leaks(const LeaksOptions &opts);

// `shmbpf top`: returns the exit status.
int run_top(const TopOptions &opts);

// `shmbpf doctor`: 0 when shmbpf can run here, 2 when it cannot.
int run_doctor(const DoctorCliOptions &opts);

// `shmbpf serve`: runs until SIGTERM or SIGINT, then 0 (1 when the export
// file took nothing for 10 s by then); 2 when it cannot start (the port is
// taken, the export file cannot be opened, BPF cannot load).
int run_serve(const ServeOptions &opts);

// `shmbpf audit`: 0 no finding at or above --fail-on, 1 findings, 2 error.
int run_audit(const AuditOptions &opts);

// `shmbpf reap`: 0 everything selected was freed (or would be, or nothing
// was selected), 1 something selected was skipped, 2 error.
int run_reap(const ReapOptions &opts);

// `shmbpf completion SHELL`: the script, read from app's commands and options.
int run_completion(const CLI::App &app, const CompletionOptions &opts);

} // namespace shmbpf
