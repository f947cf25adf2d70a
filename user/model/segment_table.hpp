// The engine's segments: each tmpfs file, memfd and System V segment by
// its key, kept compact (seg_table.hpp), with the index of linked files by
// path, the other names of files with hard links, and the births that tell
// a segment from a later one at the same key. Pure: the Engine applies the
// rules (who holds what, when a segment is gone) and keeps the other
// tables in step.
#pragma once

#include "model/seg_table.hpp"
#include "model/types.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shmbpf {

// What tells a segment from a later one that reuses its key, as the kernel
// stamps it when the segment is made:
//   time    a tmpfs file's btime (ns since the epoch, statx), a SysV
//           segment's ctime (s; an IPC_SET moves it, and the segment is
//           then taken for another);
//   handle  for a file whose kernel gives no btime (tmpfs before 5.18),
//           TmpfsFile::handle_id: its file handle, which holds the inode's
//           generation.
struct SegmentBirth {
  enum class Kind : uint8_t { time, handle };
  Kind kind = Kind::time;
  uint64_t value = 0; // 0: unknown
  friend bool operator==(const SegmentBirth &, const SegmentBirth &) = default;
};

class SegmentTable {
public:
  // Memory per segment (x86-64, libstdc++): this struct is 120 bytes and
  // lives with its 16-byte key in a slot of a chunked pool (SegTable: no
  // malloc header, no node link); the key index and the path index are open
  // addressing tables of 4-byte slot numbers (~8-10 bytes per segment each
  // at their load factors). A path adds one exact-size heap block (48 bytes
  // with malloc's header for a 38-byte /dev/shm name), each holder a
  // 24-byte Held entry in its process. The pool keeps its peak number of
  // slots. bench/engine/engine_memory measures the whole per segment
  // (docs/BENCHMARKS.md).
  struct Segment {
    PathStr path;
    PidList holders;
    uint64_t size = 0;
    uint64_t bytes = 0;
    // Observed creation time (ns), or with kExistedBefore the mtime (s)
    // from the scan: a segment has one or the other.
    int64_t born = 0;
    uint64_t changed_ns = 0;
    uint64_t creator_cgroup = 0;
    std::array<char, 16> creator_comm{};
    uint32_t creator_pid = 0;
    uint32_t creator_uid = 0;
    uint32_t creator_serial = 0; // process incarnation; 0 = any process with that pid
    uint32_t mnt_id = 0;
    uint32_t sysv_key = 0;
    uint32_t nattch = 0;
    uint32_t nlink = 0; // a file's names: at least 1 while linked, 0 once not
    Kind kind = Kind::tmpfs;
    SegmentState state = SegmentState::linked; // gone: a free slot of the pool
    NamePattern pattern = NamePattern::none;
    uint8_t flags = 0; // kPathFull, kExistedBefore
  };
  static_assert(sizeof(Segment) <= 120, "keep Segment compact: see the estimate above it");
  static constexpr uint8_t kPathFull = 1;      // path is an absolute, resolved path
  static constexpr uint8_t kExistedBefore = 2; // creation not observed

  using Slot = SegSlot<Segment>;
  using iterator = SegTable<Segment>::iterator;

  // --- storage ----------------------------------------------------------------
  iterator begin() const { return segs_.begin(); }
  iterator end() const { return segs_.end(); }
  iterator find(const SegmentKey &key) const { return segs_.find(key); }
  // The first live segment at or after slot i (a query in parts).
  iterator from(size_t i) const { return segs_.from(i); }
  size_t slot_end() const { return segs_.slot_end(); }
  Slot &slot(uint32_t i) const { return segs_.slot(i); }
  size_t size() const { return segs_.size(); }
  bool contains(const SegmentKey &key) const { return segs_.count(key) != 0; }
  void reserve(size_t n);
  // A new segment of kind at key (unknown until now), linked, with no path.
  iterator insert(const SegmentKey &key, Kind kind);
  // The segment goes, with its place in the path index, its other names
  // and its birth.
  void erase(iterator it);

  // --- paths and names ------------------------------------------------------------
  // Invariant: a segment is in the path index exactly when it is a linked
  // tmpfs file with a resolved path. Every change of path, state or kind
  // goes through set_path and set_state.
  void set_path(iterator it, std::string_view path, bool full);
  // linked: nlink at least 1; else nlink 0 and no other names.
  void set_state(iterator it, SegmentState state);
  // The linked file with this resolved path on dev (0: any), if exactly one
  // has it (the same path in two mount namespaces, with no dev to tell them
  // apart, finds none).
  iterator find_by_path(std::string_view path, uint32_t dev_or_0) const;
  // find_by_path, else the file that has the path as another name.
  iterator find_by_name(std::string_view path, uint32_t dev_or_0) const;
  // Whether path is one of a file's names, the one shown or another.
  bool has_name(iterator it, std::string_view path) const;
  // A linked file's names besides the one shown: kept only while it has
  // more than one (nlink > 1), so that a file without links costs nothing.
  void add_other_name(iterator it, std::string_view path);
  void set_other_names(iterator it, std::vector<std::string> names);
  const std::vector<std::string> *other_names(const SegmentKey &key) const;
  // One of a file's names, path ("" unknown), is gone. True when it had no
  // other: it is unlinked now (the caller decides whether it is gone).
  // Else it shows another of its names if path was the one shown, or no
  // resolved one when it has no other known (a rescan names it).
  bool drop_name(iterator it, std::string_view path);
  // One of a file's names, from, is now to.
  void rename_name(iterator it, std::string_view from, std::string_view to);

  // --- births (what a restart keeps) -------------------------------------------
  // Kept only for segments whose creation was observed or restored; ignored
  // for others, unknown keys and unknown births.
  void note_birth(const SegmentKey &key, SegmentBirth birth);
  // A restored creation's birth, kept whatever the segment's flags say.
  void set_birth(const SegmentKey &key, SegmentBirth birth) { births_[key] = birth; }
  std::optional<SegmentBirth> birth(const SegmentKey &key) const;
  const std::unordered_map<SegmentKey, SegmentBirth> &births() const { return births_; }

private:
  static bool path_indexed(const Slot &slot);
  template <class File> void for_each_indexed_path(File &&file) const;
  // The path index's hash: a path's 32-bit hash spread over 64 bits.
  static size_t path_key(uint32_t h) { return h * 0x9e3779b97f4a7c15ull; }
  void index_path(iterator it);
  void unindex_path(iterator it);

  SegTable<Segment> segs_;
  // Linked files with a resolved path by the hash of it, to find unlink and
  // rename targets whose (dev, ino) hint is missing or wrong.
  SlotIndex by_path_;
  std::unordered_map<SegmentKey, std::vector<std::string>> other_names_;
  std::unordered_map<SegmentKey, SegmentBirth> births_;
};

} // namespace shmbpf
