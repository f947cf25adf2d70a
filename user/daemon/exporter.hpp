// `shmbpf serve --export-file`: the audit trail. The consumer thread formats
// records (views/export_view) into a buffer of its own and hands them over
// once per loop turn; a writer thread of the exporter's writes them to a
// RotatingFile. The consumer never waits for the disk: when the writer is
// more than kMaxQueued bytes behind, what the consumer hands over is dropped
// and counted (shmbpf_export_dropped_records_total), and once the writer
// writes again an export_dropped record says how many are missing.
#pragma once

#include "daemon/export_file.hpp"
#include "daemon/export_records.hpp"
#include "daemon/log.hpp"
#include "live/monitor.hpp"
#include "views/export_view.hpp"
#include "views/metrics.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace shmbpf {

class Exporter {
public:
  // Records waiting for the writer, at most (a few seconds of a busy host's
  // events: a slow disk is ridden out, a stuck one costs bounded memory).
  static constexpr size_t kMaxQueued = size_t{32} << 20;
  // The consumer hands over early when it has this much formatted.
  static constexpr size_t kHandOverAt = size_t{256} << 10;
  // Write errors are logged at most this often, summed.
  static constexpr std::chrono::seconds kLogEvery{10};

  // Starts the writer thread on an opened file.
  Exporter(RotatingFile file, const TraceClock &clock, Log &log);
  ~Exporter();
  Exporter(const Exporter &) = delete;
  Exporter &operator=(const Exporter &) = delete;

  // --- the consumer thread -------------------------------------------------
  // An event just applied to engine (the monitor's observer).
  void event(const Event &e, const Engine &engine);
  // After each poll: a lost record if the kernel lost any since the last
  // look, orphans when due, then what was formatted goes to the writer.
  // last: the loop ends; the losses are looked at however recently they were.
  void after_poll(const Monitor &mon, bool last = false);
  // Removals (and skips) by reap: by "serve" (serve --reap, by_pid its
  // own) or by the reap command whose pid is by_pid.
  void reaped(const std::vector<ReapOutcome> &outcomes, std::string_view by, uint32_t by_pid);
  // What was formatted goes to the writer now (or is dropped, counted).
  void hand_over();
  // Writes every record handed over, then stops the writer and closes the
  // file (SIGTERM).
  void close();
  // The same, waiting at most limit. False when the writer has not finished
  // by then (a disk that takes nothing): it is left blocked, and this
  // exporter (and the log) must not be destroyed: the caller exits.
  bool close_within(std::chrono::milliseconds limit);

  // --- any thread ----------------------------------------------------------
  // Whole records formatted elsewhere (reap's, sent over the socket), each
  // line complete: queued for the writer at once, or refused (false) when
  // the writer is too far behind or stopping.
  bool submit(std::string_view lines);
  // The writer closes and opens the file again before its next write
  // (SIGHUP: logrotate moved it); records handed over go to the new file.
  void request_reopen();
  ExportCounters counters() const;
  const std::string &path() const { return path_; }
  // The clock its records' times are written with.
  const TraceClock &clock() const { return clock_; }

private:
  void write_loop();
  // A line in the log, at most once per kLogEvery (the writer thread).
  void note_problem(const std::string &what, size_t problems);

  const std::string path_;
  const TraceClock clock_;
  Log &log_;
  ExportRecords pending_; // consumer thread only

  // Shared with the writer, under mu_.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::string queue_;
  uint64_t unreported_drops_ = 0; // not yet told in an export_dropped record
  bool reopen_ = false;
  bool stopping_ = false;
  bool finished_ = false; // the writer has written its last record
  std::condition_variable done_;

  // Writer thread only.
  struct WriterState {
    RotatingFile file;
    ExportFormatter fmt;
    std::chrono::steady_clock::time_point last_log{};
    size_t unlogged_problems = 0;
  } out_;

  // Read by counters() from any thread.
  struct Counters {
    std::atomic<uint64_t> records{0}, dropped{0}, errors{0}, rotations{0};
  } counters_;
  std::thread writer_;
};

} // namespace shmbpf
