// Synthetic events for the engine benchmarks: what the decoder and resolver
// would hand the engine for PyTorch-style segments in the host's /dev/shm.
#pragma once

#include "decode/event.hpp"
#include "unit/synthetic_events.hpp"

#include <fcntl.h>

#include <cstdint>
#include <string>

namespace shmbpf::bench {

constexpr uint32_t kShmDev = 26; // 0:26
constexpr uint32_t kShmMntId = 25;

// The unit tests' event header, from a python3 process in cgroup 1.
inline Event process_event(EventType type, uint32_t pid, uint64_t ts_ns) {
  Event e = test::process_event(type, pid, ts_ns);
  e.cgroup_id = 1;
  e.comm = "python3";
  return e;
}

// An event about file ino in the host's /dev/shm.
inline Event file_event(EventType type, Origin origin, uint32_t pid, uint64_t ino, uint64_t ts_ns) {
  Event e = process_event(type, pid, ts_ns);
  e.kind = Kind::tmpfs;
  e.origin = origin;
  e.dev = kShmDev;
  e.mnt_id = kShmMntId;
  e.ino = ino;
  return e;
}

// A name as long as PyTorch's file_system strategy makes them.
inline std::string torch_path(uint32_t pid, uint64_t n) {
  return "/dev/shm/torch_" + std::to_string(pid) + "_" + std::to_string(1'000'000'000 + n % 7919) +
         "_" + std::to_string(n);
}

inline Event create_event(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts_ns) {
  Event e = file_event(EventType::create, Origin::openat, pid, ino, ts_ns);
  e.path = path;
  e.full_path = path;
  e.name = path.substr(8); // without "/dev/shm"
  e.ret = 7;
  e.fd = 7;
  e.flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
  e.mode = 0600;
  e.is_new = true;
  return e;
}

inline Event resize_event(uint32_t pid, uint64_t ino, uint64_t size, uint64_t ts_ns) {
  Event e = file_event(EventType::resize, Origin::ftruncate, pid, ino, ts_ns);
  e.size = size;
  e.arg_size = size;
  e.fd = 7;
  return e;
}

inline Event unlink_event(uint32_t pid, uint64_t ino, const std::string &path, uint64_t ts_ns) {
  Event e = file_event(EventType::unlink, Origin::unlink, pid, ino, ts_ns);
  e.mnt_id = 0; // unlink records carry no mount of the file
  e.path = path;
  e.full_path = path;
  e.absolute = true;
  return e;
}

} // namespace shmbpf::bench
