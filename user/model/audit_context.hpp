// The facts of an AuditScan indexed the ways the audit's rules look them
// up: each process with its container, containers by id, mount namespaces
// and who lives in them, the host's /dev/shm, shared-memory mounts by
// superblock, programs by pid. Pure, like the rules (model/audit.cpp).
#pragma once

#include "facts/audit.hpp"
#include "model/containers.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shmbpf {

// Only the mounts a shared-memory user means: /dev/shm (and the /run/shm
// some distributions keep), and memory-backed Kubernetes emptyDir volumes,
// found by the superblock the kubelet mounted for the pod.
inline bool is_shm_mountpoint(std::string_view mp) { return mp == "/dev/shm" || mp == "/run/shm"; }

// The facts indexed the ways the rules look them up.
class AuditContext {
public:
  explicit AuditContext(const AuditScan &scan) : scan_(scan) {
    std::unordered_map<std::string, const ContainerName *> names;
    for (const auto &[id, name] : scan.names)
      names.emplace(id, &name);
    for (const auto &[id, limit] : scan.memory_limits)
      limits_.emplace(id, limit);
    for (const ExeFile &e : scan.exes)
      exes_.emplace(e.pid, &e);
    for (const MountNamespace &ns : scan.system.namespaces)
      namespaces_.emplace(ns.mntns, &ns);

    procs_.reserve(scan.system.processes.size());
    for (const ScannedProcess &p : scan.system.processes) {
      std::optional<ContainerRef> c = container_from_cgroup_path(p.id.cgroup_path);
      if (c) {
        if (auto it = names.find(c->id); it != names.end()) {
          c->name = it->second->name;
          c->pod = it->second->pod;
          c->pod_namespace = it->second->pod_namespace;
          if (c->pod_uid.empty())
            c->pod_uid = it->second->pod_uid;
        }
        containers_.try_emplace(c->id, *c);
      }
      procs_.push_back({&p, std::move(c)});
    }
    for (const Proc &p : procs_) {
      if (p.container)
        container_mntns_[p.proc->id.mntns].insert(p.container->id);
      else
        host_mntns_.insert(p.proc->id.mntns);
    }
    host_mntns_.insert(scan.host.mntns);

    // The host's /dev/shm, and the superblocks of memory-backed emptyDir
    // volumes as the host mounts them.
    if (auto it = namespaces_.find(scan.host.mntns); it != namespaces_.end()) {
      for (const MountInfo &m : it->second->mounts) {
        if (!m.is_tmpfs() || is_overmounted(it->second->mounts, m))
          continue;
        if (m.mountpoint == "/dev/shm")
          host_shm_dev_ = m.dev;
        if (pod_uid_of_volume(m.mountpoint))
          emptydir_devs_.insert(m.dev);
      }
    }
    learn_mounts(scan.system.namespaces);
  }

  // Tables read now: what they show of a device replaces what was known of
  // it, since a device number goes to the next mount once one ends.
  void learn_mounts(const std::vector<MountNamespace> &namespaces) {
    std::unordered_map<uint32_t, std::string> shm; // shown now, by device
    std::set<uint32_t> shown;
    for (const MountNamespace &ns : namespaces)
      for (const MountInfo &m : ns.mounts) {
        shown.insert(m.dev);
        mounted_devs_.insert(m.dev);
        mounted_.insert({ns.mntns, m.dev});
        if (is_shm_mount(m) && !is_overmounted(ns.mounts, m))
          shm.try_emplace(m.dev, m.mountpoint);
      }
    for (uint32_t dev : shown)
      if (auto it = shm.find(dev); it != shm.end())
        shm_mounts_.insert_or_assign(dev, std::move(it->second));
      else
        shm_mounts_.erase(dev);
  }

  struct Proc {
    const ScannedProcess *proc;
    std::optional<ContainerRef> container;
  };

  const AuditScan &scan() const { return scan_; }
  const std::vector<Proc> &procs() const { return procs_; }
  const std::map<std::string, ContainerRef> &containers() const { return containers_; }
  const MountNamespace *mount_namespace(uint32_t mntns) const {
    auto it = namespaces_.find(mntns);
    return it == namespaces_.end() ? nullptr : it->second;
  }
  // The containers whose processes live in a mount namespace; empty for
  // the host's and for namespaces only host processes use (a service's
  // private /tmp).
  std::vector<ContainerRef> owners_of_mntns(uint32_t mntns) const {
    std::vector<ContainerRef> out;
    if (host_mntns_.contains(mntns))
      return out;
    if (auto it = container_mntns_.find(mntns); it != container_mntns_.end())
      for (const std::string &id : it->second)
        out.push_back(containers_.at(id));
    return out;
  }
  bool hosts_mntns(uint32_t mntns) const { return host_mntns_.contains(mntns); }
  const std::optional<uint32_t> &host_shm_dev() const { return host_shm_dev_; }
  bool is_shm_mount(const MountInfo &m) const {
    return m.is_tmpfs() && (is_shm_mountpoint(m.mountpoint) || emptydir_devs_.contains(m.dev));
  }
  // The mountpoint of a shared-memory mount of that superblock, or nullptr.
  const std::string *shm_mount_of_dev(uint32_t dev) const {
    auto it = shm_mounts_.find(dev);
    return it == shm_mounts_.end() ? nullptr : &it->second;
  }
  std::optional<MemoryLimit> memory_limit(const std::string &id) const {
    auto it = limits_.find(id);
    return it == limits_.end() ? std::nullopt : std::optional<MemoryLimit>(it->second);
  }
  bool is_mounted(uint32_t dev) const { return mounted_devs_.contains(dev); }
  // A table of that mount namespace showed the device.
  bool is_mounted_in(uint32_t mntns, uint32_t dev) const { return mounted_.contains({mntns, dev}); }
  const ExeFile *exe(uint32_t pid) const {
    auto it = exes_.find(pid);
    return it == exes_.end() ? nullptr : it->second;
  }

private:
  const AuditScan &scan_;
  std::vector<Proc> procs_;
  std::map<std::string, ContainerRef> containers_;
  std::unordered_map<std::string, MemoryLimit> limits_;
  std::unordered_map<uint32_t, const ExeFile *> exes_;
  std::unordered_map<uint32_t, const MountNamespace *> namespaces_;
  std::unordered_map<uint32_t, std::set<std::string>> container_mntns_;
  std::set<uint32_t> host_mntns_;
  std::optional<uint32_t> host_shm_dev_;
  std::set<uint32_t> emptydir_devs_;
  std::unordered_map<uint32_t, std::string> shm_mounts_;
  std::set<uint32_t> mounted_devs_;
  std::set<std::pair<uint32_t, uint32_t>> mounted_; // (mount namespace, device)
};

} // namespace shmbpf
