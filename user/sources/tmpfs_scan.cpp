#include "sources/tmpfs_scan.hpp"

#include "facts/dev.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <dirent.h>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <thread>
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

// A file's stat and its birth time in one call (statx); btime_ns stays 0
// where the filesystem gives none, and then a regular file's handle_id is
// looked up instead.
bool stat_file(int dfd, const char *name, struct stat &st, uint64_t &btime_ns, uint64_t &handle) {
  struct statx sx;
  if (::statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &sx) != 0)
    return false;
  st = {};
  st.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  st.st_ino = sx.stx_ino;
  st.st_mode = sx.stx_mode;
  st.st_nlink = sx.stx_nlink;
  st.st_uid = sx.stx_uid;
  st.st_size = static_cast<off_t>(sx.stx_size);
  st.st_blocks = static_cast<blkcnt_t>(sx.stx_blocks);
  st.st_mtim.tv_sec = sx.stx_mtime.tv_sec;
  st.st_mtim.tv_nsec = sx.stx_mtime.tv_nsec;
  btime_ns = (sx.stx_mask & STATX_BTIME)
                 ? static_cast<uint64_t>(sx.stx_btime.tv_sec) * 1'000'000'000 + sx.stx_btime.tv_nsec
                 : 0;
  handle = btime_ns == 0 && S_ISREG(sx.stx_mode) ? file_handle_id(dfd, name) : 0;
  return true;
}

bool is_dot_or_dotdot(const char *name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

std::atomic<uint64_t> g_helper_cpu_ns{0};

// Directories with at least this many files are stat'ed by two threads:
// one stat is a syscall of a few microseconds, the bulk of a large scan.
constexpr size_t kParallelFiles = 4096;

class Scanner {
public:
  // Fills out, or with keys set, only keys (no stat per file).
  Scanner(dev_t dev, int max_depth, size_t max_files, std::vector<TmpfsFile> &out,
          std::vector<SeedKey> *keys)
      : dev_(dev), max_depth_(max_depth), max_files_(max_files), out_(out), keys_(keys) {}

  // path holds the directory's path; depth is that of its entries.
  void walk(DIR *dir, std::string &path, int depth) {
    const int dfd = ::dirfd(dir);
    // The whole directory is read first, so that its files can be stat'ed
    // in parallel; names go into one buffer, not one string each.
    std::string names;
    std::vector<Entry> entries;
    std::vector<uint32_t> files; // indexes of entries that are regular files
    const size_t budget = max_files_ - std::min(max_files_, found());
    while (true) {
      const dirent *ent = ::readdir(dir);
      if (ent == nullptr)
        break;
      const char *name = ent->d_name;
      if (is_dot_or_dotdot(name))
        continue;
      // tmpfs fills d_type, so most non-regular entries cost no syscall.
      const unsigned char type = ent->d_type;
      if (type != DT_REG && type != DT_DIR && type != DT_UNKNOWN)
        continue;
      if (files.size() >= budget) {
        shortfall_.file_limit = true;
        break;
      }
      if (type == DT_DIR && depth >= max_depth_) {
        ++shortfall_.dirs_too_deep;
        continue;
      }
      if (type == DT_REG)
        files.push_back(static_cast<uint32_t>(entries.size()));
      entries.push_back({names.size(), ent->d_ino, type});
      names.append(name);
      names.push_back('\0');
    }

    if (keys_) {
      const uint32_t kdev = kernel_dev(dev_);
      for (uint32_t i : files)
        keys_->push_back({shm_name_hash(names.c_str() + entries[i].name), kdev, entries[i].ino});
      files.clear();
    }
    // Regular files fill slots of out_ in place; a slot whose file vanished
    // or is something else by now keeps dev 0 and is dropped below.
    const size_t base = out_.size();
    out_.resize(base + files.size());
    auto fill = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) {
        const Entry &e = entries[files[i]];
        fill_slot(out_[base + i], dfd, path, names.c_str() + e.name);
      }
    };
    if (files.size() >= kParallelFiles && std::thread::hardware_concurrency() > 1) {
      const size_t half = files.size() / 2;
      std::thread other([&] {
        fill(half, files.size());
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        g_helper_cpu_ns.fetch_add(static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 +
                                      static_cast<uint64_t>(ts.tv_nsec),
                                  std::memory_order_relaxed);
      });
      fill(0, half);
      other.join();
    } else {
      fill(0, files.size());
    }
    out_.erase(std::remove_if(out_.begin() + static_cast<std::ptrdiff_t>(base), out_.end(),
                              [](const TmpfsFile &f) { return f.dev == 0; }),
               out_.end());

    for (const Entry &e : entries) {
      if (found() >= max_files_ && (e.type == DT_DIR || e.type == DT_UNKNOWN)) {
        shortfall_.file_limit = true;
        return;
      }
      const char *name = names.c_str() + e.name;
      if (e.type == DT_DIR) {
        descend(dfd, path, name, depth + 1);
        continue;
      }
      if (e.type != DT_UNKNOWN)
        continue;
      struct stat st;
      uint64_t btime_ns = 0;
      uint64_t handle = 0;
      if (!stat_file(dfd, name, st, btime_ns, handle) || st.st_dev != dev_)
        continue; // gone, or a mountpoint of another filesystem
      if (S_ISREG(st.st_mode) && keys_) {
        keys_->push_back({shm_name_hash(name), kernel_dev(st.st_dev), st.st_ino});
      } else if (S_ISREG(st.st_mode)) {
        out_.emplace_back();
        set_file(out_.back(), st, path, name);
        out_.back().btime_ns = btime_ns;
        out_.back().handle_id = handle;
      } else if (S_ISDIR(st.st_mode) && depth < max_depth_) {
        descend(dfd, path, name, depth + 1);
      } else if (S_ISDIR(st.st_mode)) {
        ++shortfall_.dirs_too_deep;
      }
    }
  }

  const ScanShortfall &shortfall() const { return shortfall_; }

private:
  struct Entry {
    size_t name; // offset in the names buffer
    uint64_t ino;
    unsigned char type;
  };

  size_t found() const { return keys_ ? keys_->size() : out_.size(); }

  void fill_slot(TmpfsFile &f, int dfd, const std::string &dir_path, const char *name) const {
    struct stat st;
    uint64_t btime_ns = 0;
    uint64_t handle = 0;
    if (!stat_file(dfd, name, st, btime_ns, handle) || !S_ISREG(st.st_mode) || st.st_dev != dev_)
      return; // gone, replaced, or a file bind-mounted from elsewhere
    set_file(f, st, dir_path, name);
    f.btime_ns = btime_ns;
    f.handle_id = handle;
  }

  static void set_names(TmpfsFile &f, const std::string &dir_path, std::string_view name) {
    f.path.reserve(dir_path.size() + 1 + name.size());
    f.path.append(dir_path);
    if (dir_path.empty() || dir_path.back() != '/')
      f.path.push_back('/');
    f.path.append(name);
    f.leaf = name;
  }

  static void set_file(TmpfsFile &f, const struct stat &st, const std::string &dir_path,
                       std::string_view name) {
    f.dev = kernel_dev(st.st_dev);
    f.ino = st.st_ino;
    set_names(f, dir_path, name);
    f.size = st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
    f.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
    f.uid = st.st_uid;
    f.mode = st.st_mode & 07777;
    f.nlink = st.st_nlink > std::numeric_limits<uint32_t>::max()
                  ? std::numeric_limits<uint32_t>::max()
                  : static_cast<uint32_t>(st.st_nlink);
    f.mtime_s = st.st_mtim.tv_sec;
  }

  void descend(int parent_fd, std::string &path, const char *name, int depth) {
    // O_NOFOLLOW and the fstat below refuse a symlink or another
    // filesystem's mount in place of the directory.
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
  std::vector<SeedKey> *keys_;
  ScanShortfall shortfall_;
};

// Opens dir (through a symlink, as /dev/shm -> /run/shm may be) when it is
// on device dev (kernel encoding; 0: any); null and st untouched otherwise.
DirPtr open_root(const std::string &dir, uint32_t dev, struct stat &st) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return nullptr;
  struct stat got;
  if (::fstat(fd, &got) != 0 || (dev != 0 && kernel_dev(got.st_dev) != dev)) {
    ::close(fd);
    return nullptr;
  }
  st = got;
  return open_dir_fd(fd);
}

} // namespace

uint64_t file_handle_id(int dfd, const char *name) {
  alignas(struct file_handle) unsigned char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
  auto *fh = reinterpret_cast<struct file_handle *>(buf);
  fh->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  if (::name_to_handle_at(dfd, name, fh, &mount_id, 0) != 0)
    return 0;
  uint64_t hash = 0xcbf29ce484222325; // FNV-1a
  auto mix = [&hash](unsigned char c) {
    hash ^= c;
    hash *= 0x100000001b3;
  };
  for (int i = 0; i < 4; ++i)
    mix(static_cast<unsigned char>(static_cast<unsigned>(fh->handle_type) >> (8 * i)));
  // The bytes from the buffer itself: f_handle is a flexible array.
  const unsigned char *bytes = buf + offsetof(struct file_handle, f_handle);
  for (unsigned i = 0; i < fh->handle_bytes && i < MAX_HANDLE_SZ; ++i)
    mix(bytes[i]);
  return hash == 0 ? 1 : hash;
}

std::vector<TmpfsFile> scan_tmpfs_mount(const std::string &dir, int max_depth, size_t max_files) {
  return scan_tmpfs_dir(dir, dir, 0, max_depth, max_files).value_or(std::vector<TmpfsFile>{});
}

std::chrono::nanoseconds scan_helper_cpu() {
  return std::chrono::nanoseconds(g_helper_cpu_ns.load(std::memory_order_relaxed));
}

std::optional<std::vector<TmpfsFile>> scan_tmpfs_dir(const std::string &dir, std::string shown_dir,
                                                     uint32_t dev, int max_depth, size_t max_files,
                                                     ScanShortfall *shortfall) {
  struct stat st;
  DirPtr root = open_root(dir, dev, st);
  if (!root)
    return std::nullopt;
  std::vector<TmpfsFile> out;
  if (max_depth <= 0 || max_files == 0)
    return out;
  while (shown_dir.size() > 1 && shown_dir.back() == '/')
    shown_dir.pop_back();
  Scanner scanner(st.st_dev, max_depth, max_files, out, nullptr);
  scanner.walk(root.get(), shown_dir, 1);
  if (shortfall)
    *shortfall = scanner.shortfall();
  return out;
}

std::optional<std::vector<SeedKey>> list_tmpfs_dir(const std::string &dir, uint32_t dev,
                                                   int max_depth, size_t max_files) {
  struct stat st;
  DirPtr root = open_root(dir, dev, st);
  if (!root)
    return std::nullopt;
  std::vector<SeedKey> keys;
  if (max_depth <= 0 || max_files == 0)
    return keys;
  std::vector<TmpfsFile> unused;
  std::string path = dir;
  Scanner(st.st_dev, max_depth, max_files, unused, &keys).walk(root.get(), path, 1);
  return keys;
}

} // namespace shmbpf
