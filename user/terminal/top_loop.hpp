// `shmbpf top`'s loops over a live model: frames printed to standard
// output (batch mode: text or JSON), or drawn on the terminal and steered
// with keys. Snapshots, frames and keys are the pure views' (views/top_*);
// these loops own the timing, the terminal and the output. The model is
// this process's own monitor, or a daemon's (top --server): a TopFeed.
#pragma once

#include "live/monitor.hpp"
#include "views/top_frame.hpp"
#include "views/top_state.hpp"

#include <memory>
#include <string>

namespace shmbpf {

struct TopLoopOptions {
  bool batch = false; // frames on standard output instead of the screen
  bool json = false;  // batch frames as one JSON object per line
  int iterations = 0; // frames before returning, 0 = until stop_requested
  // Polled between waits: SIGINT and SIGTERM end the loop (and restore the
  // terminal) through it.
  bool (*stop_requested)() = nullptr;
};

// Where the loops' frames come from.
class TopFeed {
public:
  virtual ~TopFeed() = default;
  // Brings the model up to date before the first frame.
  virtual void start() = 0;
  // Waits up to timeout_ms, the model kept current meanwhile.
  virtual void wait(int timeout_ms) = 0;
  // Takes what frames for st are built from: the model as it is now.
  virtual void take(const TopState &st) = 0;
  // The frame for st from the last take (adjusting st's selection, scroll
  // and counts, as build_top_frame does), and the JSON line for st.
  virtual TopFrame frame(TopState &st) = 0;
  virtual std::string json(const TopState &st) = 0;
};

// Frames from this process's monitor, snapshots taken from its engine.
std::unique_ptr<TopFeed> monitor_feed(Monitor &mon);

// The wall-clock time for the title line: "14:03:59".
std::string top_wall_clock();

// Runs until q, a stop request or the last iteration; returns the exit
// status. state.delay_s is the refresh interval; state.width and height
// are set here (0 in batch mode: every row, nothing cut).
int run_top_loop(TopFeed &feed, TopState state, const TopLoopOptions &opts);

} // namespace shmbpf
