#include "sources/superblocks.hpp"

#include "facts/dev.hpp"
#include "sources/mountinfo.hpp"
#include "sources/proc_scan.hpp"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <string>

namespace shmbpf {

#ifdef SYS_ustat
Superblock superblock_of(uint32_t kdev) {
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
}
#else
Superblock superblock_of(uint32_t kdev) { return superblock_by_proc(kdev); }
#endif

Superblock superblock_by_proc(uint32_t kdev) {
  auto on_dev = [kdev](const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && kernel_dev(st.st_dev) == kdev;
  };
  std::set<ino_t> namespaces;
  for (uint32_t pid : list_pids()) {
    const std::string dir = "/proc/" + std::to_string(pid);
    struct stat ns {};
    if (::stat((dir + "/ns/mnt").c_str(), &ns) == 0 && namespaces.insert(ns.st_ino).second)
      for (const MountInfo &m : read_mountinfo(static_cast<int>(pid)))
        if (m.dev == kdev)
          return Superblock::alive;
    if (on_dev(dir + "/cwd") || on_dev(dir + "/root"))
      return Superblock::alive;
    for (const HeldFile &h : scan_holdings(pid))
      if (h.dev == kdev)
        return Superblock::alive;
  }
  return Superblock::unknown;
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
