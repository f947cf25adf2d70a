// The engine's segment table on its own: the path index follows every
// change of path and state, names of files with hard links, and births.
#include "model/segment_table.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shmbpf {
namespace {

constexpr uint32_t kDev = 26, kOtherDev = 27;

SegmentKey file(uint64_t ino, uint32_t dev = kDev) { return SegmentKey::file(dev, ino); }

// A linked tmpfs file at path with n names.
SegmentTable::iterator add(SegmentTable &t, uint64_t ino, const std::string &path,
                           uint32_t dev = kDev, uint32_t nlink = 1) {
  auto it = t.insert(file(ino, dev), Kind::tmpfs);
  t.set_path(it, path, true);
  t.set_state(it, SegmentState::linked);
  it->second.nlink = nlink;
  return it;
}

TEST(SegmentTable, ALinkedFileIsFoundByItsPathAndOnlyWhileLinked) {
  SegmentTable t;
  auto it = add(t, 1, "/dev/shm/a");
  EXPECT_EQ(t.find_by_path("/dev/shm/a", kDev), it);
  EXPECT_EQ(t.find_by_path("/dev/shm/a", 0), it); // any device
  EXPECT_EQ(t.find_by_path("/dev/shm/a", kOtherDev), t.end());
  EXPECT_EQ(t.find_by_path("/dev/shm/b", 0), t.end());
  EXPECT_EQ(it->second.pattern, classify_shm_name("/dev/shm/a").pattern);

  t.set_path(it, "/dev/shm/b", true); // renamed
  EXPECT_EQ(t.find_by_path("/dev/shm/a", 0), t.end());
  EXPECT_EQ(t.find_by_path("/dev/shm/b", 0), it);
  t.set_path(it, "b", false); // a path not resolved is not indexed
  EXPECT_EQ(t.find_by_path("b", 0), t.end());
  t.set_path(it, "/dev/shm/b", true);

  t.set_state(it, SegmentState::unlinked);
  EXPECT_EQ(it->second.nlink, 0u);
  EXPECT_EQ(t.find_by_path("/dev/shm/b", 0), t.end());
  t.set_state(it, SegmentState::linked);
  EXPECT_EQ(it->second.nlink, 1u);
  EXPECT_EQ(t.find_by_path("/dev/shm/b", 0), it);

  t.erase(it);
  EXPECT_EQ(t.find_by_path("/dev/shm/b", 0), t.end());
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.contains(file(1)));
}

TEST(SegmentTable, OnePathOnTwoDevicesIsFoundOnlyByItsDevice) {
  SegmentTable t;
  auto host = add(t, 1, "/dev/shm/x", kDev);
  auto ctr = add(t, 1, "/dev/shm/x", kOtherDev); // a container's /dev/shm, seen as its own
  EXPECT_EQ(t.find_by_path("/dev/shm/x", kDev), host);
  EXPECT_EQ(t.find_by_path("/dev/shm/x", kOtherDev), ctr);
  EXPECT_EQ(t.find_by_path("/dev/shm/x", 0), t.end()); // two: neither
  // Memfds and SysV segments are never in the path index.
  auto m = t.insert(file(9, 1), Kind::memfd);
  t.set_path(m, "/memfd:y", true);
  EXPECT_EQ(t.find_by_path("/memfd:y", 0), t.end());
}

TEST(SegmentTable, AFileWithHardLinksKeepsItsOtherNames) {
  SegmentTable t;
  auto it = add(t, 1, "/dev/shm/a", kDev, 3);
  t.add_other_name(it, "/dev/shm/b");
  t.add_other_name(it, "/dev/shm/b"); // once
  t.add_other_name(it, "/dev/shm/c");
  ASSERT_NE(t.other_names(file(1)), nullptr);
  EXPECT_EQ(*t.other_names(file(1)), (std::vector<std::string>{"/dev/shm/b", "/dev/shm/c"}));
  EXPECT_TRUE(t.has_name(it, "/dev/shm/a"));
  EXPECT_TRUE(t.has_name(it, "/dev/shm/c"));
  EXPECT_FALSE(t.has_name(it, "/dev/shm/d"));
  EXPECT_EQ(t.find_by_name("/dev/shm/c", kDev), it);

  t.rename_name(it, "/dev/shm/c", "/dev/shm/d"); // another name renamed
  EXPECT_EQ(it->second.path.view(), "/dev/shm/a");
  EXPECT_TRUE(t.has_name(it, "/dev/shm/d"));

  // The name shown goes: another is shown.
  EXPECT_FALSE(t.drop_name(it, "/dev/shm/a"));
  EXPECT_EQ(it->second.nlink, 2u);
  EXPECT_EQ(it->second.path.view(), "/dev/shm/d");
  EXPECT_EQ(t.find_by_path("/dev/shm/d", kDev), it);
  // Another goes: one name left, no others kept.
  EXPECT_FALSE(t.drop_name(it, "/dev/shm/b"));
  EXPECT_EQ(it->second.nlink, 1u);
  EXPECT_EQ(t.other_names(file(1)), nullptr);
  // The last goes: unlinked, out of the index.
  EXPECT_TRUE(t.drop_name(it, "/dev/shm/d"));
  EXPECT_EQ(it->second.state, SegmentState::unlinked);
  EXPECT_EQ(t.find_by_path("/dev/shm/d", 0), t.end());
}

TEST(SegmentTable, ANameMadeUnseenLeavesTheFileLinkedAndUnfound) {
  SegmentTable t;
  auto it = add(t, 1, "/dev/shm/a", kDev, 2); // its other name is unknown
  EXPECT_FALSE(t.drop_name(it, "/dev/shm/a"));
  EXPECT_EQ(it->second.state, SegmentState::linked);
  EXPECT_EQ(it->second.nlink, 1u);
  EXPECT_EQ(t.find_by_path("/dev/shm/a", 0), t.end());
  EXPECT_FALSE(it->second.flags & SegmentTable::kPathFull); // a rescan names it
}

TEST(SegmentTable, OtherNamesAreKeptOnlyWhileAFileHasMoreThanOne) {
  SegmentTable t;
  auto it = add(t, 1, "/dev/shm/a", kDev, 1);
  t.add_other_name(it, "/dev/shm/b"); // nlink 1: no other name to keep
  EXPECT_EQ(t.other_names(file(1)), nullptr);
  it->second.nlink = 2;
  t.set_other_names(it, {"/dev/shm/b"});
  ASSERT_NE(t.other_names(file(1)), nullptr);
  t.set_state(it, SegmentState::unlinked); // no names at all
  EXPECT_EQ(t.other_names(file(1)), nullptr);
}

TEST(SegmentTable, BirthsAreKeptForObservedCreationsAndGoWithTheSegment) {
  SegmentTable t;
  auto seen = add(t, 1, "/dev/shm/a");
  seen->second.creator_pid = 100;
  auto before = add(t, 2, "/dev/shm/b");
  before->second.flags |= SegmentTable::kExistedBefore;
  const SegmentBirth b{SegmentBirth::Kind::time, 123};
  t.note_birth(file(1), b);
  t.note_birth(file(2), b);                               // creation not observed
  t.note_birth(file(3), b);                               // unknown
  t.note_birth(file(1), {SegmentBirth::Kind::handle, 0}); // unknown birth
  EXPECT_EQ(t.birth(file(1)), b);
  EXPECT_FALSE(t.birth(file(2)));
  EXPECT_EQ(t.births().size(), 1u);
  t.set_birth(file(2), b); // a restored creation
  EXPECT_EQ(t.birth(file(2)), b);
  t.erase(seen);
  EXPECT_FALSE(t.birth(file(1)));
}

TEST(SegmentTable, APartOfTheTableIsARangeOfSlots) {
  SegmentTable t;
  for (uint64_t i = 0; i < 10; ++i)
    add(t, i + 1, "/dev/shm/f" + std::to_string(i));
  t.erase(t.find(file(4)));
  EXPECT_EQ(t.slot_end(), 10u);
  EXPECT_EQ(t.from(3).index(), 4u); // slot 3 is free
  EXPECT_EQ(t.from(9)->first, file(10));
  EXPECT_EQ(t.from(10), t.end());
  EXPECT_EQ(t.from(1000), t.end());
}

} // namespace
} // namespace shmbpf
