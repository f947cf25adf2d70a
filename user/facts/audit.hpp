// What an audit of a container host reads beyond a SystemScan: the program
// each process runs, the host's own namespaces, each container's memory
// limit and name. Plain data: sources read it, live gathers it, and
// model/audit judges it.
#pragma once

#include "facts/container_name.hpp"
#include "facts/memory_cgroup.hpp"
#include "facts/scan.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf {

// The program a process runs: /proc/<pid>/exe.
struct ExeFile {
  uint32_t pid = 0;
  uint32_t dev = 0; // kernel encoding, of the inode the link leads to (stat)
  uint64_t ino = 0;
  // readlink, without the kernel's " (deleted)" mark; "/memfd:<name>" for a
  // memfd (the kernel's name, which the process chose).
  std::string path;
  bool deleted = false; // unlinked (or a memfd, which never had a name)
  bool on_shm = false;  // the inode is on a tmpfs or hugetlbfs (fstatfs)
};

// The host's namespaces: those of pid 1 where it can be read (shmbpf may
// itself run in a container that shares the host's pid namespace), else
// shmbpf's own.
struct HostNamespaces {
  uint32_t pid = 1;
  uint32_t mntns = 0;
  uint32_t ipcns = 0;
};

struct AuditScan {
  SystemScan system;
  HostNamespaces host;
  std::vector<ExeFile> exes; // one per process that could be read
  // Per container id (ContainerRef::id): what its runtime's files call it,
  // and its memory limit, read through one of its processes. A container
  // whose limit could not be read is missing from memory_limits.
  std::vector<std::pair<std::string, ContainerName>> names;
  std::vector<std::pair<std::string, MemoryLimit>> memory_limits;
};

} // namespace shmbpf
