// Device numbers as the kernel encodes them inside (major << 20 | minor),
// which is what BPF programs read from sb->s_dev and what every stage keys
// files by.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace shmbpf {

inline uint32_t dev_major(uint32_t kdev) { return kdev >> 20; }
inline uint32_t dev_minor(uint32_t kdev) { return kdev & 0xfffffu; }

// "maj:min".
std::string dev_string(uint32_t kdev);

// stat's st_dev in the kernel's encoding.
uint32_t kernel_dev(dev_t userspace_dev);

} // namespace shmbpf
