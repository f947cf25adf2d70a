// A running observation: the probe plus what turns its records into
// resolved events (decoder, path resolver, mount-table refreshes). Used by
// `shmbpf trace`, the engine, and the kernel tests alike.
#pragma once

#include "decode/event.hpp"
#include "model/resolver.hpp"
#include "probe/probe.hpp"
#include "sources/namespaces.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <unordered_set>

namespace shmbpf {

struct SessionStats {
  uint64_t delivered = 0;     // events handed to the caller
  uint64_t dropped = 0;       // unlink/rename candidates not on tmpfs
  uint64_t decode_errors = 0; // records the decoder rejected
};

class Session {
public:
  using EventFn = std::function<void(Event &)>;

  // Loads the probe, reads every namespace's mounts and seeds the kernel
  // with the tmpfs files that already exist. With scan_now false, the
  // caller scans (after the probe is attached, so nothing falls between
  // the two) and hands the result to seed().
  explicit Session(const ProbeOptions &opts, bool scan_now = true);
  void seed(const std::vector<MountNamespace> &namespaces, const std::vector<TmpfsFile> &files);

  // Polls once (up to timeout_ms) and flushes per-CPU free aggregates at
  // most every 200 ms. Returns records consumed or -errno (-EINTR on signal).
  int poll(int timeout_ms, const EventFn &fn);
  // Pushes out everything pending in the kernel and delivers it.
  void drain(const EventFn &fn);

  // See Probe::forget.
  void forget(uint32_t dev, uint64_t ino) { probe_.forget(dev, ino); }
  void forget(const std::vector<std::pair<uint32_t, uint64_t>> &inodes) { probe_.forget(inodes); }
  const SessionStats &stats() const { return stats_; }
  uint64_t lost() const { return probe_.lost(); }
  const Probe &probe() const { return probe_; }
  size_t seeded() const { return seeded_; }

private:
  void handle(const void *data, size_t len, const EventFn &fn);
  void refresh_mounts(const Event &missed);

  Probe probe_;
  PathResolver resolver_;
  Event event_; // decoded into for every record
  SessionStats stats_;
  size_t seeded_ = 0;
  std::chrono::steady_clock::time_point last_flush_{};
  std::chrono::steady_clock::time_point last_refresh_{};
  // (mntns, mount id, dev) keys that already caused a rescan; see refresh_mounts().
  std::unordered_set<uint64_t> rescanned_for_;
};

} // namespace shmbpf
