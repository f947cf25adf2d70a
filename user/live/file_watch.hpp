// What the live model's samples read again because no event reports it
// (live/monitor): the pages that writes and faults add to a file, and the
// closes and munmaps of its holders (hooking every close would tax
// unrelated work). Files touched by recent events are re-stat'ed at their
// path, and the processes that touched them, or held a file when it was
// unlinked, have their fds and mappings rescanned. Both bounded, taken in
// turns; what does not fit waits for the periodic rescan. Pure: the reads
// themselves are the worker's.
#pragma once

#include "decode/event.hpp"
#include "model/engine.hpp"
#include "sources/namespaces.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace shmbpf {

// A file to re-stat, and what the stat found.
struct StatJob {
  SegmentKey key;
  std::string path; // as process pid saw it
  uint32_t pid = 0;
  // Another process of pid's mount namespace, for when pid has exited (a
  // short-lived writer in a container's own /dev/shm); 0 if none known.
  uint32_t other_pid = 0;
  bool found = false;
  uint64_t size = 0;
  uint64_t bytes = 0;
};

// A process whose fds and mappings are rescanned, and what it holds.
struct HolderJob {
  uint32_t pid = 0;
  bool alive = true;
  std::vector<SegmentKey> files; // its tmpfs files, by fd or mapping
};

class FileWatch {
public:
  // Per sample, at most: files re-stat'ed, processes rescanned.
  static constexpr size_t kMaxStats = 8192;
  static constexpr size_t kMaxPids = 256;
  // Unlinked files whose holders are rescanned before the next sample: a
  // rescan destroys those closed meanwhile, which takes the consumer about
  // a microsecond each (a process may create and unlink 40,000 a second).
  static constexpr size_t kUnlinkedBatch = 4096;
  // A file is re-stat'ed while held and for a minute after its last event
  // (a writer that closed it may have filled it just before); a process is
  // rescanned while it holds tmpfs files and for a minute after its last
  // event.
  static constexpr uint64_t kLingerNs = 60'000'000'000;

  // Each event, once the engine applied it.
  void saw(const Event &e, const Engine &engine);
  // Enough unlinked files wait for their holders' rescan to do it now.
  bool unlinked_due() const { return unlinked_held_ >= kUnlinkedBatch; }

  // A sample's files to re-stat, through a process of their mount
  // namespace (namespaces: the last walk's).
  std::vector<StatJob> stat_jobs(const Engine &engine, uint64_t now_ns,
                                 const std::vector<MountNamespace> &namespaces);
  // A sample's processes to rescan: those that touched files lately.
  std::vector<HolderJob> sample_holder_jobs();
  // Those that held files when they were unlinked, only.
  std::vector<HolderJob> unlinked_holder_jobs();

  // A file a stat did not find at its path: unlinked or renamed unseen.
  void missed(SegmentKey key, const Engine &engine);
  // A rescanned process: gone, or holding tmpfs files or not.
  void rescanned(const HolderJob &job);
  // Processes neither holding nor touching anything for a minute.
  void expire(uint64_t now_ns);

private:
  void recheck_holders_of(SegmentKey key, const Engine &engine);
  std::vector<HolderJob> holder_jobs(std::vector<uint32_t> pids);

  // File events are only logged here, and go into watched_ at the next
  // sample if the file is still linked then: most files a fast producer
  // makes are unlinked by then.
  struct Touched {
    SegmentKey key;
    uint32_t pid = 0;
    uint32_t mntns = 0;
    uint64_t ts_ns = 0;
  };
  std::vector<Touched> touched_;
  struct Watched {
    uint32_t pid = 0;   // whose root the path is under
    uint32_t mntns = 0; // its mount namespace
    uint64_t last_event_ns = 0;
  };
  std::unordered_map<SegmentKey, Watched, SegmentKeyHash> watched_;
  struct RecentPid {
    uint64_t last_event_ns = 0;
    bool holds = true;     // tmpfs files, at its last rescan
    uint32_t unlinked = 0; // files it held when they were unlinked, since
  };
  std::unordered_map<uint32_t, RecentPid> recent_pids_;
  // Sum of RecentPid::unlinked: files that a rescan of their holders may
  // destroy. Rescanned in batches, so that no apply destroys too many at once.
  size_t unlinked_held_ = 0;
  RecentPid *last_pid_ = nullptr; // events come in runs from one process
  uint32_t last_pid_id_ = 0;
  size_t stat_cursor_ = 0;
  size_t holder_cursor_ = 0;
};

} // namespace shmbpf
