#include "decode/decode.hpp"

#include <linux/types.h>

#include "shmbpf_events.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

namespace shmbpf {

static_assert(sizeof(shmbpf_hdr) == 64);
static_assert(sizeof(shmbpf_file_event) == 640);
static_assert(sizeof(shmbpf_path_event) == 896);
static_assert(sizeof(shmbpf_sysv_event) == 96);
static_assert(sizeof(shmbpf_free_event) == 112);
static_assert(sizeof(shmbpf_sigbus_event) == 432);
static_assert(sizeof(shmbpf_exit_event) == 72);
static_assert(sizeof(shmbpf_exec_event) == 408);
static_assert(sizeof(shmbpf_oom_event) == 136);

namespace {

constexpr int32_t kMaxErrno = 4095;

// A fixed-size char field up to its first NUL (or its end), into a string
// whose buffer is reused.
void cstr(std::string &out, const char *p, size_t cap) { out.assign(p, strnlen(p, cap)); }

// Back to a default Event. Copy-assigning an empty string keeps the
// target's buffer, so the strings keep theirs for the next record.
void reset_keeping_buffers(Event &e) {
  static const Event defaults;
  e = defaults;
}

void decode_hdr(const shmbpf_hdr &h, Event &e) {
  switch (h.type) {
  case SHMBPF_EV_NOSPACE_CREATE:
    e.type = EventType::nospace;
    break;
  case SHMBPF_EV_CREATE_BY_PATH:
    e.type = EventType::create;
    break;
  default:
    e.type = static_cast<EventType>(h.type);
  }
  e.ts_ns = h.ts_ns;
  e.pid = h.pid;
  e.tid = h.tid;
  e.ppid = h.ppid;
  e.uid = h.uid;
  e.mntns = h.mntns;
  e.ipcns = h.ipcns;
  e.cgroup_id = h.cgroup_id;
  e.ret = h.ret;
  // An errno is what the kernel returns as -4095..-1 (MAX_ERRNO). Anything
  // lower is not one, and -INT32_MIN is not even an int32_t.
  e.err = h.ret < 0 && h.ret >= -kMaxErrno ? -h.ret : 0;
  cstr(e.comm, h.comm, sizeof(h.comm));
}

// Kind of a tmpfs inode from its kernel name: memfds and SysV segments live
// on the kernel's internal shm mount as "memfd:<name>" and "SYSV<key>".
Kind kind_of_name(std::string_view name) {
  if (name.starts_with("memfd:") || name.starts_with("/memfd:"))
    return Kind::memfd;
  if (name.starts_with("SYSV") || name.starts_with("/SYSV"))
    return Kind::sysv;
  return Kind::tmpfs;
}

void decode_file(const shmbpf_file_event &r, Event &e) {
  e.dev = r.dev;
  e.mnt_id = r.mnt_id;
  e.ino = r.ino;
  e.size = r.size;
  e.bytes = r.bytes;
  e.arg_size = r.arg_size;
  e.flags = r.flags;
  e.mode = r.mode;
  e.fd = r.fd;
  e.origin = static_cast<Origin>(r.origin);
  e.fs = r.fs;
  e.is_new = r.flags_ev & SHMBPF_F_NEW;
  e.truncated = r.flags_ev & SHMBPF_F_TRUNCATED;
  e.unlinked = r.flags_ev & SHMBPF_F_UNLINKED;
  e.create_sent = r.flags_ev & SHMBPF_F_CREATE_SENT;
  e.ts_from_ctime = r.flags_ev & SHMBPF_F_CTIME_TS;
  cstr(e.path, r.path, std::min<size_t>(r.path_len, sizeof(r.path)));
  size_t clen = std::min<size_t>(r.comp_len, sizeof(r.components));
  std::string_view leaf(r.components, strnlen(r.components, clen));
  if (e.type == EventType::memfd_create && leaf.empty()) {
    // A light hook's: the dentry comes later, named as memfd_create names
    // it, from an argument of at most MFD_NAME_MAX_LEN (249) bytes.
    constexpr size_t kMemfdNameMax = 249;
    e.name = "memfd:" + e.path.substr(0, kMemfdNameMax);
  } else if (e.type == EventType::memfd_create || leaf.starts_with("memfd:")) {
    e.name.assign(leaf); // a pseudo dentry: its name is the whole story
  } else if (clen == 0 && !(r.flags_ev & SHMBPF_F_MNT_ROOT)) {
    e.name.clear(); // the inode alone (a light hook's resize): no name
  } else {
    join_components_into(e.name, r.components, clen, r.flags_ev & SHMBPF_F_MNT_ROOT);
  }
  if (e.type == EventType::memfd_create)
    e.kind = Kind::memfd;
  else
    e.kind = kind_of_name(e.name);
}

void decode_oom(const shmbpf_oom_event &r, Event &e) {
  constexpr uint64_t kKiB = 1024;
  // The tracepoint names the victim by its task's pid, a thread id: the
  // victim is most often the current task, whose process is hdr.pid.
  e.target_pid = r.victim_pid == r.hdr.tid ? r.hdr.pid : r.victim_pid;
  e.memcg_id = r.memcg_id;
  if (r.flags_ev & SHMBPF_F_OOM_VICTIM_MEM) {
    e.victim_mem = true;
    e.target_uid = r.victim_uid;
    cstr(e.target_comm, r.victim_comm, sizeof(r.victim_comm));
    // kB counts of pages: far from overflowing when made bytes.
    e.victim_total_vm = r.total_vm_kb * kKiB;
    e.victim_anon_rss = r.anon_rss_kb * kKiB;
    e.victim_file_rss = r.file_rss_kb * kKiB;
    e.victim_shmem_rss = r.shmem_rss_kb * kKiB;
  }
  if (r.flags_ev & SHMBPF_F_OOM_SCORE_ADJ)
    e.oom_score_adj = r.oom_score_adj;
}

void decode_sigbus(const shmbpf_sigbus_event &r, Event &e) {
  e.target_pid = r.target_pid;
  e.target_ns_pid = r.target_ns_pid;
  cstr(e.target_comm, r.target_comm, sizeof(r.target_comm));
  e.si_code = r.si_code;
  e.fault = r.lookup <= static_cast<uint8_t>(FaultLookup::unknown)
                ? static_cast<FaultLookup>(r.lookup)
                : FaultLookup::unknown;
  e.addr = r.addr;
  if (e.fault != FaultLookup::file)
    return;
  e.dev = r.dev;
  e.mnt_id = r.mnt_id;
  e.ino = r.ino;
  e.size = r.size;
  e.bytes = r.bytes;
  e.offset = r.offset;
  e.fs = r.fs;
  e.mount_size = r.mount_max_bytes;
  e.mount_used = r.mount_used_bytes;
  e.unlinked = r.flags_ev & SHMBPF_F_UNLINKED;
  e.truncated = r.flags_ev & SHMBPF_F_TRUNCATED;
  e.beyond_eof = r.flags_ev & SHMBPF_F_BEYOND_EOF;
  const size_t clen = std::min<size_t>(r.comp_len, sizeof(r.components));
  const std::string_view leaf(r.components, strnlen(r.components, clen));
  if (r.flags_ev & SHMBPF_F_INTERNAL) {
    // A kernel-internal mount: a SysV segment ("SYSV<key>", its inode
    // number is its shmid) or a memfd ("memfd:<name>").
    e.name.assign(leaf);
    if (leaf.starts_with("SYSV")) {
      e.kind = Kind::sysv;
      e.shmid = static_cast<int32_t>(r.ino);
    } else {
      e.kind = Kind::memfd;
    }
    return;
  }
  join_components_into(e.name, r.components, clen, r.flags_ev & SHMBPF_F_MNT_ROOT);
  e.kind = r.fs != SHMBPF_FS_UNKNOWN ? Kind::tmpfs : Kind::none;
}

void decode_path(const shmbpf_path_event &r, Event &e) {
  e.kind = Kind::tmpfs;
  e.origin = static_cast<Origin>(r.origin);
  e.dirfd = r.dirfd;
  e.newdirfd = r.newdirfd;
  e.flags = r.flags;
  e.absolute = r.flags_ev & SHMBPF_F_ABSOLUTE;
  e.new_start = r.flags_ev & SHMBPF_F_NEW_START;
  e.truncated = r.flags_ev & SHMBPF_F_TRUNCATED;
  e.start_dev = r.start_dev;
  e.start_mnt_id = r.start_mnt_id;
  e.start_ino = r.start_ino;
  e.by_path = true;
  e.exact_hint = r.flags_ev & SHMBPF_F_EXACT_HINT;
  e.ts_from_ctime = r.flags_ev & SHMBPF_F_CTIME_TS;
  if (e.type == EventType::create) // a light hook's: the new inode is the hint
    e.is_new = true;
  e.dev = r.hint_dev;
  e.ino = r.hint_ino;
  cstr(e.path, r.path, std::min<size_t>(r.path_len, sizeof(r.path)));
  cstr(e.newpath, r.newpath, std::min<size_t>(r.newpath_len, sizeof(r.newpath)));
  if (r.start_ncomp > 0 || (r.flags_ev & SHMBPF_F_MNT_ROOT))
    join_components_into(e.start_dir, r.start_components,
                         std::min<size_t>(r.start_comp_len, sizeof(r.start_components)),
                         r.flags_ev & SHMBPF_F_MNT_ROOT);
}

void decode_sysv(const shmbpf_sysv_event &r, Event &e) {
  e.kind = Kind::sysv;
  e.shmid = r.shmid;
  e.key = r.key;
  e.arg_size = r.size;
  e.size = r.size;
  e.addr = r.addr;
  e.flags = r.shmflg;
  e.created = static_cast<uint8_t>(r.created > 2 ? 2 : r.created);
}

void decode_free(const shmbpf_free_event &r, Event &e) {
  e.kind = Kind::tmpfs; // refined by the resolver from what it knows of the inode
  e.dev = r.dev;
  e.ino = r.ino;
  e.bytes = r.bytes;
  e.folios = r.folios;
  e.nlink = r.nlink;
  e.unlinked = r.nlink == 0;
  e.fs = r.fs;
}

// The record's first size bytes (all of T but for a record that ends
// early: the rest reads as zeros, empty arrays).
template <class T> T copy_record(const void *data, size_t size = sizeof(T)) {
  static_assert(std::is_trivially_copyable_v<T>);
  T r;                         // written whole below: a path record is mostly its unused tail
  std::memcpy(&r, data, size); // the ring buffer gives no alignment promise to C++
  std::memset(reinterpret_cast<unsigned char *>(&r) + size, 0, sizeof(T) - size);
  return r;
}

} // namespace

namespace {

// A type's record: its whole size as the kernel writes it, and the least
// it may be ({0, 0}: a type the ABI does not have).
struct RecordSizes {
  size_t whole = 0;
  size_t least = 0;
};

RecordSizes record_sizes(uint8_t type) {
  switch (type) {
  case SHMBPF_EV_CREATE:
  case SHMBPF_EV_OPEN:
  case SHMBPF_EV_MEMFD_CREATE:
  case SHMBPF_EV_RESIZE:
  case SHMBPF_EV_NOSPACE_WRITE:
    return {sizeof(shmbpf_file_event), offsetof(shmbpf_file_event, components)};
  case SHMBPF_EV_UNLINK:
  case SHMBPF_EV_RENAME:
  case SHMBPF_EV_LINK:
  case SHMBPF_EV_NOSPACE_CREATE:
  case SHMBPF_EV_CREATE_BY_PATH:
    return {sizeof(shmbpf_path_event), offsetof(shmbpf_path_event, path)};
  case SHMBPF_EV_SHMGET:
  case SHMBPF_EV_SHMAT:
  case SHMBPF_EV_SHMDT:
  case SHMBPF_EV_SHM_RMID:
    return {sizeof(shmbpf_sysv_event), sizeof(shmbpf_sysv_event)};
  case SHMBPF_EV_FREE:
    return {sizeof(shmbpf_free_event), sizeof(shmbpf_free_event)};
  case SHMBPF_EV_SIGBUS:
    return {sizeof(shmbpf_sigbus_event), sizeof(shmbpf_sigbus_event)};
  case SHMBPF_EV_EXIT:
    return {sizeof(shmbpf_exit_event), sizeof(shmbpf_exit_event)};
  case SHMBPF_EV_EXEC:
    return {sizeof(shmbpf_exec_event), sizeof(shmbpf_exec_event)};
  case SHMBPF_EV_OOM:
    return {sizeof(shmbpf_oom_event), sizeof(shmbpf_oom_event)};
  default:
    return {};
  }
}

} // namespace

size_t record_size(uint8_t type) { return record_sizes(type).whole; }

size_t record_min_size(uint8_t type) { return record_sizes(type).least; }

void join_components_into(std::string &out, const char *buf, size_t len, bool reached_root) {
  out.clear();
  if (!reached_root)
    out.append("...");
  // Components are the maximal runs of non-NUL bytes, leaf first: walk
  // them from the end so that the path comes out root first.
  size_t j = len;
  while (j > 0) {
    while (j > 0 && buf[j - 1] == '\0')
      --j;
    const size_t end = j;
    while (j > 0 && buf[j - 1] != '\0')
      --j;
    if (end > j) {
      out.push_back('/');
      out.append(buf + j, end - j);
    }
  }
  if (out.empty())
    out.push_back('/');
}

std::string join_components(const char *buf, size_t len, bool reached_root) {
  std::string out;
  join_components_into(out, buf, len, reached_root);
  return out;
}

namespace {

void set_error(std::string *why, std::string text) {
  if (why)
    *why = std::move(text);
}

} // namespace

bool decode_event_into(const void *data, size_t len, Event &e, std::string *why) {
  if (len < sizeof(shmbpf_hdr)) {
    set_error(why, "record of " + std::to_string(len) + " bytes is shorter than the header");
    return false;
  }
  auto h = copy_record<shmbpf_hdr>(data);
  if (h.abi != SHMBPF_ABI_VERSION) {
    set_error(why, "record has ABI version " + std::to_string(h.abi) + ", expected " +
                       std::to_string(SHMBPF_ABI_VERSION));
    return false;
  }
  const auto [want, least] = record_sizes(h.type);
  if (want == 0) {
    set_error(why, "unknown event type " + std::to_string(h.type));
    return false;
  }
  if (h.size < least || h.size > want || len < h.size) {
    set_error(why, "event type " + std::to_string(h.type) + " has size " + std::to_string(h.size) +
                       " in a record of " + std::to_string(len) + " bytes, expected " +
                       (least == want ? std::to_string(want)
                                      : std::to_string(least) + " to " + std::to_string(want)));
    return false;
  }

  reset_keeping_buffers(e);
  decode_hdr(h, e);
  switch (h.type) {
  case SHMBPF_EV_CREATE:
  case SHMBPF_EV_OPEN:
  case SHMBPF_EV_MEMFD_CREATE:
  case SHMBPF_EV_RESIZE:
  case SHMBPF_EV_NOSPACE_WRITE:
    decode_file(copy_record<shmbpf_file_event>(data, h.size), e);
    break;
  case SHMBPF_EV_UNLINK:
  case SHMBPF_EV_RENAME:
  case SHMBPF_EV_LINK:
  case SHMBPF_EV_NOSPACE_CREATE:
  case SHMBPF_EV_CREATE_BY_PATH:
    decode_path(copy_record<shmbpf_path_event>(data, h.size), e);
    break;
  case SHMBPF_EV_SHMGET:
  case SHMBPF_EV_SHMAT:
  case SHMBPF_EV_SHMDT:
  case SHMBPF_EV_SHM_RMID:
    decode_sysv(copy_record<shmbpf_sysv_event>(data), e);
    break;
  case SHMBPF_EV_FREE:
    decode_free(copy_record<shmbpf_free_event>(data), e);
    break;
  case SHMBPF_EV_SIGBUS:
    decode_sigbus(copy_record<shmbpf_sigbus_event>(data), e);
    break;
  case SHMBPF_EV_EXIT:
    e.exit_code = copy_record<shmbpf_exit_event>(data).exit_code;
    break;
  case SHMBPF_EV_OOM:
    decode_oom(copy_record<shmbpf_oom_event>(data), e);
    break;
  case SHMBPF_EV_EXEC: {
    auto r = copy_record<shmbpf_exec_event>(data);
    e.old_pid = r.old_pid;
    cstr(e.filename, r.filename, std::min<size_t>(r.filename_len, sizeof(r.filename)));
    e.fs = r.exe_fs;
    e.dev = r.exe_dev;
    e.ino = r.exe_ino;
    cstr(e.name, r.exe_name, std::min<size_t>(r.exe_name_len, sizeof(r.exe_name)));
    break;
  }
  }
  return true;
}

Result<Event> decode_event(const void *data, size_t len) {
  Event e;
  std::string why;
  if (!decode_event_into(data, len, e, &why))
    return Error{std::move(why)};
  return e;
}

} // namespace shmbpf
