// Kernel tests for writes and creates that find no space on a tmpfs: a
// named child fills a small tmpfs for real and makes each kind of call fail
// with ENOSPC; every nospace event is checked against what the child saw
// (fstat, its fdinfo, the offsets it asked for).
#include "kernel/file_events.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMount = 64 * 1024;

// write, pwrite64, writev, pwritev and pwritev2 to a file that filled its
// 64 KiB tmpfs: one nospace event each, in order, naming the file.
TEST(NoSpace, EveryWriteCallOnAFullTmpfs) {
  TmpfsMount tmpfs;
  SHMBPF_COLLECTOR(col);
  ASSERT_TRUE(tmpfs.mount("size=64k"));
  const TestFile file("kt-nospace", tmpfs.dir());

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-nospace", [&](Facts &f) {
    int fd = open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return 1;
    static char page[2 * kPage];
    std::memset(page, 'x', sizeof page);
    uint64_t written = 0;
    for (;;) {
      ssize_t n = write(fd, page, kPage);
      if (n < 0)
        break;
      written += static_cast<uint64_t>(n);
      if (written > 2 * kMount)
        return 2; // the mount's size is not enforced
    }
    f.err = errno;
    if (written != kMount || !note_file(fd, f.f[0]))
      return 3;
    iovec iov{page, kPage};
    if (pwrite(fd, page, 2 * kPage, 1 << 20) != -1 || errno != ENOSPC)
      return 4;
    if (writev(fd, &iov, 1) != -1 || errno != ENOSPC)
      return 5;
    if (pwritev(fd, &iov, 1, 2 << 20) != -1 || errno != ENOSPC)
      return 6;
    if (pwritev2(fd, &iov, 1, 3 << 20, 0) != -1 || errno != ENOSPC)
      return 7;
    close(fd);
    return 0;
  }));
  EXPECT_EQ(t.facts->err, ENOSPC);

  std::vector<Event> fails;
  ASSERT_TRUE(take(t.evs, 5, EventType::nospace, fails));
  const std::vector<std::pair<Origin, uint64_t>> want = {
      {Origin::write, kMount + kPage}, // the file position plus the count
      {Origin::pwrite64, (1 << 20) + 2 * kPage},
      {Origin::writev, kMount}, // the file position
      {Origin::pwritev, 2 << 20},
      {Origin::pwritev2, 3 << 20},
  };
  for (size_t i = 0; i < fails.size(); ++i) {
    const Event &e = fails[i];
    SCOPED_TRACE(show(e));
    expect_header(e, t);
    expect_file(e, t.facts->f[0]);
    EXPECT_EQ(e.ret, -ENOSPC);
    EXPECT_EQ(e.err, ENOSPC);
    EXPECT_EQ(e.kind, Kind::tmpfs);
    EXPECT_EQ(e.origin, want[i].first);
    EXPECT_EQ(e.arg_size, want[i].second);
    EXPECT_EQ(e.size, kMount);
    EXPECT_EQ(e.mode & S_IFMT, static_cast<uint32_t>(S_IFREG));
    EXPECT_EQ(e.name, file.name);
    EXPECT_EQ(e.full_path, file.path);
  }
}

// A tmpfs with three inodes (its root takes one): the third create fails
// with ENOSPC, by a name relative to the cwd and by an absolute path. The
// events name the file that was not made and find its mount.
TEST(NoSpace, CreatesWithNoInodeLeft) {
  TmpfsMount tmpfs;
  SHMBPF_COLLECTOR(col);
  ASSERT_TRUE(tmpfs.mount("nr_inodes=3"));
  const TestFile a("kt-ino-a", tmpfs.dir()), b("kt-ino-b", tmpfs.dir()),
      rel("kt-ino-rel", tmpfs.dir()), abs("kt-ino-abs", tmpfs.dir());

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-noinode", [&](Facts &f) {
    int dir = open(tmpfs.dir().c_str(), O_PATH | O_DIRECTORY);
    if (dir < 0 || !note_file(dir, f.f[0]) || fchdir(dir) != 0)
      return 1;
    for (const TestFile *made : {&a, &b}) {
      int fd = open(made->path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0)
        return 2;
      close(fd);
    }
    if (open(rel.leaf.c_str(), O_CREAT | O_RDWR, 0600) != -1)
      return 3;
    f.err = errno;
    if (creat(abs.path.c_str(), 0600) != -1 || errno != ENOSPC)
      return 4;
    return 0;
  }));
  EXPECT_EQ(t.facts->err, ENOSPC);

  std::vector<Event> fails;
  ASSERT_TRUE(take(t.evs, 2, EventType::nospace, fails));
  ASSERT_TRUE(has_n(t.evs, 2, EventType::create));
  const FileFacts &mount = t.facts->f[0];
  const std::vector<std::pair<Origin, const TestFile *>> want = {{Origin::openat, &rel},
                                                                 {libc_call(Origin::creat), &abs}};
  for (size_t i = 0; i < fails.size(); ++i) {
    const Event &e = fails[i];
    SCOPED_TRACE(show(e));
    expect_header(e, t);
    EXPECT_EQ(e.ret, -ENOSPC);
    EXPECT_EQ(e.origin, want[i].first);
    EXPECT_EQ(e.kind, Kind::tmpfs);
    EXPECT_EQ(e.full_path, want[i].second->path);
    EXPECT_EQ(e.dev, mount.dev);
    EXPECT_EQ(e.mnt_id, mount.mnt_id);
    EXPECT_EQ(e.ino, 0u);
    EXPECT_TRUE(e.flags & O_CREAT);
  }
  EXPECT_EQ(fails[0].path, rel.leaf);
  EXPECT_FALSE(fails[0].absolute);
  EXPECT_EQ(fails[1].path, abs.path);
  EXPECT_TRUE(fails[1].absolute);
}

// A create that fails for another reason (the file exists) is no event.
TEST(NoSpace, OtherFailuresAreNotReported) {
  TmpfsMount tmpfs;
  SHMBPF_COLLECTOR(col);
  ASSERT_TRUE(tmpfs.mount("size=64k"));
  const TestFile file("kt-exists", tmpfs.dir());

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-eexist", [&](Facts &f) {
    int fd = open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return 1;
    if (open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600) != -1)
      return 2;
    f.err = errno;
    if (write(-1, "x", 1) != -1) // EBADF
      return 3;
    close(fd);
    return 0;
  }));
  EXPECT_EQ(t.facts->err, EEXIST);
  EXPECT_TRUE(has_n(t.evs, 0, EventType::nospace));
  EXPECT_TRUE(has_n(t.evs, 1, EventType::create));
}

} // namespace
} // namespace shmbpf::test
