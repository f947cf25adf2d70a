#include "daemon/exporter.hpp"

#include <algorithm>
#include <utility>

namespace shmbpf {

namespace {

using Clock = std::chrono::steady_clock;

} // namespace

Exporter::Exporter(RotatingFile file, const TraceClock &clock, Log &log)
    : path_(file.path()), clock_(clock), log_(log),
      pending_(clock, kHandOverAt + 4096), out_{std::move(file), ExportFormatter(clock)} {
  writer_ = std::thread([this] { write_loop(); });
}

Exporter::~Exporter() { close(); }

void Exporter::event(const Event &e, const Engine &engine) {
  pending_.event(e, engine);
  if (pending_.text().size() >= kHandOverAt)
    hand_over();
}

void Exporter::reaped(const std::vector<ReapOutcome> &outcomes, std::string_view by,
                      uint32_t by_pid) {
  pending_.reaped(outcomes, by, by_pid);
  hand_over();
}

void Exporter::after_poll(const Monitor &mon, bool last) {
  pending_.after_poll(mon, last);
  hand_over();
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
  if (pending_.text().empty())
    return;
  {
    std::lock_guard lock(mu_);
    if (queue_.size() + pending_.text().size() > kMaxQueued) {
      counters_.dropped.fetch_add(pending_.count(), std::memory_order_relaxed);
      unreported_drops_ += pending_.count();
      pending_.clear();
    } else {
      pending_.move_to(queue_);
    }
  }
  wake_.notify_one();
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
  return {counters_.records.load(std::memory_order_relaxed),
          counters_.dropped.load(std::memory_order_relaxed),
          counters_.errors.load(std::memory_order_relaxed),
          counters_.rotations.load(std::memory_order_relaxed)};
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
      out_.fmt.append_dropped(batch, Monitor::now_ns(), drops);
    if (batch.empty())
      batch.swap(queue_);
    else
      batch += queue_;
    queue_.clear();
    const bool last = stopping_;
    lock.unlock();

    if (reopen) {
      if (std::string why = out_.file.reopen(); !why.empty()) {
        counters_.errors.fetch_add(1, std::memory_order_relaxed);
        note_problem(why + " (writing on to the file open until now)", 1);
      } else {
        log_.info("export file " + path_ + " reopened");
      }
    }
    const RotatingFile::Outcome out = out_.file.append(batch);
    counters_.records.fetch_add(out.written, std::memory_order_relaxed);
    counters_.rotations.store(out_.file.rotations(), std::memory_order_relaxed);
    // The export_dropped record comes first: written, those drops are told;
    // failed, it is not a record of the stream and is not counted.
    const bool told = drops > 0 && out.written > 0;
    const size_t failed = out.failed - (drops > 0 && !told ? 1 : 0);
    if (out.problems > 0) {
      counters_.errors.fetch_add(out.problems, std::memory_order_relaxed);
      counters_.dropped.fetch_add(failed, std::memory_order_relaxed);
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
  out_.file.close();
  if (out_.unlogged_problems > 0)
    log_.error("export file " + path_ + ": " + std::to_string(out_.unlogged_problems) +
               " more errors since the last report");
  lock.lock();
  finished_ = true;
  done_.notify_all();
}

void Exporter::note_problem(const std::string &what, size_t problems) {
  out_.unlogged_problems += problems;
  const auto now = Clock::now();
  if (out_.last_log != Clock::time_point{} && now - out_.last_log < kLogEvery)
    return;
  out_.last_log = now;
  log_.error("export file: " + what + " (" + std::to_string(out_.unlogged_problems) + " errors, " +
             std::to_string(counters_.dropped.load(std::memory_order_relaxed)) +
             " records dropped since start); retrying with the next records");
  out_.unlogged_problems = 0;
}

} // namespace shmbpf
