// What exists right now, read from /proc, every mount namespace's tmpfs
// mounts and every IPC namespace's /proc/sysvipc/shm, as plain data
// (facts/scan.hpp). The scan behind `shmbpf ls` and `leaks`, and the
// start-up and periodic rescans of the live commands; the model's
// bootstrap and reconcile rules apply it.
#pragma once

#include "facts/names.hpp"
#include "facts/scan.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf {

// Every tmpfs mount of every namespace that a path can reach (overmounted
// ones are hidden), with its statfs usage: cheap, unlike a file scan. A
// filesystem no mount of which could be reached now (the processes whose
// roots led there exited) has used_known false.
std::vector<MountState> scan_mount_usage(const std::vector<MountNamespace> &namespaces);
// The generation number of the directory fd is open on (O_PATH will do),
// from its file handle, with the top bit set; 0 where the filesystem gives
// no handle. tmpfs draws it at random for every inode, so its root's
// generation names the filesystem where statfs gives no fsid (before 6.7).
uint64_t root_generation(int fd);
// The files of every tmpfs filesystem, each scanned once through one mount.
// A filesystem that cannot be reached now is left out, not reported empty.
std::vector<ScannedFs> scan_filesystems(const std::vector<MountNamespace> &namespaces);
// The same files, as the kernel's name map keys them, without a stat per file.
std::vector<SeedKey> list_filesystems(const std::vector<MountNamespace> &namespaces);

// Reads everything. Best effort: processes that exit meanwhile are skipped.
SystemScan scan_system(std::vector<MountNamespace> namespaces);
SystemScan scan_system();

// Paths (relative to the cgroup2 mount, as /proc/<pid>/cgroup shows them)
// of the given cgroup v2 ids, found by walking the cgroup2 mount; ids not
// found (cgroups removed since) are absent.
std::vector<std::pair<uint64_t, std::string>> find_cgroup_paths(const std::vector<uint64_t> &ids);

// A file, and every file of a scan, as the kernel's name table keys them.
SeedKey seed_key(const TmpfsFile &file);
std::vector<SeedKey> seed_keys(const std::vector<ScannedFs> &filesystems);

// Inodes in use on the tmpfs/hugetlbfs mounts this process sees (statvfs):
// what the kernel's name table is sized for.
uint64_t tmpfs_files_in_use();

} // namespace shmbpf
