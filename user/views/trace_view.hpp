// Formatting of decoded events for `shmbpf trace`: aligned text lines and
// NDJSON objects. Pure functions apart from TraceClock::now().
#pragma once

#include "decode/event.hpp"

#include <cstdint>
#include <string>

namespace shmbpf {

// Offset from CLOCK_BOOTTIME (event timestamps) to CLOCK_REALTIME. Taken
// once at start-up and passed to the formatters, so that they stay
// deterministic under test.
struct TraceClock {
  int64_t boot_to_realtime_ns = 0;

  // CLOCK_REALTIME - CLOCK_BOOTTIME, now.
  static TraceClock now();
};

// The column header matching trace_line(), no trailing newline.
std::string trace_header();

// One aligned text line for an event, no trailing newline. Columns: TIME
// (local HH:MM:SS.mmm), PID, COMM, EVENT, KIND, SIZE (exact bytes), RESULT
// (ok or errno name), PATH/NAME, then free-form key=value DETAILS. Every
// string from the event is passed through escape_text(); missing values
// are printed as "-".
std::string trace_line(const Event &e, const TraceClock &clock);

// One JSON object for an event (an NDJSON line without the newline). The
// fields depend on the event type; see docs/EVENTS.md. String values are
// escape_text() of the event's strings, so a decoded value never contains
// control characters even when the file name did.
std::string trace_json(const Event &e, const TraceClock &clock);

// "ENOSPC" for common errnos, else the number in decimal.
std::string errno_name(int err);

} // namespace shmbpf
