#include "live/container_names.hpp"

#include "sources/runtime_discovery.hpp"

#include <unordered_set>

namespace shmbpf {

std::vector<std::pair<std::string, ContainerName>>
read_container_names(const RuntimeRoots &given, const std::vector<ContainerRef> &containers) {
  std::vector<std::pair<std::string, ContainerName>> out;
  if (containers.empty())
    return out;
  // Where the runtimes keep their files now: a daemon may have started,
  // or moved, since the last containers were named.
  const RuntimeRoots roots = with_discovered(given);
  std::unordered_set<std::string> seen;
  for (const ContainerRef &c : containers)
    if (seen.insert(c.id).second)
      out.emplace_back(c.id, read_container_name(roots, c.runtime, c.id, c.pod_uid));
  return out;
}

void name_containers(Engine &engine, const RuntimeRoots &roots) {
  for (const auto &[id, name] : read_container_names(roots, engine.unnamed_containers()))
    engine.set_container_name(id, name);
}

} // namespace shmbpf
