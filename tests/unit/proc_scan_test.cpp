#include "facts/dev.hpp"
#include "sources/namespaces.hpp"
#include "sources/proc_scan.hpp"
#include "sources/tmpfs_scan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shmbpf {
namespace {

TEST(ProcScanParse, StatCommWithParensAndSpaces) {
  auto r = parse_stat("1234 (a) (b c) S 77 1234 1234 0 -1 4194560 100 0 0 0\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ppid, 77u);
  EXPECT_EQ(r->comm, "a) (b c");
  EXPECT_EQ(r->state, 'S');
  EXPECT_FALSE(r->exited());

  auto plain = parse_stat("1 (systemd) S 0 1 1 0 -1");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->ppid, 0u);
  EXPECT_EQ(plain->comm, "systemd");

  // starttime is field 22: what tells a reused pid's process apart.
  auto full = parse_stat("77 (sh) S 1 77 77 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1 2\n");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->start_time, 987654u);
  EXPECT_EQ(plain->start_time, 0u); // too short: unknown

  auto zombie = parse_stat("4242 (python3) Z 1 4242 4242 0 -1");
  ASSERT_TRUE(zombie);
  EXPECT_TRUE(zombie->exited());

  EXPECT_FALSE(parse_stat("1 systemd S 0"));
  EXPECT_FALSE(parse_stat("1 (x) S"));
  EXPECT_FALSE(parse_stat("1 (x) SS 0"));
}

// A zombie has exited: scans leave it out, so a segment whose creator is a
// zombie is an orphan at once, not once the parent reaps it.
TEST(ProcScan, ZombieIsGone) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    _exit(0);
  // Not reaped yet: a zombie until waitpid below.
  for (int i = 0; i < 200; ++i) {
    std::string stat;
    if (FILE *f = std::fopen(("/proc/" + std::to_string(child) + "/stat").c_str(), "r")) {
      char buf[512];
      stat.assign(buf, std::fread(buf, 1, sizeof buf, f));
      std::fclose(f);
    }
    auto fields = parse_stat(stat);
    if (fields && fields->exited())
      break;
    usleep(5000);
  }
  EXPECT_FALSE(read_process(static_cast<uint32_t>(child)));
  EXPECT_TRUE(read_process(static_cast<uint32_t>(getpid())));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
}

TEST(ProcScanParse, CgroupV2PathFromHybrid) {
  const char *hybrid = "12:memory:/user.slice\n"
                       "11:cpu,cpuacct:/user.slice\n"
                       "1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n"
                       "0::/user.slice/user-1000.slice/session-2.scope\n";
  EXPECT_EQ(parse_cgroup_v2_path(hybrid), "/user.slice/user-1000.slice/session-2.scope");
  EXPECT_EQ(parse_cgroup_v2_path("0::/\n"), "/");
  EXPECT_FALSE(parse_cgroup_v2_path("4:memory:/docker/abc\n1:name=systemd:/docker/abc\n"));
}

TEST(ProcScanParse, MapsLines) {
  auto f = parse_maps_line(
      "7f0000000000-7f0000001000 rw-s 00000000 00:1a 4242                       /dev/shm/my file");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->start, 0x7f0000000000u);
  EXPECT_EQ(f->end, 0x7f0000001000u);
  EXPECT_EQ(f->dev, 26u);
  EXPECT_EQ(f->ino, 4242u);
  EXPECT_EQ(f->path, "/dev/shm/my file");
  EXPECT_FALSE(f->deleted);

  // A newline in a name is the one thing maps escapes.
  auto nl = parse_maps_line("7f01-7f02 rw-s 00000000 00:1a 98 /dev/shm/a\\012b");
  ASSERT_TRUE(nl);
  EXPECT_EQ(nl->path, "/dev/shm/a\nb");

  auto d = parse_maps_line("7f01-7f02 rw-s 00000000 00:1a 99 /dev/shm/x (deleted)");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->path, "/dev/shm/x");
  EXPECT_TRUE(d->deleted);

  auto mfd = parse_maps_line("7f01-7f02 rw-s 00000000 00:01 1025 /memfd:foo (deleted)");
  ASSERT_TRUE(mfd);
  EXPECT_EQ(mfd->path, "/memfd:foo");
  EXPECT_EQ(mfd->dev, 1u);
  EXPECT_TRUE(mfd->deleted);

  auto sysv = parse_maps_line("7f01-7f02 rw-s 00000000 00:01 32769 /SYSV00001234 (deleted)");
  ASSERT_TRUE(sysv);
  EXPECT_EQ(sysv->path, "/SYSV00001234");
  EXPECT_EQ(sysv->ino, 32769u);
  EXPECT_TRUE(sysv->deleted);

  auto anon = parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0 ");
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->ino, 0u);
  EXPECT_EQ(anon->path, "");
  auto heap = parse_maps_line("55aa0000-55ab0000 rw-p 00000000 00:00 0          [heap]");
  ASSERT_TRUE(heap);
  EXPECT_EQ(heap->path, "[heap]");

  // Major in the high bits, both halves hex.
  auto big = parse_maps_line("1000-2000 r--p 00000000 fd:1a 5 /lib/x.so");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->dev, (0xfdu << 20) | 0x1au);

  EXPECT_FALSE(parse_maps_line(""));
  EXPECT_FALSE(parse_maps_line("zzz rw-p 0 00:00 0"));
}

// Found by the maps fuzzer: a major or minor too wide for the kernel's
// dev_t folded into another device ("1001:b" read as 1:b).
TEST(ProcScanParse, MapsDeviceOutOfRange) {
  EXPECT_FALSE(parse_maps_line("c-f - 0 1001:b 1"));
  EXPECT_FALSE(parse_maps_line("1000-2000 rw-s 00000000 00:100000 5 /dev/shm/x"));
  auto widest = parse_maps_line("1000-2000 rw-s 00000000 fff:fffff 5 /dev/shm/x");
  ASSERT_TRUE(widest);
  EXPECT_EQ(dev_major(widest->dev), 0xfffu);
  EXPECT_EQ(dev_minor(widest->dev), 0xfffffu);
}

TEST(ProcScanParse, RealUidFromStatus) {
  const char *status =
      "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t900\n"
      "PPid:\t1\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n";
  EXPECT_EQ(parse_real_uid(status), 1000u);
  // A setuid-root program run by uid 1000: the real uid, not the effective.
  EXPECT_EQ(parse_real_uid("Uid:\t1000\t0\t0\t0\n"), 1000u);
  EXPECT_FALSE(parse_real_uid("Name:\tx\nGid:\t0\t0\t0\t0\n"));
  EXPECT_FALSE(parse_real_uid("Uid:\t-1\t0\t0\t0\n"));
  EXPECT_FALSE(parse_real_uid("Uid:\t4294967296\t0\t0\t0\n"));
  // Only at the start of a line.
  EXPECT_FALSE(parse_real_uid("Name:\tUid: 5\n"));
  EXPECT_FALSE(parse_real_uid(""));
}

TEST(ProcScanParse, SysvipcShm) {
  const char *text =
      "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  "
      "cgid      atime      dtime      ctime                   rss                  swap\n"
      "      4660          5   600               1048576  1200  1300      2  1001  1002  1003  "
      "1004 1700000000 1700000001 1700000002                  8192                     0\n"
      "-559038737      32769  1666                  4096  1400     0      1     0     0     0     "
      "0          0          0 1700000003                     0                     0\n"
      // An old kernel's line cut short after nattch: no owner to tell.
      "         7          9   644                  4096     1     2      0\n"
      "garbage line\n";
  auto v = parse_sysvipc_shm(text);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].key, 0x1234u);
  EXPECT_EQ(v[0].shmid, 5);
  EXPECT_EQ(v[0].size, 1048576u);
  EXPECT_EQ(v[0].cpid, 1200u);
  EXPECT_EQ(v[0].lpid, 1300u);
  EXPECT_EQ(v[0].nattch, 2u);
  EXPECT_EQ(v[0].mode, 0600u);
  EXPECT_EQ(v[0].uid, 1001u);  // column 8, not gid (9)
  EXPECT_EQ(v[0].cuid, 1003u); // column 10, not cgid (11)
  EXPECT_EQ(v[0].rss_bytes, 8192u);
  EXPECT_FALSE(v[0].removed);
  EXPECT_EQ(v[1].key, 0xdeadbeefu);
  EXPECT_EQ(v[1].shmid, 32769);
  EXPECT_EQ(v[1].size, 4096u);
  EXPECT_EQ(v[1].nattch, 1u);
  EXPECT_TRUE(v[1].removed);   // 1666 octal includes SHM_DEST
  EXPECT_EQ(v[1].mode, 0666u); // without it
  EXPECT_EQ(v[1].lpid, 0u);
  EXPECT_EQ(v[1].uid, 0u);
  EXPECT_EQ(v[2].shmid, 9);
  EXPECT_EQ(v[2].lpid, 2u);
  EXPECT_EQ(v[2].mode, 0644u);
  EXPECT_EQ(v[2].uid, 0u);
  EXPECT_EQ(v[2].cuid, 0u);
  EXPECT_EQ(v[2].ctime_s, 0);
  EXPECT_EQ(v[0].ctime_s, 1700000002); // what tells a reused shmid apart
  EXPECT_EQ(v[1].ctime_s, 1700000003);

  EXPECT_TRUE(parse_sysvipc_shm("").empty());
}

struct Fstat {
  uint32_t dev;
  uint64_t ino;
};

Fstat fstat_of(int fd) {
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  return {kernel_dev(st.st_dev), st.st_ino};
}

const HeldFile *find_held(const std::vector<HeldFile> &v, Fstat k) {
  for (const HeldFile &h : v)
    if (h.dev == k.dev && h.ino == k.ino)
      return &h;
  return nullptr;
}

TEST(ProcScanLive, HoldingsOfSelf) {
  struct statfs sfs {};
  if (::statfs("/dev/shm", &sfs) != 0 || static_cast<long>(sfs.f_type) != 0x01021994)
    GTEST_SKIP() << "/dev/shm is not tmpfs";
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::string a = "/dev/shm/ps-" + std::to_string(::getpid());
  const std::string b = a + "-unlinked";

  // a: open fd and a mapping.
  int fa = ::open(a.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fa, 0);
  ASSERT_EQ(::ftruncate(fa, page), 0);
  void *ma = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fa, 0);
  ASSERT_NE(ma, MAP_FAILED);
  Fstat ka = fstat_of(fa);

  // b: mapped only, then unlinked.
  int fb = ::open(b.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fb, 0);
  ASSERT_EQ(::ftruncate(fb, page), 0);
  void *mb = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fb, 0);
  ASSERT_NE(mb, MAP_FAILED);
  Fstat kb = fstat_of(fb);
  ::close(fb);
  ::unlink(b.c_str());

  // memfd: fd only.
  int fm = ::memfd_create("ps-test", MFD_CLOEXEC);
  ASSERT_GE(fm, 0);
  ASSERT_EQ(::ftruncate(fm, page), 0);
  Fstat km = fstat_of(fm);

  auto held = scan_holdings(static_cast<uint32_t>(::getpid()));
  // The same process, told by its start time; a pid whose process started
  // at another time (reused meanwhile) gives nothing.
  const auto self = read_process(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(self);
  EXPECT_EQ(scan_holdings(self->pid, self->start_time).size(), held.size());
  EXPECT_TRUE(scan_holdings(self->pid, self->start_time + 1).empty());

  const HeldFile *ha = find_held(held, ka);
  ASSERT_NE(ha, nullptr);
  EXPECT_TRUE(ha->via_fd);
  EXPECT_TRUE(ha->via_map);
  EXPECT_FALSE(ha->deleted);
  EXPECT_EQ(ha->path, a);

  const HeldFile *hb = find_held(held, kb);
  ASSERT_NE(hb, nullptr);
  EXPECT_FALSE(hb->via_fd);
  EXPECT_TRUE(hb->via_map);
  EXPECT_TRUE(hb->deleted);
  EXPECT_EQ(hb->path, b);

  const HeldFile *hm = find_held(held, km);
  ASSERT_NE(hm, nullptr);
  EXPECT_TRUE(hm->via_fd);
  EXPECT_FALSE(hm->via_map);
  EXPECT_TRUE(hm->deleted);
  EXPECT_EQ(hm->path, "/memfd:ps-test");
  EXPECT_EQ(hm->kind, HeldKind::memfd);
  EXPECT_EQ(ha->kind, HeldKind::tmpfs);
  EXPECT_EQ(hb->kind, HeldKind::tmpfs);

  // Nothing outside shared memory: every entry is unique by (dev, ino).
  for (size_t i = 0; i < held.size(); ++i)
    for (size_t j = i + 1; j < held.size(); ++j)
      EXPECT_FALSE(held[i].dev == held[j].dev && held[i].ino == held[j].ino);

  ::munmap(ma, page);
  ::munmap(mb, page);
  ::close(fa);
  ::close(fm);
  ::unlink(a.c_str());
}

// Names decide nothing: a linked file that is really named "... (deleted)"
// stays linked under its whole name, and files elsewhere named like memfds
// or SysV segments are not shared memory. Linked or not comes from the
// inode's link count, the kind from the filesystem it lives on.
TEST(ProcScanLive, HostileNamesDecideNothing) {
  struct statfs sfs {};
  if (::statfs("/dev/shm", &sfs) != 0 || static_cast<long>(sfs.f_type) != 0x01021994)
    GTEST_SKIP() << "/dev/shm is not tmpfs";
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::string tag = std::to_string(::getpid());
  const std::string fake_deleted = "/dev/shm/ps-held-" + tag + " (deleted)";
  const std::string newline = "/dev/shm/ps-nl-" + tag + "\nx";
  // Named as the kernel names memfds and SysV segments ("/memfd:...",
  // "/SYSV..."), on the root filesystem, which is not a tmpfs. Only root
  // can make them there; elsewhere they are made in the source tree, named
  // alike but for the leading directory.
  const bool at_root = ::access("/", W_OK) == 0;
  struct statfs root_fs {};
  if (at_root && ::statfs("/", &root_fs) == 0 && static_cast<long>(root_fs.f_type) == 0x01021994)
    GTEST_SKIP() << "/ is a tmpfs";
  const std::string off_dir = at_root ? "" : std::string(SHMBPF_SOURCE_DIR);
  const std::string off_shm = off_dir + "/memfd:ps-" + tag;
  const std::string off_sysv = off_dir + "/SYSV" + tag;

  std::vector<int> fds;
  std::vector<std::pair<void *, Fstat>> maps;
  for (const std::string &path : {fake_deleted, newline, off_shm, off_sysv}) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::ftruncate(fd, page), 0);
    void *m = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(m, MAP_FAILED);
    maps.emplace_back(m, fstat_of(fd));
    fds.push_back(fd);
  }
  // The one with the newline is mapped only: maps escapes it, map_files
  // (root) does not.
  ::close(fds[1]);
  fds[1] = -1;

  auto held = scan_holdings(static_cast<uint32_t>(::getpid()));
  const HeldFile *fake = find_held(held, maps[0].second);
  ASSERT_NE(fake, nullptr);
  EXPECT_FALSE(fake->deleted);
  EXPECT_EQ(fake->path, fake_deleted);
  EXPECT_EQ(fake->kind, HeldKind::tmpfs);
  const HeldFile *nl = find_held(held, maps[1].second);
  ASSERT_NE(nl, nullptr);
  EXPECT_EQ(nl->path, newline);
  EXPECT_FALSE(nl->deleted);
  EXPECT_EQ(find_held(held, maps[2].second), nullptr) << off_shm;
  EXPECT_EQ(find_held(held, maps[3].second), nullptr) << off_sysv;

  for (auto &[m, st] : maps)
    ::munmap(m, page);
  for (int fd : fds)
    if (fd >= 0)
      ::close(fd);
  for (const std::string &path : {fake_deleted, newline, off_shm, off_sysv})
    ::unlink(path.c_str());
}

TEST(ProcScanLive, SysvSegmentOfSelf) {
  int id = ::shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  if (id < 0)
    GTEST_SKIP() << "shmget unavailable";
  void *p = ::shmat(id, nullptr, 0);
  ASSERT_NE(p, reinterpret_cast<void *>(-1));
  ::shmctl(id, IPC_RMID, nullptr);

  auto held = scan_holdings(static_cast<uint32_t>(::getpid()));
  bool found = false;
  for (const HeldFile &h : held)
    if (h.path == "/SYSV00000000" && h.ino == static_cast<uint64_t>(id))
      found = h.via_map && h.kind == HeldKind::sysv;
  EXPECT_TRUE(found);

  bool listed = false;
  for (const SysvEntry &e : read_sysvipc_shm())
    if (e.shmid == id) {
      listed = true;
      EXPECT_EQ(e.size, 4096u);
      EXPECT_EQ(e.nattch, 1u);
      EXPECT_TRUE(e.removed);
      EXPECT_EQ(e.cpid, static_cast<uint32_t>(::getpid()));
    }
  EXPECT_TRUE(listed);
  ::shmdt(p);
}

TEST(ProcScanLive, ReadSelf) {
  auto id = read_process(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(id);
  char comm[17] = {};
  ASSERT_EQ(::prctl(PR_GET_NAME, comm), 0);
  EXPECT_EQ(id->pid, static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(id->comm, comm);
  EXPECT_EQ(id->ppid, static_cast<uint32_t>(::getppid()));
  EXPECT_EQ(id->uid, ::getuid());
  struct stat st {};
  ASSERT_EQ(::stat("/proc/self/ns/mnt", &st), 0);
  EXPECT_EQ(id->mntns, static_cast<uint32_t>(st.st_ino));
  ASSERT_EQ(::stat("/proc/self/ns/ipc", &st), 0);
  EXPECT_EQ(id->ipcns, static_cast<uint32_t>(st.st_ino));
  // The "0::" line for the cgroup id, whatever path tells the container.
  std::string v2 = "unset", want;
  ASSERT_TRUE(read_process(static_cast<uint32_t>(::getpid()), &v2));
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);)
    if (line.starts_with("0::"))
      want = line.substr(3);
  EXPECT_EQ(v2, want);

  EXPECT_FALSE(read_process(0));
}

// A child's identity and its start time, read while it lives; once it is
// gone, nothing is read for its pid.
TEST(ProcScanLive, StartTimeTellsProcessesApart) {
  auto self = read_process(static_cast<uint32_t>(::getpid()));
  ASSERT_TRUE(self);
  EXPECT_GT(self->start_time, 0u);
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    ::close(gate[1]);
    _exit(::read(gate[0], &c, 1) >= 0 ? 0 : 1);
  }
  ::close(gate[0]);
  auto kid = read_process(static_cast<uint32_t>(child));
  ASSERT_TRUE(kid);
  EXPECT_GE(kid->start_time, self->start_time);
  ::close(gate[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(read_process(static_cast<uint32_t>(child)));
  EXPECT_TRUE(scan_holdings(static_cast<uint32_t>(child)).empty());
}

TEST(ProcScanLive, ListPidsHasSelf) {
  auto pids = list_pids();
  EXPECT_TRUE(std::binary_search(pids.begin(), pids.end(), static_cast<uint32_t>(::getpid())));
}

// Samples read the mount tables of the namespaces a walk found, through
// the same processes; a representative that is gone asks for a new walk.
TEST(ProcScanLive, MountNamespacesReadAgainThroughTheirProcesses) {
  const uint32_t mine = mount_namespace_of(static_cast<int>(getpid()));
  ASSERT_NE(mine, 0u);
  std::vector<MountNamespace> known{{mine, static_cast<int>(getpid()), {}}};
  auto again = refresh_mount_namespaces(known);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].mntns, mine);
  EXPECT_FALSE((*again)[0].mounts.empty()) << "the mount table is read again";

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  known.push_back({mine, static_cast<int>(child), {}});
  EXPECT_FALSE(refresh_mount_namespaces(known)) << "its process is gone";
  // Another namespace's number on a live process: it moved, walk again.
  EXPECT_FALSE(refresh_mount_namespaces({{mine + 1, static_cast<int>(getpid()), {}}}));
  EXPECT_TRUE(refresh_mount_namespaces({}));
}

} // namespace
} // namespace shmbpf
