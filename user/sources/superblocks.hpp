// Whether the kernel still has a filesystem (a superblock) for a device
// number: a tmpfs ends when its last mount goes (an unmount, a mount
// namespace destroyed with its container) and nothing holds a file of it.
#pragma once

#include <cstdint>
#include <vector>

namespace shmbpf {

enum class Superblock : uint8_t {
  alive,   // the kernel has a filesystem with that device number
  gone,    // it has none
  unknown, // this kernel or its policy does not say (no ustat(2), EPERM)
};

// Asks the kernel (ustat(2), which looks the device up among the live
// superblocks; kdev in the kernel's encoding, major << 20 | minor). Where
// there is no ustat (arm64), superblock_by_proc's answer.
Superblock superblock_of(uint32_t kdev);

// What /proc tells without ustat: a filesystem some process keeps is alive
// (mounted in its mount namespace, each namespace read once; or a file of
// it held by an fd or a mapping, or its working directory or root), of any
// other nothing is known.
Superblock superblock_by_proc(uint32_t kdev);

// Of devs, those whose filesystem has ended: in no mount table of
// `mounted` (every tmpfs and hugetlbfs device the namespaces read show)
// and, where the kernel says, with no superblock left. Where it does not
// say, only `all_namespaces` (mounted is every namespace's, a walk of
// /proc) lets the mount tables alone decide.
std::vector<uint32_t> ended_filesystems(const std::vector<uint32_t> &devs,
                                        const std::vector<uint32_t> &mounted, bool all_namespaces);

} // namespace shmbpf
