// What failed for lack of memory: SIGBUS faults (BusErrorLog), writes,
// resizes and creates that found no space (ENOSPC, EDQUOT), by filesystem
// and by what an exporter labels them with, and OOM kills (OomKillLog).
// Pure: the Engine records them from events and resolves their containers
// when read.
#pragma once

#include "model/bus_errors.hpp"
#include "model/oom_kills.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>

namespace shmbpf {

class FailureLog {
public:
  void record_sigbus(BusError b) { bus_errors_.record(std::move(b)); }
  void record_oom(OomKill k) { oom_kills_.record(std::move(k)); }
  // Every exit: a recent kill's victim takes its name from it.
  void saw_exit(const Event &e) { oom_kills_.saw_exit(e.pid, e.comm, e.ts_ns); }
  // A failure for lack of space on filesystem dev, of a file shown under
  // mountpoint ("" for memfds and unknown mounts), by a process of cgroup.
  void record_nospace(uint32_t dev, std::string mountpoint, uint64_t cgroup_id);

  const BusErrorLog &bus_errors() const { return bus_errors_; }
  const OomKillLog &oom_kills() const { return oom_kills_; }
  // No-space failures by (mountpoint, cgroup id), and on one filesystem.
  const FailureCounts &nospace_counts() const { return nospace_counts_; }
  uint64_t nospace_on(uint32_t dev) const;

private:
  BusErrorLog bus_errors_;
  OomKillLog oom_kills_;
  FailureCounts nospace_counts_;
  std::unordered_map<uint32_t, uint64_t> nospace_by_dev_;
};

} // namespace shmbpf
