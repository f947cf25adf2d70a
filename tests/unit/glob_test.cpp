// The --match glob: what can match, and what it matches.
#include "model/glob.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

TEST(Glob, StarCrossesSlashes) {
  EXPECT_TRUE(glob_matches("/dev/shm/*", "/dev/shm/torch_1_2_3"));
  EXPECT_TRUE(glob_matches("*torch_*", "/dev/shm/sub/torch_9"));
  EXPECT_FALSE(glob_matches("/dev/shm/torch_*", "/run/torch_1"));
  EXPECT_TRUE(glob_matches("/dev/shm/[!.]*", "/dev/shm/x"));
  EXPECT_FALSE(glob_matches("/dev/shm/[!.]*", "/dev/shm/.x"));
  EXPECT_TRUE(glob_matches("a\\[b", "a[b"));
}

TEST(Glob, AnOpenSetIsRefusedWithItsOffset) {
  EXPECT_EQ(glob_problem("["), "'[' at offset 0 has no closing ']' (write \\[ for a '[')");
  EXPECT_EQ(glob_problem("/dev/shm/torch_[0-9*"),
            "'[' at offset 15 has no closing ']' (write \\[ for a '[')");
  EXPECT_EQ(glob_problem("ok[a]then["), "'[' at offset 9 has no closing ']' (write \\[ for a '[')");
  for (const char *ok :
       {"/dev/shm/torch_*", "/dev/shm/[!.]*", "[]]", "[!]]", "a\\[b", "[[:digit:]]x", ""})
    EXPECT_EQ(glob_problem(ok), "") << ok;
}

} // namespace
} // namespace shmbpf
