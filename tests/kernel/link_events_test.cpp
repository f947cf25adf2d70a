// Kernel tests for hard links on tmpfs: link(2) and linkat(2) of a followed
// file are reported with both paths and the inode, and the file is followed
// under each of its names, so unlinking either one is reported too.
#include "kernel/file_events.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

constexpr int kAtEmptyPath = 0x1000; // AT_EMPTY_PATH

// A successful link by t's child of the file (dev, ino), from old_full to
// new_full (as the resolver made them of the paths as passed).
void expect_link_ok(const Event &e, const Traced &t, Origin origin, const std::string &old_full,
                    const std::string &new_full, const FileFacts &ff) {
  expect_header(e, t);
  expect_ok(e, 0);
  SCOPED_TRACE(show(e));
  EXPECT_EQ(e.type, EventType::link);
  EXPECT_EQ(e.kind, Kind::tmpfs);
  EXPECT_EQ(e.origin, origin);
  EXPECT_EQ(e.full_path, old_full);
  EXPECT_EQ(e.full_newpath, new_full);
  EXPECT_EQ(e.dev, ff.dev);
  EXPECT_EQ(e.ino, ff.ino);
}

// link(2) with absolute paths, then linkat(2) with a directory fd and
// bare names: each keeps the old name, and every name is unlinked as the
// one file.
TEST(LinkEvents, LinkAndLinkatFollowEveryName) {
  const TestFile l1("kt-l1"), l2("kt-l2"), l3("kt-l3");
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-link", [&](Facts &f) {
    int dfd = noted(open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC), f.f[1]);
    if (dfd < 0)
      return 1;
    int fd = noted(open(l1.path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600), f.f[0]);
    if (fd < 0)
      return 2;
    if (link(l1.path.c_str(), l2.path.c_str()) != 0)
      return 3;
    if (linkat(dfd, l1.leaf.c_str(), dfd, l3.leaf.c_str(), 0) != 0 || !note_file(fd, f.f[2]))
      return 4;
    if (unlink(l1.path.c_str()) != 0 || unlink(l2.path.c_str()) != 0 ||
        unlinkat(dfd, l3.leaf.c_str(), 0) != 0)
      return 5;
    close(fd);
    close(dfd);
    return 0;
  }));
  const FileFacts &ff = t.facts->f[0];
  const FileFacts &dir = t.facts->f[1];
  EXPECT_EQ(t.facts->f[2].nlink, 3u); // what the kernel said after both links

  Event cr;
  std::vector<Event> links, unlinks;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(take(t.evs, 2, EventType::link, links));
  ASSERT_TRUE(take(t.evs, 3, EventType::unlink, unlinks));
  EXPECT_EQ(t.evs.size(), 7u) << show(t.evs); // and the exit
  expect_file(cr, ff);

  const Event &ln = links[0];
  expect_link_ok(ln, t, libc_call(Origin::link), l1.path, l2.path, ff);
  EXPECT_EQ(ln.path, l1.path);
  EXPECT_EQ(ln.newpath, l2.path);
  EXPECT_EQ(ln.dirfd, AT_FDCWD);
  EXPECT_EQ(ln.newdirfd, AT_FDCWD);
  EXPECT_EQ(ln.flags, 0u);
  EXPECT_TRUE(ln.absolute);
  EXPECT_FALSE(ln.new_start); // nothing relative: no start directory
  EXPECT_EQ(ln.start_ino, 0u);

  const Event &at = links[1];
  expect_link_ok(at, t, Origin::linkat, l1.path, l3.path, ff);
  EXPECT_EQ(at.path, l1.leaf);
  EXPECT_EQ(at.newpath, l3.leaf);
  EXPECT_EQ(at.dirfd, dir.fd);
  EXPECT_EQ(at.newdirfd, dir.fd);
  EXPECT_EQ(at.flags, 0u);
  EXPECT_FALSE(at.absolute);
  EXPECT_FALSE(at.new_start);
  EXPECT_EQ(at.start_dev, dir.dev);
  EXPECT_EQ(at.start_ino, dir.ino);
  EXPECT_EQ(at.start_mnt_id, dir.mnt_id);
  EXPECT_EQ(at.start_dir, "/");
  EXPECT_LT(cr.ts_ns, ln.ts_ns);
  EXPECT_LT(ln.ts_ns, at.ts_ns);

  // Every name's unlink, each of the one inode: the new names were followed.
  expect_unlink_ok(unlinks[0], t, l1.path, ff.dev, ff.ino);
  expect_unlink_ok(unlinks[1], t, l2.path, ff.dev, ff.ino);
  expect_unlink_ok(unlinks[2], t, l3.path, ff.dev, ff.ino);
  EXPECT_LT(at.ts_ns, unlinks[0].ts_ns);
}

// An O_TMPFILE file gets its first name with linkat(fd, "", dirfd, name,
// AT_EMPTY_PATH): no old path, the fd's own inode, and the new name's start
// directory; then an absolute old path and a relative new one (the cwd's).
TEST(LinkEvents, LinkatEmptyPathNamesATmpfile) {
  const TestFile named("kt-tmpfile"), second("kt-second");
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-linkat-fd", [&](Facts &f) {
    int dfd = noted(open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC), f.f[1]);
    if (dfd < 0)
      return 1;
    int fd = noted(open("/dev/shm", O_TMPFILE | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 2;
    if (linkat(fd, "", dfd, named.leaf.c_str(), kAtEmptyPath) != 0 || !note_file(fd, f.f[2]))
      return 3;
    if (chdir("/dev/shm") != 0 || link(named.path.c_str(), second.leaf.c_str()) != 0)
      return 4;
    if (unlink(second.path.c_str()) != 0 || unlink(named.path.c_str()) != 0)
      return 5;
    close(fd);
    close(dfd);
    return 0;
  }));
  const FileFacts &ff = t.facts->f[0];
  const FileFacts &dir = t.facts->f[1];
  EXPECT_EQ(ff.nlink, 0u);
  EXPECT_EQ(t.facts->f[2].nlink, 1u);

  Event cr;
  std::vector<Event> links, unlinks;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(take(t.evs, 2, EventType::link, links));
  ASSERT_TRUE(take(t.evs, 2, EventType::unlink, unlinks));
  expect_file(cr, ff); // unlinked: an O_TMPFILE file has no name yet

  const Event &byfd = links[0];
  expect_link_ok(byfd, t, Origin::linkat, "", named.path, ff);
  EXPECT_EQ(byfd.path, "");
  EXPECT_EQ(byfd.newpath, named.leaf);
  EXPECT_EQ(byfd.dirfd, ff.fd);
  EXPECT_EQ(byfd.newdirfd, dir.fd);
  EXPECT_EQ(byfd.flags, static_cast<uint32_t>(kAtEmptyPath));
  EXPECT_FALSE(byfd.absolute);
  EXPECT_TRUE(byfd.new_start); // the start directory is the new name's
  EXPECT_EQ(byfd.start_dev, dir.dev);
  EXPECT_EQ(byfd.start_ino, dir.ino);
  EXPECT_EQ(byfd.start_mnt_id, dir.mnt_id);

  const Event &rel = links[1];
  expect_link_ok(rel, t, libc_call(Origin::link), named.path, second.path, ff);
  EXPECT_EQ(rel.newpath, second.leaf);
  EXPECT_TRUE(rel.absolute);
  EXPECT_TRUE(rel.new_start); // the cwd, for the relative new name
  EXPECT_EQ(rel.start_ino, dir.ino);

  expect_unlink_ok(unlinks[0], t, second.path, ff.dev, ff.ino);
  expect_unlink_ok(unlinks[1], t, named.path, ff.dev, ff.ino);
}

// A link that fails is no event (ret is checked in the kernel).
TEST(LinkEvents, FailedLinkIsNotReported) {
  const TestFile file("kt-lfail"), other("kt-lfail2");
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-link-fail", [&](Facts &f) {
    int fd = open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    int fd2 = open(other.path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 || fd2 < 0)
      return 1;
    if (link(file.path.c_str(), other.path.c_str()) == 0) // the new name is taken
      return 2;
    f.err = errno;
    close(fd);
    close(fd2);
    return 0;
  }));
  EXPECT_EQ(t.facts->err, EEXIST);
  EXPECT_TRUE(has_n(t.evs, 2, EventType::create));
  EXPECT_TRUE(has_n(t.evs, 0, EventType::link));
}

} // namespace
} // namespace shmbpf::test
