// /proc/<pid>/mountinfo: which filesystems a process sees and where.
#pragma once

#include "facts/mounts.hpp"

#include <string_view>
#include <vector>

namespace shmbpf {

// Parses mountinfo text. Malformed lines are skipped, never fatal.
std::vector<MountInfo> parse_mountinfo(std::string_view text);

// Reads /proc/<pid>/mountinfo (pid <= 0 means /proc/self). Empty on error.
std::vector<MountInfo> read_mountinfo(int pid);

} // namespace shmbpf
