// Typed shmbpf events: what the decoder produces from ring-buffer records
// and what every later stage (model, views) consumes.
#pragma once

#include "facts/dev.hpp"
#include "facts/memory_cgroup.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

enum class EventType : uint8_t {
  create = 1,
  open = 2,
  memfd_create = 3,
  resize = 4,
  unlink = 5,
  rename = 6,
  shmget = 7,
  shmat = 8,
  shmdt = 9,
  shm_rmid = 10,
  free = 11,
  sigbus = 12,
  exit = 13,
  exec = 14,
  link = 15,
  // A write, or an open(O_CREAT), that found no space on a tmpfs or
  // hugetlbfs (ENOSPC, EDQUOT). The kernel's two records (a file's, a
  // path's) are one type here; origin says which syscall.
  nospace = 16,
  // The OOM killer chose a victim (target_pid): in a memory cgroup over its
  // limit, or on a host out of memory.
  oom = 19,
};

// The kind of shared memory an event is about; none for process events.
enum class Kind : uint8_t { none, tmpfs, memfd, sysv };

// Which syscall produced the event (mirrors enum shmbpf_origin).
enum class Origin : uint8_t {
  none = 0,
  open = 1,
  openat = 2,
  openat2 = 3,
  creat = 4,
  ftruncate = 5,
  fallocate = 6,
  unlink = 7,
  unlinkat = 8,
  rename = 9,
  renameat = 10,
  renameat2 = 11,
  memfd_create = 12,
  link = 13,
  linkat = 14,
  write = 15,
  pwrite64 = 16,
  writev = 17,
  pwritev = 18,
  pwritev2 = 19,
  truncate = 20,
};

// What the kernel found at a SIGBUS's faulting address (mirrors enum
// shmbpf_fault_lookup).
enum class FaultLookup : uint8_t {
  not_a_fault = 0, // sent by a process (kill), or to another task
  file = 1,        // a file mapping: dev, ino, name, size, offset are set
  anon = 2,        // a mapping without a file
  no_vma = 3,      // no mapping holds the address
  unknown = 4,     // no address, or the lookup could not run
};

// Event::fs values (enum shmbpf_fs).
inline constexpr uint8_t kFsUnknown = 0, kFsTmpfs = 1, kFsHugetlbfs = 2;

// Arrays indexed by an EventType's value have this many slots.
inline constexpr size_t kEventTypeSlots = static_cast<size_t>(EventType::oom) + 1;

std::string_view to_string(EventType t);
std::string_view to_string(Kind k);
std::string_view to_string(Origin o);
std::string_view to_string(FaultLookup f);
std::optional<EventType> parse_event_type(std::string_view s);
// Every event type's name, in the order of the types.
std::vector<std::string> event_type_names();
std::optional<Kind> parse_kind(std::string_view s);

// One decoded event. A flat struct: fields that do not apply to an event
// type keep their defaults (0, -1 or empty), and the views print only the
// fields that apply (see docs/EVENTS.md).
struct Event {
  EventType type = EventType::create;
  Kind kind = Kind::none;
  Origin origin = Origin::none;

  // Common header.
  uint64_t ts_ns = 0; // CLOCK_BOOTTIME
  // A light hook's record timed by the file's new ctime (the kernel's
  // tick-coarse clock unless the file's times were read since its last
  // change), not by a clock read of its own.
  bool ts_from_ctime = false;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t ppid = 0;
  uint32_t uid = 0;
  uint32_t mntns = 0;
  uint32_t ipcns = 0;
  uint64_t cgroup_id = 0;
  int32_t ret = 0; // raw syscall result
  int32_t err = 0; // errno when ret < 0, else 0
  std::string comm;

  // Files (create/open/memfd_create/resize/free) and unlink hints; for an
  // exec, the program it loaded (dev, ino, fs, and in name its file name).
  uint32_t dev = 0; // kernel dev_t: major << 20 | minor
  uint32_t mnt_id = 0;
  uint64_t ino = 0;
  uint64_t size = 0;     // logical size after the call
  uint64_t bytes = 0;    // resident bytes (free: bytes freed)
  uint64_t arg_size = 0; // requested size (resize, shmget); nospace: the write's end or offset
  uint32_t flags = 0;    // open/memfd/fallocate/unlinkat flags, shmflg
  uint32_t mode = 0;
  int32_t fd = -1;
  uint8_t fs = 0; // enum shmbpf_fs
  bool is_new = false;
  bool truncated = false; // a path or name was cut by the kernel
  bool unlinked = false;  // free: inode had no links left
  uint32_t nlink = 0;
  uint64_t folios = 0;

  std::string path;         // as passed by the caller (memfd: the name)
  std::string name;         // in-mount path "/dir/leaf" (memfd: "memfd:name")
  std::string newpath;      // rename or link target as passed
  std::string full_path;    // resolved absolute path, filled by the resolver
  std::string full_newpath; // rename or link target resolved, filled by the resolver

  // unlink/rename/link resolution.
  int32_t dirfd = -100; // AT_FDCWD
  int32_t newdirfd = -100;
  bool absolute = false;
  bool new_start = false; // start_* is newpath's start directory, not path's
  // The kernel sent the path as passed, resolved here: unlink, rename,
  // link, a create without space, and the light hooks' create.
  bool by_path = false;
  // dev and ino are the file itself, not the last one with its leaf name
  // (a light hook saw the inode).
  bool exact_hint = false;
  // resize from a light hook: the kernel sent the inode alone, as this
  // CPU had just sent the file's create, with its path (mount, in-mount
  // name and path are the model's, as for a truncate's).
  bool create_sent = false;
  // resize: the kernel sent the inode alone, and the path (with
  // create_sent, the mount and name too) is what the model knew of it.
  bool path_from_model = false;
  uint32_t start_dev = 0;
  uint32_t start_mnt_id = 0;
  uint64_t start_ino = 0;
  std::string start_dir; // in-mount path of the start directory

  // System V.
  int32_t shmid = -1;
  uint32_t key = 0;
  uint64_t addr = 0;
  uint8_t created = 2; // 1 created, 0 existing, 2 unknown

  // sigbus. A fault's file is in the file fields above (dev, mnt_id, ino,
  // size, bytes, fs, unlinked, name; shmid for a SysV segment), and its
  // faulting address in addr.
  uint32_t target_pid = 0;
  // A fault's process as its own pid namespace numbers it (a container's
  // view), 0 when unknown.
  uint32_t target_ns_pid = 0;
  std::string target_comm;
  int32_t si_code = 0;
  FaultLookup fault = FaultLookup::not_a_fault;
  uint64_t offset = 0;     // the faulting address's offset in the file
  bool beyond_eof = false; // the faulting page starts at or past the file's end
  uint64_t mount_size = 0; // tmpfs: the mount's size at the fault, 0 unlimited or unknown
  uint64_t mount_used = 0; // tmpfs: bytes in use on it then

  // oom. The victim is target_pid, named in target_comm where the kernel
  // gives its name (victim_mem), or by its exit's record (the model's).
  // The header's fields are the task whose charge found no memory.
  bool victim_mem = false; // the kernel gave the victim's uid, name and memory below
  uint32_t target_uid = 0;
  uint64_t victim_total_vm = 0; // bytes of its address space
  uint64_t victim_anon_rss = 0; // its resident bytes, anonymous, of files, of shared memory
  uint64_t victim_file_rss = 0;
  uint64_t victim_shmem_rss = 0;
  std::optional<int16_t> oom_score_adj;
  // The memory cgroup of the task whose charge failed: the inode number of
  // its directory (0: unknown).
  uint64_t memcg_id = 0;
  // The victim's memory cgroup as the session read it when the record
  // came (nullopt: not read, or gone): what was charged to it and its
  // limit. Its shared memory pages stay charged while their files live.
  std::optional<CgroupMemory> memcg;

  // exit / exec.
  uint32_t exit_code = 0;
  uint32_t old_pid = 0;
  std::string filename;

  bool operator==(const Event &) const = default;
};

// A nospace event from an open(O_CREAT): the kernel's path record (no file
// came to exist); else a write's, with the file's fields set.
inline bool is_create_nospace(const Event &e) {
  return e.type == EventType::nospace && e.origin >= Origin::open && e.origin <= Origin::creat;
}

// Events the kernel sends as a path as passed plus a start directory,
// resolved to a file in userspace.
inline bool is_by_path(const Event &e) {
  return e.type == EventType::unlink || e.type == EventType::rename || e.type == EventType::link ||
         is_create_nospace(e) || (e.type == EventType::create && e.by_path);
}

} // namespace shmbpf
