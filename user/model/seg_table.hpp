// The engine's storage, apart from its rules: the small value types a
// segment record is made of (PidList, PathStr), an open-addressing index of
// slot numbers (SlotIndex) and the table of segments by key (SegTable).
// Built for millions of segments: a few bytes of overhead per segment, no
// node allocation, and addresses that stay put while other segments come
// and go.
#pragma once

#include "model/types.hpp"

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace shmbpf {

// "No slot": what SlotIndex::find returns on a miss and SegTable's end().
inline constexpr uint32_t kNoSlot = UINT32_MAX;

// Holder pids of one segment: nearly always 0-2, kept inline so that only
// shared segments allocate. Unordered: erase moves the last pid into the hole.
class PidList {
public:
  PidList() = default;
  PidList(const PidList &o) { copy_from(o); }
  PidList(PidList &&o) noexcept { steal(o); }
  PidList &operator=(const PidList &o);
  PidList &operator=(PidList &&o) noexcept;
  ~PidList() { release(); }

  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint32_t *begin() const { return data(); }
  const uint32_t *end() const { return data() + size_; }
  bool contains(uint32_t pid) const { return std::find(begin(), end(), pid) != end(); }
  bool insert(uint32_t pid); // false if already there
  bool erase(uint32_t pid);  // false if absent

private:
  static constexpr uint32_t kInline = 2;
  uint32_t *data() { return cap_ > kInline ? heap_ : inline_; }
  const uint32_t *data() const { return cap_ > kInline ? heap_ : inline_; }
  void copy_from(const PidList &o);
  void steal(PidList &o) noexcept;
  void release() noexcept;

  uint32_t size_ = 0;
  uint32_t cap_ = kInline;
  union {
    uint32_t inline_[kInline] = {};
    uint32_t *heap_;
  };
};

// A segment's path: one exact-size heap block (no terminator, no spare
// capacity) and the hash the path index files it under.
class PathStr {
public:
  PathStr() = default;
  PathStr(const PathStr &o) { assign(o.view()); }
  PathStr(PathStr &&o) noexcept
      : p_(std::exchange(o.p_, nullptr)), len_(std::exchange(o.len_, 0)),
        hash_(std::exchange(o.hash_, 0)) {}
  PathStr &operator=(const PathStr &o) {
    if (this != &o)
      assign(o.view());
    return *this;
  }
  PathStr &operator=(PathStr &&o) noexcept;
  ~PathStr() { delete[] p_; }

  // s may be this path's own text, or a part of it.
  void assign(std::string_view s);
  std::string_view view() const { return {p_, len_}; }
  operator std::string_view() const { return view(); }
  bool empty() const { return len_ == 0; }
  uint32_t hash() const { return hash_; }
  static uint32_t hash_of(std::string_view s);
  friend bool operator==(const PathStr &a, std::string_view b) { return a.view() == b; }

private:
  char *p_ = nullptr;
  uint32_t len_ = 0;
  uint32_t hash_ = 0;
};

// Slot numbers filed by a hash in an open-addressing table (linear
// probing, deletion by backward shift): the key index and the path index.
// A cell is 4 bytes: the slot number + 1 (0 = empty) and 6 bits of the
// hash, which spare most probes a visit to the slot. Equal hashes may
// repeat (the path index is a multimap). The index keeps no hashes of its
// own: callers that own the slots tell it what is filed and under which
// hash, so it costs nothing per segment beyond its cells.
class SlotIndex {
public:
  static constexpr uint32_t kMaxSlots = (1u << 26) - 1;
  size_t size() const { return size_; }
  // members(fn) calls fn(slot, hash) for every filed slot: growing the
  // table refiles them in slot order, which reads the pool sequentially.
  template <class Members> void insert(uint32_t slot, size_t hash, Members &&members);
  // hash_of(slot) gives the hash of a filed slot.
  template <class HashOf> bool erase(uint32_t slot, size_t hash, HashOf &&hash_of);
  // Calls f(slot) for every slot whose cell matches hash, until f returns
  // true; returns that slot or kNoSlot.
  template <class F> uint32_t find(size_t hash, F &&f) const;
  template <class Members> void reserve(size_t n, Members &&members);

private:
  static constexpr uint32_t kSlotMask = kMaxSlots;
  static uint32_t tag(size_t hash) { return static_cast<uint32_t>(hash >> 58) << 26; }
  template <class Members> void rebuild(size_t cells, Members &&members);
  void place(uint32_t slot, size_t hash) {
    const size_t mask = cells_.size() - 1;
    size_t i = hash & mask;
    while (cells_[i])
      i = (i + 1) & mask;
    cells_[i] = tag(hash) | (slot + 1);
  }
  std::vector<uint32_t> cells_; // size a power of two
  size_t size_ = 0;
};

// One value and its key; `first`/`second` as in a map's value.
template <class Value> struct SegSlot {
  SegmentKey first;
  Value second;
};

// What SegTable stores: a value whose state is gone exactly when its slot is
// free. Gone segments leave the table, so the state doubles as the free mark
// and a free slot costs no extra bit. The value must also be default
// constructible (slots are made and reset with Value{}); the concept cannot
// say so, because a class nested in one still being defined (the engine's
// Segment) does not count as default constructible yet.
template <class V>
concept SegValue = std::copyable<V> && requires(V &v) {
  { v.state } -> std::same_as<SegmentState &>;
};

// Values by SegmentKey: slots in fixed chunks (stable addresses, so
// iterators survive inserts and erases of other keys) and a SlotIndex.
// Erased slots are reset to a default value and reused first; the pool
// keeps its peak number of slots. Iteration is in slot order.
template <SegValue Value> class SegTable {
public:
  using Slot = SegSlot<Value>;

  class iterator {
  public:
    iterator() = default;
    iterator(const SegTable *t, uint32_t i) : t_(t), i_(i) {}
    Slot &operator*() const { return t_->slot(i_); }
    Slot *operator->() const { return &t_->slot(i_); }
    iterator &operator++() {
      i_ = t_->next_live(i_ + 1);
      return *this;
    }
    friend bool operator==(const iterator &a, const iterator &b) { return a.i_ == b.i_; }
    uint32_t index() const { return i_; }

  private:
    const SegTable *t_ = nullptr;
    uint32_t i_ = kNoSlot;
  };

  SegTable() = default;
  SegTable(const SegTable &o) { *this = o; }
  SegTable(SegTable &&) noexcept = default;
  SegTable &operator=(const SegTable &o);
  SegTable &operator=(SegTable &&) noexcept = default;

  iterator begin() const { return {this, next_live(0)}; }
  iterator end() const { return {this, kNoSlot}; }
  // The first live slot at or after slot i.
  iterator from(size_t i) const {
    return {this, i < used_ ? next_live(static_cast<uint32_t>(i)) : kNoSlot};
  }
  // One past the last slot ever used: every live slot is below it.
  size_t slot_end() const { return used_; }
  iterator find(const SegmentKey &key) const {
    const uint32_t i =
        index_.find(table_hash(key), [&](uint32_t slot_no) { return slot(slot_no).first == key; });
    return {this, i};
  }
  size_t count(const SegmentKey &key) const { return find(key) != end() ? 1 : 0; }
  // A new key gets a default value in state linked.
  std::pair<iterator, bool> try_emplace(const SegmentKey &key);
  void erase(iterator it);
  size_t size() const { return index_.size(); }
  void reserve(size_t n);
  Slot &slot(uint32_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  // The first live slot at or after i, or kNoSlot.
  uint32_t next_live(uint32_t i) const {
    for (; i < used_; ++i)
      if (slot(i).second.state != SegmentState::gone)
        return i;
    return kNoSlot;
  }
  // file(slot, hash of its key) for every live slot, in slot order.
  template <class File> void for_each_key(File &&file) const {
    for (uint32_t i = next_live(0); i != kNoSlot; i = next_live(i + 1))
      file(i, table_hash(slot(i).first));
  }

  // Inode numbers come in runs (tmpfs hands them out in sequence) and so do
  // shmids: keys that differ only in their low 4 bits share a 64-byte line
  // of cells, so consecutive creates find their cells in cache; runs of 16
  // are scattered like any hash, which keeps probe runs short.
  static size_t table_hash(const SegmentKey &k) {
    const SegmentKey group{k.kind, k.dev_or_ipcns, k.ino_or_shmid >> 4};
    const size_t h = SegmentKeyHash{}(group);
    return (h & ~size_t{15}) | (k.ino_or_shmid & 15);
  }

private:
  static constexpr uint32_t kChunkBits = 10;
  static constexpr uint32_t kChunk = 1u << kChunkBits;
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::vector<uint32_t> free_; // released slots, reused first
  uint32_t used_ = 0;          // slots handed out so far (live or free)
  SlotIndex index_;
};

// --- SlotIndex ---------------------------------------------------------------

template <class Members> void SlotIndex::rebuild(size_t cells, Members &&members) {
  cells_.assign(cells, 0);
  size_ = 0;
  members([this](uint32_t slot, size_t hash) {
    place(slot, hash);
    ++size_;
  });
}

template <class Members> void SlotIndex::reserve(size_t n, Members &&members) {
  size_t cells = 16;
  while (cells * 3 / 4 < n)
    cells *= 2;
  if (cells > cells_.size())
    rebuild(cells, members);
}

template <class Members> void SlotIndex::insert(uint32_t slot, size_t hash, Members &&members) {
  if (slot >= kMaxSlots)
    throw std::length_error("shmbpf: too many segments");
  // At most 3/4 full: linear probing stays short.
  if ((size_ + 1) * 4 > cells_.size() * 3) {
    rebuild(std::max<size_t>(16, cells_.size() * 2), members);
    // members() may already list the slot being filed.
    const size_t mask = cells_.size() - 1;
    for (size_t i = hash & mask; cells_[i]; i = (i + 1) & mask)
      if ((cells_[i] & kSlotMask) == slot + 1)
        return;
  }
  place(slot, hash);
  ++size_;
}

template <class HashOf> bool SlotIndex::erase(uint32_t slot, size_t hash, HashOf &&hash_of) {
  if (cells_.empty())
    return false;
  const size_t mask = cells_.size() - 1;
  size_t i = hash & mask;
  while (cells_[i] && (cells_[i] & kSlotMask) != slot + 1)
    i = (i + 1) & mask;
  if (!cells_[i])
    return false;
  // Backward shift: pull later cells of the run into the hole when their
  // home position does not lie in (hole, cell].
  for (size_t j = i;;) {
    j = (j + 1) & mask;
    if (!cells_[j])
      break;
    const size_t home = hash_of((cells_[j] & kSlotMask) - 1) & mask;
    const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      cells_[i] = cells_[j];
      i = j;
    }
  }
  cells_[i] = 0;
  --size_;
  return true;
}

template <class F> uint32_t SlotIndex::find(size_t hash, F &&f) const {
  if (cells_.empty())
    return kNoSlot;
  const size_t mask = cells_.size() - 1;
  const uint32_t t = tag(hash);
  for (size_t i = hash & mask; cells_[i]; i = (i + 1) & mask)
    if ((cells_[i] & ~kSlotMask) == t && f((cells_[i] & kSlotMask) - 1))
      return (cells_[i] & kSlotMask) - 1;
  return kNoSlot;
}

// --- SegTable ----------------------------------------------------------------

template <SegValue Value> SegTable<Value> &SegTable<Value>::operator=(const SegTable &o) {
  if (this == &o)
    return *this;
  chunks_.clear();
  for (const auto &c : o.chunks_) {
    chunks_.push_back(std::make_unique<Slot[]>(kChunk));
    std::copy(c.get(), c.get() + kChunk, chunks_.back().get());
  }
  free_ = o.free_;
  used_ = o.used_;
  index_ = o.index_;
  return *this;
}

template <SegValue Value>
std::pair<typename SegTable<Value>::iterator, bool>
SegTable<Value>::try_emplace(const SegmentKey &key) {
  if (auto it = find(key); it != end())
    return {it, false};
  uint32_t i;
  if (!free_.empty()) {
    i = free_.back();
    free_.pop_back();
  } else {
    if (used_ == kNoSlot - 1)
      throw std::length_error("shmbpf: segment table full");
    if ((used_ >> kChunkBits) == chunks_.size()) {
      chunks_.push_back(std::make_unique<Slot[]>(kChunk));
      for (uint32_t k = 0; k < kChunk; ++k)
        chunks_.back()[k].second.state = SegmentState::gone;
    }
    i = used_++;
  }
  Slot &s = slot(i);
  s.first = key;
  s.second.state = SegmentState::linked;
  // this-> spelled out: clang 14 misses the implicit use inside a generic
  // lambda and warns that the capture is unused.
  index_.insert(i, table_hash(key), [this](auto &&file) { this->for_each_key(file); });
  return {{this, i}, true};
}

template <SegValue Value> void SegTable<Value>::erase(iterator it) {
  const uint32_t i = it.index();
  Slot &s = slot(i);
  index_.erase(i, table_hash(s.first),
               [this](uint32_t slot_no) { return table_hash(slot(slot_no).first); });
  s.second = Value{};
  s.second.state = SegmentState::gone;
  free_.push_back(i);
}

template <SegValue Value> void SegTable<Value>::reserve(size_t n) {
  index_.reserve(n, [this](auto &&file) { this->for_each_key(file); });
  chunks_.reserve((n + kChunk - 1) / kChunk);
}

} // namespace shmbpf
