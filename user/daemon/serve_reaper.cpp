#include "daemon/serve_reaper.hpp"

#include "actions/reaper.hpp"
#include "views/escape.hpp"
#include "views/format.hpp"
#include "views/ls_view.hpp"

#include <unistd.h>

namespace shmbpf {

ServeReaper::ServeReaper(ReapFilter filter, std::chrono::milliseconds interval, Log &log)
    : filter_(std::move(filter)), interval_(interval), log_(log),
      due_(std::chrono::steady_clock::now() + interval) {}

ServeReaper::~ServeReaper() {
  if (running_.valid())
    running_.wait();
}

void ServeReaper::after_poll(const Monitor &mon, Exporter *exporter) {
  if (running_.valid()) {
    if (running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return;
    take(running_.get(), exporter);
  }
  const auto now = std::chrono::steady_clock::now();
  if (now < due_)
    return;
  due_ = now + interval_;
  ReapPlan plan = plan_reap(mon.engine(), Monitor::now_ns(), filter_);
  if (plan.targets.empty())
    return;
  running_ = std::async(std::launch::async,
                        [plan = std::move(plan)] { return reap(plan, /*apply=*/true); });
}

void ServeReaper::finish(Exporter *exporter) {
  if (running_.valid())
    take(running_.get(), exporter);
}

void ServeReaper::take(std::vector<ReapOutcome> outcomes, Exporter *exporter) {
  const ReapTotals t = reap_totals(outcomes);
  {
    std::lock_guard lock(mu_);
    ++counters_.runs;
    counters_.freed += t.freed;
    counters_.bytes_freed += t.bytes_freed;
    for (const ReapOutcome &o : outcomes)
      if (o.status == ReapStatus::skipped)
        ++counters_.skipped[std::string(to_string(o.reason))];
  }
  for (const ReapOutcome &o : outcomes) {
    const SegmentInfo &s = o.target.segment;
    const std::string what =
        s.kind == Kind::sysv ? "shmid " + std::to_string(s.key.ino_or_shmid) : escape_text(s.path);
    if (o.status == ReapStatus::freed)
      log_.info("reaped " + what + ": " + human_bytes(o.bytes) + ", " +
                container_text(s.container) + ", orphaned for " +
                human_age(o.target.age_ns / ns_per_sec));
    else if (o.status == ReapStatus::skipped)
      log_.info("reap skipped " + what + ": " + escape_text(o.detail));
  }
  if (exporter)
    exporter->reaped(outcomes, "serve", static_cast<uint32_t>(::getpid()));
}

ReapCounters ServeReaper::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

} // namespace shmbpf
