// Hard links in the model: a tmpfs file is an inode, not a name. Scans that
// list it under several paths, and unlinks and renames of one of its names,
// keep one segment that counts its names (nlink) and shows one it has.
#include "model/apply_scan.hpp"
#include "model/engine.hpp"
#include "synthetic_events.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

constexpr uint32_t kDev = 26;
constexpr uint32_t kMntId = 25;
constexpr uint64_t kSec = 1'000'000'000;

using test::process_event;
using Names = std::vector<std::string>;

SegmentKey key_of(uint64_t ino) { return SegmentKey::file(kDev, ino); }

// A file as a scan of /dev/shm lists it: once per name.
TmpfsFile scanned(uint64_t ino, const std::string &path, uint32_t nlink, uint64_t bytes = 0) {
  TmpfsFile f;
  f.dev = kDev;
  f.ino = ino;
  f.path = path;
  f.leaf = path.substr(path.rfind('/') + 1);
  f.size = bytes;
  f.bytes = bytes;
  f.uid = 1000;
  f.nlink = nlink;
  return f;
}

// An open(O_CREAT) that made path, resolved.
Event create(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts) {
  Event e = process_event(EventType::create, pid, ts);
  e.kind = Kind::tmpfs;
  e.dev = kDev;
  e.mnt_id = kMntId;
  e.ino = ino;
  e.path = e.full_path = path;
  e.name = path.substr(path.find('/', 1));
  e.flags = O_RDWR | O_CREAT | O_CLOEXEC;
  e.is_new = true;
  e.ret = e.fd = 3;
  return e;
}

// An unlink, rename or link of path (to newpath), resolved; hint_ino is
// what the resolver left in (dev, ino), 0 for nothing.
Event by_name(EventType type, const std::string &path, uint64_t ts, uint64_t hint_ino = 0,
              const std::string &newpath = "") {
  Event e = process_event(type, 200, ts);
  e.kind = Kind::tmpfs;
  e.path = e.full_path = path;
  e.absolute = true;
  e.newpath = e.full_newpath = newpath;
  e.dev = hint_ino ? kDev : 0;
  e.ino = hint_ino;
  return e;
}

SystemScan scan_of(std::vector<TmpfsFile> files) {
  SystemScan scan;
  ScannedFs fs;
  fs.dev = kDev;
  fs.mnt_id = kMntId;
  fs.mountpoint = "/dev/shm";
  fs.files = std::move(files);
  scan.filesystems.push_back(std::move(fs));
  return scan;
}

TEST(Links, BootstrapMakesOneSegmentOfAnInodesPaths) {
  Engine engine;
  const BootstrapStats stats = bootstrap(
      engine, scan_of({scanned(7, "/dev/shm/l1", 2, 4096), scanned(8, "/dev/shm/other", 1),
                       scanned(7, "/dev/shm/sub/l2", 2, 4096)}));
  EXPECT_EQ(stats.files, 3u);
  EXPECT_EQ(engine.segment_count(), 2u);
  auto s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->nlink, 2u);
  EXPECT_EQ(s->path, "/dev/shm/l1");
  EXPECT_EQ(s->other_paths, Names{"/dev/shm/sub/l2"});
  EXPECT_EQ(s->bytes, 4096u);
  auto one = engine.segment(key_of(8));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->nlink, 1u);
  EXPECT_TRUE(one->other_paths.empty());
}

// Unlinking the shown name shows another; the last name unlinks the file.
TEST(Links, UnlinkOfOneNameKeepsTheFileLinkedUnderAnother) {
  Engine engine;
  bootstrap(engine, scan_of({scanned(7, "/dev/shm/l1", 3), scanned(7, "/dev/shm/l2", 3),
                             scanned(7, "/dev/shm/l3", 3)}));
  engine.apply(by_name(EventType::unlink, "/dev/shm/l1", 1 * kSec, 7));
  auto s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->nlink, 2u);
  EXPECT_NE(s->path, "/dev/shm/l1");
  Names names = {s->path};
  names.insert(names.end(), s->other_paths.begin(), s->other_paths.end());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (Names{"/dev/shm/l2", "/dev/shm/l3"}));
  EXPECT_EQ(engine.file_state(key_of(7))->path, s->path);

  // A name not shown, without an inode hint: found by that name.
  const std::string hidden = s->other_paths.at(0);
  const std::string shown = s->path;
  engine.apply(by_name(EventType::unlink, hidden, 2 * kSec));
  s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->nlink, 1u);
  EXPECT_EQ(s->path, shown);
  EXPECT_TRUE(s->other_paths.empty());

  engine.apply(by_name(EventType::unlink, shown, 3 * kSec));
  EXPECT_FALSE(engine.contains(key_of(7))); // no name, no holder, no bytes
  EXPECT_EQ(engine.stats().ignored, 0u);
}

// A second name made unseen (the scan gives only st_nlink): unlinking the
// one known leaves a linked file whose path no longer finds it, until the
// other name's unlink (by the kernel's inode hint) unlinks it.
TEST(Links, UnlinkOfTheOnlyKnownNameOfALinkedFile) {
  Engine engine;
  engine.add_existing_file(scanned(7, "/dev/shm/known", 2, 4096), kMntId, "/dev/shm");
  engine.apply(by_name(EventType::unlink, "/dev/shm/known", 1 * kSec, 7));
  auto s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->nlink, 1u);
  EXPECT_EQ(engine.file_state(key_of(7))->path, ""); // not a path to stat
  // The old path names nothing now: a file created there is another segment.
  engine.apply(create(100, 9, "/dev/shm/known", 2 * kSec));
  engine.apply(by_name(EventType::unlink, "/dev/shm/unknown", 3 * kSec, 7));
  s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::unlinked); // its bytes keep it until freed
  EXPECT_EQ(s->nlink, 0u);
  EXPECT_EQ(engine.segment(key_of(9))->state, SegmentState::linked);
}

// A rename moves one name of the file; onto another of its names it does
// nothing (rename(2) does nothing for two links of one inode); onto a name
// of another file with links, that file keeps its other name.
TEST(Links, RenameKeepsTheSegmentAndMovesOneName) {
  Engine engine;
  bootstrap(engine, scan_of({scanned(7, "/dev/shm/a", 2), scanned(7, "/dev/shm/b", 2),
                             scanned(8, "/dev/shm/x", 2), scanned(8, "/dev/shm/y", 2)}));
  engine.apply(by_name(EventType::rename, "/dev/shm/b", 1 * kSec, 7, "/dev/shm/c"));
  auto s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/dev/shm/a");
  EXPECT_EQ(s->other_paths, Names{"/dev/shm/c"});
  EXPECT_EQ(s->nlink, 2u);

  engine.apply(by_name(EventType::rename, "/dev/shm/a", 2 * kSec, 7, "/dev/shm/c"));
  s = engine.segment(key_of(7));
  EXPECT_EQ(s->path, "/dev/shm/a");
  EXPECT_EQ(s->other_paths, Names{"/dev/shm/c"});
  EXPECT_EQ(s->nlink, 2u);

  engine.apply(by_name(EventType::rename, "/dev/shm/a", 3 * kSec, 7, "/dev/shm/y"));
  s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/dev/shm/y");
  EXPECT_EQ(s->other_paths, Names{"/dev/shm/c"});
  auto x = engine.segment(key_of(8));
  ASSERT_TRUE(x);
  EXPECT_EQ(x->state, SegmentState::linked);
  EXPECT_EQ(x->path, "/dev/shm/x");
  EXPECT_EQ(x->nlink, 1u);
  EXPECT_TRUE(x->other_paths.empty());
  EXPECT_EQ(engine.segment_count(), 2u);
}

// reconcile: the scan's names of each inode, and its st_nlink, win.
TEST(Links, ReconcileTakesEveryNameOfAnInode) {
  Engine engine;
  engine.apply(create(100, 7, "/dev/shm/l1", 1 * kSec));
  reconcile(engine,
            scan_of({scanned(7, "/dev/shm/l2", 2, 8192), scanned(7, "/dev/shm/l1", 2, 8192)}),
            2 * kSec);
  auto s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/dev/shm/l1"); // the name it showed, which it still has
  EXPECT_EQ(s->other_paths, Names{"/dev/shm/l2"});
  EXPECT_EQ(s->nlink, 2u);
  EXPECT_EQ(s->bytes, 8192u);
  EXPECT_EQ(s->changed_ns, 2 * kSec);
  EXPECT_EQ(s->creator.pid, 100u); // the same segment

  // l1 unlinked unseen: l2 is shown, the only name.
  reconcile(engine, scan_of({scanned(7, "/dev/shm/l2", 1, 8192)}), 3 * kSec);
  s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->path, "/dev/shm/l2");
  EXPECT_TRUE(s->other_paths.empty());
  EXPECT_EQ(s->nlink, 1u);
  EXPECT_EQ(s->changed_ns, 3 * kSec);

  // New to the engine: both names at once.
  reconcile(engine,
            scan_of({scanned(7, "/dev/shm/l2", 1), scanned(9, "/dev/shm/m1", 2),
                     scanned(9, "/dev/shm/m2", 2)}),
            4 * kSec);
  auto m = engine.segment(key_of(9));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "/dev/shm/m1");
  EXPECT_EQ(m->other_paths, Names{"/dev/shm/m2"});
  EXPECT_EQ(m->nlink, 2u);
  EXPECT_EQ(engine.segment_count(), 2u);
}

// The case that hid a file: create l1, link it to l2, unlink l1: it lives on
// as l2, and its segment with it; unlinking l2 ends it.
TEST(Links, LinkThenUnlinkOfTheFirstNameKeepsTheSegmentUnderTheSecond) {
  Engine engine;
  engine.apply(create(100, 7, "/dev/shm/l1", 1 * kSec));
  engine.apply(by_name(EventType::link, "/dev/shm/l1", 2 * kSec, 7, "/dev/shm/l2"));
  auto s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->nlink, 2u);
  EXPECT_EQ(s->path, "/dev/shm/l1");
  EXPECT_EQ(s->other_paths, Names{"/dev/shm/l2"});
  EXPECT_EQ(s->changed_ns, 2 * kSec);

  engine.apply(by_name(EventType::unlink, "/dev/shm/l1", 3 * kSec, 7));
  s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->nlink, 1u);
  EXPECT_EQ(s->path, "/dev/shm/l2");
  EXPECT_TRUE(s->other_paths.empty());
  EXPECT_EQ(s->creator.pid, 100u);
  EXPECT_EQ(engine.file_state(key_of(7))->path, "/dev/shm/l2");

  // Without an inode hint, the path finds it: no name left, its creator's
  // fd keeps it.
  engine.apply(by_name(EventType::unlink, "/dev/shm/l2", 4 * kSec));
  s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::unlinked);
  EXPECT_EQ(s->nlink, 0u);
  EXPECT_EQ(engine.stats().ignored, 0u);
}

// linkat(fd, "", ..., AT_EMPTY_PATH) names an O_TMPFILE file: its first
// name. A link whose new directory the event cannot say still counts.
TEST(Links, LinkByFdGivesAnUnlinkedFileItsFirstName) {
  Engine engine;
  Event tmp = create(100, 7, "/dev/shm/#7", 1 * kSec);
  tmp.flags = O_RDWR | O_TMPFILE;
  tmp.unlinked = true;
  engine.apply(tmp);
  EXPECT_EQ(engine.segment(key_of(7))->state, SegmentState::unlinked);
  EXPECT_EQ(engine.segment(key_of(7))->nlink, 0u);

  Event byfd = by_name(EventType::link, "", 2 * kSec, 7, "/dev/shm/named");
  byfd.absolute = false;
  byfd.origin = Origin::linkat;
  byfd.flags = 0x1000; // AT_EMPTY_PATH
  engine.apply(byfd);
  auto s = engine.segment(key_of(7));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, SegmentState::linked);
  EXPECT_EQ(s->nlink, 1u);
  EXPECT_EQ(s->path, "/dev/shm/named");
  EXPECT_TRUE(s->other_paths.empty());
  EXPECT_EQ(s->holders, std::vector<uint32_t>{100});

  // Into a directory the record does not describe: one more name, unknown.
  Event elsewhere = by_name(EventType::link, "/dev/shm/named", 3 * kSec, 7, "rel");
  elsewhere.full_newpath.clear();
  engine.apply(elsewhere);
  s = engine.segment(key_of(7));
  EXPECT_EQ(s->nlink, 2u);
  EXPECT_EQ(s->path, "/dev/shm/named");
  EXPECT_TRUE(s->other_paths.empty());
  engine.apply(by_name(EventType::unlink, "/dev/shm/named", 4 * kSec, 7));
  s = engine.segment(key_of(7));
  EXPECT_EQ(s->state, SegmentState::linked); // as "rel", wherever that is
  EXPECT_EQ(s->nlink, 1u);

  // A link of a file the engine does not know changes nothing.
  engine.apply(by_name(EventType::link, "/dev/shm/stranger", 5 * kSec, 0, "/dev/shm/s2"));
  EXPECT_EQ(engine.stats().ignored, 1u);
  EXPECT_EQ(engine.segment_count(), 1u);
}

// Memfds and SysV segments have no names to count.
TEST(Links, OnlyLinkedFilesCountNames) {
  Engine engine;
  engine.apply(create(100, 7, "/dev/shm/f", 1 * kSec));
  EXPECT_EQ(engine.segment(key_of(7))->nlink, 1u);
  Event mfd = process_event(EventType::memfd_create, 100, 2 * kSec);
  mfd.kind = Kind::memfd;
  mfd.dev = 1;
  mfd.ino = 5;
  mfd.name = "memfd:x";
  mfd.ret = mfd.fd = 4;
  engine.apply(mfd);
  EXPECT_EQ(engine.segment(SegmentKey::file(1, 5))->nlink, 0u);
  Event held = create(100, 7, "/dev/shm/f", 3 * kSec);
  held.type = EventType::open;
  held.is_new = false;
  held.unlinked = true; // the kernel saw i_nlink 0
  engine.apply(held);
  EXPECT_EQ(engine.segment(key_of(7))->state, SegmentState::unlinked);
  EXPECT_EQ(engine.segment(key_of(7))->nlink, 0u);
}

} // namespace
} // namespace shmbpf
