// A running observation: the probe plus what turns its records into
// resolved events (decoder, path resolver, mount-table refreshes). Used by
// `shmbpf trace`, the engine, and the kernel tests alike.
#pragma once

#include "decode/event.hpp"
#include "live/oom_reads.hpp"
#include "model/resolver.hpp"
#include "probe/probe.hpp"
#include "sources/system_scan.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <unordered_map>
#include <unordered_set>

namespace shmbpf {

struct SessionStats {
  uint64_t delivered = 0;     // events handed to the caller
  uint64_t dropped = 0;       // unlink/rename/link candidates not on tmpfs
  uint64_t decode_errors = 0; // records the decoder rejected
};

class Session {
public:
  using EventFn = std::function<void(Event &)>;

  // Loads the probe while the tmpfs files that exist are listed, seeds the
  // kernel's name table with them in place (nothing else writes
  // it before attach), attaches, and lists again: what changed in between
  // is seeded file by file, as the kernel does.
  explicit Session(const ProbeOptions &opts);
  // The same with the caller's listing (made while the probe loads; get()
  // is called once it has loaded), and no second listing: the caller seeds
  // what it lists once attached.
  Session(const ProbeOptions &opts, std::future<std::vector<SeedKey>> listing);
  // Seeds the kernel with files listed (list_filesystems) or scanned
  // (seed_key) once attached: the first call only with what the listing
  // before attach did not have.
  void seed(const std::vector<MountNamespace> &namespaces, std::vector<SeedKey> listing);

  // Polls once (up to timeout_ms) and flushes per-CPU free aggregates at
  // most every 200 ms. Returns records consumed or -errno (-EINTR on signal).
  int poll(int timeout_ms, const EventFn &fn);
  // Waits up to timeout_ms for records without reading them (Probe::wait).
  int wait(int timeout_ms) { return probe_.wait(timeout_ms); }
  // Pushes out everything pending in the kernel and delivers it.
  void drain(const EventFn &fn);

  const SessionStats &stats() const { return stats_; }
  uint64_t lost() const { return probe_.lost(); }
  const Probe &probe() const { return probe_; }
  size_t seeded() const { return seeded_; }

private:
  Session(const ProbeOptions &opts, bool scan_now, std::future<std::vector<SeedKey>> listing);
  void seed_keys_of(std::vector<SeedKey> files);
  void finish_seed(const std::vector<MountNamespace> &namespaces);
  void handle(const void *data, size_t len, const EventFn &fn);
  void refresh_mounts(const Event &missed);
  // Reads the mount table of e's namespace again, from e's process or, when
  // it has ended, from any process still there (every namespace, at most
  // every 250 ms), unless it was read so for a file of dev in the last
  // 250 ms.
  bool reread_namespace(const Event &e, uint32_t dev);
  // e's namespace's mount table from e's process (in that namespace); false
  // when it could not be read.
  bool read_caller_namespace(const Event &e);
  // Every namespace's mount table, through any process in each; whether
  // mntns was among them.
  bool read_every_namespace(uint32_t mntns);

  Probe probe_;
  PathResolver resolver_;
  OomMemory oom_memory_; // an OOM kill's memory cgroup, read as its record comes
  Event event_;          // decoded into for every record
  SessionStats stats_;
  size_t seeded_ = 0;
  // What the listing before attach seeded, until the first seed() after
  // attach: every file, sorted, and the file each name went in with.
  std::vector<SeedKey> pre_files_;
  std::vector<SeedKey> pre_names_; // by hash
  bool pre_listed_ = false;
  std::chrono::steady_clock::time_point last_flush_{};
  std::chrono::steady_clock::time_point last_refresh_{};
  // When reread_namespace last read a namespace for a filesystem: by mntns
  // in the high 32 bits, dev in the low.
  std::unordered_map<uint64_t, std::chrono::steady_clock::time_point> reread_;
  // (mntns, mount id, dev) keys that already caused a rescan; see refresh_mounts().
  std::unordered_set<uint64_t> rescanned_for_;
};

} // namespace shmbpf
