// Kernel tests for tmpfs, /dev/shm and memfd events: a named child makes
// real syscalls, a real Session collects what the BPF programs report, and
// every field is checked against what the child saw itself (fstat, its
// fdinfo, its namespaces and cgroup).
#include "kernel/harness.hpp"
#include "support.hpp"

#include "views/trace_view.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <mntent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1u << 20;

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
void note_self(Facts &facts) {
  facts.mntns = ns_inode("/proc/self/ns/mnt");
  facts.ipcns = ns_inode("/proc/self/ns/ipc");
  facts.cgroup_id = own_cgroup_id();
}

// In the child: fstat and fdinfo of fd. False when either fails.
bool note_file(int fd, FileFacts &ff) {
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
int noted(int fd, FileFacts &ff) { return fd >= 0 && note_file(fd, ff) ? fd : -1; }

uint64_t boottime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

std::string show(const Event &e) { return trace_json(e, TraceClock{}); }

std::string show(const std::vector<Event> &evs) {
  std::string out;
  for (const auto &e : evs)
    out += "\n  " + show(e);
  return out;
}

std::vector<Event> of_type(const std::vector<Event> &evs, EventType t) {
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
std::vector<Event> events_after_exit(Collector &col, const Child &c) {
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
std::vector<Event> wait_frees(Collector &col, uint32_t dev, uint64_t ino, uint64_t bytes) {
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
void expect_freed_unlinked(Collector &col, const FileFacts &ff, uint64_t bytes,
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

void expect_exited_ok(const Child &c) {
  ASSERT_TRUE(WIFEXITED(c.status)) << "child killed by signal " << WTERMSIG(c.status);
  ASSERT_EQ(WEXITSTATUS(c.status), 0) << "child failed at step " << WEXITSTATUS(c.status);
}

// The common header of an event caused by the (single-threaded) child.
void expect_header(const Event &e, const Child &c, const std::string &comm, const Facts &facts) {
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
void expect_file(const Event &e, const FileFacts &ff) {
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
void expect_named(const Event &e, const std::string &path, const std::string &name,
                  const std::string &full_path) {
  SCOPED_TRACE(show(e));
  EXPECT_EQ(e.path, path);
  EXPECT_EQ(e.name, name);
  EXPECT_EQ(e.full_path, full_path);
}

void expect_ok(const Event &e, int32_t ret) {
  EXPECT_EQ(e.ret, ret) << show(e);
  EXPECT_EQ(e.err, 0) << show(e);
}

void expect_exit_event(const Event &e, const Child &c, const std::string &comm) {
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
void run_noting(Traced &t, const std::string &comm, const std::function<int(Facts &)> &body) {
  t.comm = comm;
  t.child = run_child(comm, [&] {
    note_self(*t.facts);
    return body(*t.facts);
  });
  ASSERT_NO_FATAL_FAILURE(expect_exited_ok(t.child));
}

// run_noting, then the events the child caused into t.evs.
void trace(Collector &col, Traced &t, const std::string &comm,
           const std::function<int(Facts &)> &body) {
  ASSERT_NO_FATAL_FAILURE(run_noting(t, comm, body));
  t.evs = events_after_exit(col, t.child);
}

// For EXPECT_TRUE/ASSERT_TRUE: evs hold exactly n events of type t; the
// failure shows them all.
::testing::AssertionResult has_n(const std::vector<Event> &evs, size_t n, EventType t) {
  const size_t got = of_type(evs, t).size();
  if (got == n)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << got << " " << to_string(t) << " events, expected " << n << ":" << show(evs);
}

// has_n, keeping the events in out: ASSERT_TRUE(take(...)) before indexing it.
::testing::AssertionResult take(const std::vector<Event> &evs, size_t n, EventType t,
                                std::vector<Event> &out) {
  out = of_type(evs, t);
  return has_n(evs, n, t);
}

// The one event of type t: ASSERT_TRUE(one(...)) before using out.
::testing::AssertionResult one(const std::vector<Event> &evs, EventType t, Event &out) {
  std::vector<Event> found;
  auto res = take(evs, 1, t, found);
  if (res)
    out = found[0];
  return res;
}

void expect_header(const Event &e, const Traced &t) { expect_header(e, t.child, t.comm, *t.facts); }

// A successful call by t's child on the file it described in ff, returning
// ret (the fd for a create, open or memfd_create; 0 for a resize).
void expect_file_ok(const Event &e, const Traced &t, const FileFacts &ff, int32_t ret) {
  expect_header(e, t);
  expect_file(e, ff);
  expect_ok(e, ret);
}

// A successful openat (a create or an open) by t's child of the tmpfs file
// it described in ff; is_new when the call made the file.
void expect_openat_ok(const Event &e, const Traced &t, const FileFacts &ff, bool is_new) {
  expect_file_ok(e, t, ff, ff.fd);
  SCOPED_TRACE(show(e));
  EXPECT_EQ(e.kind, Kind::tmpfs);
  EXPECT_EQ(e.origin, Origin::openat);
  EXPECT_EQ(e.is_new, is_new);
}

// A successful unlink by t's child of the file (dev, ino) known as full_path.
void expect_unlink_ok(const Event &e, const Traced &t, const std::string &full_path, uint32_t dev,
                      uint64_t ino) {
  expect_header(e, t);
  expect_ok(e, 0);
  EXPECT_EQ(e.full_path, full_path) << show(e);
  EXPECT_EQ(e.dev, dev) << show(e);
  EXPECT_EQ(e.ino, ino) << show(e);
}

std::string uniq(const std::string &stem) { return stem + "-" + std::to_string(getpid()); }

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

constexpr int kOpenFlags = O_RDWR | O_LARGEFILE;
constexpr int kShmFlags = O_NOFOLLOW | O_CLOEXEC | O_LARGEFILE; // what glibc's shm_open adds

// 1. shm_open creates, re-creates and opens one file; each child gets its own
// event, and the three agree on the inode.
TEST(TmpfsEvents, ShmOpenCreateReopenOpen) {
  const TestFile file("kt-shm");
  SHMBPF_COLLECTOR(col);

  Traced a, b, c;
  ASSERT_NO_FATAL_FAILURE(trace(*col, a, "kt-shm-create", [&](Facts &f) {
    int fd = noted(shm_open(file.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    char page[4096] = {1};
    if (ftruncate(fd, 8192) != 0 ||
        pwrite(fd, page, sizeof(page), 0) != static_cast<ssize_t>(sizeof(page)))
      return 2;
    return 0;
  }));
  ASSERT_NO_FATAL_FAILURE(trace(*col, b, "kt-shm-reopen", [&](Facts &f) {
    return noted(shm_open(file.name.c_str(), O_CREAT | O_RDWR, 0644), f.f[0]) >= 0 ? 0 : 1;
  }));
  ASSERT_NO_FATAL_FAILURE(trace(*col, c, "kt-shm-open", [&](Facts &f) {
    return noted(shm_open(file.name.c_str(), O_RDWR, 0), f.f[0]) >= 0 ? 0 : 1;
  }));
  const FileFacts &created = a.facts->f[0];

  // The creating child: one create that made the file, then its resize.
  Event e1;
  ASSERT_TRUE(one(a.evs, EventType::create, e1));
  expect_openat_ok(e1, a, created, /*is_new=*/true);
  EXPECT_EQ(e1.size, 0u);
  EXPECT_EQ(e1.bytes, 0u);
  EXPECT_EQ(e1.flags, static_cast<uint32_t>(O_CREAT | O_EXCL | kOpenFlags | kShmFlags));
  EXPECT_EQ(e1.mode, 0600u);
  expect_named(e1, file.path, file.name, file.path);
  EXPECT_EQ(e1.arg_size, 0u);
  EXPECT_TRUE(has_n(a.evs, 1, EventType::resize));
  EXPECT_TRUE(has_n(a.evs, 0, EventType::open));
  EXPECT_TRUE(has_n(a.evs, 1, EventType::exit));

  // O_CREAT on an existing file: still a create, but not a new file.
  Event e2;
  ASSERT_TRUE(one(b.evs, EventType::create, e2));
  expect_openat_ok(e2, b, b.facts->f[0], /*is_new=*/false);
  EXPECT_EQ(e2.ino, created.ino);
  EXPECT_EQ(e2.dev, created.dev);
  EXPECT_EQ(e2.size, 8192u);
  EXPECT_EQ(e2.bytes, 4096u);
  EXPECT_EQ(e2.flags, static_cast<uint32_t>(O_CREAT | kOpenFlags | kShmFlags));
  EXPECT_EQ(e2.mode, 0644u);
  expect_named(e2, file.path, file.name, file.path);
  EXPECT_EQ(b.evs.size(), 2u) << show(b.evs); // create + exit

  // Without O_CREAT: an open of the tracked inode.
  Event e3;
  ASSERT_TRUE(one(c.evs, EventType::open, e3));
  expect_openat_ok(e3, c, c.facts->f[0], /*is_new=*/false);
  EXPECT_EQ(e3.ino, created.ino);
  EXPECT_EQ(e3.dev, created.dev);
  EXPECT_EQ(e3.flags, static_cast<uint32_t>(kOpenFlags | kShmFlags));
  expect_named(e3, file.path, file.name, file.path);
  EXPECT_EQ(c.evs.size(), 2u) << show(c.evs); // open + exit
}

// 2. PyTorch's file_descriptor sharing: create, size, map, fault in, unlink
// at once and live on the fd. Every event names the same inode, and its
// pages come back as frees once the last reference goes.
TEST(TmpfsEvents, UnlinkedWhileMappedThenFreed) {
  const TestFile file("kt-torch");
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-torch", [&](Facts &f) {
    int fd = noted(shm_open(file.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    if (ftruncate(fd, kMiB) != 0 || !note_file(fd, f.f[1]))
      return 2;
    auto *p = static_cast<volatile char *>(
        mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
      return 3;
    for (size_t off = 0; off < kMiB; off += 4096)
      p[off] = 1;
    if (shm_unlink(file.name.c_str()) != 0 || !note_file(fd, f.f[2]))
      return 4;
    munmap(const_cast<char *>(p), kMiB);
    close(fd);
    return 0;
  }));
  const FileFacts &created = t.facts->f[0];
  EXPECT_EQ(t.facts->f[2].bytes, kMiB); // every page was faulted in

  Event cr, rs, ul;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(one(t.evs, EventType::resize, rs));
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));

  expect_file_ok(cr, t, created, created.fd);
  EXPECT_TRUE(cr.is_new);
  EXPECT_EQ(cr.kind, Kind::tmpfs);
  EXPECT_EQ(cr.full_path, file.path);
  EXPECT_EQ(cr.name, file.name);

  expect_file_ok(rs, t, t.facts->f[1], 0);
  EXPECT_EQ(rs.kind, Kind::tmpfs);
  EXPECT_EQ(rs.origin, Origin::ftruncate);
  EXPECT_EQ(rs.size, kMiB);
  EXPECT_EQ(rs.arg_size, kMiB);
  EXPECT_EQ(rs.bytes, 0u); // ftruncate allocates nothing
  EXPECT_EQ(rs.flags, 0u);
  EXPECT_EQ(rs.mode, t.facts->f[1].mode);
  expect_named(rs, "", file.name, file.path);
  EXPECT_FALSE(rs.is_new);

  expect_unlink_ok(ul, t, file.path, created.dev, created.ino);
  EXPECT_EQ(ul.kind, Kind::tmpfs);
  EXPECT_EQ(ul.origin, Origin::unlink);
  EXPECT_EQ(ul.path, file.path);
  EXPECT_EQ(ul.dirfd, AT_FDCWD);
  EXPECT_TRUE(ul.absolute);
  EXPECT_EQ(ul.flags, 0u);
  EXPECT_LT(cr.ts_ns, rs.ts_ns);
  EXPECT_LT(rs.ts_ns, ul.ts_ns);

  // The frees: whoever dropped the last reference, all of the inode's pages.
  expect_freed_unlinked(*col, created, kMiB, file.path, ul.ts_ns);
}

// 3. A tmpfs mounted after the session started: the resolver has to learn
// the new mount to give the full path.
TEST(TmpfsEvents, NewTmpfsMountCreateAndFallocate) {
  TmpfsMount tmpfs;
  SHMBPF_COLLECTOR(col);
  ASSERT_TRUE(tmpfs.mount("size=4m"));
  const TestFile file("kt-file", tmpfs.dir());

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-mnt-tmpfs", [&](Facts &f) {
    int fd = noted(open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0640), f.f[0]);
    if (fd < 0)
      return 1;
    if (fallocate(fd, 0, 4096, 61440) != 0 || !note_file(fd, f.f[1]))
      return 2;
    close(fd);
    return 0;
  }));

  Event cr, rs;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(one(t.evs, EventType::resize, rs));
  EXPECT_EQ(t.evs.size(), 3u) << show(t.evs);

  expect_openat_ok(cr, t, t.facts->f[0], /*is_new=*/true);
  EXPECT_EQ(cr.flags, static_cast<uint32_t>(O_CREAT | O_EXCL | kOpenFlags));
  EXPECT_EQ(cr.mode, 0640u);
  expect_named(cr, file.path, file.name, file.path);

  expect_file_ok(rs, t, t.facts->f[1], 0);
  EXPECT_EQ(rs.kind, Kind::tmpfs);
  EXPECT_EQ(rs.origin, Origin::fallocate);
  EXPECT_EQ(rs.flags, 0u);        // fallocate mode
  EXPECT_EQ(rs.arg_size, 65536u); // offset + len
  EXPECT_EQ(rs.size, 65536u);
  EXPECT_GT(rs.bytes, 0u);
  EXPECT_EQ(rs.bytes, 61440u); // the first page is a hole
  EXPECT_EQ(rs.mode, t.facts->f[1].mode);
  expect_named(rs, "", file.name, file.path);
}

// 3b. The same, with the creator gone before its event is handled and the
// session's last mount rescan only just behind it: the rescan must not be
// skipped for a mount it has never seen. A Session is driven directly so
// that the order is certain.
TEST(TmpfsEvents, NewTmpfsMountResolvedAfterCreatorExit) {
  TmpfsMount tmpfs;
  SHMBPF_SESSION(session, ProbeOptions{});
  ASSERT_TRUE(tmpfs.mount("size=4m"));
  const TestFile file("kt-gone", tmpfs.dir());

  Traced t;
  ASSERT_NO_FATAL_FAILURE(run_noting(t, "kt-gone", [&](Facts &f) {
    return noted(open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]) >= 0 ? 0 : 1;
  })); // reaped: /proc/<pid> is gone

  std::vector<Event> evs;
  session->drain([&](Event &e) {
    if (e.pid == static_cast<uint32_t>(t.child.pid) && e.type != EventType::free)
      evs.push_back(e);
  });
  ASSERT_EQ(evs.size(), 2u) << show(evs);
  const Event &cr = evs[0];
  ASSERT_EQ(cr.type, EventType::create) << show(cr);
  expect_file_ok(cr, t, t.facts->f[0], t.facts->f[0].fd);
  EXPECT_TRUE(cr.is_new);
  expect_named(cr, file.path, file.name, file.path);
  expect_exit_event(evs[1], t.child, "kt-gone");
}

// 4. The same syscalls on a disk filesystem are not shared memory: nothing
// but the exit, even where a leaf name collides with a tracked tmpfs file.
TEST(TmpfsEvents, DiskFilesystemIsIgnored) {
  Cleanup cleanup;
  std::string dir;
  for (const std::string &base : std::vector<std::string>{"/var/tmp", SHMBPF_SOURCE_DIR, "/tmp"}) {
    struct statfs sfs {};
    if (statfs(base.c_str(), &sfs) != 0 || sfs.f_type == TMPFS_MAGIC ||
        sfs.f_type == HUGETLBFS_MAGIC)
      continue;
    std::string tmpl = base + "/kt-disk-XXXXXX";
    if (mkdtemp(tmpl.data())) {
      dir = tmpl;
      break;
    }
  }
  if (dir.empty())
    GTEST_SKIP() << "no directory on a non-tmpfs filesystem";
  cleanup.dirs.push_back(dir);
  const TestFile tracked("kt-same");
  const std::string &leaf = tracked.leaf;
  const std::string leaf2 = uniq("kt-same2");
  cleanup.files = {dir + "/" + leaf, dir + "/" + leaf2};
  SHMBPF_COLLECTOR(col);

  // A tracked tmpfs file with the same leaf name, created by us.
  int shm = open(tracked.path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(shm, 0) << strerror(errno);
  struct stat shm_st {};
  ASSERT_EQ(fstat(shm, &shm_st), 0);
  close(shm);
  ASSERT_EQ(col->wait_for([&](const Event &e) {
                 return e.pid == static_cast<uint32_t>(getpid()) && e.type == EventType::create &&
                        e.full_path == tracked.path;
               })
                .size(),
            1u);

  Traced d;
  ASSERT_NO_FATAL_FAILURE(trace(*col, d, "kt-disk", [&](Facts &) {
    std::string p = dir + "/" + leaf;
    int fd = open(p.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0)
      return 1;
    char page[4096] = {1};
    if (write(fd, page, sizeof(page)) != static_cast<ssize_t>(sizeof(page)) ||
        ftruncate(fd, 8192) != 0 || fallocate(fd, 0, 0, 16384) != 0)
      return 2;
    int fd2 = open(p.c_str(), O_RDONLY);
    if (fd2 < 0)
      return 3;
    close(fd2);
    if (rename(p.c_str(), (dir + "/" + leaf2).c_str()) != 0) // leaf is a tracked name
      return 4;
    if (chdir(dir.c_str()) != 0 || unlink(leaf2.c_str()) != 0) // relative, on disk
      return 5;
    close(fd);
    return 0;
  }));

  std::this_thread::sleep_for(1s); // let anything late arrive
  auto evs = col->of_pid(static_cast<uint32_t>(d.child.pid));
  ASSERT_EQ(evs.size(), 1u) << show(evs);
  expect_exit_event(evs[0], d.child, "kt-disk");

  // The disk rename matched the tmpfs file's leaf name in the kernel; that
  // must not hide the tmpfs file's own unlink afterwards.
  Traced u;
  ASSERT_NO_FATAL_FAILURE(trace(*col, u, "kt-disk-after", [&](Facts &) {
    return unlink(tracked.path.c_str()) == 0 ? 0 : 1;
  }));
  Event ul;
  ASSERT_TRUE(one(u.evs, EventType::unlink, ul));
  expect_unlink_ok(ul, u, tracked.path, kdev_of(shm_st.st_dev), shm_st.st_ino);
  EXPECT_EQ(ul.path, tracked.path);
}

// 5. memfd_create, then a resize while empty and one after a write.
TEST(TmpfsEvents, MemfdCreateAndResize) {
  SHMBPF_COLLECTOR(col);
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-memfd", [&](Facts &f) {
    int fd = noted(memfd_create("kt-memfd", MFD_CLOEXEC), f.f[0]);
    if (fd < 0)
      return 1;
    if (ftruncate(fd, 65536) != 0 || !note_file(fd, f.f[1]))
      return 2;
    char page[4096] = {1};
    if (write(fd, page, sizeof(page)) != static_cast<ssize_t>(sizeof(page)))
      return 3;
    if (ftruncate(fd, 8192) != 0 || !note_file(fd, f.f[2]))
      return 4;
    return 0;
  }));

  Event m;
  std::vector<Event> resizes;
  ASSERT_TRUE(one(t.evs, EventType::memfd_create, m));
  ASSERT_TRUE(take(t.evs, 2, EventType::resize, resizes));
  EXPECT_TRUE(has_n(t.evs, 0, EventType::create));
  EXPECT_TRUE(has_n(t.evs, 0, EventType::open));

  expect_file_ok(m, t, t.facts->f[0], t.facts->f[0].fd);
  EXPECT_EQ(m.kind, Kind::memfd);
  EXPECT_EQ(m.origin, Origin::memfd_create);
  EXPECT_EQ(m.flags, static_cast<uint32_t>(MFD_CLOEXEC));
  EXPECT_EQ(m.mode, 0u);
  EXPECT_EQ(m.size, 0u);
  EXPECT_EQ(m.bytes, 0u);
  expect_named(m, "kt-memfd", "memfd:kt-memfd", ""); // a memfd has no full path
  EXPECT_FALSE(m.is_new);

  for (int i = 0; i < 2; i++) {
    const Event &rs = resizes[i];
    const FileFacts &ff = t.facts->f[i + 1];
    expect_file_ok(rs, t, ff, 0);
    EXPECT_EQ(rs.kind, Kind::memfd);
    EXPECT_EQ(rs.origin, Origin::ftruncate);
    EXPECT_EQ(rs.ino, m.ino);
    EXPECT_EQ(rs.mode, ff.mode);
    EXPECT_EQ(rs.flags, 0u);
    expect_named(rs, "", "memfd:kt-memfd", "");
  }
  EXPECT_EQ(resizes[0].arg_size, 65536u);
  EXPECT_EQ(resizes[0].size, 65536u);
  EXPECT_EQ(resizes[0].bytes, 0u);
  EXPECT_EQ(resizes[1].arg_size, 8192u);
  EXPECT_EQ(resizes[1].size, 8192u);
  EXPECT_EQ(resizes[1].bytes, 4096u);
}

// 6. A full tmpfs: a sparse ftruncate fits, a fallocate of the same size
// does not, and the failure is reported with its errno.
TEST(TmpfsEvents, FallocateEnospcOnFullTmpfs) {
  TmpfsMount tmpfs;
  SHMBPF_COLLECTOR(col);
  ASSERT_TRUE(tmpfs.mount("size=64k"));
  const TestFile file("kt-full", tmpfs.dir());

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-enospc", [&](Facts &f) {
    int fd = noted(open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    if (ftruncate(fd, kMiB) != 0 || !note_file(fd, f.f[1]))
      return 2;
    if (fallocate(fd, 0, 0, kMiB) == 0)
      return 3;
    f.err = errno;
    if (!note_file(fd, f.f[2]))
      return 4;
    close(fd);
    return 0;
  }));
  EXPECT_EQ(t.facts->err, ENOSPC);

  std::vector<Event> resizes;
  ASSERT_TRUE(take(t.evs, 2, EventType::resize, resizes));
  ASSERT_TRUE(has_n(t.evs, 1, EventType::create));

  const Event &ok = resizes[0];
  expect_file_ok(ok, t, t.facts->f[1], 0);
  EXPECT_EQ(ok.origin, Origin::ftruncate);
  EXPECT_EQ(ok.arg_size, kMiB);
  EXPECT_EQ(ok.size, kMiB);
  EXPECT_EQ(ok.bytes, 0u);
  EXPECT_EQ(ok.full_path, file.path);

  const Event &bad = resizes[1];
  expect_header(bad, t);
  expect_file(bad, t.facts->f[2]);
  EXPECT_EQ(bad.err, ENOSPC) << show(bad);
  EXPECT_EQ(bad.ret, -ENOSPC) << show(bad);
  EXPECT_EQ(bad.kind, Kind::tmpfs);
  EXPECT_EQ(bad.origin, Origin::fallocate);
  EXPECT_EQ(bad.flags, 0u);
  EXPECT_EQ(bad.arg_size, kMiB);
  EXPECT_EQ(bad.size, kMiB); // from the ftruncate
  EXPECT_EQ(bad.bytes, 0u);  // nothing kept
  EXPECT_EQ(bad.mode, t.facts->f[2].mode);
  EXPECT_EQ(bad.name, file.name);
  EXPECT_EQ(bad.full_path, file.path);
}

// 7. A renamed file keeps being followed under its new name.
TEST(TmpfsEvents, RenameThenUnlinkNewName) {
  const TestFile a("a"), b("b");
  const std::string &from = a.path, &to = b.path;
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-rename", [&](Facts &f) {
    int fd = noted(open(from.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    if (rename(from.c_str(), to.c_str()) != 0 || !note_file(fd, f.f[1]))
      return 2;
    if (unlink(to.c_str()) != 0)
      return 3;
    close(fd);
    return 0;
  }));
  const FileFacts &ff = t.facts->f[0];
  EXPECT_EQ(t.facts->f[1].ino, ff.ino);

  Event cr, rn, ul;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(one(t.evs, EventType::rename, rn));
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));
  EXPECT_EQ(t.evs.size(), 4u) << show(t.evs);
  expect_file(cr, ff);
  EXPECT_EQ(cr.full_path, from);

  expect_header(rn, t);
  expect_ok(rn, 0);
  EXPECT_EQ(rn.kind, Kind::tmpfs);
  EXPECT_EQ(rn.origin, Origin::rename);
  EXPECT_EQ(rn.path, from);
  EXPECT_EQ(rn.newpath, to);
  EXPECT_EQ(rn.full_path, from);
  EXPECT_EQ(rn.dev, ff.dev);
  EXPECT_EQ(rn.ino, ff.ino);
  EXPECT_EQ(rn.dirfd, AT_FDCWD);
  EXPECT_EQ(rn.newdirfd, AT_FDCWD);
  EXPECT_EQ(rn.flags, 0u);
  EXPECT_TRUE(rn.absolute);

  expect_unlink_ok(ul, t, to, ff.dev, ff.ino);
  EXPECT_EQ(ul.kind, Kind::tmpfs);
  EXPECT_EQ(ul.origin, Origin::unlink);
  EXPECT_EQ(ul.path, to);
  EXPECT_EQ(ul.newpath, "");
  EXPECT_TRUE(ul.absolute);
  EXPECT_LT(rn.ts_ns, ul.ts_ns);
}

// 8. A bare name relative to a directory fd on /dev/shm.
TEST(TmpfsEvents, UnlinkatWithDirfd) {
  const TestFile file("kt-at");
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-unlinkat", [&](Facts &f) {
    int dfd = noted(open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC), f.f[1]);
    if (dfd < 0)
      return 1;
    int fd =
        noted(openat(dfd, file.leaf.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600), f.f[0]);
    if (fd < 0)
      return 2;
    if (unlinkat(dfd, file.leaf.c_str(), 0) != 0)
      return 3;
    close(fd);
    close(dfd);
    return 0;
  }));
  const FileFacts &ff = t.facts->f[0];
  const FileFacts &dir = t.facts->f[1];

  Event cr, ul;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));
  EXPECT_EQ(t.evs.size(), 3u) << show(t.evs); // no event for the directory

  expect_file_ok(cr, t, ff, ff.fd);
  EXPECT_TRUE(cr.is_new);
  expect_named(cr, file.leaf, file.name, file.path);
  EXPECT_EQ(cr.flags, static_cast<uint32_t>(O_CREAT | O_EXCL | O_CLOEXEC | kOpenFlags));

  expect_unlink_ok(ul, t, file.path, ff.dev, ff.ino);
  EXPECT_EQ(ul.kind, Kind::tmpfs);
  EXPECT_EQ(ul.origin, Origin::unlinkat);
  EXPECT_EQ(ul.path, file.leaf);
  EXPECT_EQ(ul.dirfd, dir.fd);
  EXPECT_EQ(ul.flags, 0u);
  EXPECT_FALSE(ul.absolute);
  EXPECT_EQ(ul.start_dev, dir.dev);
  EXPECT_EQ(ul.start_ino, dir.ino);
  EXPECT_EQ(ul.start_mnt_id, dir.mnt_id);
  EXPECT_EQ(ul.start_dir, "/");
}

// 9. Terminal escapes and a newline in a name reach the model unaltered
// (only the views escape them).
TEST(TmpfsEvents, ControlCharactersKeptRaw) {
  const TestFile file("kt\x1b[2J\nx");
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-escape", [&](Facts &f) {
    int fd = noted(open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    if (unlink(file.path.c_str()) != 0)
      return 2;
    close(fd);
    return 0;
  }));

  Event cr, ul;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));

  expect_file_ok(cr, t, t.facts->f[0], t.facts->f[0].fd);
  expect_named(cr, file.path, file.name, file.path);
  EXPECT_EQ(show(cr).find('\n'), std::string::npos); // while the view escapes

  expect_header(ul, t);
  EXPECT_EQ(ul.path, file.path);
  EXPECT_EQ(ul.full_path, file.path);
  EXPECT_EQ(ul.ino, t.facts->f[0].ino);
}

// 10. A file that predates the session is known from the start-up scan.
TEST(TmpfsEvents, PreexistingFileOpenAndUnlink) {
  const TestFile file("kt-pre");
  {
    int fd = open(file.path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << strerror(errno);
    char page[4096] = {1};
    ASSERT_EQ(write(fd, page, sizeof(page)), static_cast<ssize_t>(sizeof(page)));
    close(fd);
  }
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-preexist", [&](Facts &f) {
    int fd = noted(open(file.path.c_str(), O_RDWR), f.f[0]);
    if (fd < 0)
      return 1;
    if (unlink(file.path.c_str()) != 0)
      return 2;
    close(fd);
    return 0;
  }));
  const FileFacts &ff = t.facts->f[0];

  Event op, ul;
  ASSERT_TRUE(one(t.evs, EventType::open, op));
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));
  EXPECT_EQ(t.evs.size(), 3u) << show(t.evs);

  expect_openat_ok(op, t, ff, /*is_new=*/false);
  EXPECT_EQ(op.flags, static_cast<uint32_t>(kOpenFlags));
  EXPECT_EQ(op.size, 4096u);
  EXPECT_EQ(op.bytes, 4096u);
  expect_named(op, file.path, file.name, file.path);

  expect_unlink_ok(ul, t, file.path, ff.dev, ff.ino);
  EXPECT_EQ(ul.origin, Origin::unlink);
  EXPECT_EQ(ul.path, file.path);

  // Its one page goes when the child's close drops the last reference.
  expect_freed_unlinked(*col, ff, 4096, file.path, ul.ts_ns);
}

// 11. Two tracked tmpfs files share a leaf name: the kernel keeps one hint
// per name, so the first unlink carries the other file's inode. Userspace
// names the right inode, and the second unlink is still seen.
TEST(TmpfsEvents, SameLeafNameOnTwoTmpfsMounts) {
  TmpfsMount tmpfs;
  SHMBPF_COLLECTOR(col);
  ASSERT_TRUE(tmpfs.mount("size=1m"));
  const TestFile first("kt-dup"), second("kt-dup", tmpfs.dir()); // one leaf name

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-dup", [&](Facts &f) {
    if (noted(open(first.path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600), f.f[0]) < 0)
      return 1;
    if (noted(open(second.path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600), f.f[1]) < 0)
      return 2;
    if (unlink(first.path.c_str()) != 0) // the kernel's hint is the second file
      return 3;
    return 0;
  }));
  // Only once the first unlink has been handled (trace waited for the
  // child's exit) may the second one come.
  Traced d;
  ASSERT_NO_FATAL_FAILURE(trace(*col, d, "kt-dup-2",
                                [&](Facts &) { return unlink(second.path.c_str()) == 0 ? 0 : 1; }));

  ASSERT_TRUE(has_n(t.evs, 2, EventType::create));
  Event u1;
  ASSERT_TRUE(one(t.evs, EventType::unlink, u1));
  expect_header(u1, t);
  EXPECT_EQ(u1.full_path, first.path);
  EXPECT_EQ(u1.dev, t.facts->f[0].dev);
  EXPECT_EQ(u1.ino, t.facts->f[0].ino);

  Event u2;
  ASSERT_TRUE(one(d.evs, EventType::unlink, u2)) << "the second file's unlink was lost";
  EXPECT_EQ(u2.comm, "kt-dup-2");
  EXPECT_EQ(u2.path, second.path);
  EXPECT_EQ(u2.full_path, second.path);
  EXPECT_EQ(u2.dev, t.facts->f[1].dev);
  EXPECT_EQ(u2.ino, t.facts->f[1].ino);
}

// 12. The kernel's maps are seeded in batches from a listing made before
// the programs are attached. Files that change between that listing and
// attach are caught by the listing after attach: a file created there, one
// renamed, and one replaced by a new file of the same name are all followed,
// and their unlinks name the right inodes. So is one of many files that
// were there all along.
TEST(TmpfsEvents, ChangesBetweenSeedAndAttach) {
  TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=4m,nr_inodes=10000"));
  const std::string &dir = tmpfs.dir();
  const std::string kept = dir + "/kt-kept", renamed = dir + "/kt-renamed",
                    moved = dir + "/kt-moved", replaced = dir + "/kt-replaced",
                    created = dir + "/kt-created";
  auto make = [](const std::string &p) {
    int fd = open(p.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    return fd >= 0 && close(fd) == 0;
  };
  ASSERT_TRUE(make(renamed));
  ASSERT_TRUE(make(replaced));
  for (int i = 0; i < 3000; ++i)
    ASSERT_TRUE(make(dir + "/many-" + std::to_string(i)));
  ASSERT_TRUE(make(kept));

  ProbeOptions opts;
  bool changed = false;
  opts.before_attach = [&] {
    changed = rename(renamed.c_str(), moved.c_str()) == 0 && unlink(replaced.c_str()) == 0 &&
              make(replaced) && make(created);
  };
  SHMBPF_COLLECTOR(col, opts);
  ASSERT_TRUE(changed);

  // The replaced file first, alone and never opened: an open would teach
  // userspace its inode, and the unlink must name it from the kernel's map.
  Traced r;
  ASSERT_NO_FATAL_FAILURE(trace(*col, r, "kt-gap-r", [&](Facts &f) {
    struct stat st {};
    if (stat(replaced.c_str(), &st) != 0)
      return 1;
    f.f[0].dev = kdev_of(st.st_dev);
    f.f[0].ino = st.st_ino;
    return unlink(replaced.c_str()) == 0 ? 0 : 2;
  }));
  Event rul;
  ASSERT_TRUE(one(r.evs, EventType::unlink, rul));
  expect_header(rul, r);
  EXPECT_EQ(rul.full_path, replaced);
  EXPECT_EQ(rul.dev, r.facts->f[0].dev);
  EXPECT_EQ(rul.ino, r.facts->f[0].ino) << "the name still pointed at the file replaced";

  const std::vector<std::string> paths = {kept, moved, created};
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-gap", [&](Facts &f) {
    for (size_t i = 0; i < paths.size(); ++i) {
      if (noted(open(paths[i].c_str(), O_RDWR), f.f[i]) < 0)
        return static_cast<int>(1 + i);
    }
    for (size_t i = 0; i < paths.size(); ++i)
      if (unlink(paths[i].c_str()) != 0)
        return static_cast<int>(10 + i);
    return 0;
  }));

  std::vector<Event> opens, unlinks;
  ASSERT_TRUE(take(t.evs, paths.size(), EventType::open, opens));
  ASSERT_TRUE(take(t.evs, paths.size(), EventType::unlink, unlinks));
  for (size_t i = 0; i < paths.size(); ++i) {
    SCOPED_TRACE(paths[i]);
    expect_header(opens[i], t);
    expect_file(opens[i], t.facts->f[i]);
    EXPECT_EQ(opens[i].full_path, paths[i]);
    expect_unlink_ok(unlinks[i], t, paths[i], t.facts->f[i].dev, t.facts->f[i].ino);
  }
}

// 13. A file whose creation shmbpf never saw (mknod makes no open, so no
// create event and no name entry) is still reported when it is opened:
// every open of a regular tmpfs file is, not only of files seen before.
TEST(TmpfsEvents, OpenOfAFileMadeByMknod) {
  const TestFile file("kt-mknod");
  SHMBPF_COLLECTOR(col);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-mknod", [&](Facts &f) {
    if (mknod(file.path.c_str(), S_IFREG | 0600, 0) != 0)
      return 1;
    int fd = noted(open(file.path.c_str(), O_RDWR), f.f[0]);
    if (fd < 0)
      return 2;
    close(fd);
    return 0;
  }));

  Event op;
  ASSERT_TRUE(one(t.evs, EventType::open, op));
  EXPECT_TRUE(has_n(t.evs, 0, EventType::create));
  expect_openat_ok(op, t, t.facts->f[0], /*is_new=*/false);
  EXPECT_EQ(op.path, file.path);
  EXPECT_EQ(op.full_path, file.path);
}

// 14. The name map is sized by userspace; once full, creates are still
// reported and the names that did not fit are counted, not silently lost.
TEST(TmpfsEvents, FullNameMapIsCounted) {
  ProbeOptions opts;
  opts.name_capacity = 64;
  SHMBPF_COLLECTOR(col, opts);
  const Probe &probe = col->session().probe();
  EXPECT_EQ(probe.name_capacity(), 64u);
  const uint64_t full_before = probe.track_full();

  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/" + uniq("kt-names")));
  constexpr int kFiles = 200;
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-names", [&](Facts &) {
    for (int i = 0; i < kFiles; ++i) {
      std::string p = scratch.file(i);
      int fd = open(p.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      if (fd < 0)
        return 1;
      close(fd);
    }
    return 0;
  }));
  EXPECT_TRUE(has_n(t.evs, kFiles, EventType::create));
  EXPECT_LE(probe.name_count(), 64u);
  EXPECT_GE(probe.track_full() - full_before, static_cast<uint64_t>(kFiles - 64));
}

// 15. A create whose record was lost still has its name followed, so its
// unlink is reported: the model learns the file is gone without a rescan.
TEST(TmpfsEvents, UnlinkSeenAfterItsCreateWasLost) {
  ProbeOptions opts;
  opts.ring_buffer_bytes = 16 << 10; // nobody reads during the burst
  SHMBPF_SESSION(session, opts);
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/" + uniq("kt-lostcreate")));
  constexpr int kFiles = 500;
  std::vector<std::string> paths;
  for (int i = 0; i < kFiles; ++i)
    paths.push_back(scratch.file(i));
  Child c = run_child("kt-burst", [&] {
    for (const auto &p : paths) {
      int fd = open(p.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      if (fd < 0)
        return 1;
      close(fd);
    }
    return 0;
  });
  ASSERT_NO_FATAL_FAILURE(expect_exited_ok(c));
  size_t creates = 0;
  session->drain([&](Event &e) {
    if (e.type == EventType::create && e.pid == uint32_t(c.pid))
      ++creates;
  });
  ASSERT_LT(creates, static_cast<size_t>(kFiles)) << "the burst was meant to overflow the ring";

  // Now one unlink at a time, each drained before the next: none is
  // missing unless the ring overflowed again meanwhile (other processes'
  // records can fill 16 KiB between two drains on a busy machine).
  size_t unlinks = 0, missed = 0, lost_steps = 0;
  for (const auto &p : paths) {
    const uint64_t lost_before = session->probe().lost();
    ASSERT_EQ(unlink(p.c_str()), 0) << p;
    bool seen = false;
    session->drain([&](Event &e) {
      if (e.type == EventType::unlink && e.full_path == p)
        seen = true;
    });
    if (seen)
      ++unlinks;
    else if (session->probe().lost() != lost_before)
      ++lost_steps;
    else
      ++missed;
  }
  EXPECT_EQ(missed, 0u) << creates << " creates were delivered";
  EXPECT_GT(unlinks, static_cast<size_t>(kFiles) / 2) << lost_steps << " steps lost records";
}

} // namespace
} // namespace shmbpf::test
