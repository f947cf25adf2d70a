// `shmbpf top`'s loops over the live model: frames printed to standard
// output (batch mode: text or JSON), or drawn on the terminal and steered
// with keys. Snapshots, frames and keys are the pure views' (views/top_*);
// these loops own the timing, the terminal and the output.
#pragma once

#include "live/monitor.hpp"
#include "views/top_state.hpp"

namespace shmbpf {

struct TopLoopOptions {
  bool batch = false; // frames on standard output instead of the screen
  bool json = false;  // batch frames as one JSON object per line
  int iterations = 0; // frames before returning, 0 = until stop_requested
  // Polled between waits: SIGINT and SIGTERM end the loop (and restore the
  // terminal) through it.
  bool (*stop_requested)() = nullptr;
};

// Runs until q, a stop request or the last iteration; returns the exit
// status. state.delay_s is the refresh interval; state.width and height
// are set here (0 in batch mode: every row, nothing cut).
int run_top_loop(Monitor &mon, TopState state, const TopLoopOptions &opts);

} // namespace shmbpf
