// How the kernel's tracked-name table (bpf/shmbpf_names.h) keys a file: the
// hash of its leaf name and its inode. Scanners list files this way to seed
// the table; the probe writes them into it.
#pragma once

#include <compare>
#include <cstdint>
#include <string_view>

namespace shmbpf {

struct SeedKey {
  uint64_t hash = 0; // shm_name_hash of the leaf name
  uint32_t dev = 0;  // kernel encoding
  uint64_t ino = 0;
  auto operator<=>(const SeedKey &) const = default;
};

// FNV-1a 64 over the bytes of a file name; must match the BPF implementation.
uint64_t shm_name_hash(std::string_view leaf);

} // namespace shmbpf
