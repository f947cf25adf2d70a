// A memory cgroup as its files tell it: its limit, what is charged to it,
// and how much of that is shared memory. Plain data: sources read it
// (cgroup v1 and v2), the session and the model keep it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shmbpf {

// A cgroup's memory limit: cgroup v2 memory.max, or v1
// memory.limit_in_bytes. bytes nullopt: no limit ("max", or v1's
// page-counter maximum).
struct MemoryLimit {
  std::optional<uint64_t> bytes;
  bool operator==(const MemoryLimit &) const = default;
};

// What a memory cgroup held when it was read.
struct CgroupMemory {
  // Shared memory charged to it and its descendants (memory.stat's shmem:
  // tmpfs and memfd pages, SysV segments).
  uint64_t shmem = 0;
  // Everything charged to it (memory.current, memory.usage_in_bytes).
  uint64_t usage = 0;
  // The tightest limit from it up to the hierarchy's root.
  MemoryLimit limit;
  bool operator==(const CgroupMemory &) const = default;
};

// A cgroup by its path in the hierarchy ("/system.slice"), and what it
// held.
struct NamedCgroupMemory {
  std::string path;
  CgroupMemory memory;
  bool operator==(const NamedCgroupMemory &) const = default;
};

} // namespace shmbpf
