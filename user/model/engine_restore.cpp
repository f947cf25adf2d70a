// What a restart keeps: the births that tell a segment from a later one at
// the same key, and a previous run's observed creations given back to the
// segments that are still the same.
#include "model/engine.hpp"

#include <algorithm>

namespace shmbpf {

bool Engine::restore_creation(const SegmentKey &key, const Creation &c, Birth birth) {
  auto it = segs_.find(key);
  if (it == segs_.end() || !(it->second.flags & kExistedBefore) || c.pid == 0 || birth.value == 0)
    return false;
  Segment &s = it->second;
  s.flags &= static_cast<uint8_t>(~kExistedBefore);
  s.born = static_cast<int64_t>(c.created_ns);
  s.creator_pid = c.pid;
  s.creator_uid = c.uid;
  s.creator_cgroup = c.cgroup_id;
  set_creator_comm(s, c.comm);
  // No start time identifies the incarnation: a process with the same pid,
  // comm and cgroup is taken for the creator; any other gets a serial no
  // process has, so that a reused pid never passes for it.
  auto pit = procs_.find(c.pid);
  if (pit != procs_.end() && pit->second.comm == c.comm && pit->second.cgroup_id == c.cgroup_id) {
    s.creator_serial = pit->second.serial;
  } else {
    s.creator_serial = procs_.fresh_serial();
  }
  if (c.cgroup_id != 0 && !c.cgroup_path.empty() && !containers_.knows(c.cgroup_id))
    set_cgroup_path(c.cgroup_id, c.cgroup_path);
  segs_.set_birth(key, birth);
  return true;
}

std::string Engine::cgroup_path(uint64_t cgroup_id) const {
  return containers_.cgroup_path(cgroup_id);
}

} // namespace shmbpf
