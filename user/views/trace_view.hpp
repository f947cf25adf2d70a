// Formatting of decoded events for `shmbpf trace`: aligned text lines and
// NDJSON objects. Pure.
#pragma once

#include "decode/event.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shmbpf {

class JsonWriter;

// Offset from CLOCK_BOOTTIME (event timestamps) to CLOCK_REALTIME. Read
// once at start-up (sources/clock.hpp) and passed to the formatters, so
// that they stay deterministic under test.
struct TraceClock {
  int64_t boot_to_realtime_ns = 0;
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

// trace_line() and trace_json() for a stream of events: appends to a
// buffer the caller reuses, and keeps what the next event can reuse (the
// formatted second of the timestamp), so that a steady stream of events is
// formatted without allocating. Output is byte for byte the same as the
// free functions'.
class TraceFormatter {
public:
  explicit TraceFormatter(const TraceClock &clock) : clock_(clock) {}

  // One line or JSON object, without the trailing newline.
  void append_line(std::string &out, const Event &e);
  void append_json(std::string &out, const Event &e);
  // append_json()'s fields, into an object that j has open: for writers
  // that add fields of their own to the same schema (serve's export file).
  void write_json_fields(JsonWriter &j, const Event &e);
  // "ts_ns" and "time" as an event's, for records that are not events.
  void write_time_fields(JsonWriter &j, uint64_t ts_ns);

private:
  // Formatted wall-clock seconds; valid while sec equals the event's.
  struct SecondText {
    bool valid = false;
    int64_t sec = 0;
    char text[32] = {};
    std::size_t len = 0;
  };

  void append_local_time(std::string &out, int64_t sec, long nsec);
  static void write_oom_fields(JsonWriter &j, const Event &e);
  // "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" at p; the end.
  char *write_utc_time(char *p, int64_t sec, long nsec);

  TraceClock clock_;
  SecondText local_;
  SecondText utc_;
};

} // namespace shmbpf
