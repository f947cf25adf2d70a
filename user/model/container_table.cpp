#include "model/container_table.hpp"

#include <utility>

namespace shmbpf {

namespace {

void attach_name(ContainerRef &c, const ContainerName &n) {
  c.name = n.name;
  c.pod = n.pod;
  c.pod_namespace = n.pod_namespace;
  if (c.pod_uid.empty())
    c.pod_uid = n.pod_uid;
}

} // namespace

void ContainerTable::set_cgroup_path(uint64_t cgroup_id, std::string path) {
  auto container = container_from_cgroup_path(path);
  if (container) {
    if (auto n = names_.find(container->id); n != names_.end())
      attach_name(*container, n->second);
    else
      unnamed_.try_emplace(container->id, *container);
  }
  cgroups_[cgroup_id] = Cgroup{std::move(path), std::move(container)};
}

void ContainerTable::set_container_name(const std::string &id, const ContainerName &name) {
  names_[id] = name;
  unnamed_.erase(id);
  for (auto &[cg, entry] : cgroups_)
    if (entry.container && entry.container->id == id)
      attach_name(*entry.container, name);
}

std::string ContainerTable::cgroup_path(uint64_t cgroup_id) const {
  auto it = cgroups_.find(cgroup_id);
  return it == cgroups_.end() ? std::string() : it->second.path;
}

const ContainerRef *ContainerTable::container_of(uint64_t cgroup_id) const {
  auto it = cgroups_.find(cgroup_id);
  if (it == cgroups_.end() || !it->second.container)
    return nullptr;
  return &*it->second.container;
}

ContainerRef ContainerTable::pod_of(const std::string &uid) const {
  ContainerRef pod{uid, "kubernetes", uid};
  for (const auto &[cg, entry] : cgroups_)
    if (entry.container && entry.container->pod_uid == uid && !entry.container->pod.empty()) {
      pod.pod = entry.container->pod;
      pod.pod_namespace = entry.container->pod_namespace;
      break;
    }
  return pod;
}

std::vector<ContainerRef> ContainerTable::unnamed() const {
  std::vector<ContainerRef> out;
  out.reserve(unnamed_.size());
  for (const auto &[id, c] : unnamed_)
    out.push_back(c);
  return out;
}

std::vector<std::pair<ContainerRef, CgroupMemory>> ContainerTable::memory_by_container() const {
  std::map<std::string, const ContainerRef *> refs;
  for (const auto &[cgroup, c] : cgroups_)
    if (c.container)
      refs.emplace(c.container->id, &*c.container);
  std::map<std::string, std::pair<ContainerRef, CgroupMemory>> sorted;
  for (const auto &[id, m] : memory_) {
    auto it = refs.find(id);
    ContainerRef ref = it != refs.end() ? *it->second : ContainerRef{id, "", ""};
    if (id.empty())
      ref = ContainerRef{};
    sorted.emplace(id, std::make_pair(std::move(ref), m));
  }
  std::vector<std::pair<ContainerRef, CgroupMemory>> out;
  out.reserve(sorted.size());
  for (auto &[id, row] : sorted)
    out.push_back(std::move(row));
  return out;
}

void ContainerTable::set_memory(const std::string &id, std::optional<CgroupMemory> memory) {
  if (memory)
    memory_[id] = *memory;
  else
    memory_.erase(id);
}

} // namespace shmbpf
