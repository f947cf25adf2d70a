// Kernel tests for tmpfs, /dev/shm and memfd events: a named child makes
// real syscalls, a real Session collects what the BPF programs report, and
// every field is checked against what the child saw itself (fstat, its
// fdinfo, its namespaces and cgroup).
#include "kernel/file_events.hpp"

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
  EXPECT_EQ(ul.origin, libc_call(Origin::unlink));
  EXPECT_EQ(ul.path, file.path);
  EXPECT_EQ(ul.dirfd, AT_FDCWD);
  EXPECT_TRUE(ul.absolute);
  EXPECT_EQ(ul.flags, 0u);
  EXPECT_LT(cr.ts_ns, rs.ts_ns);
  EXPECT_LT(rs.ts_ns, ul.ts_ns);
  // The full set's programs read the clock: no time is a file's ctime.
  EXPECT_FALSE(cr.ts_from_ctime || rs.ts_from_ctime || ul.ts_from_ctime);

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
  EXPECT_EQ(rn.origin, libc_call(Origin::rename));
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
  EXPECT_EQ(ul.origin, libc_call(Origin::unlink));
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
  EXPECT_EQ(ul.origin, libc_call(Origin::unlink));
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
  // child's exit) may the second one come: userspace has given the name
  // back to the file that still has it.
  EXPECT_TRUE(col->session().probe().tracks_name(second.leaf))
      << "the first unlink's hint was not given back";
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
  ASSERT_TRUE(one(d.evs, EventType::unlink, u2))
      << "the second file's unlink was lost; records lost: " << col->session().lost()
      << "; first child's events:" << show(t.evs);
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
