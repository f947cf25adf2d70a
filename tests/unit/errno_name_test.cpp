// The names trace gives a call's errno (views/errno_name).
#include "views/errno_name.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace shmbpf {
namespace {

TEST(ErrnoName, CommonNames) {
  EXPECT_EQ(errno_name(EPERM), "EPERM");
  EXPECT_EQ(errno_name(ENOENT), "ENOENT");
  EXPECT_EQ(errno_name(EINTR), "EINTR");
  EXPECT_EQ(errno_name(EIO), "EIO");
  EXPECT_EQ(errno_name(EBADF), "EBADF");
  EXPECT_EQ(errno_name(EAGAIN), "EAGAIN");
  EXPECT_EQ(errno_name(ENOMEM), "ENOMEM");
  EXPECT_EQ(errno_name(EACCES), "EACCES");
  EXPECT_EQ(errno_name(EFAULT), "EFAULT");
  EXPECT_EQ(errno_name(EBUSY), "EBUSY");
  EXPECT_EQ(errno_name(EEXIST), "EEXIST");
  EXPECT_EQ(errno_name(ENOTDIR), "ENOTDIR");
  EXPECT_EQ(errno_name(EISDIR), "EISDIR");
  EXPECT_EQ(errno_name(EINVAL), "EINVAL");
  EXPECT_EQ(errno_name(ENFILE), "ENFILE");
  EXPECT_EQ(errno_name(EMFILE), "EMFILE");
  EXPECT_EQ(errno_name(EFBIG), "EFBIG");
  EXPECT_EQ(errno_name(ENOSPC), "ENOSPC");
  EXPECT_EQ(errno_name(EROFS), "EROFS");
  EXPECT_EQ(errno_name(ENAMETOOLONG), "ENAMETOOLONG");
  EXPECT_EQ(errno_name(EOPNOTSUPP), "EOPNOTSUPP");
  EXPECT_EQ(errno_name(EIDRM), "EIDRM");
  EXPECT_EQ(errno_name(ENOSYS), "ENOSYS");
}

TEST(ErrnoName, UnknownIsDecimal) {
  EXPECT_EQ(errno_name(0), "0");
  EXPECT_EQ(errno_name(4095), "4095");
  EXPECT_EQ(errno_name(-5), "-5");
}

} // namespace
} // namespace shmbpf
