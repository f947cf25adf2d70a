// The program a process runs, from /proc/<pid>/exe: its path as the kernel
// names it, the inode it leads to, and whether that inode is shared memory
// (a file on a tmpfs or hugetlbfs, or a memfd).
#pragma once

#include "facts/audit.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

// What readlink of /proc/<pid>/exe says, split: the path without the
// kernel's " (deleted)" mark, and whether the file has no name left. A
// memfd ("/memfd:<name> (deleted)") never had one.
struct ExeLink {
  std::string path;
  bool deleted = false;
  bool operator==(const ExeLink &) const = default;
};
ExeLink parse_exe_link(std::string_view link);

// nullopt when the process is gone, has no program (a kernel thread) or
// cannot be read (another user's, without privilege).
std::optional<ExeFile> read_exe(uint32_t pid);

} // namespace shmbpf
