// Turns the kernel's partial view of a path (mount id + in-mount path, or a
// path as passed plus its start directory) into the absolute path a user
// knows, and decides whether an unlink/rename/link candidate really concerns a
// tmpfs file. Pure: fed with mount tables by the caller.
#pragma once

#include "decode/event.hpp"
#include "facts/mounts.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shmbpf {

class PathResolver {
public:
  enum class Outcome {
    resolved,       // full_path filled in (or nothing to resolve)
    unknown_mount,  // a mount id or namespace is not known: refresh and retry
    not_shared_mem, // an unlink/rename/link candidate that is not on tmpfs: drop it
  };

  // Inodes remembered after their name was unlinked, for the path of a
  // later free event; beyond this many, the oldest are forgotten.
  static constexpr std::size_t kMaxUnlinked = 65536;
  // Unlinked inodes whose pages began to be freed: kept for the rest of
  // their free records (a truncate that moved CPUs, or another file's page
  // that came between, splits them), the last kMaxFreed of them.
  static constexpr std::size_t kMaxFreed = 1024;

  // Replace the mount table of one mount namespace.
  void set_namespace(uint32_t mntns, std::vector<MountInfo> mounts);
  bool knows_namespace(uint32_t mntns) const { return by_ns_.count(mntns) != 0; }
  bool knows_mount(uint32_t mnt_id) const { return by_id_.count(mnt_id) != 0; }

  // Fills in full_path (and a rename's or link's full_newpath) where it can.
  Outcome resolve(Event &e);

  // "/a/./b//../c" -> "/a/c"; "" for a relative input.
  static std::string normalize(std::string_view absolute);
  // The same into out (replacing its contents); out must not alias p.
  static void normalize_into(std::string &out, std::string_view p);

  // Inodes with a remembered path (tests: the table stays bounded).
  std::size_t remembered_inodes() const { return inodes_.size(); }

private:
  struct InodeKey {
    uint32_t dev;
    uint64_t ino;
    bool operator==(const InodeKey &) const = default;
  };
  struct InodeKeyHash {
    size_t operator()(const InodeKey &k) const { return k.ino * 31 + k.dev; }
  };
  struct Known {
    std::string path;
    Kind kind = Kind::none;
    uint32_t mnt_id = 0;       // the mount path is on, 0 when not known
    uint64_t unlinked_seq = 0; // 0 while the inode has a name
    uint64_t freed_seq = 0;    // 0 until a free of it, unlinked, came
  };
  using Inodes = std::unordered_map<InodeKey, Known, InodeKeyHash>;
  // Inodes kept for a while, oldest first, each with the mark it was queued
  // under: one still so marked when it leaves the queue is forgotten.
  struct Retiring {
    std::deque<std::pair<InodeKey, uint64_t>> queue;
    uint64_t last_mark = 0;
  };

  const MountInfo *mount_for_path(uint32_t mntns, const std::string &abs) const;
  // e's path as passed made absolute into joined_ (from its start
  // directory, into start_, when relative; have_start when there is one),
  // and the tmpfs mount it is on (nullptr when e has no path).
  Outcome absolute_path(const Event &e, bool &have_start, const MountInfo *&mount);
  // unlink, rename and link: the kernel's path(s) as passed, made absolute.
  Outcome resolve_by_name(Event &e);
  // A create that failed: the file it was to be, its mount's dev and id.
  Outcome resolve_new_file(Event &e);
  // e's name in mount m from the absolute path abs under it, as the
  // kernel names files (a bind mount's root is not known here: the name
  // is then what the path has below the mount point).
  static void name_in_mount(Event &e, const MountInfo &m, std::string_view abs);
  // A light hook's resize of the inode alone: the path, and with
  // create_sent the mount and name, the model knew.
  void resolve_known_inode(Event &e);
  // A light hook's create (the inode exact, the path as passed): as a
  // failed one, then remembered as an open's file is.
  Outcome resolve_created(Event &e);
  // False when e's absolute path as passed says that mount m, found by
  // e's mount id and device, is not the mount e was on (both reused).
  bool agrees_with_path(const Event &e, const MountInfo &m);
  // paths_ key "<mntns>:<abs path>" in key_ (a reused buffer).
  const std::string &path_key(uint32_t mntns, std::string_view abs);
  void remember(const Event &e, std::string_view path, Kind kind);
  void forget_name(InodeKey k);
  // Gives it a new mark (its field mark) from r and queues it there; the
  // oldest beyond max still so marked are forgotten.
  void retire(Inodes::iterator it, uint64_t Known::*mark, Retiring &r, std::size_t max);

  std::unordered_map<uint32_t, std::vector<MountInfo>> by_ns_;
  std::unordered_map<uint32_t, MountInfo> by_id_;
  Inodes inodes_;
  // Unlinked inodes: a free may still come for them (pages are freed at
  // the last close or munmap), or never (a file without pages), so they
  // are kept, but only the last kMaxUnlinked of them (Known::unlinked_seq).
  Retiring unlinked_;
  // Unlinked inodes whose frees began, the last kMaxFreed (Known::freed_seq).
  Retiring freed_;
  // Mounts (id << 32 | dev) whose path disagreed with an absolute path as
  // passed: suspect until the mount tables are read again, then trusted
  // until the next read if they still disagree (a symlink on the way).
  std::unordered_set<uint64_t> suspect_, trusted_;
  std::unordered_map<std::string, InodeKey> paths_; // "<mntns>:<abs path>"
  std::string key_, dir_, joined_, start_;          // reused buffers
};

} // namespace shmbpf
