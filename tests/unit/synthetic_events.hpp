// Events as the decoder hands them to the engine, built by hand for the
// unit tests of the engine and of the views over it.
#pragma once

#include "decode/event.hpp"

#include <fcntl.h>

#include <cstdint>
#include <string>

namespace shmbpf::test {

// The header every event has: a process (pid = tid, parent 1, uid 1000,
// comm "p<pid>") at time ts.
inline Event process_event(EventType type, uint32_t pid, uint64_t ts) {
  Event e;
  e.type = type;
  e.pid = pid;
  e.tid = pid;
  e.ppid = 1;
  e.uid = 1000;
  e.ts_ns = ts;
  e.comm = "p" + std::to_string(pid);
  return e;
}

// Where a file event happened: the filesystem's device and the mount the
// process reached it through.
struct FileAt {
  uint32_t dev = 0;
  uint32_t mnt_id = 0;
};

// pid creates path (inode ino) with O_CREAT and keeps it open; it holds
// bytes resident pages afterwards (a file event carries size and blocks).
inline Event created_file(FileAt at, uint32_t pid, uint64_t ino, const std::string &path,
                          uint64_t bytes, uint64_t ts) {
  Event e = process_event(EventType::create, pid, ts);
  e.kind = Kind::tmpfs;
  e.dev = at.dev;
  e.mnt_id = at.mnt_id;
  e.ino = ino;
  e.full_path = path;
  e.path = path;
  e.ret = 3;
  e.fd = 3;
  e.is_new = true;
  e.flags = O_RDWR | O_CREAT | O_CLOEXEC;
  e.size = bytes;
  e.bytes = bytes;
  return e;
}

// pid's memfd_create(name): a nameless segment it holds.
inline Event created_memfd(uint32_t pid, uint64_t ino, const std::string &name, uint64_t ts) {
  Event e = process_event(EventType::memfd_create, pid, ts);
  e.kind = Kind::memfd;
  e.dev = 1;
  e.ino = ino;
  e.path = name;
  e.name = "memfd:" + name;
  e.flags = 1; // MFD_CLOEXEC
  e.ret = 4;
  e.fd = 4;
  return e;
}

// pid's shmget creating shmid (key, size) in IPC namespace ipcns.
inline Event created_sysv(uint32_t pid, uint32_t ipcns, int32_t shmid, uint32_t key, uint64_t size,
                          uint64_t ts) {
  Event e = process_event(EventType::shmget, pid, ts);
  e.kind = Kind::sysv;
  e.ipcns = ipcns;
  e.shmid = shmid;
  e.ret = shmid;
  e.key = key;
  e.size = size;
  e.arg_size = size;
  e.created = 1;
  return e;
}

// pid's write(2) to fd 3, a full file ino on a tmpfs, failing with ENOSPC.
inline Event write_without_space(FileAt at, uint32_t pid, uint64_t ino, const std::string &path,
                                 uint64_t ts) {
  Event e = process_event(EventType::nospace, pid, ts);
  e.kind = Kind::tmpfs;
  e.origin = Origin::write;
  e.dev = at.dev;
  e.mnt_id = at.mnt_id;
  e.ino = ino;
  e.full_path = path;
  e.ret = -28; // ENOSPC
  e.err = 28;
  e.fd = 3;
  return e;
}

// A SIGBUS the kernel generated for pid (a fault: si_code > 0).
inline Event sigbus_fault(uint32_t pid, uint64_t ts) {
  Event e = process_event(EventType::sigbus, pid, ts);
  e.target_pid = pid;
  e.si_code = 2; // BUS_ADRERR
  return e;
}

} // namespace shmbpf::test
