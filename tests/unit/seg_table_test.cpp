// The engine's storage on its own: PidList, PathStr, SlotIndex and
// SegTable, checked against std containers as models.
#include "model/seg_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf {
namespace {

std::multiset<uint32_t> pids_of(const PidList &l) { return {l.begin(), l.end()}; }

// A stored value with the same kinds of members as the engine's segments:
// owning ones (a path, holders) so that copies and resets are exercised.
struct Value {
  SegmentState state = SegmentState::linked;
  PathStr path;
  PidList holders;
  uint64_t payload = 0;
};
using Table = SegTable<Value>;

// --- PidList -----------------------------------------------------------------

TEST(PidList, InsertIsASetAndEraseReportsAbsence) {
  PidList l;
  EXPECT_TRUE(l.empty());
  EXPECT_TRUE(l.insert(7));
  EXPECT_FALSE(l.insert(7));
  EXPECT_TRUE(l.insert(9));
  EXPECT_EQ(l.size(), 2u);
  EXPECT_TRUE(l.contains(7));
  EXPECT_FALSE(l.contains(8));
  EXPECT_FALSE(l.erase(8));
  EXPECT_TRUE(l.erase(7));
  EXPECT_FALSE(l.erase(7));
  EXPECT_EQ(pids_of(l), (std::multiset<uint32_t>{9}));
  EXPECT_TRUE(l.erase(9));
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.begin(), l.end());
}

TEST(PidList, GrowsFromInlineToHeapKeepingEveryPid) {
  PidList l;
  std::multiset<uint32_t> model;
  for (uint32_t pid = 100; pid < 200; ++pid) {
    ASSERT_TRUE(l.insert(pid));
    model.insert(pid);
    ASSERT_EQ(pids_of(l), model) << "after inserting " << pid;
  }
  for (uint32_t pid = 100; pid < 200; ++pid)
    EXPECT_FALSE(l.insert(pid));
  EXPECT_EQ(l.size(), 100u);
}

TEST(PidList, EraseOfTheMiddleKeepsTheRest) {
  for (uint32_t n : {2u, 3u, 5u, 17u}) {
    for (uint32_t victim = 0; victim < n; ++victim) {
      PidList l;
      std::multiset<uint32_t> model;
      for (uint32_t i = 0; i < n; ++i) {
        l.insert(1000 + i);
        model.insert(1000 + i);
      }
      ASSERT_TRUE(l.erase(1000 + victim));
      model.erase(1000 + victim);
      EXPECT_EQ(pids_of(l), model) << n << " pids, erased #" << victim;
      EXPECT_FALSE(l.contains(1000 + victim));
      // Room freed by the erase is used again.
      EXPECT_TRUE(l.insert(5000));
      EXPECT_EQ(l.size(), n);
    }
  }
}

TEST(PidList, CopiesAreIndependentInlineAndOnTheHeap) {
  for (uint32_t n : {0u, 1u, 2u, 3u, 40u}) {
    PidList a;
    for (uint32_t i = 0; i < n; ++i)
      a.insert(i + 1);
    PidList b(a);
    EXPECT_EQ(pids_of(b), pids_of(a));
    b.insert(999);
    if (n > 0)
      b.erase(1);
    EXPECT_EQ(a.size(), n);
    EXPECT_FALSE(a.contains(999));
    EXPECT_EQ(a.contains(1), n > 0);

    // Assignment over lists of either form, both ways.
    PidList small, big;
    small.insert(5);
    for (uint32_t i = 0; i < 10; ++i)
      big.insert(50 + i);
    small = a;
    big = a;
    EXPECT_EQ(pids_of(small), pids_of(a));
    EXPECT_EQ(pids_of(big), pids_of(a));
    const PidList &same = a;
    a = same;
    EXPECT_EQ(a.size(), n);
  }
}

TEST(PidList, MovesLeaveTheSourceEmptyAndUsable) {
  for (uint32_t n : {1u, 2u, 3u, 40u}) {
    PidList a;
    std::multiset<uint32_t> model;
    for (uint32_t i = 0; i < n; ++i) {
      a.insert(i + 1);
      model.insert(i + 1);
    }
    PidList b(std::move(a));
    EXPECT_EQ(pids_of(b), model);
    EXPECT_TRUE(a.empty());
    EXPECT_TRUE(a.insert(77));
    EXPECT_TRUE(a.insert(78));
    EXPECT_TRUE(a.insert(79));
    EXPECT_EQ(pids_of(a), (std::multiset<uint32_t>{77, 78, 79}));

    PidList c;
    for (uint32_t i = 0; i < 5; ++i)
      c.insert(900 + i);
    c = std::move(b);
    EXPECT_EQ(pids_of(c), model);
    EXPECT_TRUE(b.empty());
  }
}

// --- PathStr -----------------------------------------------------------------

TEST(PathStr, AssignKeepsTextAndHash) {
  PathStr p;
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.view(), "");
  p.assign("/dev/shm/torch_1_a_0");
  EXPECT_EQ(p.view(), "/dev/shm/torch_1_a_0");
  EXPECT_EQ(p.hash(), PathStr::hash_of("/dev/shm/torch_1_a_0"));
  EXPECT_TRUE(p == std::string_view("/dev/shm/torch_1_a_0"));
  EXPECT_FALSE(p == std::string_view("/dev/shm/torch_1_a_1"));
  // Same length, longer, shorter, empty.
  for (std::string_view s : {"/dev/shm/torch_1_b_0", "/dev/shm/a/much/longer/name", "/x", ""}) {
    p.assign(s);
    EXPECT_EQ(p.view(), s);
    EXPECT_EQ(p.hash(), PathStr::hash_of(s));
    EXPECT_EQ(p.empty(), s.empty());
  }
  // Its own whole text: unchanged.
  p.assign("/dev/shm/self");
  p.assign(p.view());
  EXPECT_EQ(p.view(), "/dev/shm/self");
  // A part of its own text: the copy is taken before the old block goes
  // (a sanitizer build sees a read after free otherwise).
  p.assign(p.view().substr(9));
  EXPECT_EQ(p.view(), "self");
  EXPECT_EQ(p.hash(), PathStr::hash_of("self"));
}

TEST(PathStr, HashTellsApartNearbyNames) {
  std::set<uint32_t> hashes;
  for (int i = 0; i < 1000; ++i)
    hashes.insert(PathStr::hash_of("/dev/shm/psm_" + std::to_string(i)));
  EXPECT_GT(hashes.size(), 990u);
  EXPECT_EQ(PathStr::hash_of("/a"), PathStr::hash_of(std::string("/a")));
}

TEST(PathStr, CopiesAndMoves) {
  PathStr a;
  a.assign("/dev/shm/a");
  PathStr b(a);
  b.assign("/dev/shm/bb");
  EXPECT_EQ(a.view(), "/dev/shm/a");
  EXPECT_EQ(a.hash(), PathStr::hash_of("/dev/shm/a"));

  PathStr c;
  c = a;
  EXPECT_EQ(c.view(), "/dev/shm/a");
  EXPECT_EQ(c.hash(), a.hash());
  const PathStr &same = c;
  c = same;
  EXPECT_EQ(c.view(), "/dev/shm/a");

  PathStr d(std::move(b));
  EXPECT_EQ(d.view(), "/dev/shm/bb");
  EXPECT_EQ(d.hash(), PathStr::hash_of("/dev/shm/bb"));
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.hash(), 0u);

  c = std::move(d);
  EXPECT_EQ(c.view(), "/dev/shm/bb");
  EXPECT_TRUE(d.empty());
  d.assign("/reused");
  EXPECT_EQ(d.view(), "/reused");
  std::string_view sv = c;
  EXPECT_EQ(sv, "/dev/shm/bb");
}

// --- SlotIndex ---------------------------------------------------------------

// A SlotIndex with the hashes of its slots kept beside it, as SegTable and
// the engine's path index keep them in their slots.
class IndexModel {
public:
  void insert(uint32_t slot, size_t hash) {
    if (hash_.size() <= slot)
      hash_.resize(slot + 1);
    hash_[slot] = hash;
    filed_.emplace(hash, slot);
    index_.insert(slot, hash, [this](auto &&file) {
      // Slot order, as the engine refiles them.
      std::vector<std::pair<uint32_t, size_t>> all;
      for (auto [h, s] : filed_)
        all.emplace_back(s, h);
      std::sort(all.begin(), all.end());
      for (auto [s, h] : all)
        file(s, h);
    });
  }
  bool erase(uint32_t slot) {
    const size_t hash = hash_.at(slot);
    auto [lo, hi] = filed_.equal_range(hash);
    for (auto it = lo; it != hi; ++it)
      if (it->second == slot) {
        filed_.erase(it);
        break;
      }
    return index_.erase(slot, hash, [this](uint32_t s) { return hash_.at(s); });
  }
  // The filed slots under hash, as the index finds them.
  std::multiset<uint32_t> found(size_t hash) const {
    std::multiset<uint32_t> out;
    const uint32_t r = index_.find(hash, [&](uint32_t s) {
      if (hash_.at(s) == hash) // callers check what the 6-bit tag cannot
        out.insert(s);
      return false;
    });
    EXPECT_EQ(r, kNoSlot);
    return out;
  }
  std::multiset<uint32_t> expected(size_t hash) const {
    std::multiset<uint32_t> out;
    auto [lo, hi] = filed_.equal_range(hash);
    for (auto it = lo; it != hi; ++it)
      out.insert(it->second);
    return out;
  }
  void check_all() const {
    ASSERT_EQ(index_.size(), filed_.size());
    std::set<size_t> hashes;
    for (auto [h, s] : filed_)
      hashes.insert(h);
    for (size_t h : hashes)
      ASSERT_EQ(found(h), expected(h)) << "hash " << h;
  }
  SlotIndex &index() { return index_; }

private:
  SlotIndex index_;
  std::vector<size_t> hash_;
  std::multimap<size_t, uint32_t> filed_;
};

TEST(SlotIndex, EmptyFindsNothing) {
  SlotIndex index;
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.find(42, [](uint32_t) { return true; }), kNoSlot);
  EXPECT_FALSE(index.erase(0, 42, [](uint32_t) { return size_t{42}; }));
}

TEST(SlotIndex, RefusesSlotNumbersBeyondItsCells) {
  SlotIndex index;
  auto none = [](auto &&) {};
  EXPECT_THROW(index.insert(SlotIndex::kMaxSlots, 1, none), std::length_error);
  index.insert(SlotIndex::kMaxSlots - 1, 1, none);
  EXPECT_EQ(index.find(1, [](uint32_t) { return true; }), SlotIndex::kMaxSlots - 1);
}

TEST(SlotIndex, EqualHashesRepeatAsInAMultimap) {
  IndexModel m;
  const size_t h = 0x1234'5678'9abc'def0ull;
  const size_t other_tag = h ^ (size_t{1} << 60); // same home cell, another tag
  for (uint32_t s = 0; s < 10; ++s)
    m.insert(s, h);
  m.insert(10, h + 1);
  m.insert(11, other_tag);
  EXPECT_EQ(m.found(h), m.expected(h));
  EXPECT_EQ(m.found(h).size(), 10u);
  EXPECT_EQ(m.found(other_tag), (std::multiset<uint32_t>{11}));
  // find stops at the first slot f accepts.
  EXPECT_EQ(m.index().find(h, [](uint32_t s) { return s == 6; }), 6u);
  EXPECT_EQ(m.index().find(h + 1, [](uint32_t s) { return s == 10; }), 10u);
  // The tag spares f the slots of other tags; slots of equal tags but other
  // hashes (h + 1) are offered, and the caller tells them apart.
  EXPECT_EQ(m.index().find(h, [](uint32_t s) { return s == 11; }), kNoSlot);
  EXPECT_EQ(m.index().find(other_tag, [](uint32_t s) { return s < 11; }), kNoSlot);
  // Erase one of the equal ones, from the middle of the run.
  EXPECT_TRUE(m.erase(4));
  EXPECT_EQ(m.found(h), (std::multiset<uint32_t>{0, 1, 2, 3, 5, 6, 7, 8, 9}));
  EXPECT_EQ(m.found(h + 1), (std::multiset<uint32_t>{10}));
  EXPECT_EQ(m.found(other_tag), (std::multiset<uint32_t>{11}));
  EXPECT_FALSE(m.index().erase(4, h, [](uint32_t) { return size_t{0}; }));
}

TEST(SlotIndex, BackwardShiftKeepsTheRestFindable) {
  // Few distinct hashes, many of them at the top of the table so that runs
  // wrap around its end, and a random order of inserts and erases.
  std::mt19937_64 rng(20240601);
  IndexModel m;
  std::vector<uint32_t> live;
  uint32_t next_slot = 0;
  std::vector<uint32_t> free_slots;
  for (int step = 0; step < 20000; ++step) {
    const bool grow = live.size() < 50 || rng() % 100 < 55;
    if (grow) {
      uint32_t s;
      if (!free_slots.empty() && rng() % 2) {
        s = free_slots.back();
        free_slots.pop_back();
      } else {
        s = next_slot++;
      }
      // Low bits pick a home cell, high bits a tag: both collide often.
      const size_t home = rng() % 4 == 0 ? ~size_t{0} - rng() % 4 : rng() % 64;
      const size_t tag = (rng() % 3) << 58;
      m.insert(s, (home & ((size_t{1} << 58) - 1)) | tag);
      live.push_back(s);
    } else {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(m.erase(live[i]));
      free_slots.push_back(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 97 == 0)
      m.check_all();
  }
  m.check_all();
  while (!live.empty()) {
    ASSERT_TRUE(m.erase(live.back()));
    live.pop_back();
    if (live.size() % 13 == 0)
      m.check_all();
  }
  EXPECT_EQ(m.index().size(), 0u);
}

TEST(SlotIndex, ReserveKeepsWhatIsFiled) {
  IndexModel m;
  for (uint32_t s = 0; s < 100; ++s)
    m.insert(s, size_t{s} * 0x9e3779b97f4a7c15ull);
  std::vector<std::pair<uint32_t, size_t>> all;
  for (uint32_t s = 0; s < 100; ++s)
    all.emplace_back(s, size_t{s} * 0x9e3779b97f4a7c15ull);
  m.index().reserve(10000, [&](auto &&file) {
    for (auto [s, h] : all)
      file(s, h);
  });
  m.check_all();
}

// --- SegTable ----------------------------------------------------------------

std::vector<SegmentKey> many_keys() {
  std::vector<SegmentKey> keys;
  // Runs of consecutive inode numbers on a few filesystems, and SysV
  // segments with the same numbers in namespaces with the same ids.
  for (uint32_t dev : {26u, 27u, 4026531839u})
    for (uint64_t ino = 1000; ino < 4000; ++ino)
      keys.push_back(SegmentKey::file(dev, ino));
  for (uint32_t ns : {26u, 4026531839u})
    for (int32_t id = 1000; id < 3000; ++id)
      keys.push_back(SegmentKey::sysv(ns, id));
  // Sparse, large and extreme numbers.
  for (uint64_t i = 0; i < 500; ++i)
    keys.push_back(SegmentKey::file(26, (i << 40) | 7));
  keys.push_back(SegmentKey::file(0, 0));
  keys.push_back(SegmentKey::file(UINT32_MAX, UINT64_MAX));
  keys.push_back(SegmentKey::sysv(0, -1));
  return keys;
}

TEST(SegTable, InsertFindEraseManyKeys) {
  Table t;
  const std::vector<SegmentKey> keys = many_keys();
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = t.try_emplace(keys[i]);
    ASSERT_TRUE(inserted) << i;
    EXPECT_EQ(it->second.state, SegmentState::linked);
    EXPECT_EQ(it->second.payload, 0u);
    it->second.payload = i + 1;
  }
  EXPECT_EQ(t.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = t.find(keys[i]);
    ASSERT_NE(it, t.end()) << i;
    EXPECT_EQ(it->first, keys[i]);
    EXPECT_EQ(it->second.payload, i + 1);
    EXPECT_EQ(t.count(keys[i]), 1u);
  }
  EXPECT_EQ(t.find(SegmentKey::file(26, 999)), t.end());
  EXPECT_EQ(t.find(SegmentKey::file(28, 1000)), t.end());
  EXPECT_EQ(t.find(SegmentKey::sysv(27, 1000)), t.end());
  EXPECT_EQ(t.count(SegmentKey::sysv(26, 999)), 0u);

  // Erase every other key; the rest stay, the erased are gone.
  for (size_t i = 0; i < keys.size(); i += 2)
    t.erase(t.find(keys[i]));
  EXPECT_EQ(t.size(), keys.size() / 2);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = t.find(keys[i]);
    if (i % 2 == 0) {
      EXPECT_EQ(it, t.end()) << i;
    } else {
      ASSERT_NE(it, t.end()) << i;
      EXPECT_EQ(it->second.payload, i + 1);
    }
  }
}

TEST(SegTable, KindsShareOneSpaceExceptSysv) {
  Table t;
  auto [file, fresh] = t.try_emplace(SegmentKey::file(26, 5));
  ASSERT_TRUE(fresh);
  file->second.payload = 1;
  // A memfd with the same inode is the same key: events cannot tell them apart.
  auto [memfd, memfd_fresh] = t.try_emplace(SegmentKey{Kind::memfd, 26, 5});
  EXPECT_FALSE(memfd_fresh);
  EXPECT_EQ(memfd, file);
  EXPECT_NE(t.find(SegmentKey{Kind::memfd, 26, 5}), t.end());
  // The same numbers in the SysV space are another segment.
  auto [sysv, sysv_fresh] = t.try_emplace(SegmentKey{Kind::sysv, 26, 5});
  EXPECT_TRUE(sysv_fresh);
  EXPECT_NE(sysv, file);
  EXPECT_EQ(sysv->second.payload, 0u);
  EXPECT_EQ(t.size(), 2u);
  t.erase(file);
  EXPECT_EQ(t.find(SegmentKey{Kind::memfd, 26, 5}), t.end());
  EXPECT_NE(t.find(SegmentKey::sysv(26, 5)), t.end());
}

TEST(SegTable, RunsOfSixteenInodesShareALineOfCells) {
  for (uint64_t base : {0ull, 16ull, 4096ull, 1ull << 40}) {
    const size_t first = Table::table_hash(SegmentKey::file(26, base));
    for (uint64_t ino = base; ino < base + 16; ++ino) {
      const size_t h = Table::table_hash(SegmentKey::file(26, ino));
      EXPECT_EQ(h >> 4, first >> 4) << ino;
      EXPECT_EQ(h & 15, ino & 15) << ino;
    }
    EXPECT_NE(Table::table_hash(SegmentKey::file(26, base + 16)) >> 4, first >> 4);
  }
}

TEST(SegTable, IteratorsAndAddressesSurviveOtherInsertsAndErases) {
  Table t;
  const SegmentKey kept = SegmentKey::file(26, 123456);
  auto it = t.try_emplace(kept).first;
  it->second.payload = 42;
  it->second.path.assign("/dev/shm/kept");
  it->second.holders.insert(7);
  const Table::Slot *addr = &*it;
  // Enough others to add chunks and rehash the index several times.
  for (uint64_t ino = 0; ino < 50000; ++ino)
    t.try_emplace(SegmentKey::file(27, ino));
  for (uint64_t ino = 0; ino < 50000; ino += 3)
    t.erase(t.find(SegmentKey::file(27, ino)));
  for (uint64_t ino = 0; ino < 10000; ++ino)
    t.try_emplace(SegmentKey::sysv(26, static_cast<int32_t>(ino)));
  EXPECT_EQ(&*it, addr);
  EXPECT_EQ(it->first, kept);
  EXPECT_EQ(it->second.payload, 42u);
  EXPECT_EQ(it->second.path.view(), "/dev/shm/kept");
  EXPECT_TRUE(it->second.holders.contains(7));
  EXPECT_EQ(t.find(kept), it);
}

TEST(SegTable, ErasedSlotsAreResetAndReused) {
  Table t;
  for (uint64_t ino = 0; ino < 100; ++ino)
    t.try_emplace(SegmentKey::file(26, ino));
  auto victim = t.find(SegmentKey::file(26, 40));
  const uint32_t slot = victim.index();
  victim->second.payload = 9;
  victim->second.path.assign("/dev/shm/old");
  victim->second.holders.insert(1);
  victim->second.holders.insert(2);
  victim->second.holders.insert(3);
  t.erase(victim);
  EXPECT_EQ(t.slot(slot).second.state, SegmentState::gone);
  EXPECT_EQ(t.size(), 99u);

  auto [fresh, inserted] = t.try_emplace(SegmentKey::sysv(26, 1));
  ASSERT_TRUE(inserted);
  EXPECT_EQ(fresh.index(), slot);
  EXPECT_EQ(fresh->second.state, SegmentState::linked);
  EXPECT_EQ(fresh->second.payload, 0u);
  EXPECT_TRUE(fresh->second.path.empty());
  EXPECT_TRUE(fresh->second.holders.empty());
  EXPECT_EQ(t.size(), 100u);
  // No new slot was handed out: every slot below 100 is live.
  EXPECT_EQ(t.next_live(100), kNoSlot);
}

TEST(SegTable, IterationVisitsEveryLiveKeyOnceInSlotOrder) {
  Table t;
  std::set<std::pair<uint32_t, uint64_t>> model; // (dev, ino)
  for (uint64_t ino = 0; ino < 3000; ++ino) {
    t.try_emplace(SegmentKey::file(26, ino));
    model.emplace(26, ino);
  }
  for (uint64_t ino = 0; ino < 3000; ino += 7) {
    t.erase(t.find(SegmentKey::file(26, ino)));
    model.erase({26, ino});
  }
  std::set<std::pair<uint32_t, uint64_t>> seen;
  uint32_t last = 0;
  bool first = true;
  for (auto it = t.begin(); it != t.end(); ++it) {
    EXPECT_TRUE(first || it.index() > last);
    first = false;
    last = it.index();
    EXPECT_NE(it->second.state, SegmentState::gone);
    EXPECT_TRUE(seen.emplace(it->first.dev_or_ipcns, it->first.ino_or_shmid).second);
  }
  EXPECT_EQ(seen, model);
  size_t n = 0;
  for (const auto &[key, value] : t)
    n += value.state == SegmentState::linked;
  EXPECT_EQ(n, model.size());
}

TEST(SegTable, GrowthKeepsEveryKeyFindable) {
  Table t;
  Table reserved;
  reserved.reserve(200000);
  for (uint64_t i = 0; i < 200000; ++i) {
    const SegmentKey k =
        i % 5 == 0 ? SegmentKey::sysv(3, static_cast<int32_t>(i)) : SegmentKey::file(26 + i % 3, i);
    t.try_emplace(k).first->second.payload = i;
    reserved.try_emplace(k).first->second.payload = i;
    if ((i & (i + 1)) == 0) // just after each power of two: every rehash
      for (uint64_t j = 0; j <= i; ++j) {
        const SegmentKey kj = j % 5 == 0 ? SegmentKey::sysv(3, static_cast<int32_t>(j))
                                         : SegmentKey::file(26 + j % 3, j);
        ASSERT_NE(t.find(kj), t.end()) << j << " after " << i;
      }
  }
  for (const Table *table : {&t, &reserved}) {
    EXPECT_EQ(table->size(), 200000u);
    for (uint64_t i = 0; i < 200000; ++i) {
      const SegmentKey k = i % 5 == 0 ? SegmentKey::sysv(3, static_cast<int32_t>(i))
                                      : SegmentKey::file(26 + i % 3, i);
      auto it = table->find(k);
      ASSERT_NE(it, table->end()) << i;
      ASSERT_EQ(it->second.payload, i);
    }
  }
}

std::vector<std::pair<SegmentKey, std::pair<uint64_t, std::string>>> contents(const Table &t) {
  std::vector<std::pair<SegmentKey, std::pair<uint64_t, std::string>>> out;
  for (const auto &[key, v] : t)
    out.push_back({key, {v.payload, std::string(v.path.view())}});
  return out;
}

TEST(SegTable, CopyIsEqualAndIndependent) {
  Table a;
  for (uint64_t ino = 0; ino < 5000; ++ino) {
    auto &v = a.try_emplace(SegmentKey::file(26, ino)).first->second;
    v.payload = ino * 3;
    v.path.assign("/dev/shm/f" + std::to_string(ino));
    v.holders.insert(static_cast<uint32_t>(ino % 10));
    if (ino % 100 == 0)
      for (uint32_t pid = 100; pid < 110; ++pid)
        v.holders.insert(pid);
  }
  for (uint64_t ino = 3; ino < 5000; ino += 4)
    a.erase(a.find(SegmentKey::file(26, ino)));
  const auto before = contents(a);
  const uint32_t slot_of_4 = a.find(SegmentKey::file(26, 4)).index();

  Table b(a);
  EXPECT_EQ(contents(b), before);
  EXPECT_EQ(b.size(), a.size());
  for (const auto &[key, v] : a) {
    auto it = b.find(key);
    ASSERT_NE(it, b.end());
    EXPECT_EQ(it.index(), a.find(key).index());
    EXPECT_EQ(pids_of(it->second.holders), pids_of(v.holders));
    EXPECT_NE(it->second.path.view().data(), v.path.view().data());
  }
  // Changes to the copy leave the original alone, and the other way round.
  b.find(SegmentKey::file(26, 1))->second.payload = 777;
  b.find(SegmentKey::file(26, 2))->second.path.assign("/elsewhere");
  b.find(SegmentKey::file(26, 100))->second.holders.erase(105);
  b.erase(b.find(SegmentKey::file(26, 4)));
  b.try_emplace(SegmentKey::file(26, 3));
  b.try_emplace(SegmentKey::sysv(1, 1));
  EXPECT_EQ(contents(a), before);
  EXPECT_TRUE(a.find(SegmentKey::file(26, 100))->second.holders.contains(105));
  a.erase(a.find(SegmentKey::file(26, 5)));
  EXPECT_NE(b.find(SegmentKey::file(26, 5)), b.end());
  // b reused the slot its erase freed; a's free list is its own.
  EXPECT_EQ(b.find(SegmentKey::file(26, 3)).index(), slot_of_4);
  EXPECT_EQ(a.find(SegmentKey::file(26, 3)), a.end());

  // Assignment over a non-empty table, and moves.
  Table c;
  for (uint64_t ino = 0; ino < 3000; ++ino)
    c.try_emplace(SegmentKey::sysv(9, static_cast<int32_t>(ino)));
  c = a;
  EXPECT_EQ(contents(c), contents(a));
  EXPECT_EQ(c.find(SegmentKey::sysv(9, 1)), c.end());
  Table d(std::move(c));
  EXPECT_EQ(contents(d), contents(a));
  Table e;
  e = std::move(d);
  EXPECT_EQ(contents(e), contents(a));
  for (const auto &[key, v] : a)
    ASSERT_NE(e.find(key), e.end());
}

TEST(SegTable, RandomOperationsMatchAMap) {
  std::mt19937_64 rng(77);
  Table t;
  std::map<SegmentKey, uint64_t> model;
  // A small key space, so that keys come back after their erase, in runs.
  auto random_key = [&] {
    const uint64_t n = rng() % 4000;
    switch (rng() % 4) {
    case 0:
      return SegmentKey::sysv(4, static_cast<int32_t>(n));
    case 1:
      return SegmentKey{Kind::memfd, 26, n};
    default:
      return SegmentKey::file(26 + static_cast<uint32_t>(rng() % 2), n);
    }
  };
  for (int step = 0; step < 200000; ++step) {
    const SegmentKey k = random_key();
    const int op = static_cast<int>(rng() % 10);
    auto it = t.find(k);
    auto m = model.find(k);
    ASSERT_EQ(it == t.end(), m == model.end()) << step;
    if (op < 5) {
      auto [slot, inserted] = t.try_emplace(k);
      ASSERT_EQ(inserted, m == model.end());
      if (inserted)
        model[k] = 0;
      slot->second.payload = static_cast<uint64_t>(step);
      model[k] = static_cast<uint64_t>(step);
    } else if (op < 9) {
      if (it != t.end()) {
        t.erase(it);
        model.erase(m);
      }
    } else if (it != t.end()) {
      ASSERT_EQ(it->second.payload, m->second);
    }
    ASSERT_EQ(t.size(), model.size());
    if (step % 20000 == 0) {
      std::map<SegmentKey, uint64_t> seen;
      for (const auto &[key, v] : t)
        ASSERT_TRUE(seen.emplace(key, v.payload).second);
      ASSERT_EQ(seen, model);
    }
  }
  for (const auto &[key, payload] : model) {
    auto it = t.find(key);
    ASSERT_NE(it, t.end());
    ASSERT_EQ(it->second.payload, payload);
  }
}

} // namespace
} // namespace shmbpf
