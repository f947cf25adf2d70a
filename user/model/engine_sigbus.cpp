// The Engine's SIGBUS and no-space queries: faults with their container,
// and both failures' counts by container and mountpoint.
#include "model/engine.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf {

std::vector<BusError> Engine::sigbus_since(uint64_t since_ns) const {
  std::vector<BusError> out;
  for (const BusError &b : failures_.bus_errors().recent())
    if (b.ts_ns >= since_ns)
      out.push_back(with_container(b));
  return out;
}

std::vector<FailureGroup> Engine::sigbus_groups() const {
  return groups_of(failures_.bus_errors().counts());
}

std::vector<FailureGroup> Engine::nospace_groups() const {
  return groups_of(failures_.nospace_counts());
}

std::vector<FailureGroup> Engine::groups_of(const FailureCounts &counts) const {
  std::map<std::pair<std::string, std::string>, FailureGroup> groups;
  groups[{"", ""}] = FailureGroup{};
  for (const auto &[key, count] : counts) {
    const auto &[mountpoint, cgroup] = key;
    const ContainerRef *c = container_of(cgroup);
    FailureGroup &g = groups[{c ? c->id : std::string(), mountpoint}];
    if (c)
      g.container = *c;
    g.mountpoint = mountpoint;
    g.count += count;
  }
  std::vector<FailureGroup> out;
  out.reserve(groups.size());
  for (auto &[key, g] : groups)
    out.push_back(std::move(g));
  return out;
}

std::string Engine::failure_mountpoint(const Event &e) const {
  std::string mp = mountpoint_of(false, e.mnt_id, e.dev);
  const std::string &full = e.full_path;
  if (full.empty() || mp == "/" || (!mp.empty() && full.starts_with(mp + "/")))
    return mp;
  // A mount made since the engine's last look at the mount table, under a
  // reused id and device (containers come and go): the resolver's path is
  // the new mount's, its mountpoint joined to the file's name there.
  const std::string &name = e.name;
  if (name.starts_with('/') && name.size() < full.size() && full.ends_with(name))
    return full.substr(0, full.size() - name.size());
  return mp;
}

void Engine::count_nospace(const Event &e) {
  failures_.record_nospace(e.dev, e.kind == Kind::tmpfs ? failure_mountpoint(e) : std::string(),
                           e.cgroup_id);
}

void Engine::on_nospace(const Event &e) {
  // A create whose mount was not found has no device.
  if (e.dev == 0) {
    ++stats_.ignored;
    return;
  }
  count_nospace(e);
}

} // namespace shmbpf
