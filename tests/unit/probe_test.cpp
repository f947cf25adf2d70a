// Pure parts of the probe: sizing of the kernel's maps.
#include "probe/probe.hpp"

#include <gtest/gtest.h>

namespace shmbpf::test {
namespace {

TEST(NameMapCapacity, AtLeast64KiEntries) {
  EXPECT_EQ(name_map_capacity(0), 65536u);
  EXPECT_EQ(name_map_capacity(1000), 65536u);
  EXPECT_EQ(name_map_capacity(16384), 65536u);
}

TEST(NameMapCapacity, FourTimesTheFilesAsAPowerOfTwo) {
  EXPECT_EQ(name_map_capacity(16385), 131072u);
  EXPECT_EQ(name_map_capacity(20000), 131072u);
  EXPECT_EQ(name_map_capacity(100000), 524288u);
}

TEST(NameMapCapacity, AtMostAMillionEntries) {
  EXPECT_EQ(name_map_capacity(262144), 1u << 20);
  EXPECT_EQ(name_map_capacity(300000), 1u << 20);
  EXPECT_EQ(name_map_capacity(uint64_t{1} << 40), 1u << 20);
}

} // namespace
} // namespace shmbpf::test
