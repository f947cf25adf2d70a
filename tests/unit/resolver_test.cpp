#include "model/resolver.hpp"
#include "sources/mountinfo.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

constexpr uint32_t kNs = 4026531841u;

std::vector<MountInfo> host_mounts() {
  return parse_mountinfo(
      "1 0 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "25 1 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=65536k\n"
      "26 1 0:27 /sub /srv/bind rw - tmpfs tmpfs rw\n");
}

PathResolver resolver() {
  PathResolver r;
  r.set_namespace(kNs, host_mounts());
  return r;
}

Event create_in(uint32_t mnt_id, std::string name, uint64_t ino = 7) {
  Event e;
  e.type = EventType::create;
  e.kind = Kind::tmpfs;
  e.mntns = kNs;
  e.mnt_id = mnt_id;
  e.dev = 26;
  e.ino = ino;
  e.name = std::move(name);
  return e;
}

TEST(Resolver, CreateJoinsMountPoint) {
  auto r = resolver();
  auto e = create_in(25, "/torch_1_2_3");
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::resolved);
  EXPECT_EQ(e.full_path, "/dev/shm/torch_1_2_3");
}

TEST(Resolver, BindMountRootIsStripped) {
  auto r = resolver();
  auto e = create_in(26, "/sub/x");
  e.dev = 27;
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::resolved);
  EXPECT_EQ(e.full_path, "/srv/bind/x");
}

TEST(Resolver, ReusedMountIdIsNotTrusted) {
  auto r = resolver();
  auto e = create_in(25, "/x");
  e.dev = 99; // mount id 25 now names another tmpfs
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::unknown_mount);
  // A new table for the namespace replaces the old ids.
  r.set_namespace(kNs, parse_mountinfo("25 1 0:99 / /mnt/new rw - tmpfs tmpfs rw\n"));
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::resolved);
  EXPECT_EQ(e.full_path, "/mnt/new/x");
}

// A tmpfs unmounted and another mounted can get both its mount id and its
// device: the absolute path as passed shows that the table is stale.
TEST(Resolver, ReusedMountIdAndDeviceAreToldByThePathAsPassed) {
  auto r = resolver();
  auto e = create_in(25, "/x");
  e.path = "/mnt/other/x";
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::unknown_mount);
  r.set_namespace(kNs, parse_mountinfo("25 1 0:26 / /mnt/other rw - tmpfs tmpfs rw\n"));
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::resolved);
  EXPECT_EQ(e.full_path, "/mnt/other/x");
}

// A path through a symlink (/run/shm -> /dev/shm) disagrees with a table
// that is right: after one new read of the tables the mount is trusted, and
// the next event on it asks for none.
TEST(Resolver, PathThroughASymlinkIsTrustedAfterOneRead) {
  auto r = resolver();
  auto e = create_in(25, "/x");
  e.path = "/run/shm/x";
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::unknown_mount);
  r.set_namespace(kNs, host_mounts());
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::resolved);
  EXPECT_EQ(e.full_path, "/dev/shm/x");
  auto again = create_in(25, "/y", 8);
  again.path = "/run/shm/y";
  EXPECT_EQ(r.resolve(again), PathResolver::Outcome::resolved);
  EXPECT_EQ(again.full_path, "/dev/shm/y");
  // Relative paths and paths that agree are never questioned.
  auto rel = create_in(25, "/z", 9);
  rel.path = "z";
  EXPECT_EQ(r.resolve(rel), PathResolver::Outcome::resolved);
  EXPECT_EQ(rel.full_path, "/dev/shm/z");
  auto same = create_in(25, "/w", 10);
  same.path = "/dev/shm//./w";
  EXPECT_EQ(r.resolve(same), PathResolver::Outcome::resolved);
}

TEST(Resolver, UnknownMountAsksForRefresh) {
  auto r = resolver();
  auto e = create_in(99, "/x");
  EXPECT_EQ(r.resolve(e), PathResolver::Outcome::unknown_mount);
}

Event unlink_of(std::string path) {
  Event e;
  e.type = EventType::unlink;
  e.kind = Kind::tmpfs;
  e.mntns = kNs;
  e.absolute = !path.empty() && path[0] == '/';
  e.path = std::move(path);
  return e;
}

Event free_of(uint32_t dev, uint64_t ino) {
  Event f;
  f.type = EventType::free;
  f.kind = Kind::tmpfs;
  f.dev = dev;
  f.ino = ino;
  f.unlinked = true;
  return f;
}

TEST(Resolver, AbsoluteUnlinkGetsInodeOfCreate) {
  auto r = resolver();
  auto c = create_in(25, "/seg", 1234);
  r.resolve(c);
  auto u = unlink_of("/dev/shm//./seg");
  u.dev = 999; // a stale hint from the kernel
  EXPECT_EQ(r.resolve(u), PathResolver::Outcome::resolved);
  EXPECT_EQ(u.full_path, "/dev/shm/seg");
  EXPECT_EQ(u.ino, 1234u);
  EXPECT_EQ(u.dev, 26u);
}

TEST(Resolver, UnlinkOnExt4IsDropped) {
  auto r = resolver();
  auto u = unlink_of("/home/me/seg");
  EXPECT_EQ(r.resolve(u), PathResolver::Outcome::not_shared_mem);
}

TEST(Resolver, RelativeUnlinkUsesStartDirectory) {
  auto r = resolver();
  auto u = unlink_of("seg");
  u.start_mnt_id = 25;
  u.start_dev = 26;
  u.start_dir = "/";
  EXPECT_EQ(r.resolve(u), PathResolver::Outcome::resolved);
  EXPECT_EQ(u.full_path, "/dev/shm/seg");

  auto up = unlink_of("../shm/seg2");
  up.start_mnt_id = 1;
  up.start_dev = (254u << 20) | 0;
  up.start_dir = "/dev/other";
  EXPECT_EQ(r.resolve(up), PathResolver::Outcome::resolved);
  EXPECT_EQ(up.full_path, "/dev/shm/seg2");
}

// open(O_CREAT) without space: the file never came to be, its mount is
// found from the path as passed (and its start directory).
TEST(Resolver, CreateWithoutSpaceFindsTheMountOfTheNewFile) {
  auto r = resolver();
  auto c = unlink_of("torch_1_2_3");
  c.type = EventType::nospace;
  c.origin = Origin::openat;
  c.start_mnt_id = 25;
  c.start_dev = 26;
  c.start_dir = "/";
  EXPECT_EQ(r.resolve(c), PathResolver::Outcome::resolved);
  EXPECT_EQ(c.full_path, "/dev/shm/torch_1_2_3");
  EXPECT_EQ(c.dev, 26u);
  EXPECT_EQ(c.mnt_id, 25u);
  EXPECT_EQ(c.name, "/torch_1_2_3");
  EXPECT_EQ(c.ino, 0u);

  auto bind = unlink_of("/srv/bind/x");
  bind.type = EventType::nospace;
  bind.origin = Origin::creat;
  EXPECT_EQ(r.resolve(bind), PathResolver::Outcome::resolved);
  EXPECT_EQ(bind.dev, 27u);
  EXPECT_EQ(bind.mnt_id, 26u);

  // A full ext4 is not shared memory.
  auto disk = unlink_of("/home/me/x");
  disk.type = EventType::nospace;
  disk.origin = Origin::open;
  EXPECT_EQ(r.resolve(disk), PathResolver::Outcome::not_shared_mem);
}

// The light hooks' create: the new inode exact, the path as passed.
Event light_create(std::string path, uint64_t ino) {
  Event e = unlink_of(std::move(path));
  e.type = EventType::create;
  e.by_path = true;
  e.exact_hint = true;
  e.is_new = true;
  e.dev = 26;
  e.ino = ino;
  return e;
}

TEST(Resolver, ALightCreateIsNamedFromItsPathAndNamesLaterResizes) {
  auto r = resolver();
  auto c = light_create("torch_1_2_3", 41);
  c.start_mnt_id = 25;
  c.start_dev = 26;
  c.start_dir = "/";
  EXPECT_EQ(r.resolve(c), PathResolver::Outcome::resolved);
  EXPECT_EQ(c.full_path, "/dev/shm/torch_1_2_3");
  EXPECT_EQ(c.name, "/torch_1_2_3");
  EXPECT_EQ(c.mnt_id, 25u);
  EXPECT_EQ(c.ino, 41u);

  // A resize that names only the inode (truncate(2)): the path the create
  // gave it, marked so; no mount, no name (the kernel named none).
  Event rs = create_in(0, "", 41);
  rs.type = EventType::resize;
  EXPECT_EQ(r.resolve(rs), PathResolver::Outcome::resolved);
  EXPECT_EQ(rs.full_path, "/dev/shm/torch_1_2_3");
  EXPECT_TRUE(rs.path_from_model);
  EXPECT_EQ(rs.mnt_id, 0u);
  EXPECT_EQ(rs.name, "");

  // The creator's ftruncate right after its create, sent as the inode
  // alone: the mount and name the create had, as a resize by fd has them.
  Event sent = rs;
  sent.full_path.clear();
  sent.path_from_model = false;
  sent.create_sent = true;
  EXPECT_EQ(r.resolve(sent), PathResolver::Outcome::resolved);
  EXPECT_EQ(sent.full_path, "/dev/shm/torch_1_2_3");
  EXPECT_EQ(sent.mnt_id, 25u);
  EXPECT_EQ(sent.name, "/torch_1_2_3");
  EXPECT_TRUE(sent.path_from_model);

  // A resize by fd names itself: nothing from the model.
  Event by_fd = create_in(25, "/torch_1_2_3", 41);
  by_fd.type = EventType::resize;
  EXPECT_EQ(r.resolve(by_fd), PathResolver::Outcome::resolved);
  EXPECT_EQ(by_fd.full_path, "/dev/shm/torch_1_2_3");
  EXPECT_FALSE(by_fd.path_from_model);

  // An inode the model does not know: nothing made up.
  Event unknown = create_in(0, "", 4141);
  unknown.type = EventType::resize;
  unknown.create_sent = true;
  EXPECT_EQ(r.resolve(unknown), PathResolver::Outcome::resolved);
  EXPECT_EQ(unknown.full_path, "");
  EXPECT_EQ(unknown.mnt_id, 0u);
  EXPECT_FALSE(unknown.path_from_model);

  // Its unlink by the path finds it, as a full-set create's would.
  auto ul = unlink_of("/dev/shm/torch_1_2_3");
  EXPECT_EQ(r.resolve(ul), PathResolver::Outcome::resolved);
  EXPECT_EQ(ul.ino, 41u);
}

TEST(Resolver, ALightCreateWithOTmpfileIsItsDirectorysUnnamedFile) {
  auto r = resolver();
  auto c = light_create("/dev/shm", 42);
  c.flags = 020200002; // O_TMPFILE | O_RDWR
  EXPECT_EQ(r.resolve(c), PathResolver::Outcome::resolved);
  EXPECT_EQ(c.full_path, "/dev/shm/#42");
  EXPECT_TRUE(c.unlinked);
}

TEST(Resolver, ALightCreateWhosePathLeadsElsewhereIsDropped) {
  auto r = resolver();
  // The path names the bind mount's device (27), the inode is on 26: the
  // file was renamed away before the path was read.
  auto c = light_create("/srv/bind/x", 43);
  EXPECT_EQ(r.resolve(c), PathResolver::Outcome::not_shared_mem);
}

TEST(Resolver, AnExactHintWinsOverAStaleName) {
  auto r = resolver();
  auto c = create_in(25, "/a", 7);
  ASSERT_EQ(r.resolve(c), PathResolver::Outcome::resolved);
  // /dev/shm/a was replaced by a file the model never saw made (inode 9):
  // a light hook's unlink names it exactly.
  auto ul = unlink_of("/dev/shm/a");
  ul.dev = 26;
  ul.ino = 9;
  ul.exact_hint = true;
  EXPECT_EQ(r.resolve(ul), PathResolver::Outcome::resolved);
  EXPECT_EQ(ul.ino, 9u);
  auto stale = unlink_of("/dev/shm/a");
  EXPECT_EQ(r.resolve(stale), PathResolver::Outcome::resolved);
  EXPECT_EQ(stale.ino, 0u); // the name is gone
}

TEST(Resolver, RenameMovesThePath) {
  auto r = resolver();
  auto c = create_in(25, "/a", 55);
  r.resolve(c);
  Event rn = unlink_of("/dev/shm/a");
  rn.type = EventType::rename;
  rn.newpath = "/dev/shm/b";
  ASSERT_EQ(r.resolve(rn), PathResolver::Outcome::resolved);
  EXPECT_EQ(rn.ino, 55u);
  // A resize sent as the inode alone after it: the new name.
  Event rs = create_in(0, "", 55);
  rs.type = EventType::resize;
  rs.create_sent = true;
  ASSERT_EQ(r.resolve(rs), PathResolver::Outcome::resolved);
  EXPECT_EQ(rs.full_path, "/dev/shm/b");
  EXPECT_EQ(rs.name, "/b");
  EXPECT_EQ(rs.mnt_id, 25u);
  auto u = unlink_of("/dev/shm/b");
  ASSERT_EQ(r.resolve(u), PathResolver::Outcome::resolved);
  EXPECT_EQ(u.ino, 55u);
}

// renameat(dfd, "../a", dfd, "b") from /dev/shm/sub: the new path starts
// where the old one does, whatever the old one's ".." did.
TEST(Resolver, RenameTargetFromTheSameStartDirectory) {
  auto r = resolver();
  auto c = create_in(25, "/a", 56);
  r.resolve(c);
  Event rn = unlink_of("../a");
  rn.type = EventType::rename;
  rn.dirfd = rn.newdirfd = 5;
  rn.start_mnt_id = 25;
  rn.start_dev = 26;
  rn.start_dir = "/sub";
  rn.newpath = "b/./c";
  ASSERT_EQ(r.resolve(rn), PathResolver::Outcome::resolved);
  EXPECT_EQ(rn.full_path, "/dev/shm/a");
  EXPECT_EQ(rn.full_newpath, "/dev/shm/sub/b/c");
  EXPECT_EQ(rn.ino, 56u);
  auto u = unlink_of("/dev/shm/sub/b/c");
  ASSERT_EQ(r.resolve(u), PathResolver::Outcome::resolved);
  EXPECT_EQ(u.ino, 56u);

  // Another dirfd: another directory, which the record does not describe.
  Event other = unlink_of("x");
  other.type = EventType::rename;
  other.dirfd = 5;
  other.newdirfd = 6;
  other.start_mnt_id = 25;
  other.start_dev = 26;
  other.start_dir = "/";
  other.newpath = "y";
  ASSERT_EQ(r.resolve(other), PathResolver::Outcome::resolved);
  EXPECT_EQ(other.full_path, "/dev/shm/x");
  EXPECT_EQ(other.full_newpath, "");

  Event abs = unlink_of("/dev/shm/sub/b/c");
  abs.type = EventType::rename;
  abs.newpath = "/dev/shm//d/../e";
  ASSERT_EQ(r.resolve(abs), PathResolver::Outcome::resolved);
  EXPECT_EQ(abs.full_newpath, "/dev/shm/e");
}

// link("/dev/shm/a", "b") from the cwd /dev/shm: the old name stays the
// file's, the new one (from the new path's own start directory) too.
TEST(Resolver, LinkKeepsTheOldNameAndAddsTheNew) {
  auto r = resolver();
  auto c = create_in(25, "/a", 61);
  r.resolve(c);
  Event ln = unlink_of("/dev/shm/a");
  ln.type = EventType::link;
  ln.dev = 999; // a stale hint: the path knows better
  ln.newpath = "b";
  ln.new_start = true;
  ln.start_mnt_id = 25;
  ln.start_dev = 26;
  ln.start_dir = "/";
  ASSERT_EQ(r.resolve(ln), PathResolver::Outcome::resolved);
  EXPECT_EQ(ln.full_path, "/dev/shm/a");
  EXPECT_EQ(ln.full_newpath, "/dev/shm/b");
  EXPECT_EQ(ln.dev, 26u);
  EXPECT_EQ(ln.ino, 61u);
  for (const char *name : {"/dev/shm/a", "/dev/shm/b"}) {
    auto u = unlink_of(name);
    ASSERT_EQ(r.resolve(u), PathResolver::Outcome::resolved);
    EXPECT_EQ(u.ino, 61u) << name;
  }

  // linkat(fd, "", dfd, "c", AT_EMPTY_PATH): no old path; the kernel's
  // inode is the file's own.
  Event byfd = unlink_of("");
  byfd.type = EventType::link;
  byfd.dev = 26;
  byfd.ino = 62;
  byfd.dirfd = 4;
  byfd.newdirfd = 5;
  byfd.newpath = "c";
  byfd.new_start = true;
  byfd.start_mnt_id = 25;
  byfd.start_dev = 26;
  byfd.start_dir = "/sub";
  ASSERT_EQ(r.resolve(byfd), PathResolver::Outcome::resolved);
  EXPECT_EQ(byfd.full_path, "");
  EXPECT_EQ(byfd.full_newpath, "/dev/shm/sub/c");
  EXPECT_EQ(byfd.ino, 62u);
  auto f = free_of(26, 62);
  r.resolve(f);
  EXPECT_EQ(f.full_path, "/dev/shm/sub/c");
  EXPECT_EQ(f.kind, Kind::tmpfs);

  // A link from ext4 is no shared memory.
  Event ext4 = unlink_of("/home/me/a");
  ext4.type = EventType::link;
  ext4.newpath = "/home/me/b";
  EXPECT_EQ(r.resolve(ext4), PathResolver::Outcome::not_shared_mem);
}

TEST(Resolver, FreeTakesKindAndPathOfKnownInode) {
  auto r = resolver();
  auto c = create_in(25, "/seg", 77);
  r.resolve(c);
  Event f;
  f.type = EventType::free;
  f.kind = Kind::tmpfs;
  f.dev = 26;
  f.ino = 77;
  f.unlinked = true;
  r.resolve(f);
  EXPECT_EQ(f.full_path, "/dev/shm/seg");
}

// An unlinked file's pages can come in several free records (its truncate
// moved CPUs, or another file's page came between): each has its path.
// Inodes being freed are kept for that, the last kMaxFreed of them.
TEST(Resolver, EveryFreeOfAnUnlinkedInodeHasItsPath) {
  auto r = resolver();
  auto c = create_in(25, "/seg", 77);
  r.resolve(c);
  auto u = unlink_of("/dev/shm/seg");
  ASSERT_EQ(r.resolve(u), PathResolver::Outcome::resolved);
  for (int i = 0; i < 3; ++i) {
    auto f = free_of(26, 77);
    r.resolve(f);
    EXPECT_EQ(f.full_path, "/dev/shm/seg") << "free " << i;
  }

  auto missed = create_in(25, "/other", 78); // its unlink is never seen
  r.resolve(missed);
  for (int i = 0; i < 2; ++i) {
    auto f = free_of(26, 78);
    r.resolve(f);
    EXPECT_EQ(f.full_path, "/dev/shm/other") << "free " << i;
  }
  EXPECT_EQ(r.remembered_inodes(), 2u);
  for (uint64_t ino = 1000; ino < 1000 + PathResolver::kMaxFreed; ++ino) {
    auto c2 = create_in(25, "/g", ino);
    r.resolve(c2);
    auto u2 = unlink_of("/dev/shm/g");
    r.resolve(u2);
    auto f2 = free_of(26, ino);
    r.resolve(f2);
  }
  // The two first freed are forgotten; the unlinked ones freed since are
  // the last kMaxFreed.
  EXPECT_EQ(r.remembered_inodes(), PathResolver::kMaxFreed);
  for (uint64_t ino : {77, 78}) {
    auto late = free_of(26, ino);
    r.resolve(late);
    EXPECT_EQ(late.full_path, "") << ino;
  }
  auto recent = free_of(26, 1000 + PathResolver::kMaxFreed - 1);
  r.resolve(recent);
  EXPECT_EQ(recent.full_path, "/dev/shm/g");
}

TEST(Resolver, Normalize) {
  EXPECT_EQ(PathResolver::normalize("/a/./b//../c"), "/a/c");
  EXPECT_EQ(PathResolver::normalize("/../.."), "/");
  EXPECT_EQ(PathResolver::normalize("rel"), "");
  EXPECT_EQ(PathResolver::normalize("/dev/shm/"), "/dev/shm");
}

// A file unlinked without pages never sends a free: the resolver may not
// keep such inodes forever, but keeps the recent ones for a late free.
TEST(Resolver, UnlinkedInodesAreBounded) {
  auto r = resolver();
  const uint64_t n = PathResolver::kMaxUnlinked + 1000;
  for (uint64_t ino = 1; ino <= n; ++ino) {
    auto c = create_in(25, "/f" + std::to_string(ino), ino);
    ASSERT_EQ(r.resolve(c), PathResolver::Outcome::resolved);
    auto u = unlink_of(c.full_path);
    ASSERT_EQ(r.resolve(u), PathResolver::Outcome::resolved);
    ASSERT_EQ(u.ino, ino);
  }
  EXPECT_EQ(r.remembered_inodes(), PathResolver::kMaxUnlinked);
  auto late = free_of(26, n); // the most recent: still known
  r.resolve(late);
  EXPECT_EQ(late.full_path, "/dev/shm/f" + std::to_string(n));
  auto early = free_of(26, 1); // the oldest: forgotten
  r.resolve(early);
  EXPECT_EQ(early.full_path, "");
}

TEST(Resolver, RenamedHardLinkIsNotForgotten) {
  auto r = resolver();
  auto c = create_in(25, "/a", 9);
  r.resolve(c);
  auto u = unlink_of("/dev/shm/a");
  r.resolve(u);
  // The inode has another name the kernel reports; it is renamed.
  Event rn = unlink_of("/dev/shm/other");
  rn.type = EventType::rename;
  rn.dev = 26;
  rn.ino = 9;
  rn.newpath = "/dev/shm/b";
  ASSERT_EQ(r.resolve(rn), PathResolver::Outcome::resolved);
  for (uint64_t ino = 100; ino < 100 + PathResolver::kMaxUnlinked + 10; ++ino) {
    auto c2 = create_in(25, "/g", ino);
    r.resolve(c2);
    auto u2 = unlink_of("/dev/shm/g");
    r.resolve(u2);
  }
  auto f = free_of(26, 9);
  r.resolve(f);
  EXPECT_EQ(f.full_path, "/dev/shm/b");
}

} // namespace
} // namespace shmbpf
