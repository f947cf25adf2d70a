// Synthetic events and scans for the engine's tests (engine_*_test.cpp):
// files on the host's /dev/shm (kDev, kMntId), memfds, System V segments in
// one IPC namespace, and the mounts and scans the engine is given.
#pragma once

#include "model/engine.hpp"
#include "synthetic_events.hpp"

#include <fcntl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shmbpf::test {

inline constexpr uint32_t kDev = 26; // 0:26, the host's /dev/shm
inline constexpr uint32_t kOtherDev = 27;
inline constexpr uint32_t kMntId = 25;
inline constexpr uint32_t kIpcNs = 4026531839u;
inline constexpr uint64_t kSec = 1'000'000'000;
inline constexpr uint64_t kMiB = 1 << 20;

inline uint64_t sec(double s) { return static_cast<uint64_t>(s * kSec); }

inline Event file_event(EventType type, uint32_t pid, uint64_t ino, const std::string &path,
                        uint64_t ts) {
  Event e = process_event(type, pid, ts);
  e.kind = Kind::tmpfs;
  e.dev = kDev;
  e.mnt_id = kMntId;
  e.ino = ino;
  e.full_path = path;
  e.name = path.empty() ? "" : path.substr(path.find('/', 1));
  e.path = path;
  e.ret = 3;
  e.fd = 3;
  return e;
}

inline Event create(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts,
                    uint32_t flags = O_RDWR | O_CREAT | O_CLOEXEC) {
  Event e = file_event(EventType::create, pid, ino, path, ts);
  e.is_new = true;
  e.flags = flags;
  return e;
}

inline Event open_file(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts,
                       uint32_t flags = O_RDWR | O_CLOEXEC) {
  Event e = file_event(EventType::open, pid, ino, path, ts);
  e.flags = flags;
  return e;
}

// An open of a file that already holds bytes: file events carry size and
// i_blocks after the call.
inline Event open_sized(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts,
                        uint64_t bytes) {
  Event e = open_file(pid, ino, path, ts);
  e.size = bytes;
  e.bytes = bytes;
  return e;
}

inline Event resize(uint32_t pid, uint64_t ino, uint64_t size, uint64_t bytes, uint64_t ts) {
  Event e = file_event(EventType::resize, pid, ino, "", ts);
  e.full_path.clear();
  e.name.clear();
  e.path.clear();
  e.ret = 0;
  e.size = size;
  e.bytes = bytes;
  e.arg_size = size;
  e.origin = Origin::ftruncate;
  return e;
}

// hint_ino: what the resolver left in dev/ino (0 = nothing).
inline Event unlink_file(uint32_t pid, const std::string &path, uint64_t ts,
                         uint64_t hint_ino = 0) {
  Event e = process_event(EventType::unlink, pid, ts);
  e.kind = Kind::tmpfs;
  e.path = path;
  e.full_path = path;
  e.absolute = true;
  e.ino = hint_ino;
  e.dev = hint_ino ? kDev : 0;
  return e;
}

inline Event free_pages(uint64_t ino, uint64_t bytes, bool unlinked, uint64_t ts) {
  Event e = process_event(EventType::free, 0, ts);
  e.comm = "kworker/0:1";
  e.kind = Kind::tmpfs;
  e.dev = kDev;
  e.ino = ino;
  e.bytes = bytes;
  e.folios = bytes / 4096;
  e.unlinked = unlinked;
  e.nlink = unlinked ? 0 : 1;
  return e;
}

inline Event memfd(uint32_t pid, uint64_t ino, const std::string &name, uint64_t ts,
                   uint32_t flags) {
  Event e = process_event(EventType::memfd_create, pid, ts);
  e.kind = Kind::memfd;
  e.dev = 1;
  e.ino = ino;
  e.path = name;
  e.name = "memfd:" + name;
  e.flags = flags;
  e.ret = 4;
  e.fd = 4;
  return e;
}

inline Event exit_of(uint32_t pid, uint64_t ts) { return process_event(EventType::exit, pid, ts); }

inline Event exec_of(uint32_t pid, uint64_t ts, std::string comm) {
  Event e = process_event(EventType::exec, pid, ts);
  e.comm = std::move(comm);
  return e;
}

inline Event sysv(EventType type, uint32_t pid, int32_t shmid, uint64_t ts) {
  Event e = process_event(type, pid, ts);
  e.kind = Kind::sysv;
  e.ipcns = kIpcNs;
  e.shmid = shmid;
  return e;
}

inline Event shmget(uint32_t pid, int32_t shmid, uint32_t key, uint64_t size, uint64_t ts,
                    uint8_t created = 1) {
  Event e = sysv(EventType::shmget, pid, shmid, ts);
  e.ret = shmid;
  e.key = key;
  e.size = size;
  e.arg_size = size;
  e.created = created;
  return e;
}

inline Event shmat(uint32_t pid, int32_t shmid, uint64_t addr, uint64_t ts) {
  Event e = sysv(EventType::shmat, pid, shmid, ts);
  e.addr = addr;
  return e;
}

inline Event shmdt(uint32_t pid, uint64_t addr, uint64_t ts) {
  Event e = sysv(EventType::shmdt, pid, -1, ts);
  e.addr = addr;
  return e;
}

inline SegmentKey file_key(uint64_t ino, uint32_t dev = kDev) { return SegmentKey::file(dev, ino); }
inline SegmentKey sysv_key(int32_t shmid) { return SegmentKey::sysv(kIpcNs, shmid); }

inline TmpfsFile existing(uint64_t ino, const std::string &path, uint64_t bytes,
                          int64_t mtime_s = 0, uint32_t dev = kDev) {
  TmpfsFile f;
  f.dev = dev;
  f.ino = ino;
  f.path = path;
  f.leaf = path.substr(path.rfind('/') + 1);
  f.size = bytes;
  f.bytes = bytes;
  f.uid = 1000;
  f.nlink = 1;
  f.mtime_s = mtime_s;
  return f;
}

inline EngineConfig starting_at(uint64_t start_ns) {
  EngineConfig c;
  c.start_ns = start_ns;
  return c;
}

inline MountState tmpfs_mount(uint32_t mnt_id, std::string mountpoint, uint32_t dev,
                              uint64_t limit = 0, uint64_t used = 0) {
  MountState m;
  m.mnt_id = mnt_id;
  m.mntns = 1;
  m.mountpoint = std::move(mountpoint);
  m.dev = dev;
  m.size_limit = limit;
  m.used_bytes = used;
  return m;
}

// An engine that knows the host's /dev/shm (kMntId, kDev), the mount the
// events' files are on: files on a mount it does not know are no shared
// memory by the orphan rule (docs/LEAKS.md), unless named by a scheme.
inline Engine with_host_shm() {
  Engine engine;
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev));
  return engine;
}

inline SysvEntry sysv_line(int32_t shmid, uint32_t key, uint64_t size, uint64_t rss, uint32_t cpid,
                           uint32_t nattch, bool removed = false) {
  SysvEntry t;
  t.shmid = shmid;
  t.key = key;
  t.size = size;
  t.rss_bytes = rss;
  t.cpid = cpid;
  t.nattch = nattch;
  t.removed = removed;
  return t;
}

inline std::vector<std::string> orphan_paths(const Engine &engine, uint64_t now, uint64_t min_age) {
  std::vector<std::string> out;
  for (const auto &o : engine.orphans(now, min_age))
    out.push_back(o.segment.path);
  return out;
}

using Pids = std::vector<uint32_t>;

} // namespace shmbpf::test
