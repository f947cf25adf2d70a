// Synthetic snapshots for the tests of `shmbpf top`'s views: a host with
// three processes and a container, their segments and /dev/shm mounts, and
// an engine whose segments tie on every sort key in places (for the paged
// segments view).
#pragma once

#include "views/top_frame.hpp"
#include "views/top_snapshot.hpp"
#include "views/top_state.hpp"

#include "synthetic_events.hpp"

#include <fcntl.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf::test {

inline constexpr uint64_t sec = 1'000'000'000;
inline constexpr uint64_t now = 5000 * sec;
inline constexpr uint32_t host_ns = 4026531840u;
inline constexpr uint32_t ctr_ns = 4026532999u;
inline const std::string ctr_id =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

inline ProcessInfo proc(uint32_t pid, std::string comm, uint64_t segs, uint64_t bytes,
                        double rate = 0, std::string container = "") {
  ProcessInfo p;
  p.pid = pid;
  p.ppid = 1;
  p.uid = 1000;
  p.comm = std::move(comm);
  p.mntns = container.empty() ? host_ns : ctr_ns;
  p.container_id = std::move(container);
  if (!p.container_id.empty())
    p.runtime = "docker";
  p.segments_created = segs;
  p.bytes_created = bytes;
  p.creates = segs;
  p.create_rate = rate;
  return p;
}

inline SegmentInfo seg(uint64_t ino, std::string path, uint64_t bytes, uint32_t creator,
                       std::vector<uint32_t> holders, uint64_t age_s) {
  SegmentInfo s;
  s.key = SegmentKey::file(22, ino);
  s.kind = Kind::tmpfs;
  s.path = std::move(path);
  s.mountpoint = "/dev/shm";
  s.size = bytes;
  s.bytes = bytes;
  s.creator.pid = creator;
  s.creator.known = creator != 0;
  s.creator.comm = creator ? "python3" : "";
  s.created_ns = now - age_s * sec;
  s.age_ns = age_s * sec;
  s.holders = std::move(holders);
  return s;
}

inline MountUsage mount(std::string mp, uint32_t mntns, uint32_t dev, uint64_t limit, uint64_t used,
                        uint64_t segments = 0) {
  MountUsage m;
  m.mount.mountpoint = std::move(mp);
  m.mount.mntns = mntns;
  m.mount.mnt_id = dev + 100;
  m.mount.dev = dev;
  m.mount.size_limit = limit;
  m.mount.used_bytes = used;
  m.tracked_bytes = segments ? used : 0;
  m.segments = segments;
  if (limit)
    m.percent = 100.0 * static_cast<double>(used) / static_cast<double>(limit);
  return m;
}

inline TopSnapshot snapshot() {
  TopSnapshot s;
  s.now_ns = now;
  s.clock = "12:00:00";
  s.events = 1234;
  s.host_mntns = host_ns;
  s.totals.tmpfs = {3, 7 << 20};
  s.totals.memfd = {1, 4096};
  s.totals.sysv = {0, 0};
  s.totals.orphans = 1;
  s.totals.orphan_bytes = 1 << 20;
  s.totals.create_rate = 2.5;
  s.totals.unlink_rate = 1.0;
  s.mounts = {mount("/dev/shm", host_ns, 22, 1ull << 30, 100ull << 20, 3),
              mount("/dev/shm", ctr_ns, 99, 64ull << 20, 60ull << 20, 1),
              mount("/run", host_ns, 23, 1ull << 30, 1 << 20, 0)};
  s.processes = {proc(100, "python3", 2, 6 << 20, 0.5), proc(200, "trainer", 1, 1 << 20, 3.0),
                 proc(300, "idle", 0, 0), proc(400, "worker", 1, 2 << 20, 0, ctr_id)};
  s.processes[0].segments_unheld = 1; // torch_100_a_1 below
  s.processes[1].segments_held = 2;
  s.processes[1].bytes_held = 7 << 20;
  s.containers.resize(2);
  s.containers[0].processes = 3;
  s.containers[0].segments = 3;
  s.containers[0].bytes = 7 << 20;
  s.containers[1].id = ctr_id;
  s.containers[1].runtime = "docker";
  s.containers[1].processes = 1;
  s.containers[1].segments = 1;
  s.containers[1].bytes = 2 << 20;
  s.segments = {seg(1, "/dev/shm/torch_100_a_0", 4 << 20, 100, {100, 200}, 30),
                seg(2, "/dev/shm/torch_100_a_1", 2 << 20, 100, {}, 600),
                seg(3, "/dev/shm/model.bin", 1 << 20, 200, {200}, 5)};
  s.segments[1].orphan = false; // creator alive: unheld, not yet an orphan
  s.users = {{1000, "alice"}};
  return s;
}

// The row lines: everything after the column titles, until a blank line.
inline std::vector<std::string> rows_after(const TopFrame &f, std::string_view first_title) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto &l : f.lines) {
    if (in) {
      if (l.text.empty() || l.style == TopStyle::help)
        break;
      out.push_back(l.text);
    } else if (l.style == TopStyle::columns && l.text.find(first_title) != std::string::npos) {
      in = true;
    }
  }
  return out;
}

inline bool contains(const std::string &hay, std::string_view needle) {
  return hay.find(needle) != std::string::npos;
}

inline const TopLine *line_with(const TopFrame &f, std::string_view needle) {
  for (const auto &l : f.lines)
    if (contains(l.text, needle))
      return &l;
  return nullptr;
}

inline TopState batch_state() {
  TopState st;
  st.width = 0;
  st.height = 0;
  return st;
}

// An engine with segments that tie on every sort key in places: sizes and
// bytes from a few values, shared holders, SysV segments, exited creators.
inline Engine paging_engine() {
  Engine engine;
  std::mt19937 rng(7);
  uint64_t ts = 10 * sec;
  auto ev = [&](EventType type, uint32_t pid) {
    Event e = test::process_event(type, pid, ts++);
    e.comm = pid % 2 ? "python3" : "Trainer";
    return e;
  };
  for (uint64_t ino = 1; ino <= 700; ++ino) {
    const uint32_t pid = 200 + static_cast<uint32_t>(rng() % 12);
    Event e = ev(EventType::create, pid);
    e.kind = Kind::tmpfs;
    e.dev = 26;
    e.mnt_id = 25;
    e.ino = ino;
    e.full_path = "/dev/shm/" + std::string(rng() % 3 ? "torch_" : "psm_") +
                  std::to_string(rng() % 300); // repeated names on purpose
    e.path = e.full_path;
    e.ret = 3;
    e.is_new = true;
    e.size = 4096 * (rng() % 4);
    e.bytes = 4096 * (rng() % 3);
    e.flags = O_RDWR | O_CREAT;
    engine.apply(e);
    if (rng() % 4 == 0) {
      Event o = e;
      o.type = EventType::open;
      o.is_new = false;
      o.pid = o.tid = 200 + static_cast<uint32_t>(rng() % 12);
      o.ts_ns = ts++;
      engine.apply(o);
    }
  }
  for (int32_t shmid = 0; shmid < 30; ++shmid) {
    Event e = ev(EventType::shmget, 205);
    e.kind = Kind::sysv;
    e.ipcns = 4026531839u;
    e.shmid = shmid;
    e.ret = shmid;
    e.key = 0x5000 + static_cast<uint32_t>(shmid);
    e.size = 8192;
    e.created = 1;
    engine.apply(e);
  }
  engine.apply(ev(EventType::exit, 203));
  engine.apply(ev(EventType::exit, 206));
  return engine;
}

// A snapshot of every segment at time at, as top took it before paging.
inline TopSnapshot every_segment(const Engine &engine, uint64_t at) {
  TopSnapshot s;
  s.now_ns = at;
  s.segments = engine.segments({}, at, 0);
  return s;
}

} // namespace shmbpf::test
