// The consumer thread's side of the export (daemon/exporter): each event,
// loss, orphan change and reap outcome formatted (views/export_view) into a
// buffer of its own, until the exporter takes it for its writer. Used by
// the consumer thread alone: no lock.
#pragma once

#include "live/monitor.hpp"
#include "views/export_view.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

class ExportRecords {
public:
  // Orphans are compared at most this often (a walk over every segment);
  // the gap grows with what the walk costs, as the monitor's loss rescans do.
  static constexpr std::chrono::seconds kOrphanEvery{1};
  // The kernel's losses are looked at this often.
  static constexpr std::chrono::milliseconds kLostEvery{100};

  ExportRecords(const TraceClock &clock, size_t reserve);

  // An event just applied to engine.
  void event(const Event &e, const Engine &engine);
  // Removals (and skips) by reap, by "serve" or the reap command by_pid.
  void reaped(const std::vector<ReapOutcome> &outcomes, std::string_view by, uint32_t by_pid);
  // A lost record if the kernel lost any since the last look, orphans when
  // due; last: the losses are looked at however recently they were.
  void after_poll(const Monitor &mon, bool last);

  // What is formatted and not yet taken.
  const std::string &text() const { return text_; }
  size_t count() const { return count_; }
  // The text goes (swapped into to, or appended to it), and the count with it.
  void move_to(std::string &to);
  void clear();

private:
  void check_orphans(const Engine &engine, uint64_t now_ns);

  ExportFormatter fmt_;
  OrphanWatch orphans_;
  std::string text_;
  size_t count_ = 0;
  uint64_t lost_seen_ = 0;
  std::chrono::steady_clock::time_point next_orphans_{}, next_lost_{};
};

} // namespace shmbpf
