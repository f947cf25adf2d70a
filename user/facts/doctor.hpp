// What `shmbpf doctor` found out about this machine, as plain data: the
// live layer gathers it (live/doctor.hpp), the views tell it.
#pragma once

#include "facts/hooks.hpp"
#include "facts/mounts.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

// One thing shmbpf needs or uses, and how it stands here.
struct DoctorCheck {
  enum class Verdict { ok, warn, fail };
  std::string name; // "kernel", "BTF", "privileges", ...
  Verdict verdict = Verdict::ok;
  std::string detail; // what was found, and for warn or fail what to do
};

struct DoctorReport {
  std::string release; // uname -r
  std::string machine; // uname -m
  std::vector<DoctorCheck> checks;
  // From loading the real programs (empty when they could not be loaded).
  std::vector<HookStatus> hooks;
  std::vector<Fallback> fallbacks;
  HookSet hook_set = HookSet::full; // the set loaded
  std::string hook_set_note;        // why it is not the one asked for
  std::string light_missing;        // why the light set cannot load here; "" when it can
  uint64_t ring_buffer_bytes = 0;
  uint64_t name_capacity = 0; // the kernel's leaf-name table, in names
  uint64_t tmpfs_files = 0;   // inodes in use on the tmpfs mounts this process sees
  std::optional<std::string> cgroup2;
  std::vector<MountState> mounts; // every tmpfs mount of every mount namespace
  uint64_t mount_namespaces = 0;

  // The first failed check: shmbpf cannot trace here, and this is why.
  const DoctorCheck *failure() const {
    for (const DoctorCheck &c : checks)
      if (c.verdict == DoctorCheck::Verdict::fail)
        return &c;
    return nullptr;
  }
};

} // namespace shmbpf
