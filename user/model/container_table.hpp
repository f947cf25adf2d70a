// The engine's cgroups and containers: what each cgroup id is (its path and
// the container it belongs to, if any), the names the runtimes' files give
// containers, which containers still wait for one, and what each one's
// memory cgroup held when last read (and each pod's, and the host's
// top-level cgroups'). Pure: the Engine
// fills it from the cgroup resolver and the runtimes' names.
#pragma once

#include "facts/container_name.hpp"
#include "facts/memory_cgroup.hpp"
#include "model/containers.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shmbpf {

class ContainerTable {
public:
  // What cgroup id is: its path, and the container that path tells (named
  // at once when its name is known, else waiting in unnamed()).
  void set_cgroup_path(uint64_t cgroup_id, std::string path);
  // A container's name as its runtime's files give it (an empty name is
  // kept too, so that a container without files is not looked up again).
  void set_container_name(const std::string &id, const ContainerName &name);

  bool knows(uint64_t cgroup_id) const { return cgroups_.contains(cgroup_id); }
  // The path set_cgroup_path gave an id ("" if none).
  std::string cgroup_path(uint64_t cgroup_id) const;
  // nullopt while the cgroup is not described, else its container, nullptr
  // for the host. One lookup.
  std::optional<const ContainerRef *> cgroup_container(uint64_t cgroup_id) const {
    auto it = cgroups_.find(cgroup_id);
    if (it == cgroups_.end())
      return std::nullopt;
    return it->second.container ? &*it->second.container : nullptr;
  }
  // The container of a cgroup; nullptr for the host and unknown cgroups.
  const ContainerRef *container_of(uint64_t cgroup_id) const;
  // A pod as the owner of its emptyDir volumes: its uid, and its name and
  // namespace if one of its containers has been named.
  ContainerRef pod_of(const std::string &uid) const;
  // Containers found and not named yet, by id.
  std::vector<ContainerRef> unnamed() const;

  // A container's memory cgroup as last read (id "": the host, the
  // machine's memory); nullopt forgets it (its cgroup is gone).
  void set_memory(const std::string &id, std::optional<CgroupMemory> memory);
  const CgroupMemory *memory(const std::string &id) const {
    auto it = memory_.find(id);
    return it == memory_.end() ? nullptr : &it->second;
  }
  // Every container's memory as read, with the container (the host's
  // first, with an empty id), by id.
  std::vector<std::pair<ContainerRef, CgroupMemory>> memory_by_container() const;
  // Each pod's own memory cgroup as last read, by pod uid: what its
  // memory-backed emptyDir volumes are charged under. Replaces what was.
  void set_pod_memory(std::unordered_map<std::string, CgroupMemory> pods) {
    pod_memory_ = std::move(pods);
  }
  const CgroupMemory *pod_memory(const std::string &uid) const {
    auto it = pod_memory_.find(uid);
    return it == pod_memory_.end() ? nullptr : &it->second;
  }
  // The host's top-level cgroups as last read, by path. Replaces what was.
  void set_host_cgroups(std::vector<NamedCgroupMemory> cgroups) {
    host_cgroups_ = std::move(cgroups);
  }
  const std::vector<NamedCgroupMemory> &host_cgroups() const { return host_cgroups_; }

private:
  struct Cgroup {
    std::string path;
    std::optional<ContainerRef> container;
  };

  std::unordered_map<uint64_t, Cgroup> cgroups_;
  std::unordered_map<std::string, ContainerName> names_;     // by container id
  std::map<std::string, ContainerRef> unnamed_;              // by container id
  std::unordered_map<std::string, CgroupMemory> memory_;     // by container id
  std::unordered_map<std::string, CgroupMemory> pod_memory_; // by pod uid
  std::vector<NamedCgroupMemory> host_cgroups_;
};

} // namespace shmbpf
