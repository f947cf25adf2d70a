// Filesystem magic numbers (statfs f_type) of the filesystems whose files are
// shared memory: a file is judged by the filesystem its inode lives on,
// never by its name.
#pragma once

namespace shmbpf {

constexpr long kTmpfsMagic = 0x01021994;     // tmpfs, and the kernel's shm mount (memfd, SysV)
constexpr long kHugetlbfsMagic = 0x958458f6; // hugetlbfs

inline bool is_shm_magic(long f_type) { return f_type == kTmpfsMagic || f_type == kHugetlbfsMagic; }

} // namespace shmbpf
