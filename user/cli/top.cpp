// `shmbpf top`: options -> the first state of the screen -> the live model's
// loop (terminal/top_loop), drawn with ncurses or printed in batch mode.
#include "cli/app.hpp"
#include "cli/options.hpp"
#include "live/kernel_notes.hpp"
#include "live/signals.hpp"

#include "daemon/api_client.hpp"
#include "facts/result.hpp"
#include "live/monitor.hpp"
#include "probe/probe.hpp"
#include "terminal/top_loop.hpp"
#include "views/escape.hpp"
#include "views/top_state.hpp"
#include "views/top_wire.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace shmbpf {

namespace {

TopState initial_state(const TopOptions &opts) {
  TopState st;
  if (auto v = parse_top_view(opts.by))
    st.view = *v;
  st.pid = opts.pid;
  if (opts.container)
    st.container = *opts.container == "host" ? std::string() : *opts.container;
  st.delay_s = opts.delay_s;
  return st;
}

// Frames built by a running daemon from its model, for the state kept
// here: every frame is one request (/v1/top), so a key that moves the
// selection asks again too.
class ServerFeed : public TopFeed {
public:
  explicit ServerFeed(std::string socket) : socket_(std::move(socket)) {}

  void start() override {}
  void wait(int timeout_ms) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  }
  void take(const TopState &) override {}

  TopFrame frame(TopState &st) override {
    auto reply = parse_top_frame_reply(get(st, "frame").body);
    if (!reply)
      throw FatalError("shmbpf serve at " + escape_text(socket_),
                       "a frame not understood: " + reply.error(), Exit::refused);
    // The daemon kept the selection and scroll in range; what the user is
    // typing stays this side's.
    const bool editing = st.editing_filter;
    st = std::move(reply->state);
    st.editing_filter = editing;
    return std::move(reply->frame);
  }

  std::string json(const TopState &st) override {
    std::string body = get(st, "json").body;
    while (!body.empty() && body.back() == '\n')
      body.pop_back();
    return body;
  }

private:
  ApiReply get(const TopState &st, const char *format) {
    QueryFields q = top_state_fields(st);
    q.emplace("format", format);
    q.emplace("clock", top_wall_clock());
    return api_get(socket_, "/v1/top", q);
  }

  std::string socket_;
};

} // namespace

void add_top_command(CLI::App &app, TopOptions &o) {
  auto *top = app.add_subcommand(
      "top", "Live view of shared memory by process, container, mount, segment or producer (needs "
             "root).");
  top->add_option("-d,--delay", o.delay_s, "Seconds between refreshes")
      ->check(number_in(0.1, 3600))
      ->capture_default_str();
  top->add_option("-p,--pid", o.pid, "Only this process")->check(positive_integer("a process id"));
  add_container_option(top, o.container, "processes and segments");
  top->add_option("--by", o.by, "Initial view (default process)")
      ->check(CLI::IsMember({"process", "container", "mount", "segments", "producer"}));
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
}

int run_top(const TopOptions &opts) {
  const bool batch = opts.batch || opts.json; // --json implies frames on stdout
  if (!batch && !isatty(STDOUT_FILENO))
    throw FatalError("top",
                     "standard output is not a terminal; use -b for batch mode "
                     "(plain-text frames) or -b --json (one JSON object per frame)",
                     Exit::refused);
  if (opts.server) {
    // Asked before the screen starts: no daemon there (or none ready) is an
    // error on a terminal left as it was.
    api_get(*opts.server, "/readyz");
    ServerFeed feed(*opts.server);
    install_stop_signals();
    return run_top_loop(feed, initial_state(opts),
                        {batch, opts.json, opts.iterations, stop_requested});
  }
  // Before the Monitor starts its first scan: a refusal then costs nothing.
  require_bpf_privileges("top");

  MonitorOptions mopts;
  mopts.probe.command = "top";
  mopts.probe.ring_buffer_bytes = opts.ring_buffer_bytes;
  mopts.probe.verbose = opts.verbose;
  HookSetting::apply(mopts.probe, opts.hooks, HookSet::full);
  mopts.runtime_roots = opts.runtime_roots;
  Monitor mon(mopts);
  tell_kernel_notes(mon.session().probe(), opts.verbose);
  // Before ncurses starts: it only installs its own SIGINT/SIGTERM handlers
  // where the default action is still in place, so ours win and the loop
  // ends through the screen's destructor, which restores the terminal.
  install_stop_signals();
  const auto feed = monitor_feed(mon);
  return run_top_loop(*feed, initial_state(opts),
                      {batch, opts.json, opts.iterations, stop_requested});
}

} // namespace shmbpf
