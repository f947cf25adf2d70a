// Bootstrap scan of a tmpfs mount: the shared-memory files that existed
// before tracing started, keyed the way the kernel side keys them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace shmbpf {

struct TmpfsFile {
  uint32_t dev = 0; // kernel encoding, see kernel_dev()
  uint64_t ino = 0;
  std::string path; // absolute as seen via the scanned root
  std::string leaf; // last path component
  uint64_t size = 0;
  uint64_t bytes = 0; // st_blocks * 512: memory actually allocated
  uint32_t uid = 0;
  uint32_t nlink = 0;
  int64_t mtime_s = 0;
};

// Lists the regular files under dir. Depth counts like find(1) -maxdepth:
// files directly in dir are at depth 1, so max_depth <= 0 yields nothing.
// Symlinks are never followed (dir itself excepted), other filesystems
// mounted below dir are not entered, and entries that vanish or fail to stat
// are skipped. Stops after max_files files.
std::vector<TmpfsFile> scan_tmpfs_mount(const std::string &dir, int max_depth = 4,
                                        size_t max_files = 2'000'000);

// scan_tmpfs_mount of the filesystem with device dev (kernel encoding; 0:
// whichever dir is on), with paths that start with shown_dir instead of dir
// (a mount reached through /proc/<pid>/root is named as its namespace sees
// it). Nothing, rather than no files, when dir cannot be opened or is on
// another filesystem: the process whose root led there has exited, or its
// pid is another process's now.
std::optional<std::vector<TmpfsFile>> scan_tmpfs_dir(const std::string &dir, std::string shown_dir,
                                                     uint32_t dev, int max_depth = 4,
                                                     size_t max_files = 2'000'000);

// A file as the kernel's name map knows it: its inode, and its leaf name's hash
// (shm_name_hash).
struct SeedKey {
  uint64_t hash = 0;
  uint32_t dev = 0; // kernel encoding
  uint64_t ino = 0;
  auto operator<=>(const SeedKey &) const = default;
};

// The regular files under dir as scan_tmpfs_dir finds them, but read from
// the directory entries alone: no syscall per file (a name whose entry does
// not tell its type excepted). Nothing when scan_tmpfs_dir would give nothing.
std::optional<std::vector<SeedKey>> list_tmpfs_dir(const std::string &dir, uint32_t dev = 0,
                                                   int max_depth = 4, size_t max_files = 2'000'000);

// stat's st_dev in the kernel's internal encoding (major << 20 | minor), which
// is what BPF programs read from sb->s_dev.
uint32_t kernel_dev(dev_t userspace_dev);

// FNV-1a 64 over the bytes of a file name; must match the BPF implementation.
uint64_t shm_name_hash(std::string_view leaf);

} // namespace shmbpf
