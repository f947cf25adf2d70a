// apply_scan's rules on made-up scans: what a scan could not cover is kept
// by the model until the next full scan says otherwise.
#include "model/apply_scan.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

ScannedFs filesystem(uint32_t dev, std::string mountpoint, ScanShortfall shortfall) {
  ScannedFs fs;
  fs.dev = dev;
  fs.mountpoint = std::move(mountpoint);
  fs.shortfall = shortfall;
  return fs;
}

TEST(ApplyScan, ScanGapsFollowTheLastFullScan) {
  Engine engine;
  SystemScan scan;
  scan.filesystems = {filesystem(25, "/dev/shm", {3, false}), filesystem(26, "/run", {}),
                      filesystem(27, "/mnt/big", {0, true})};
  bootstrap(engine, scan);
  ASSERT_EQ(engine.scan_gaps().size(), 2u);
  EXPECT_EQ(engine.scan_gaps()[0].mountpoint, "/dev/shm");
  EXPECT_EQ(engine.scan_gaps()[0].dev, 25u);
  EXPECT_EQ(engine.scan_gaps()[0].shortfall.dirs_too_deep, 3u);
  EXPECT_EQ(engine.scan_gaps()[1].mountpoint, "/mnt/big");
  EXPECT_TRUE(engine.scan_gaps()[1].shortfall.file_limit);

  // The deep directories went away: the next reconcile clears the gap.
  scan.filesystems[0].shortfall = {};
  reconcile(engine, scan, 1'000'000'000);
  ASSERT_EQ(engine.scan_gaps().size(), 1u);
  EXPECT_EQ(engine.scan_gaps()[0].mountpoint, "/mnt/big");
}

} // namespace
} // namespace shmbpf
