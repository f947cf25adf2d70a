// A process's cgroups as /proc/<pid>/cgroup lists them, on cgroup v2, v1 or
// both at once (hybrid hosts), and the memory limit of the cgroup it runs
// in. Parsers and the choice of files are pure; read_memory_limit is a thin
// reader around them.
#pragma once

#include "facts/memory_cgroup.hpp"
#include "facts/mounts.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// One line of /proc/<pid>/cgroup: "hierarchy-id:controllers:path".
struct CgroupLine {
  uint32_t hierarchy = 0; // 0 with no controllers: the v2 (unified) hierarchy
  // v1: "memory", "cpu", "cpuacct", "name=systemd", ...; empty for v2.
  std::vector<std::string> controllers;
  // Relative to the hierarchy's root as the reader's cgroup namespace sees
  // it; "/.." leads out of that namespace.
  std::string path;
  bool v2() const { return hierarchy == 0 && controllers.empty(); }
  bool has(std::string_view controller) const;
  bool operator==(const CgroupLine &) const = default;
};

// Every well-formed line of the file, in order. Malformed ones (no two
// colons, a hierarchy id that is not a number, a path not starting with
// '/') are skipped.
std::vector<CgroupLine> parse_cgroup_lines(std::string_view text);

// The path that tells which container a process is in
// (ProcIdentity::cgroup_path): the v2 line's, unless there is none or it is
// "/" while a v1 line has a deeper path; then the v1 path of name=systemd,
// else of memory, else of the first v1 line that is not "/". nullopt
// without any line.
std::optional<std::string> process_cgroup_path(const std::vector<CgroupLine> &lines);

// The cgroup id a scan gives a process: the v2 id where cgroup2 gave one,
// else (cgroup v1 only) path_cgroup_id of the path that tells its
// container; 0 when neither says anything ("/" or nothing).
uint64_t scan_cgroup_id(uint64_t v2_id, std::string_view container_path);

// memory.max (v2) or memory.limit_in_bytes (v1): "max", or v1's page-counter
// maximum (any value >= 2^62), is no limit. nullopt for anything else than
// one number or "max" (and surrounding white space).
std::optional<MemoryLimit> parse_memory_limit(std::string_view text);

// The tighter of two limits (no limit is the loosest).
MemoryLimit tighter(const MemoryLimit &a, const MemoryLimit &b);

// A process's memory cgroup and its ancestors up to the root of the
// hierarchy the memory controller is on, innermost first, as directories
// ending in '/' reached through mounts (shmbpf's own mount table): under
// the cgroup v1 mount whose super options name `memory` when a v1 line has
// that controller, else under the first cgroup2 mount. No directories when
// the hierarchy is not mounted there, or the path leads outside the mount
// (another cgroup namespace).
struct MemoryCgroupDirs {
  bool v1 = false;
  std::vector<std::string> dirs;
  bool operator==(const MemoryCgroupDirs &) const = default;
};
MemoryCgroupDirs memory_cgroup_dirs(const std::vector<CgroupLine> &lines,
                                    const std::vector<MountInfo> &mounts);

// The files that hold a process's memory limits from its cgroup up to the
// root of the hierarchy the memory controller is on, innermost first, as
// reached through mounts (shmbpf's own mount table): memory.limit_in_bytes
// under the cgroup v1 mount whose super options name `memory` when a v1
// line has that controller, else memory.max under the first cgroup2 mount.
// Empty when the hierarchy is not mounted there, or the path leads outside
// the mount (another cgroup namespace).
std::vector<std::string> memory_limit_files(const std::vector<CgroupLine> &lines,
                                            const std::vector<MountInfo> &mounts);

// The effective memory limit of the process's cgroup: the smallest of
// memory_limit_files. nullopt when the process is gone or none of the files
// could be read (a v2 root cgroup has none).
std::optional<MemoryLimit> read_memory_limit(uint32_t pid, const std::vector<MountInfo> &mounts);

// The shared memory a memory.stat counts: v1's total_shmem (the cgroup and
// its descendants) where it is given, else shmem (v2's is hierarchical).
// nullopt when neither line holds one number.
std::optional<uint64_t> parse_memory_stat_shmem(std::string_view text);

// The memory cgroup of process pid (nullopt when it is gone or has none
// that the mounts reach), and what that cgroup holds now: its shmem, its
// usage, and the tightest limit up the tree (nullopt when its files cannot
// be read: the cgroup was removed).
std::optional<MemoryCgroupDirs> read_memory_cgroup_dirs(uint32_t pid,
                                                        const std::vector<MountInfo> &mounts);
std::optional<CgroupMemory> read_cgroup_memory(const MemoryCgroupDirs &cgroup);
// read_memory_cgroup_dirs, but nullopt for a process that reads as in the
// hierarchy's root: a container's process, or an OOM kill's victim, never
// is, and a task on its way out may read so.
std::optional<MemoryCgroupDirs> read_memory_cgroup_below_root(uint32_t pid,
                                                              const std::vector<MountInfo> &mounts);

// The host's memory as a cgroup's is told, from /proc/meminfo: Shmem,
// MemTotal - MemAvailable as usage, MemTotal as the limit (kB lines, in
// bytes). nullopt when one of them is missing.
std::optional<CgroupMemory> parse_meminfo(std::string_view text);
std::optional<CgroupMemory> read_host_memory();

// The children of the memory hierarchy's root as mounted (a v1 mount whose
// options name memory, else cgroup2): on a host, its top-level cgroups
// (system.slice, user.slice, kubepods, ...), each as read_cgroup_memory
// reads it; the first max of them by name, those that cannot be read left
// out (a v2 child the root does not hand the memory controller to).
std::vector<NamedCgroupMemory> read_top_memory_cgroups(const std::vector<MountInfo> &mounts,
                                                       size_t max = 64);

// The memory cgroup whose directory has inode number id (a memory cgroup's
// kernfs id, as the kernel names it), with its ancestors as
// memory_cgroup_dirs gives them: found by walking the hierarchy the memory
// controller is on (a v1 mount whose options name memory, else cgroup2)
// from its mount's root, breadth first, opening and queueing at most
// max_dirs directories. For a cgroup whose processes are gone.
std::optional<MemoryCgroupDirs>
find_memory_cgroup(uint64_t id, const std::vector<MountInfo> &mounts, size_t max_dirs = 65536);

} // namespace shmbpf
