#include "sources/superblocks.hpp"

#include "facts/dev.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
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
namespace {

bool on_dev(const std::string &path, uint32_t kdev) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && kernel_dev(st.st_dev) == kdev;
}

// A mapping of a file of the device: /proc/PID/maps gives it as "maj:min"
// in hex, in its fourth field.
bool maps_dev(const std::string &maps, uint32_t kdev) {
  std::ifstream in(maps);
  const std::string want = [&] {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%02x:%02x", dev_major(kdev), dev_minor(kdev));
    return std::string(buf);
  }();
  std::string range, perms, offset, dev, rest;
  while (in >> range >> perms >> offset >> dev && std::getline(in, rest))
    if (dev == want)
      return true;
  return false;
}

// Whether a process holds a file of the device: an fd, a mapping, its
// working directory or its root.
bool held_by_a_process(uint32_t kdev) {
  DIR *proc = opendir("/proc");
  if (!proc)
    return false;
  bool held = false;
  while (dirent *d = readdir(proc)) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9')
      continue;
    const std::string dir = std::string("/proc/") + d->d_name;
    held =
        on_dev(dir + "/cwd", kdev) || on_dev(dir + "/root", kdev) || maps_dev(dir + "/maps", kdev);
    if (DIR *fds = held ? nullptr : opendir((dir + "/fd").c_str())) {
      while (dirent *f = readdir(fds))
        if (f->d_name[0] != '.' && on_dev(dir + "/fd/" + f->d_name, kdev)) {
          held = true;
          break;
        }
      closedir(fds);
    }
    if (held)
      break;
  }
  closedir(proc);
  return held;
}

} // namespace

// No ustat(2) here (arm64 and the other architectures of the generic call
// table): a filesystem a process holds a file of lives; of any other the
// kernel cannot be asked.
Superblock superblock_of(uint32_t kdev) {
  return held_by_a_process(kdev) ? Superblock::alive : Superblock::unknown;
}
#endif

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
