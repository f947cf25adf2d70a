#include "sources/superblocks.hpp"

#include "facts/dev.hpp"

#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace shmbpf {

Superblock superblock_of(uint32_t kdev) {
#ifdef SYS_ustat
  // The kernel's struct ustat; only whether the call succeeds matters.
  struct {
    long f_tfree;
    unsigned long f_tinode;
    char f_fname[6];
    char f_fpack[6];
  } u{};
  const auto dev = static_cast<unsigned>(makedev(dev_major(kdev), dev_minor(kdev)));
  if (syscall(SYS_ustat, dev, &u) == 0)
    return Superblock::alive;
  return errno == EINVAL ? Superblock::gone : Superblock::unknown;
#else
  (void)kdev;
  return Superblock::unknown;
#endif
}

std::vector<uint32_t> ended_filesystems(const std::vector<uint32_t> &devs,
                                        const std::vector<uint32_t> &mounted, bool all_namespaces) {
  std::vector<uint32_t> out;
  for (uint32_t dev : devs) {
    if (std::find(mounted.begin(), mounted.end(), dev) != mounted.end())
      continue;
    const Superblock sb = superblock_of(dev);
    if (sb == Superblock::gone || (sb == Superblock::unknown && all_namespaces))
      out.push_back(dev);
  }
  return out;
}

} // namespace shmbpf
