#include "views/scan_notes.hpp"

#include "text_checks.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

TEST(ScanNotes, OneLinePerFilesystemThatWasNotFullyScanned) {
  std::vector<ScannedFs> fss(3);
  fss[0].mountpoint = "/dev/shm";
  fss[1].mountpoint = "/run/evil\x1b[2J";
  fss[1].shortfall.dirs_too_deep = 2;
  fss[2].mountpoint = "/big";
  fss[2].shortfall.file_limit = true;
  fss[2].shortfall.dirs_too_deep = 1;
  const auto lines = scan_shortfall_lines(fss);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("/run/evil\\x1b[2J: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("2 directories nested too deep"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find("most files"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("most files"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("1 directories"), std::string::npos) << lines[1];
  for (const auto &l : lines)
    EXPECT_FALSE(test::has_raw_control(l)) << l;
  EXPECT_TRUE(scan_shortfall_lines({fss[0]}).empty());
}

} // namespace
} // namespace shmbpf
