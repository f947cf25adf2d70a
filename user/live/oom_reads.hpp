// What is read the moment an OOM kill's record comes, before the victim's
// memory is gone: its memory cgroup (what was charged to it, how much of
// that was shared memory, its limit; the session's), and the pages of the
// largest files charged to it (the monitor's: faults fill files without
// an event). The victim's cgroup is found through the victim (its /proc
// entry lives until it is reaped), else through the task whose charge
// failed (in a cgroup's OOM, one of that cgroup), else by that task's
// memory cgroup id in the hierarchy. Each is read a few times a second at
// most (ReadBudget), the walk of the hierarchy fewer and over a bounded
// number of directories: a process that makes itself OOM-killed over and
// over, in new cgroups it may make (delegation), cannot make the consumer
// read files or walk the tree for each kill.
#pragma once

#include "decode/event.hpp"
#include "facts/mounts.hpp"
#include "model/engine.hpp"
#include "sources/cgroup.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace shmbpf {

// The reads' budget: at most per_second in any second (a window that
// restarts at the first read past the last one's second).
class ReadBudget {
public:
  static constexpr uint32_t kPerSecond = 16;
  explicit ReadBudget(uint32_t per_second = kPerSecond) : per_second_(per_second) {}
  // Whether a read may happen at now_ns (CLOCK_BOOTTIME), counting it.
  bool take(uint64_t now_ns);

private:
  uint32_t per_second_;
  uint64_t window_start_ns_ = 0;
  uint32_t used_ = 0;
  bool started_ = false;
};

class OomMemory {
public:
  // Fills e.memcg for an oom event, when the budget allows and the cgroup
  // can be read.
  void fill(Event &e);

private:
  // Through pid's /proc entry, when it leads below the hierarchy's root
  // and (memcg_id not 0) to memcg_id's directory.
  std::optional<CgroupMemory> read_through(uint32_t pid, uint64_t memcg_id);
  // By the charging task's memory cgroup id, when no process leads there
  // any more (the victim was reaped); the last few found are kept.
  std::optional<CgroupMemory> read_by_id(uint64_t memcg_id, uint64_t now_ns);

  ReadBudget budget_;
  // Walks of the memory hierarchy for an id: two a second, over at most
  // kWalkDirs directories each (a node's pods and slices are far fewer).
  static constexpr uint32_t kWalksPerSecond = 2;
  static constexpr size_t kWalkDirs = 8192;
  ReadBudget walk_budget_{kWalksPerSecond};
  static constexpr size_t kKnownDirs = 16;
  std::deque<std::pair<uint64_t, MemoryCgroupDirs>> known_dirs_;
  // shmbpf's own mount table, where the cgroup hierarchies are found; read
  // at the first kill, and again when it found none.
  std::vector<MountInfo> mounts_;
};

class OomFiles {
public:
  static constexpr size_t kFiles = 8;
  // Before engine applies e (an oom event): the kFiles largest files of
  // its cgroup (Engine::oom_candidates) stat'ed again, their usage set.
  void recount(const Event &e, Engine &engine);

private:
  ReadBudget budget_;
};

} // namespace shmbpf
