// `shmbpf trace`'s loop: each event that passes the filter written to
// standard output as a line or a JSON object, until a stop signal or the
// duration, then a summary on standard error.
#pragma once

#include "live/session.hpp"
#include "views/trace_filter.hpp"

namespace shmbpf {

struct TraceLoopOptions {
  TraceFilter filter;
  bool json = false;
  double duration_s = 0; // 0: until a stop signal
  bool stats = false;    // the BPF programs' run time per hook, at the end
};

// Returns the exit status; throws FatalError when the ring buffer fails or
// the output cannot be written (a reader gone, `| head`, is no error).
int run_trace_loop(Session &session, const TraceLoopOptions &opts);

} // namespace shmbpf
