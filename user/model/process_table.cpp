#include "model/process_table.hpp"

#include "facts/scan.hpp"

#include <algorithm>

namespace shmbpf {

ProcessTable::Process &ProcessTable::touch(const Event &e) {
  const bool seen = procs_.contains(e.pid);
  Process &p = entry(e.pid);
  if (!e.comm.empty())
    p.comm = e.comm;
  p.uid = e.uid;
  p.ppid = e.ppid;
  if (!seen && e.ppid != 0) {
    if (auto parent = procs_.find(e.ppid);
        parent != procs_.end() && is_path_cgroup_id(parent->second.cgroup_id))
      p.cgroup_id = parent->second.cgroup_id;
  }
  if (e.cgroup_id && !is_path_cgroup_id(p.cgroup_id))
    p.cgroup_id = e.cgroup_id;
  if (e.mntns)
    p.mntns = e.mntns;
  if (e.ipcns)
    p.ipcns = e.ipcns;
  return p;
}

void ProcessTable::forget_hold(uint32_t pid, const SegmentKey &key) {
  auto it = procs_.find(pid);
  if (it == procs_.end())
    return;
  // A key is held at most once; recent holds are at the back.
  auto &held = it->second.held;
  for (size_t i = held.size(); i-- > 0;) {
    if (held[i].key == key) {
      held[i] = held.back();
      held.pop_back();
      break;
    }
  }
  std::erase_if(it->second.attachments, [&](const Attachment &a) { return a.key == key; });
}

} // namespace shmbpf
