#include "daemon/export_records.hpp"

#include <algorithm>

namespace shmbpf {

using Clock = std::chrono::steady_clock;

ExportRecords::ExportRecords(const TraceClock &clock, size_t reserve) : fmt_(clock) {
  text_.reserve(reserve);
}

void ExportRecords::event(const Event &e, const Engine &engine) {
  if (e.type == EventType::oom) {
    // Applied already: the engine's latest kill is this one.
    const std::vector<OomKill> kills = engine.oom_kills_since(e.ts_ns);
    fmt_.append_event(text_, e, engine.cgroup_container(e.cgroup_id),
                      kills.empty() ? nullptr : &kills.back());
    ++count_;
    return;
  }
  fmt_.append_event(text_, e, engine.cgroup_container(e.cgroup_id));
  ++count_;
}

void ExportRecords::reaped(const std::vector<ReapOutcome> &outcomes, std::string_view by,
                           uint32_t by_pid) {
  const uint64_t now_ns = Monitor::now_ns();
  for (const ReapOutcome &o : outcomes) {
    fmt_.append_reap(text_, now_ns, o, by, by_pid);
    ++count_;
  }
}

void ExportRecords::after_poll(const Monitor &mon, bool last) {
  const auto now = Clock::now();
  // The kernel's loss counter is a map read (a syscall): not on every turn.
  if (now >= next_lost_ || last) {
    next_lost_ = now + kLostEvery;
    const uint64_t lost = mon.stats().lost;
    if (lost > lost_seen_) {
      fmt_.append_lost(text_, Monitor::now_ns(), lost - lost_seen_, lost);
      ++count_;
      lost_seen_ = lost;
    }
  }
  if (now >= next_orphans_) {
    check_orphans(mon.engine(), Monitor::now_ns());
    const auto cost = Clock::now() - now;
    next_orphans_ = now + std::max<Clock::duration>(kOrphanEvery, cost * 20);
  }
}

void ExportRecords::check_orphans(const Engine &engine, uint64_t now_ns) {
  // As /metrics counts them: an orphan as soon as it is one.
  const OrphanWatch::Changes c = orphans_.update(engine.orphans(now_ns, 0));
  for (const SegmentInfo &s : c.appeared)
    fmt_.append_orphan(text_, now_ns, s);
  for (const SegmentInfo &s : c.gone)
    fmt_.append_orphan_gone(text_, now_ns, s, engine.contains(s.key));
  count_ += c.appeared.size() + c.gone.size();
}

void ExportRecords::move_to(std::string &to) {
  if (to.empty())
    to.swap(text_);
  else
    to += text_;
  clear();
}

void ExportRecords::clear() {
  text_.clear();
  count_ = 0;
}

} // namespace shmbpf
