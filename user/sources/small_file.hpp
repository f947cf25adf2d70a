// A small file of the kernel's read whole: /proc and cgroupfs files, whose
// size stat does not tell (it says 0), read with read(2) until its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace shmbpf {

// The file at path, at most max bytes of it (the rest is not read); its
// last component is not followed if it is a symlink. nullopt when it
// cannot be opened or read.
std::optional<std::string> read_small_file(const std::string &path, size_t max = SIZE_MAX);
// The same for name relative to the directory dirfd (AT_FDCWD: the working
// directory), as a scan reads a process's files through its /proc dir.
std::optional<std::string> read_small_file_at(int dirfd, const char *name, size_t max = SIZE_MAX);

} // namespace shmbpf
