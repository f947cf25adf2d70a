// `shmbpf top`: options -> the first state of the screen -> the live model's
// loop (terminal/top_loop), drawn with ncurses or printed in batch mode.
#include "cli/app.hpp"
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
                       "a frame not understood: " + reply.error(), 2);
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

int run_top(const TopOptions &opts) {
  const bool batch = opts.batch || opts.json; // --json implies frames on stdout
  if (!batch && !isatty(STDOUT_FILENO))
    throw FatalError("top",
                     "standard output is not a terminal; use -b for batch mode "
                     "(plain-text frames) or -b --json (one JSON object per frame)",
                     2);
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
