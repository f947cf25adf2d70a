// The records of `shmbpf serve --export-file` (docs/EVENTS.md, "The export
// file"): every event in trace --json's schema plus its container, the
// kernel's losses, and orphans as they appear and go. NDJSON lines; pure.
#pragma once

#include "decode/event.hpp"
#include "model/engine.hpp"
#include "model/reap.hpp"
#include "views/trace_view.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shmbpf {

class ExportFormatter {
public:
  explicit ExportFormatter(const TraceClock &clock) : trace_(clock) {}

  // Each appends one line, '\n' included.
  // An event as trace --json writes it, plus the container of its cgroup:
  // container is nullopt while the engine has not resolved that cgroup
  // (container_known false), nullptr on the host. An oom event's record
  // also says what the model recorded of the kill (kill, when given).
  void append_event(std::string &out, const Event &e, std::optional<const ContainerRef *> container,
                    const OomKill *kill = nullptr);
  // count records the kernel could not deliver since the last such record
  // (total since start); at ts_ns, CLOCK_BOOTTIME.
  void append_lost(std::string &out, uint64_t ts_ns, uint64_t count, uint64_t total);
  // Records the export itself could not write (its queue was full or the
  // file could not be written), noted once it writes again.
  void append_dropped(std::string &out, uint64_t ts_ns, uint64_t count);
  // A segment that has just become an orphan (as Engine::orphans), or one
  // that no longer is: exists says whether it is still there (held again)
  // or was removed.
  void append_orphan(std::string &out, uint64_t ts_ns, const SegmentInfo &s);
  void append_orphan_gone(std::string &out, uint64_t ts_ns, const SegmentInfo &s, bool exists);
  // A removal by reap (status freed), or one it skipped or found gone:
  // the segment, its bytes, age, creator and container, the reason. by
  // says who reaped: "serve" (serve --reap) or "reap" (the command, whose
  // pid is by_pid).
  void append_reap(std::string &out, uint64_t ts_ns, const ReapOutcome &o, std::string_view by,
                   uint32_t by_pid);

private:
  TraceFormatter trace_;
};

// Which orphans are new and which are gone since the last look (orphans
// as Engine::orphans defines them: shared memory only, so the ordinary
// files of /run and /tmp never reach the export).
class OrphanWatch {
public:
  struct Changes {
    std::vector<SegmentInfo> appeared; // largest first, as Engine::orphans
    std::vector<SegmentInfo> gone;     // as last seen, by key
  };
  // orphans: Engine::orphans() now. The first call reports every orphan
  // that exists.
  Changes update(const std::vector<Orphan> &orphans);
  size_t size() const { return seen_.size(); }

private:
  std::unordered_map<SegmentKey, SegmentInfo, SegmentKeyHash> seen_;
};

} // namespace shmbpf
