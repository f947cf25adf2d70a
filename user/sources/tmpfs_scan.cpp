#include "sources/tmpfs_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace shmbpf {

namespace {

struct DirCloser {
  void operator()(DIR *d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// Takes ownership of fd, closing it if fdopendir fails.
DirPtr open_dir_fd(int fd) {
  DIR *d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return nullptr;
  }
  return DirPtr(d);
}

bool is_dot_or_dotdot(const char *name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

class Scanner {
public:
  Scanner(dev_t dev, int max_depth, size_t max_files, std::vector<TmpfsFile> &out)
      : dev_(dev), max_depth_(max_depth), max_files_(max_files), out_(out) {}

  // path holds the directory's path; depth is that of its entries.
  void walk(DIR *dir, std::string &path, int depth) {
    int dfd = ::dirfd(dir);
    while (out_.size() < max_files_) {
      const dirent *ent = ::readdir(dir);
      if (ent == nullptr)
        return;
      const char *name = ent->d_name;
      if (is_dot_or_dotdot(name))
        continue;
      // tmpfs fills d_type, so most non-regular entries cost no syscall.
      unsigned char type = ent->d_type;
      if (type != DT_REG && type != DT_DIR && type != DT_UNKNOWN)
        continue;
      if (type == DT_DIR && depth >= max_depth_)
        continue;

      struct stat st;
      if (::fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      if (st.st_dev != dev_)
        continue; // a mountpoint of another filesystem
      if (S_ISREG(st.st_mode))
        add_file(st, path, name);
      else if (S_ISDIR(st.st_mode) && depth < max_depth_)
        descend(dfd, path, name, depth + 1);
    }
  }

private:
  void add_file(const struct stat &st, const std::string &dir_path, std::string_view name) {
    TmpfsFile f;
    f.dev = kernel_dev(st.st_dev);
    f.ino = st.st_ino;
    f.path.reserve(dir_path.size() + 1 + name.size());
    f.path.append(dir_path);
    if (dir_path.empty() || dir_path.back() != '/')
      f.path.push_back('/');
    f.path.append(name);
    f.leaf = name;
    f.size = st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
    f.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
    f.uid = st.st_uid;
    f.nlink = st.st_nlink > std::numeric_limits<uint32_t>::max()
                  ? std::numeric_limits<uint32_t>::max()
                  : static_cast<uint32_t>(st.st_nlink);
    f.mtime_s = st.st_mtim.tv_sec;
    out_.push_back(std::move(f));
  }

  void descend(int parent_fd, std::string &path, const char *name, int depth) {
    // O_NOFOLLOW and the fstat below close the window between the fstatat
    // above and this open: a swapped-in symlink or mount is refused.
    int fd = ::openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return;
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_dev != dev_) {
      ::close(fd);
      return;
    }
    DirPtr child = open_dir_fd(fd);
    if (!child)
      return;
    size_t saved = path.size();
    if (path.empty() || path.back() != '/')
      path.push_back('/');
    path.append(name);
    walk(child.get(), path, depth);
    path.resize(saved);
  }

  dev_t dev_;
  int max_depth_;
  size_t max_files_;
  std::vector<TmpfsFile> &out_;
};

} // namespace

std::vector<TmpfsFile> scan_tmpfs_mount(const std::string &dir, int max_depth, size_t max_files) {
  std::vector<TmpfsFile> out;
  if (max_depth <= 0 || max_files == 0)
    return out;
  // The root may be reached through a symlink (/dev/shm -> /run/shm).
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return out;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return out;
  }
  DirPtr root = open_dir_fd(fd);
  if (!root)
    return out;

  std::string path = dir;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  Scanner(st.st_dev, max_depth, max_files, out).walk(root.get(), path, 1);
  return out;
}

uint32_t kernel_dev(dev_t userspace_dev) {
  return static_cast<uint32_t>(major(userspace_dev) << 20 | minor(userspace_dev));
}

uint64_t shm_name_hash(std::string_view leaf) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : leaf) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

} // namespace shmbpf
