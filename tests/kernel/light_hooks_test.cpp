// Kernel tests of the light hook set (--hooks light): the real programs on
// the inode timestamp tracepoints (v6.13) or, on the VM layer's older
// kernels, on shmem's calls, no syscall hook, and real calls by a named
// child. Each event is checked against what the child saw; what the
// light set cannot know (the fd of a create, its mount id) is checked to
// be absent, not guessed.
#include "kernel/file_events.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

ProbeOptions light() {
  ProbeOptions o;
  o.hooks = HookSet::light;
  return o;
}

// A light set that cannot load fails these like any other load under
// CI=true: every kernel the tests run on has one kind of its hooks.
#define SHMBPF_LIGHT_COLLECTOR(var) SHMBPF_COLLECTOR(var, light())

// The light hooks' create of the file the child described in ff: the
// inode exact, the path as passed made absolute in userspace, no fd.
void expect_light_create(const Event &e, const Traced &t, const FileFacts &ff, const TestFile &file,
                         Origin origin) {
  SCOPED_TRACE(show(e));
  expect_header(e, t);
  expect_ok(e, 0);
  EXPECT_EQ(e.kind, Kind::tmpfs);
  EXPECT_EQ(e.origin, origin);
  EXPECT_TRUE(e.is_new);
  EXPECT_TRUE(e.by_path);
  EXPECT_EQ(e.dev, ff.dev);
  EXPECT_EQ(e.ino, ff.ino);
  EXPECT_EQ(e.mnt_id, ff.mnt_id); // found from the path's mount
  EXPECT_EQ(e.fd, -1);
  EXPECT_EQ(e.size, 0u);
  EXPECT_EQ(e.full_path, file.path);
  EXPECT_EQ(e.name, file.name);
}

TEST(LightHooks, CreateResizeUnlinkAndFreeOfAChild) {
  const TestFile file("kt-light");
  SHMBPF_LIGHT_COLLECTOR(col);
  ASSERT_EQ(col->session().probe().hook_set(), HookSet::light);

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-light", [&](Facts &f) {
    // On one CPU: its first resize then follows its create there.
    cpu_set_t one_cpu;
    CPU_ZERO(&one_cpu);
    CPU_SET(sched_getcpu(), &one_cpu);
    if (sched_setaffinity(0, sizeof(one_cpu), &one_cpu) != 0)
      return 7;
    int fd = noted(shm_open(file.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    if (ftruncate(fd, 2 * kMiB) != 0 || !note_file(fd, f.f[1]))
      return 2;
    if (ftruncate(fd, kMiB) != 0 || !note_file(fd, f.f[2]))
      return 2;
    auto *p = static_cast<volatile char *>(
        mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
      return 3;
    for (size_t off = 0; off < kMiB; off += 4096)
      p[off] = 1;
    // A write and a chmod change the ctime too: neither is an event.
    if (pwrite(fd, "x", 1, 0) != 1 || fchmod(fd, 0640) != 0)
      return 4;
    // Opening an existing file changes nothing the light hooks see.
    int again = shm_open(file.name.c_str(), O_RDWR, 0);
    if (again < 0)
      return 5;
    close(again);
    if (shm_unlink(file.name.c_str()) != 0)
      return 6;
    munmap(const_cast<char *>(p), kMiB);
    close(fd);
    return 0;
  }));
  const FileFacts &created = t.facts->f[0];

  Event cr, ul;
  std::vector<Event> rs;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(take(t.evs, 2, EventType::resize, rs)); // shmem_setattr's two ctimes, one record
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));
  EXPECT_TRUE(has_n(t.evs, 0, EventType::open));
  expect_light_create(cr, t, created, file, Origin::openat);
  EXPECT_EQ(cr.flags & (O_CREAT | O_EXCL), static_cast<uint32_t>(O_CREAT | O_EXCL));

  // An ftruncate names its fd: the file, its mount and path, as the full
  // set. The first after the create, on its CPU, is sent as the inode
  // alone (the create has the rest): the same fields, from the model.
  for (size_t i = 0; i < rs.size(); ++i) {
    SCOPED_TRACE(show(rs[i]));
    expect_file_ok(rs[i], t, t.facts->f[i + 1], 0);
    EXPECT_EQ(rs[i].origin, Origin::ftruncate);
    EXPECT_EQ(rs[i].size, (2 - i) * kMiB);
    EXPECT_EQ(rs[i].arg_size, (2 - i) * kMiB);
    EXPECT_EQ(rs[i].fd, created.fd);
    expect_named(rs[i], "", file.name, file.path);
    EXPECT_EQ(rs[i].create_sent, i == 0);
    EXPECT_EQ(rs[i].path_from_model, i == 0);
  }

  expect_unlink_ok(ul, t, file.path, created.dev, created.ino);
  EXPECT_TRUE(ul.exact_hint);
  EXPECT_EQ(ul.origin, libc_call(Origin::unlink));
  EXPECT_LT(cr.ts_ns, rs[0].ts_ns);
  EXPECT_LT(rs[1].ts_ns, ul.ts_ns);

  expect_freed_unlinked(*col, created, kMiB, file.path, ul.ts_ns);
}

// With the timestamp tracepoints, a record's time is the ctime the change
// gave the file, as fstat shows it, less realtime minus boot time: the
// stamp the kernel made for the change, no clock read of the program's
// own. Programs on functions (before v6.13) read the clock instead.
TEST(LightHooks, RecordsAreTimedByTheCtimeTheChangeGaveTheFile) {
  const TestFile file("kt-light-ctime");
  SHMBPF_LIGHT_COLLECTOR(col);
  const bool by_ctime = !col->session().probe().on_functions();

  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-light-ctime", [&](Facts &f) {
    int fd = noted(shm_open(file.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    if (ftruncate(fd, kMiB) != 0 || !note_file(fd, f.f[1]))
      return 2;
    // The fd keeps the unlinked file, and its unlink's ctime.
    if (shm_unlink(file.name.c_str()) != 0 || !note_file(fd, f.f[2]))
      return 3;
    close(fd);
    return 0;
  }));
  const int64_t off = boot_to_realtime_ns();

  Event cr, rs, ul;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(one(t.evs, EventType::resize, rs));
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));
  EXPECT_LE(cr.ts_ns, rs.ts_ns);
  EXPECT_LE(rs.ts_ns, ul.ts_ns);
  if (!by_ctime) {
    EXPECT_FALSE(cr.ts_from_ctime || rs.ts_from_ctime || ul.ts_from_ctime);
    return;
  }
  for (const Event *e : {&cr, &rs, &ul}) {
    SCOPED_TRACE(show(*e));
    EXPECT_TRUE(e->ts_from_ctime);
  }
  // Realtime minus boot time as the probe last took it and as taken here
  // differ by NTP's slew in between (at most 0.5 ms a second).
  constexpr int64_t kSlack = 1'000'000;
  const auto boot_of = [&](const FileFacts &ff) { return ff.ctime_ns - off; };
  const auto ts = [](const Event &e) { return static_cast<int64_t>(e.ts_ns); };
  EXPECT_NEAR(ts(cr), boot_of(t.facts->f[0]), kSlack);
  EXPECT_NEAR(ts(ul), boot_of(t.facts->f[2]), kSlack);
  // A truncate stamps the file twice, and the record is the first's: the
  // second may be a tick later.
  EXPECT_LE(ts(rs), boot_of(t.facts->f[1]) + kSlack);
  // Taken with one offset, the stamps' distance is the ctimes' exactly;
  // the probe may take it anew between records, a few microseconds off.
  EXPECT_NEAR(ts(ul) - ts(cr), t.facts->f[2].ctime_ns - t.facts->f[0].ctime_ns, 50'000);
}

TEST(LightHooks, MemfdCreateAndResize) {
  SHMBPF_LIGHT_COLLECTOR(col);
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-lmemfd", [&](Facts &f) {
    int fd = noted(memfd_create("kt-lmemfd", MFD_CLOEXEC), f.f[0]);
    if (fd < 0)
      return 1;
    if (ftruncate(fd, 65536) != 0 || !note_file(fd, f.f[1]))
      return 2;
    return 0;
  }));

  Event m, rs;
  ASSERT_TRUE(one(t.evs, EventType::memfd_create, m));
  ASSERT_TRUE(one(t.evs, EventType::resize, rs));
  SCOPED_TRACE(show(m));
  expect_header(m, t);
  expect_ok(m, 0);
  EXPECT_EQ(m.kind, Kind::memfd);
  EXPECT_EQ(m.dev, t.facts->f[0].dev);
  EXPECT_EQ(m.ino, t.facts->f[0].ino);
  EXPECT_EQ(m.fd, -1); // made before its fd
  EXPECT_EQ(m.flags, static_cast<uint32_t>(MFD_CLOEXEC));
  expect_named(m, "kt-lmemfd", "memfd:kt-lmemfd", "");

  expect_file_ok(rs, t, t.facts->f[1], 0);
  EXPECT_EQ(rs.kind, Kind::memfd);
  EXPECT_EQ(rs.size, 65536u);
  expect_named(rs, "", "memfd:kt-lmemfd", "");
}

// A relative create from a directory fd, truncate(2) by path and an
// open's O_TRUNC: the inode alone, named by what the model knows of it.
TEST(LightHooks, RelativeCreateTruncateAndOTrunc) {
  const TestFile file("kt-lrel");
  SHMBPF_LIGHT_COLLECTOR(col);
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-lrel", [&](Facts &f) {
    int dir = open("/dev/shm", O_RDONLY | O_DIRECTORY);
    int fd = noted(openat(dir, file.leaf.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    if (truncate(file.path.c_str(), 8192) != 0 || !note_file(fd, f.f[1]))
      return 2;
    int again = openat(dir, file.leaf.c_str(), O_RDWR | O_TRUNC);
    if (again < 0 || !note_file(fd, f.f[2]))
      return 3;
    close(again);
    if (unlinkat(dir, file.leaf.c_str(), 0) != 0)
      return 4;
    close(fd);
    close(dir);
    return 0;
  }));

  Event cr, ul;
  std::vector<Event> resizes;
  ASSERT_TRUE(one(t.evs, EventType::create, cr));
  ASSERT_TRUE(take(t.evs, 2, EventType::resize, resizes));
  ASSERT_TRUE(one(t.evs, EventType::unlink, ul));
  expect_light_create(cr, t, t.facts->f[0], file, Origin::openat);
  EXPECT_EQ(cr.path, file.leaf);
  EXPECT_FALSE(cr.absolute);

  const std::vector<std::pair<Origin, uint64_t>> want = {{Origin::truncate, 8192},
                                                         {Origin::openat, 0}};
  for (size_t i = 0; i < resizes.size(); ++i) {
    const Event &rs = resizes[i];
    SCOPED_TRACE(show(rs));
    expect_header(rs, t);
    EXPECT_EQ(rs.origin, want[i].first);
    EXPECT_EQ(rs.size, want[i].second);
    EXPECT_EQ(rs.size, t.facts->f[i + 1].size);
    EXPECT_EQ(rs.dev, t.facts->f[0].dev);
    EXPECT_EQ(rs.ino, t.facts->f[0].ino);
    EXPECT_EQ(rs.fd, -1);               // no fd to name
    EXPECT_EQ(rs.mnt_id, 0u);           // nor its mount
    EXPECT_EQ(rs.name, "");             // nor its name there
    EXPECT_EQ(rs.full_path, file.path); // the path the create gave it
    EXPECT_TRUE(rs.path_from_model);
    EXPECT_FALSE(rs.create_sent);
  }
  expect_unlink_ok(ul, t, file.path, t.facts->f[0].dev, t.facts->f[0].ino);
  EXPECT_EQ(ul.origin, Origin::unlinkat);
}

// A rename over an existing file changes both files' ctimes: the event is
// the renamed file's; a link and the unlink of each name follow it.
TEST(LightHooks, RenameOverAFileLinkAndUnlinks) {
  const TestFile a("kt-la"), b("kt-lb"), c("kt-lc");
  SHMBPF_LIGHT_COLLECTOR(col);
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-lrename", [&](Facts &f) {
    int fa = noted(open(a.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    int fb = noted(open(b.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[1]);
    if (fa < 0 || fb < 0)
      return 1;
    if (rename(a.path.c_str(), b.path.c_str()) != 0)
      return 2;
    if (link(b.path.c_str(), c.path.c_str()) != 0)
      return 3;
    if (unlink(b.path.c_str()) != 0 || unlink(c.path.c_str()) != 0)
      return 4;
    close(fa);
    close(fb);
    return 0;
  }));
  const FileFacts &fa = t.facts->f[0];

  Event rn, ln;
  std::vector<Event> unlinks;
  ASSERT_TRUE(has_n(t.evs, 2, EventType::create));
  ASSERT_TRUE(one(t.evs, EventType::rename, rn));
  ASSERT_TRUE(one(t.evs, EventType::link, ln));
  ASSERT_TRUE(take(t.evs, 2, EventType::unlink, unlinks));
  for (const Event *e : {&rn, &ln, &unlinks[0], &unlinks[1]}) {
    SCOPED_TRACE(show(*e));
    expect_header(*e, t);
    EXPECT_EQ(e->dev, fa.dev);
    EXPECT_EQ(e->ino, fa.ino); // never the file the rename replaced
    EXPECT_TRUE(e->exact_hint);
  }
  EXPECT_EQ(rn.full_path, a.path);
  EXPECT_EQ(rn.full_newpath, b.path);
  EXPECT_EQ(ln.full_path, b.path);
  EXPECT_EQ(ln.full_newpath, c.path);
  EXPECT_EQ(unlinks[0].full_path, b.path);
  EXPECT_EQ(unlinks[1].full_path, c.path);
}

// Closed files: an unlink or a rename over one evicts it within the call,
// and its pages' truncate changes its ctime once more; one event each.
TEST(LightHooks, UnlinkAndRenameOverClosedFilesAreOneEventEach) {
  const TestFile a("kt-lca"), b("kt-lcb"), c("kt-lcc");
  SHMBPF_LIGHT_COLLECTOR(col);
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-lclosed", [&](Facts &f) {
    for (const TestFile *file : {&a, &b, &c}) {
      int fd =
          noted(open(file->path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[file == &a   ? 0
                                                                               : file == &b ? 1
                                                                                            : 2]);
      if (fd < 0 || pwrite(fd, "x", 1, 0) != 1)
        return 1;
      close(fd);
    }
    if (unlink(a.path.c_str()) != 0 || rename(b.path.c_str(), c.path.c_str()) != 0 ||
        unlink(c.path.c_str()) != 0)
      return 2;
    return 0;
  }));
  std::vector<Event> unlinks;
  Event rn;
  ASSERT_TRUE(take(t.evs, 2, EventType::unlink, unlinks));
  ASSERT_TRUE(one(t.evs, EventType::rename, rn));
  EXPECT_EQ(unlinks[0].ino, t.facts->f[0].ino);
  EXPECT_EQ(rn.ino, t.facts->f[1].ino); // not c's, which it replaced
  EXPECT_EQ(unlinks[1].ino, t.facts->f[1].ino);
}

// A file with two names renamed by its older one: its newest dentry comes
// first in the inode's list, and the rename is still its own.
TEST(LightHooks, RenameOfAFileWithTwoNames) {
  const TestFile a("kt-l2a"), b("kt-l2b"), c("kt-l2c");
  SHMBPF_LIGHT_COLLECTOR(col);
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-l2names", [&](Facts &f) {
    int fd = noted(open(a.path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0 || link(a.path.c_str(), b.path.c_str()) != 0)
      return 1;
    if (rename(a.path.c_str(), c.path.c_str()) != 0)
      return 2;
    unlink(b.path.c_str());
    unlink(c.path.c_str());
    close(fd);
    return 0;
  }));
  Event rn;
  ASSERT_TRUE(one(t.evs, EventType::rename, rn));
  EXPECT_EQ(rn.ino, t.facts->f[0].ino) << show(rn);
  EXPECT_EQ(rn.full_path, a.path);
  EXPECT_EQ(rn.full_newpath, c.path);
  EXPECT_TRUE(has_n(t.evs, 2, EventType::unlink));
}

// This process's BPF map named name (its collector's), or -1.
int own_map_fd(const std::string &name) {
  for (const auto &entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path(), ec).string() != "anon_inode:bpf-map")
      continue;
    const int fd = std::stoi(entry.path().filename().string());
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && name == info.name)
      return fd;
  }
  return -1;
}

// Sets every CPU's claim (cpu_claimed, bpf/shmbpf.bpf.h) to v.
bool claim_every_cpu(int fd, uint32_t v) {
  const int n = libbpf_num_possible_cpus();
  if (n <= 0)
    return false;
  // A per-CPU map's values come 8 bytes apart.
  std::vector<uint64_t> values(static_cast<size_t>(n), v);
  const uint32_t zero = 0;
  return bpf_map_update_elem(fd, &zero, values.data(), BPF_ANY) == 0;
}

// Programs on functions (the light set before v6.13) can be preempted on a
// fully preemptible kernel; one that finds its CPU claimed by another
// leaves the CPU's buffers alone and counts its record lost, and records
// flow again once the claim is given back. A claim is set here by hand,
// on every CPU, as a preempted program would hold it.
TEST(LightHooks, AProgramOnAFunctionThatFindsItsCpuClaimedCountsItsRecordLost) {
  const TestFile held("kt-lclaim"), free_again("kt-lclaim2");
  SHMBPF_LIGHT_COLLECTOR(col);
  const Probe &probe = col->session().probe();
  if (!probe.on_functions())
    GTEST_SKIP() << "the light set is on inode timestamp tracepoints here, which cannot be "
                    "preempted: no program claims its CPU (the VM layer's kernels test this)";
  const int claims = own_map_fd("cpu_claimed");
  ASSERT_GE(claims, 0) << "no cpu_claimed map in this process";
  ASSERT_TRUE(claim_every_cpu(claims, 1)) << strerror(errno);
  const uint64_t lost_before = probe.lost();
  Traced t;
  ASSERT_NO_FATAL_FAILURE(trace(*col, t, "kt-lclaim", [&](Facts &f) {
    int fd = noted(shm_open(held.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0)
      return 1;
    // Two pages, freed at the close: summed by no one while claimed.
    if (ftruncate(fd, 8192) != 0 || pwrite(fd, std::string(8192, 'c').data(), 8192, 0) != 8192 ||
        shm_unlink(held.name.c_str()) != 0)
      return 2;
    close(fd);
    return 0;
  }));
  const bool given_back = claim_every_cpu(claims, 0);
  ASSERT_TRUE(given_back) << strerror(errno);
  EXPECT_TRUE(has_n(t.evs, 0, EventType::create));
  EXPECT_TRUE(has_n(t.evs, 0, EventType::resize));
  EXPECT_TRUE(has_n(t.evs, 0, EventType::unlink));
  for (const Event &e : of_type(t.evs, EventType::free))
    EXPECT_NE(e.ino, t.facts->f[0].ino) << show(e);
  // create, resize, unlink and two pages' frees: counted, not silent.
  EXPECT_GE(probe.lost() - lost_before, 5u);

  Traced again;
  ASSERT_NO_FATAL_FAILURE(trace(*col, again, "kt-lclaim2", [&](Facts &f) {
    int fd = noted(shm_open(free_again.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600), f.f[0]);
    if (fd < 0 || shm_unlink(free_again.name.c_str()) != 0)
      return 1;
    close(fd);
    return 0;
  }));
  Event cr, ul;
  ASSERT_TRUE(one(again.evs, EventType::create, cr));
  ASSERT_TRUE(one(again.evs, EventType::unlink, ul));
  EXPECT_EQ(cr.full_path, free_again.path);
  EXPECT_EQ(cr.ino, again.facts->f[0].ino);
}

} // namespace
} // namespace shmbpf::test
