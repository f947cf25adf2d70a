// The engine's processes: each known pid with what it holds and has
// attached, its cgroup and namespaces, and an incarnation serial, so that
// a reused pid is never taken for the process that had it before. Pure:
// the Engine keeps the holds in step with its segments.
#pragma once

#include "decode/event.hpp"
#include "model/rate_counter.hpp"
#include "model/types.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace shmbpf {

class ProcessTable {
public:
  struct Held {
    SegmentKey key;
    bool keep_on_exec = true; // an fd without O_CLOEXEC may survive exec
  };
  struct Attachment {
    uint64_t addr = 0;
    SegmentKey key;
  };
  struct Process {
    uint32_t serial = 0; // this incarnation's, never 0
    uint32_t ppid = 0;
    uint32_t uid = 0;
    uint32_t mntns = 0;
    uint32_t ipcns = 0;
    uint64_t cgroup_id = 0;
    std::string comm;
    std::vector<Held> held; // each key at most once, kept exact
    std::vector<Attachment> attachments;
    RateCounter creates;
    RateCounter unlinks;
    uint64_t sigbus = 0;
  };
  using Map = std::unordered_map<uint32_t, Process>;

  // The process with pid; a new one (a serial of its own) when unknown.
  Process &entry(uint32_t pid) {
    auto [it, inserted] = procs_.try_emplace(pid);
    if (inserted)
      it->second.serial = fresh_serial();
    return it->second;
  }
  // The process an event's header describes, made or updated from it: its
  // comm, uid, parent, namespaces and cgroup. On a cgroup v1-only host a
  // scan's path-made cgroup id tells the container where the kernel's v2 id
  // (the v2 root's) would hide it: it is kept over the event's, and a
  // process no scan has seen yet takes its parent's (it started in its
  // parent's cgroups; one that moves itself after the fork, as runc does,
  // stays where its parent was until the next rescan).
  Process &touch(const Event &e);
  // A serial no process has had: for a creator known only by its pid,
  // comm and cgroup, so that no later process passes for it.
  uint32_t fresh_serial() {
    if (++next_serial_ == 0)
      ++next_serial_; // 0 means "any incarnation"
    return next_serial_;
  }
  // Whether pid is known, as incarnation serial (0: any).
  bool alive(uint32_t pid, uint32_t serial) const {
    auto it = procs_.find(pid);
    return it != procs_.end() && (serial == 0 || it->second.serial == serial);
  }
  // key is no longer among pid's holds and attachments.
  void forget_hold(uint32_t pid, const SegmentKey &key);

  Map::iterator find(uint32_t pid) { return procs_.find(pid); }
  Map::const_iterator find(uint32_t pid) const { return procs_.find(pid); }
  Map::iterator end() { return procs_.end(); }
  Map::const_iterator end() const { return procs_.end(); }
  Map::const_iterator begin() const { return procs_.begin(); }
  bool contains(uint32_t pid) const { return procs_.contains(pid); }
  size_t size() const { return procs_.size(); }
  void erase(Map::iterator it) { procs_.erase(it); }

private:
  Map procs_;
  uint32_t next_serial_ = 0;
};

} // namespace shmbpf
