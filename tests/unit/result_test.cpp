// The error convention (facts/result.hpp): a value or why not, done or why
// not, and the exit statuses a fatal error ends in.
#include "facts/result.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

Result<int> halve(int v) {
  if (v % 2 != 0)
    return Error{std::to_string(v) + " is odd"};
  return v / 2;
}

Result<void> check_even(int v) {
  if (auto h = halve(v); !h)
    return Error{h.error()};
  return {};
}

TEST(Result, AValueOrWhyNot) {
  auto ok = halve(8);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 4);
  auto bad = halve(7);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "7 is odd");
}

TEST(Result, DoneOrWhyNot) {
  EXPECT_TRUE(check_even(2));
  EXPECT_TRUE(check_even(2).error().empty());
  const Result<void> r = check_even(3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "3 is odd");
}

TEST(Result, FatalErrorsCarryTheirExitStatus) {
  const FatalError refused("--listen", "port 0 is not a port", Exit::refused);
  EXPECT_STREQ(refused.what(), "--listen: port 0 is not a port");
  EXPECT_EQ(refused.exit_code(), 2);
  EXPECT_EQ(FatalError("reading", "EIO").exit_code(), status(Exit::failed));
  EXPECT_EQ(status(Exit::found), 1);
  EXPECT_EQ(status(Exit::ok), 0);
}

} // namespace
} // namespace shmbpf
