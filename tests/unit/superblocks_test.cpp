// sources/superblocks: the kernel asked whether a device has a filesystem,
// and which filesystems of a list have ended.
#include "sources/superblocks.hpp"

#include "facts/dev.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace shmbpf {
namespace {

// A device number no filesystem has: the last minor of major 0.
constexpr uint32_t kNoSuchDev = 0xfffffu;

uint32_t dev_of(const char *path) {
  struct stat st {};
  EXPECT_EQ(stat(path, &st), 0) << path;
  return kernel_dev(st.st_dev);
}

TEST(Superblocks, TheKernelKnowsALiveOneAndNotAMadeUpOne) {
  EXPECT_EQ(superblock_of(dev_of("/proc")), Superblock::alive);
  EXPECT_EQ(superblock_of(kNoSuchDev), Superblock::gone);
}

// What arm64, which has no ustat, asks instead: /proc.
TEST(Superblocks, ProcTellsAMountedOneAndKnowsNothingOfAMadeUpOne) {
  EXPECT_EQ(superblock_by_proc(dev_of("/proc")), Superblock::alive);
  EXPECT_EQ(superblock_by_proc(kNoSuchDev), Superblock::unknown);
}

TEST(Superblocks, EndedAreThoseInNoMountTableThatTheKernelHasNoMore) {
  const uint32_t proc = dev_of("/proc");
  // Mounted: never ended, whatever the kernel says.
  EXPECT_TRUE(ended_filesystems({kNoSuchDev}, {kNoSuchDev}, true).empty());
  // In no table: ended only if the kernel has no superblock for it (a
  // filesystem detached while a file of it is held lives on).
  EXPECT_EQ(ended_filesystems({proc, kNoSuchDev}, {}, false), std::vector<uint32_t>{kNoSuchDev});
  EXPECT_EQ(ended_filesystems({proc, kNoSuchDev}, {}, true), std::vector<uint32_t>{kNoSuchDev});
}

} // namespace
} // namespace shmbpf
