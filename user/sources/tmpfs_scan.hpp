// Bootstrap scan of a tmpfs mount: the shared-memory files that existed
// before tracing started, keyed the way the kernel side keys them.
#pragma once

#include "facts/names.hpp"
#include "facts/scan.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace shmbpf {

// How deep and how many a scan goes by default: deeper than any real use of
// /dev/shm, and bounded so that a hostile tree cannot make a scan endless.
constexpr int kScanMaxDepth = 64;
constexpr size_t kScanMaxFiles = 2'000'000;

// Lists the regular files under dir. Depth counts like find(1) -maxdepth:
// files directly in dir are at depth 1, so max_depth <= 0 yields nothing.
// Symlinks are never followed (dir itself excepted), other filesystems
// mounted below dir are not entered, and entries that vanish or fail to stat
// are skipped. Stops after max_files files.
std::vector<TmpfsFile> scan_tmpfs_mount(const std::string &dir, int max_depth = kScanMaxDepth,
                                        size_t max_files = kScanMaxFiles);

// scan_tmpfs_mount of the filesystem with device dev (kernel encoding; 0:
// whichever dir is on), with paths that start with shown_dir instead of dir
// (a mount reached through /proc/<pid>/root is named as its namespace sees
// it). Nothing, rather than no files, when dir cannot be opened or is on
// another filesystem: the process whose root led there has exited, or its
// pid is another process's now. What a limit left out goes to *shortfall.
std::optional<std::vector<TmpfsFile>> scan_tmpfs_dir(const std::string &dir, std::string shown_dir,
                                                     uint32_t dev, int max_depth = kScanMaxDepth,
                                                     size_t max_files = kScanMaxFiles,
                                                     ScanShortfall *shortfall = nullptr);

// CPU time used so far, in this process, by the threads scan_tmpfs_dir
// starts to stat a large directory's files in parallel. A caller's thread
// CPU clock does not include it; add the difference over a scan.
std::chrono::nanoseconds scan_helper_cpu();

// What the scans give a file whose kernel has no btime for it, as
// TmpfsFile::handle_id: a hash of its file handle (name_to_handle_at, name
// relative to dfd, symlinks not followed), which an exporting filesystem
// makes of the inode number and generation so that it never names a later
// file. Never 0; 0 when the filesystem gives no handle (hugetlbfs).
uint64_t file_handle_id(int dfd, const char *name);

// The regular files under dir as scan_tmpfs_dir finds them, but read from
// the directory entries alone: no syscall per file (a name whose entry does
// not tell its type excepted). Nothing when scan_tmpfs_dir would give nothing.
std::optional<std::vector<SeedKey>> list_tmpfs_dir(const std::string &dir, uint32_t dev = 0,
                                                   int max_depth = kScanMaxDepth,
                                                   size_t max_files = kScanMaxFiles);

} // namespace shmbpf
