#include "facts/dev.hpp"

#include <sys/sysmacros.h>

namespace shmbpf {

std::string dev_string(uint32_t kdev) {
  return std::to_string(dev_major(kdev)) + ":" + std::to_string(dev_minor(kdev));
}

uint32_t kernel_dev(dev_t userspace_dev) {
  return static_cast<uint32_t>(major(userspace_dev) << 20 | minor(userspace_dev));
}

} // namespace shmbpf
