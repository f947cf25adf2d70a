#include "model/process_table.hpp"

#include "facts/scan.hpp"

#include <algorithm>

namespace shmbpf {

uint32_t ProcessTable::fresh_serial() {
  if (++next_serial_ == 0)
    ++next_serial_; // 0 means "any incarnation"
  return next_serial_;
}

ProcessTable::Process &ProcessTable::entry(uint32_t pid) {
  auto [it, inserted] = procs_.try_emplace(pid);
  if (inserted)
    it->second.serial = fresh_serial();
  return it->second;
}

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

bool ProcessTable::alive(uint32_t pid, uint32_t serial) const {
  auto it = procs_.find(pid);
  return it != procs_.end() && (serial == 0 || it->second.serial == serial);
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
