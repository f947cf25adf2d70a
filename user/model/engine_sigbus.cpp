// The Engine's SIGBUS queries: faults with their container, and their
// counts by container and mountpoint (model/bus_errors.hpp keeps them).
#include "model/engine.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf {

BusError Engine::with_container(BusError b) const {
  if (const ContainerRef *c = container_of(b.cgroup_id))
    b.container = *c;
  return b;
}

std::vector<BusError> Engine::sigbus_since(uint64_t since_ns) const {
  std::vector<BusError> out;
  for (const BusError &b : bus_errors_.recent())
    if (b.ts_ns >= since_ns)
      out.push_back(with_container(b));
  return out;
}

std::vector<SigbusGroup> Engine::sigbus_groups() const {
  std::map<std::pair<std::string, std::string>, SigbusGroup> groups;
  groups[{"", ""}] = SigbusGroup{};
  for (const auto &[key, count] : bus_errors_.counts()) {
    const auto &[mountpoint, cgroup] = key;
    const ContainerRef *c = container_of(cgroup);
    SigbusGroup &g = groups[{c ? c->id : std::string(), mountpoint}];
    if (c)
      g.container = *c;
    g.mountpoint = mountpoint;
    g.count += count;
  }
  std::vector<SigbusGroup> out;
  out.reserve(groups.size());
  for (auto &[key, g] : groups)
    out.push_back(std::move(g));
  return out;
}

} // namespace shmbpf
