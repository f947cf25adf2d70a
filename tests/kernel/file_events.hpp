// What the kernel tests of file events share: a child that notes what it
// did (fstat, fdinfo, its namespaces), the events it caused, and checks of
// each field against those notes.
#pragma once

#include "kernel/harness.hpp"
#include "support.hpp"

#include "sources/clock.hpp"
#include "views/trace_view.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace shmbpf::test {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1u << 20;

// The call the C library makes for unlink(), rename(), link() and creat():
// that call on x86-64, its *at form on arm64, whose kernel has only those
// (the generic call table; creat() is openat(O_CREAT|O_WRONLY|O_TRUNC)).
constexpr Origin libc_call(Origin o) {
#if defined(__aarch64__)
  switch (o) {
  case Origin::unlink:
    return Origin::unlinkat;
  case Origin::rename:
    return Origin::renameat;
  case Origin::link:
    return Origin::linkat;
  case Origin::creat:
    return Origin::openat;
  default:
    return o;
  }
#else
  return o;
#endif
}

// What a child knows about one of its files, written for the parent to
// compare with the events.
struct FileFacts {
  int32_t fd = -1;
  uint32_t dev = 0; // kernel encoding
  uint64_t ino = 0;
  uint64_t size = 0;
  uint64_t bytes = 0; // st_blocks * 512
  uint32_t mode = 0;
  uint32_t mnt_id = 0; // from /proc/self/fdinfo
  uint32_t nlink = 0;
  int64_t ctime_ns = 0; // st_ctim, CLOCK_REALTIME
};

// What a child knows about itself, plus up to four files.
struct Facts {
  uint32_t mntns = 0;
  uint32_t ipcns = 0;
  uint64_t cgroup_id = 0; // 0 when the child could not work it out
  int32_t err = 0;        // errno of the call that was meant to fail
  FileFacts f[4];
};

// Files and directories removed when a test ends, however it ends (mounts:
// TmpfsMount).
struct Cleanup {
  std::vector<std::string> files, dirs;
  Cleanup() = default;
  Cleanup(const Cleanup &) = delete;
  Cleanup &operator=(const Cleanup &) = delete;
  ~Cleanup() {
    for (const auto &f : files)
      unlink(f.c_str());
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)
      rmdir(it->c_str());
  }
};

// In the child: its namespaces and cgroup.
inline void note_self(Facts &facts) {
  facts.mntns = ns_inode("/proc/self/ns/mnt");
  facts.ipcns = ns_inode("/proc/self/ns/ipc");
  facts.cgroup_id = own_cgroup_id();
}

// In the child: fstat and fdinfo of fd. False when either fails.
inline bool note_file(int fd, FileFacts &ff) {
  struct stat st {};
  if (fstat(fd, &st) != 0)
    return false;
  ff.fd = fd;
  ff.dev = kdev_of(st.st_dev);
  ff.ino = st.st_ino;
  ff.size = static_cast<uint64_t>(st.st_size);
  ff.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  ff.mode = st.st_mode;
  ff.nlink = static_cast<uint32_t>(st.st_nlink);
  ff.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd));
  bool found = false;
  for (std::string line; std::getline(info, line);)
    if (line.starts_with("mnt_id:")) {
      ff.mnt_id = static_cast<uint32_t>(std::stoul(line.substr(7)));
      found = true; // 0 for the kernel's internal mounts (memfd)
    }
  return found;
}

// In the child: fd (what an open returned) once noted in ff; -1 when the
// open or note_file failed.
inline int noted(int fd, FileFacts &ff) { return fd >= 0 && note_file(fd, ff) ? fd : -1; }

inline std::string show(const Event &e) { return trace_json(e, TraceClock{}); }

inline std::string show(const std::vector<Event> &evs) {
  std::string out;
  for (const auto &e : evs)
    out += "\n  " + show(e);
  return out;
}

inline std::vector<Event> of_type(const std::vector<Event> &evs, EventType t) {
  std::vector<Event> out;
  for (const auto &e : evs)
    if (e.type == t)
      out.push_back(e);
  return out;
}

// Everything the child produced but frees: once its exit event is in,
// nothing it did before can still be in the ring buffer (records are
// consumed in order). Frees are left out: they carry whoever freed the
// first page and come whenever a per-CPU aggregate is flushed, so tests
// look for them by inode (wait_frees).
inline std::vector<Event> events_after_exit(Collector &col, const Child &c) {
  auto exits = col.wait_for([&](const Event &e) {
    return e.pid == static_cast<uint32_t>(c.pid) && e.type == EventType::exit;
  });
  EXPECT_EQ(exits.size(), 1u) << "no exit event for pid " << c.pid;
  std::vector<Event> out;
  for (auto &e : col.of_pid(static_cast<uint32_t>(c.pid)))
    if (e.type != EventType::free)
      out.push_back(std::move(e));
  return out;
}

// The frees of one inode, waiting (up to 5 s) until they add up to bytes.
inline std::vector<Event> wait_frees(Collector &col, uint32_t dev, uint64_t ino, uint64_t bytes) {
  auto is_free = [&](const Event &e) {
    return e.type == EventType::free && e.dev == dev && e.ino == ino;
  };
  std::vector<Event> frees;
  uint64_t freed = 0;
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       freed < bytes && std::chrono::steady_clock::now() < deadline;) {
    frees = col.wait_for(is_free, frees.size() + 1, 100ms);
    freed = 0;
    for (const auto &f : frees)
      freed += f.bytes;
  }
  EXPECT_EQ(freed, bytes) << show(frees);
  return frees;
}

// The frees of an unlinked inode, the file in ff that the resolver knew as
// full_path: they come after its unlink at after_ts and add up to bytes.
inline void expect_freed_unlinked(Collector &col, const FileFacts &ff, uint64_t bytes,
                                  const std::string &full_path, uint64_t after_ts) {
  auto frees = wait_frees(col, ff.dev, ff.ino, bytes);
  ASSERT_FALSE(frees.empty());
  uint64_t folios = 0, freed = 0;
  for (const auto &f : frees) {
    SCOPED_TRACE(show(f));
    EXPECT_TRUE(f.unlinked);
    EXPECT_EQ(f.nlink, 0u);
    EXPECT_EQ(f.kind, Kind::tmpfs);
    EXPECT_EQ(f.full_path, full_path); // what the resolver knew of the inode
    EXPECT_EQ(f.fs, 1u);
    EXPECT_EQ(f.ret, 0);
    EXPECT_GT(f.folios, 0u);
    EXPECT_GT(f.ts_ns, after_ts);
    EXPECT_LE(f.ts_ns, boottime_ns());
    folios += f.folios;
    freed += f.bytes;
  }
  EXPECT_GE(folios, 1u);
  EXPECT_LE(folios, freed / 4096); // folios of at least a page
}

inline void expect_exited_ok(const Child &c) {
  ASSERT_TRUE(WIFEXITED(c.status)) << "child killed by signal " << WTERMSIG(c.status);
  ASSERT_EQ(WEXITSTATUS(c.status), 0) << "child failed at step " << WEXITSTATUS(c.status);
}

// The common header of an event caused by the (single-threaded) child.
inline void expect_header(const Event &e, const Child &c, const std::string &comm,
                          const Facts &facts) {
  SCOPED_TRACE(show(e));
  EXPECT_EQ(e.pid, static_cast<uint32_t>(c.pid));
  EXPECT_EQ(e.tid, static_cast<uint32_t>(c.pid));
  EXPECT_EQ(e.ppid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(e.uid, getuid());
  EXPECT_EQ(e.comm, comm);
  EXPECT_NE(facts.mntns, 0u);
  EXPECT_EQ(e.mntns, facts.mntns);
  EXPECT_EQ(e.mntns, ns_inode("/proc/self/ns/mnt")); // the child shares ours
  EXPECT_NE(facts.ipcns, 0u);
  EXPECT_EQ(e.ipcns, facts.ipcns);
  EXPECT_NE(e.cgroup_id, 0u);
  if (facts.cgroup_id != 0) {
    EXPECT_EQ(e.cgroup_id, facts.cgroup_id);
  }
  EXPECT_GT(e.ts_ns, 0u);
  EXPECT_LE(e.ts_ns, boottime_ns());
  EXPECT_FALSE(e.truncated);
}

// A successful file event (create/open/memfd_create/resize) on the file the
// child described in ff, as it was after the call.
inline void expect_file(const Event &e, const FileFacts &ff) {
  SCOPED_TRACE(show(e));
  EXPECT_NE(ff.ino, 0u);
  EXPECT_EQ(e.dev, ff.dev);
  EXPECT_EQ(e.ino, ff.ino);
  EXPECT_EQ(e.mnt_id, ff.mnt_id);
  EXPECT_EQ(e.fd, ff.fd);
  EXPECT_EQ(e.size, ff.size);
  EXPECT_EQ(e.bytes, ff.bytes);
  EXPECT_EQ(e.fs, 1u);                  // SHMBPF_FS_TMPFS
  EXPECT_EQ(e.unlinked, ff.nlink == 0); // memfds never had a link
}

// How e names its file: the path as the caller passed it, the name in its
// mount, and the full path the resolver made of them.
inline void expect_named(const Event &e, const std::string &path, const std::string &name,
                         const std::string &full_path) {
  SCOPED_TRACE(show(e));
  EXPECT_EQ(e.path, path);
  EXPECT_EQ(e.name, name);
  EXPECT_EQ(e.full_path, full_path);
}

inline void expect_ok(const Event &e, int32_t ret) {
  EXPECT_EQ(e.ret, ret) << show(e);
  EXPECT_EQ(e.err, 0) << show(e);
}

inline void expect_exit_event(const Event &e, const Child &c, const std::string &comm) {
  SCOPED_TRACE(show(e));
  EXPECT_EQ(e.type, EventType::exit);
  EXPECT_EQ(e.kind, Kind::none);
  EXPECT_EQ(e.pid, static_cast<uint32_t>(c.pid));
  EXPECT_EQ(e.ppid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(e.comm, comm);
  EXPECT_EQ(e.exit_code, static_cast<uint32_t>(c.status));
}

// One child of a test, named comm, and what it noted of itself and its files.
struct Traced {
  std::string comm;
  Child child;
  Shared<Facts> facts;
  std::vector<Event> evs; // what it caused (events_after_exit), once trace collected them
};

// Runs body in a child named comm that first notes its namespaces and
// cgroup; a fatal failure unless the child exits 0.
inline void run_noting(Traced &t, const std::string &comm,
                       const std::function<int(Facts &)> &body) {
  t.comm = comm;
  t.child = run_child(comm, [&] {
    note_self(*t.facts);
    return body(*t.facts);
  });
  ASSERT_NO_FATAL_FAILURE(expect_exited_ok(t.child));
}

// run_noting, then the events the child caused into t.evs.
inline void trace(Collector &col, Traced &t, const std::string &comm,
                  const std::function<int(Facts &)> &body) {
  ASSERT_NO_FATAL_FAILURE(run_noting(t, comm, body));
  t.evs = events_after_exit(col, t.child);
}

// For EXPECT_TRUE/ASSERT_TRUE: evs hold exactly n events of type t; the
// failure shows them all.
inline ::testing::AssertionResult has_n(const std::vector<Event> &evs, size_t n, EventType t) {
  const size_t got = of_type(evs, t).size();
  if (got == n)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << got << " " << to_string(t) << " events, expected " << n << ":" << show(evs);
}

// has_n, keeping the events in out: ASSERT_TRUE(take(...)) before indexing it.
inline ::testing::AssertionResult take(const std::vector<Event> &evs, size_t n, EventType t,
                                       std::vector<Event> &out) {
  out = of_type(evs, t);
  return has_n(evs, n, t);
}

// The one event of type t: ASSERT_TRUE(one(...)) before using out.
inline ::testing::AssertionResult one(const std::vector<Event> &evs, EventType t, Event &out) {
  std::vector<Event> found;
  auto res = take(evs, 1, t, found);
  if (res)
    out = found[0];
  return res;
}

inline void expect_header(const Event &e, const Traced &t) {
  expect_header(e, t.child, t.comm, *t.facts);
}

// A successful call by t's child on the file it described in ff, returning
// ret (the fd for a create, open or memfd_create; 0 for a resize).
inline void expect_file_ok(const Event &e, const Traced &t, const FileFacts &ff, int32_t ret) {
  expect_header(e, t);
  expect_file(e, ff);
  expect_ok(e, ret);
}

// A successful openat (a create or an open) by t's child of the tmpfs file
// it described in ff; is_new when the call made the file.
inline void expect_openat_ok(const Event &e, const Traced &t, const FileFacts &ff, bool is_new) {
  expect_file_ok(e, t, ff, ff.fd);
  SCOPED_TRACE(show(e));
  EXPECT_EQ(e.kind, Kind::tmpfs);
  EXPECT_EQ(e.origin, Origin::openat);
  EXPECT_EQ(e.is_new, is_new);
}

// A successful unlink by t's child of the file (dev, ino) known as full_path.
inline void expect_unlink_ok(const Event &e, const Traced &t, const std::string &full_path,
                             uint32_t dev, uint64_t ino) {
  expect_header(e, t);
  expect_ok(e, 0);
  EXPECT_EQ(e.full_path, full_path) << show(e);
  EXPECT_EQ(e.dev, dev) << show(e);
  EXPECT_EQ(e.ino, ino) << show(e);
}

inline std::string uniq(const std::string &stem) { return stem + "-" + std::to_string(getpid()); }

// A file of one test, at the root of the mount at dir: its leaf is stem
// made unique (uniq). Removed when the test ends, however it ends.
struct TestFile {
  explicit TestFile(const std::string &stem, const std::string &dir = "/dev/shm")
      : leaf(uniq(stem)), name("/" + leaf), path(dir + name) {
    cleanup.files.push_back(path);
  }
  const std::string leaf;
  const std::string name; // in its mount, as events name it (and shm_open)
  const std::string path;
  Cleanup cleanup;
};

} // namespace shmbpf::test
