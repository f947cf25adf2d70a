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

std::string wall_clock() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

void poll_or_throw(Monitor &mon, int timeout_ms) {
  const int n = mon.poll(timeout_ms);
  if (n < 0 && n != -EINTR)
    throw FatalError("reading the ring buffer", std::strerror(-n));
}

// Takes snapshots of the monitor's engine for a state.
class Snapshots {
public:
  explicit Snapshots(const Monitor &mon) : mon_(mon), host_mntns_(host_mount_namespace()) {}

  TopSnapshot take(const TopState &st) {
    const MonitorStats stats = mon_.stats();
    TopCounters c{Monitor::now_ns(), wall_clock(), stats.events, stats.lost, host_mntns_};
    return take_top_snapshot(mon_.engine(), std::move(c), st,
                             [this](uint32_t uid) { return names_.name_of(uid); });
  }

private:
  const Monitor &mon_;
  // The namespace whose mounts are labelled "host": shmbpf's own, since that
  // is where the paths the user types mean what they say.
  uint32_t host_mntns_;
  LoginNames names_;
};

bool stopping(const TopLoopOptions &opts) { return opts.stop_requested && opts.stop_requested(); }

Clock::duration delay_of(const TopState &st) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(st.delay_s));
}

int run_batch(Monitor &mon, TopState st, const TopLoopOptions &opts) {
  st.width = 0; // plain text: every row, nothing cut
  st.height = 0;
  Snapshots snapshots(mon);
  Output out;
  const auto delay = delay_of(st);
  for (int frame = 1; !stopping(opts); ++frame) {
    if (frame > 1) {
      const auto due = Clock::now() + delay;
      while (!stopping(opts) && Clock::now() < due)
        poll_or_throw(mon, 100);
      if (stopping(opts))
        break;
    } else {
      mon.drain();
    }
    const TopSnapshot snap = snapshots.take(st);
    const std::string text =
        (opts.json ? top_json(snap, st) : top_text(build_top_frame(snap, st))) + "\n";
    if (!out.write(text)) {
      out.check(); // a full disk is an error; a reader gone (`| head`) is not
      return 0;
    }
    if (opts.iterations > 0 && frame >= opts.iterations)
      break;
  }
  return 0;
}

int run_interactive(Monitor &mon, TopState st, const TopLoopOptions &opts) {
  Snapshots snapshots(mon);
  const auto delay = delay_of(st);
  mon.drain();
  Screen screen;
  TopSnapshot snap = snapshots.take(st);
  auto next = Clock::now() + delay;
  int frames = 1;
  bool dirty = true;
  while (!stopping(opts) && !st.quit) {
    if (dirty) {
      st.width = screen.width();
      st.height = screen.height();
      TopFrame frame = build_top_frame(snap, st);
      if (st.page_miss && segment_copy(st) == SegmentCopy::page) {
        // The selection moved past the rows the snapshot has: page again.
        snap = snapshots.take(st);
        frame = build_top_frame(snap, st);
      }
      screen.draw(frame);
      dirty = false;
    }
    // Short waits keep keys responsive; events are applied as they come.
    poll_or_throw(mon, 50);
    TopAction action = TopAction::none;
    while (const auto key = screen.next_key()) {
      if (*key != 0)
        action = std::max(action, top_handle_key(st, *key));
      if (st.quit)
        break;
    }
    if (screen.take_resized())
      action = std::max(action, TopAction::redraw);
    // A key changed what the snapshot must hold (another view, the details,
    // the filter or sort of paged segments): take it now.
    if (action == TopAction::refetch)
      snap = snapshots.take(st);
    dirty = dirty || action != TopAction::none;
    if (Clock::now() >= next) {
      if (opts.iterations > 0 && frames >= opts.iterations)
        break;
      snap = snapshots.take(st);
      next = Clock::now() + delay;
      ++frames;
      dirty = true;
    }
  }
  return 0;
}

} // namespace

int run_top_loop(Monitor &mon, TopState state, const TopLoopOptions &opts) {
  return opts.batch ? run_batch(mon, std::move(state), opts)
                    : run_interactive(mon, std::move(state), opts);
}

} // namespace shmbpf
