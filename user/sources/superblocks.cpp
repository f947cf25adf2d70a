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
#include <set>
#include <sstream>
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

// Whether a line of the file has `want` as its field number `field` (0 the
// first): a mapping's device in /proc/PID/maps (3, "maj:min" in hex), a
// mount's in /proc/PID/mountinfo (2, in decimal).
bool has_field(const std::string &path, size_t field, const std::string &want) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string word;
    for (size_t i = 0; i <= field && words >> word; ++i)
      if (i == field && word == want)
        return true;
  }
  return false;
}

bool has_fd_on(const std::string &dir, uint32_t kdev) {
  DIR *fds = opendir((dir + "/fd").c_str());
  if (!fds)
    return false;
  bool found = false;
  while (dirent *f = readdir(fds))
    if (f->d_name[0] != '.' && on_dev(dir + "/fd/" + f->d_name, kdev)) {
      found = true;
      break;
    }
  closedir(fds);
  return found;
}

// Whether a process keeps the filesystem: its mount namespace mounts it
// (each namespace read once), or it holds a file of it (an fd, a mapping,
// its working directory or its root).
bool kept_by_a_process(uint32_t kdev) {
  DIR *proc = opendir("/proc");
  if (!proc)
    return false;
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%02x:%02x", dev_major(kdev), dev_minor(kdev));
  const std::string decimal = dev_string(kdev);
  std::set<ino_t> namespaces;
  bool kept = false;
  for (const dirent *d; !kept && (d = readdir(proc));) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9')
      continue;
    const std::string dir = std::string("/proc/") + d->d_name;
    struct stat ns {};
    const bool new_ns =
        ::stat((dir + "/ns/mnt").c_str(), &ns) == 0 && namespaces.insert(ns.st_ino).second;
    kept = (new_ns && has_field(dir + "/mountinfo", 2, decimal)) || on_dev(dir + "/cwd", kdev) ||
           on_dev(dir + "/root", kdev) || has_field(dir + "/maps", 3, hex) || has_fd_on(dir, kdev);
  }
  closedir(proc);
  return kept;
}

} // namespace

// No ustat(2) here (arm64 and the other architectures of the generic call
// table): a filesystem some process keeps (mounted in its namespace, a
// file of it held) lives; of any other the kernel cannot be asked.
Superblock superblock_of(uint32_t kdev) {
  return kept_by_a_process(kdev) ? Superblock::alive : Superblock::unknown;
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
