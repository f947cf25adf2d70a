#include "terminal/top_loop.hpp"

#include "terminal/output.hpp"

#include "facts/result.hpp"
#include "sources/namespaces.hpp"
#include "sources/users.hpp"
#include "terminal/screen.hpp"
#include "views/top_frame.hpp"
#include "views/top_json.hpp"
#include "views/top_snapshot.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

namespace shmbpf {

namespace {

using Clock = std::chrono::steady_clock;

void poll_or_throw(Monitor &mon, int timeout_ms) {
  const int n = mon.poll(timeout_ms);
  if (n < 0 && n != -EINTR)
    throw FatalError("reading the ring buffer", std::strerror(-n));
}

// Snapshots of the monitor's engine; the consumer is this thread, so the
// engine is read without the lock.
class MonitorFeed : public TopFeed {
public:
  explicit MonitorFeed(Monitor &mon)
      : mon_(mon), host_mntns_(mount_namespace_of(static_cast<int>(getpid()))) {}

  void start() override { mon_.drain(); }
  void wait(int timeout_ms) override { poll_or_throw(mon_, timeout_ms); }

  void take(const TopState &st) override {
    const MonitorStats stats = mon_.stats();
    TopCounters c{Monitor::now_ns(), top_wall_clock(), stats.events, stats.lost, host_mntns_};
    snap_ = take_top_snapshot(mon_.engine(), std::move(c), st,
                              [this](uint32_t uid) { return names_.name_of(uid); });
  }

  TopFrame frame(TopState &st) override {
    TopFrame frame = build_top_frame(snap_, st);
    if (st.page_miss && segment_copy(st) == SegmentCopy::page) {
      // The selection moved past the rows the snapshot has: page again.
      take(st);
      frame = build_top_frame(snap_, st);
    }
    return frame;
  }

  std::string json(const TopState &st) override { return top_json(snap_, st); }

private:
  Monitor &mon_;
  // The namespace whose mounts are labelled "host": shmbpf's own, since that
  // is where the paths the user types mean what they say.
  uint32_t host_mntns_;
  LoginNames names_;
  TopSnapshot snap_;
};

bool stopping(const TopLoopOptions &opts) { return opts.stop_requested && opts.stop_requested(); }

Clock::duration delay_of(const TopState &st) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(st.delay_s));
}

int run_batch(TopFeed &feed, TopState st, const TopLoopOptions &opts) {
  st.width = 0; // plain text: every row, nothing cut
  st.height = 0;
  Output out;
  const auto delay = delay_of(st);
  for (int frame = 1; !stopping(opts); ++frame) {
    if (frame > 1) {
      const auto due = Clock::now() + delay;
      while (!stopping(opts) && Clock::now() < due)
        feed.wait(100);
      if (stopping(opts))
        break;
    } else {
      feed.start();
    }
    feed.take(st);
    const std::string text = (opts.json ? feed.json(st) : top_text(feed.frame(st))) + "\n";
    if (!out.write(text)) {
      out.check(); // a full disk is an error; a reader gone (`| head`) is not
      return 0;
    }
    if (opts.iterations > 0 && frame >= opts.iterations)
      break;
  }
  return 0;
}

int run_interactive(TopFeed &feed, TopState st, const TopLoopOptions &opts) {
  const auto delay = delay_of(st);
  feed.start();
  Screen screen;
  feed.take(st);
  auto next = Clock::now() + delay;
  int frames = 1;
  bool dirty = true;
  bool keys_waiting = false; // keys may be left to read after the next frame
  while (!stopping(opts) && !st.quit) {
    if (dirty) {
      st.width = screen.width();
      st.height = screen.height();
      screen.draw(feed.frame(st));
      dirty = false;
    }
    // Short waits keep keys responsive; events are applied as they come.
    if (!keys_waiting)
      feed.wait(50);
    keys_waiting = false;
    TopAction action = TopAction::none;
    while (const auto key = screen.next_key()) {
      if (*key != 0)
        action = std::max(action, top_handle_key(st, *key));
      if (st.quit)
        break;
      // A key that changed the state is drawn before the next one is read:
      // the next acts on the screen this one made (Enter after the filter's
      // Enter opens the row the filter left selected, which only the frame
      // knows). Typed ahead of a slow frame (top --server), keys would
      // otherwise act on a selection the frame has not set yet.
      if (action != TopAction::none) {
        keys_waiting = true;
        break;
      }
    }
    if (screen.take_resized())
      action = std::max(action, TopAction::redraw);
    // A key changed what the snapshot must hold (another view, the details,
    // the filter or sort of paged segments): take it now.
    if (action == TopAction::refetch)
      feed.take(st);
    dirty = dirty || action != TopAction::none;
    if (Clock::now() >= next) {
      if (opts.iterations > 0 && frames >= opts.iterations)
        break;
      feed.take(st);
      next = Clock::now() + delay;
      ++frames;
      dirty = true;
    }
  }
  return 0;
}

} // namespace

std::unique_ptr<TopFeed> monitor_feed(Monitor &mon) { return std::make_unique<MonitorFeed>(mon); }

std::string top_wall_clock() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

int run_top_loop(TopFeed &feed, TopState state, const TopLoopOptions &opts) {
  return opts.batch ? run_batch(feed, std::move(state), opts)
                    : run_interactive(feed, std::move(state), opts);
}

} // namespace shmbpf
