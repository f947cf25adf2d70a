#include "daemon/exporter.hpp"

#include <algorithm>
#include <utility>

namespace shmbpf {

namespace {

using Clock = std::chrono::steady_clock;

} // namespace

Exporter::Exporter(RotatingFile file, const TraceClock &clock, Log &log)
    : path_(file.path()), clock_(clock), log_(log), fmt_(clock), file_(std::move(file)),
      writer_fmt_(clock) {
  pending_.reserve(kHandOverAt + 4096);
  writer_ = std::thread([this] { write_loop(); });
}

Exporter::~Exporter() { close(); }

void Exporter::event(const Event &e, const Engine &engine) {
  fmt_.append_event(pending_, e, engine.cgroup_container(e.cgroup_id));
  ++pending_records_;
  if (pending_.size() >= kHandOverAt)
    hand_over();
}

void Exporter::reaped(const std::vector<ReapOutcome> &outcomes, std::string_view by,
                      uint32_t by_pid) {
  const uint64_t now_ns = Monitor::now_ns();
  for (const ReapOutcome &o : outcomes) {
    fmt_.append_reap(pending_, now_ns, o, by, by_pid);
    ++pending_records_;
  }
  hand_over();
}

void Exporter::after_poll(const Monitor &mon, bool last) {
  const auto now = Clock::now();
  // The kernel's loss counter is a map read (a syscall): not on every turn.
  if (now >= next_lost_ || last) {
    next_lost_ = now + kLostEvery;
    const uint64_t lost = mon.stats().lost;
    if (lost > lost_seen_) {
      fmt_.append_lost(pending_, Monitor::now_ns(), lost - lost_seen_, lost);
      ++pending_records_;
      lost_seen_ = lost;
    }
  }
  if (now >= next_orphans_) {
    check_orphans(mon.engine(), Monitor::now_ns());
    const auto cost = Clock::now() - now;
    next_orphans_ = now + std::max<Clock::duration>(kOrphanEvery, cost * 20);
  }
  hand_over();
}

void Exporter::check_orphans(const Engine &engine, uint64_t now_ns) {
  // As /metrics counts them: an orphan as soon as it is one.
  const OrphanWatch::Changes c = orphans_.update(engine.orphans(now_ns, 0));
  for (const SegmentInfo &s : c.appeared)
    fmt_.append_orphan(pending_, now_ns, s);
  for (const SegmentInfo &s : c.gone)
    fmt_.append_orphan_gone(pending_, now_ns, s, engine.contains(s.key));
  pending_records_ += c.appeared.size() + c.gone.size();
}

bool Exporter::submit(std::string_view lines) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() + lines.size() > kMaxQueued)
      return false;
    queue_ += lines;
  }
  wake_.notify_one();
  return true;
}

void Exporter::hand_over() {
  if (pending_.empty())
    return;
  {
    std::lock_guard lock(mu_);
    if (queue_.size() + pending_.size() > kMaxQueued) {
      dropped_.fetch_add(pending_records_, std::memory_order_relaxed);
      unreported_drops_ += pending_records_;
    } else if (queue_.empty()) {
      queue_.swap(pending_);
    } else {
      queue_ += pending_;
    }
  }
  wake_.notify_one();
  pending_.clear();
  pending_records_ = 0;
}

void Exporter::request_reopen() {
  {
    std::lock_guard lock(mu_);
    reopen_ = true;
  }
  wake_.notify_one();
}

void Exporter::close() {
  if (!writer_.joinable())
    return;
  hand_over();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
}

bool Exporter::close_within(std::chrono::milliseconds limit) {
  if (!writer_.joinable())
    return true;
  hand_over();
  std::unique_lock lock(mu_);
  stopping_ = true;
  wake_.notify_one();
  if (!done_.wait_for(lock, limit, [this] { return finished_; }))
    return false;
  lock.unlock();
  writer_.join();
  return true;
}

ExportCounters Exporter::counters() const {
  return {records_.load(std::memory_order_relaxed), dropped_.load(std::memory_order_relaxed),
          errors_.load(std::memory_order_relaxed), rotations_.load(std::memory_order_relaxed)};
}

void Exporter::write_loop() {
  std::string batch;
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return !queue_.empty() || reopen_ || stopping_; });
    const bool reopen = std::exchange(reopen_, false);
    const uint64_t drops = unreported_drops_;
    batch.clear();
    if (drops > 0)
      writer_fmt_.append_dropped(batch, Monitor::now_ns(), drops);
    if (batch.empty())
      batch.swap(queue_);
    else
      batch += queue_;
    queue_.clear();
    const bool last = stopping_;
    lock.unlock();

    if (reopen) {
      if (std::string why = file_.reopen(); !why.empty()) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        note_problem(why + " (writing on to the file open until now)", 1);
      } else {
        log_.line("export file " + path_ + " reopened");
      }
    }
    const RotatingFile::Outcome out = file_.append(batch);
    records_.fetch_add(out.written, std::memory_order_relaxed);
    rotations_.store(file_.rotations(), std::memory_order_relaxed);
    // The export_dropped record comes first: written, those drops are told;
    // failed, it is not a record of the stream and is not counted.
    const bool told = drops > 0 && out.written > 0;
    const size_t failed = out.failed - (drops > 0 && !told ? 1 : 0);
    if (out.problems > 0) {
      errors_.fetch_add(out.problems, std::memory_order_relaxed);
      dropped_.fetch_add(failed, std::memory_order_relaxed);
      note_problem(out.error, out.problems);
    }

    lock.lock();
    if (told)
      unreported_drops_ -= drops;
    unreported_drops_ += failed;
    if (last && queue_.empty())
      break;
  }
  lock.unlock();
  file_.close();
  if (unlogged_problems_ > 0)
    log_.line("export file " + path_ + ": " + std::to_string(unlogged_problems_) +
              " more errors since the last report");
  lock.lock();
  finished_ = true;
  done_.notify_all();
}

void Exporter::note_problem(const std::string &what, size_t problems) {
  unlogged_problems_ += problems;
  const auto now = Clock::now();
  if (last_log_ != Clock::time_point{} && now - last_log_ < kLogEvery)
    return;
  last_log_ = now;
  log_.line("export file: " + what + " (" + std::to_string(unlogged_problems_) + " errors, " +
            std::to_string(dropped_.load(std::memory_order_relaxed)) +
            " records dropped since start); retrying with the next records");
  unlogged_problems_ = 0;
}

} // namespace shmbpf
