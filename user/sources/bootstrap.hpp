// What exists right now, read from /proc, every mount namespace's tmpfs
// mounts and every IPC namespace's /proc/sysvipc/shm, as plain data; then
// applied to an Engine, either as its start-up state (bootstrap) or as the
// truth it must converge to (reconcile). The scan behind `shmbpf ls` and
// `leaks`, and the start-up and periodic rescans of the live commands.
#pragma once

#include "model/engine.hpp"
#include "sources/namespaces.hpp"
#include "sources/proc_scan.hpp"
#include "sources/tmpfs_scan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace shmbpf {

// One tmpfs filesystem, scanned once through one of its mounts.
struct ScannedFs {
  uint32_t dev = 0;
  uint32_t mnt_id = 0;
  std::string mountpoint;       // as the namespace's processes see it
  std::vector<TmpfsFile> files; // paths as that namespace's processes see them
  std::string scanned_from;     // the directory read (via /proc/PID/root if need be)
};

struct ScannedProcess {
  ProcIdentity id;
  uint64_t cgroup_id = 0; // 0: unknown (no cgroup2 mount)
  std::vector<HeldFile> holdings;
};

struct ScannedIpc {
  uint32_t ipcns = 0;
  std::vector<SysvEntry> segments;
};

struct SystemScan {
  std::vector<MountNamespace> namespaces;
  std::vector<MountState> mounts; // every tmpfs mount of every namespace
  std::vector<ScannedFs> filesystems;
  std::vector<ScannedProcess> processes;
  std::vector<ScannedIpc> ipc; // namespaces we could not enter are missing
  std::vector<std::pair<uint64_t, std::string>> cgroups; // id -> path
};

// Every tmpfs mount of every namespace that a path can reach (overmounted
// ones are hidden), with its statfs usage: cheap, unlike a file scan. A
// filesystem no mount of which could be reached now (the processes whose
// roots led there exited) has used_known false.
std::vector<MountState> scan_mount_usage(const std::vector<MountNamespace> &namespaces);
// The files of every tmpfs filesystem, each scanned once through one mount.
// A filesystem that cannot be reached now is left out, not reported empty.
std::vector<ScannedFs> scan_filesystems(const std::vector<MountNamespace> &namespaces);
// The same files, as the kernel's name map keys them, without a stat per file.
std::vector<SeedKey> list_filesystems(const std::vector<MountNamespace> &namespaces);

// Reads everything. Best effort: processes that exit meanwhile are skipped.
SystemScan scan_system(std::vector<MountNamespace> namespaces);
SystemScan scan_system();

struct BootstrapStats {
  size_t files = 0;
  size_t processes = 0;
  size_t holdings = 0;
  size_t sysv = 0;
};

// Adds what the scan found to an engine (normally an empty one).
BootstrapStats bootstrap(Engine &engine, const SystemScan &scan);
// Scans, then bootstraps.
BootstrapStats bootstrap(Engine &engine, const std::vector<MountNamespace> &namespaces);

// Makes the engine agree with the scan: files, SysV segments, processes and
// holders that vanished are dropped, new ones added, sizes refreshed.
void reconcile(Engine &engine, const SystemScan &scan, uint64_t now_ns);

// Paths (relative to the cgroup2 mount, as /proc/<pid>/cgroup shows them)
// of the given cgroup v2 ids, found by walking the cgroup2 mount; ids not
// found (cgroups removed since) are absent.
std::vector<std::pair<uint64_t, std::string>> find_cgroup_paths(const std::vector<uint64_t> &ids);

// A file, and every file of a scan, as the kernel's name table keys them.
SeedKey seed_key(const TmpfsFile &file);
std::vector<SeedKey> seed_keys(const std::vector<ScannedFs> &filesystems);

} // namespace shmbpf
