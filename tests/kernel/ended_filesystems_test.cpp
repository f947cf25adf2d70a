// A filesystem that ends takes its files out of the live model within
// seconds (sources/superblocks, Engine::forget_filesystem): a tmpfs in a
// mount namespace that ends with its last process, one unmounted, and one
// detached while a process still holds a file of it, which stays until
// that process lets go. The samples decide: a rescan leaves a filesystem
// it cannot reach alone.
#include "harness.hpp"
#include "monitor_harness.hpp"

#include "live/monitor.hpp"
#include "sources/superblocks.hpp"
#include "sources/system_scan.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;

// Samples once a second as serve does; no full rescan for an hour with the
// full hook set. The light set keeps its rescans, which find what its hooks
// cannot (a file's path on a mount that came after the start) and leave
// the filesystems they cannot reach alone.
MonitorOptions samples_only() {
  MonitorOptions o;
  o.reconcile_every = std::chrono::hours(1);
  return o;
}

// The model's segments on filesystem dev.
size_t on_dev(const Engine &e, uint32_t dev) {
  size_t n = 0;
  for (const SegmentInfo &s : e.segments())
    n += s.kind == Kind::tmpfs && s.key.dev_or_ipcns == dev;
  return n;
}

bool mounted(const Engine &e, uint32_t dev) {
  const auto m = e.mounts();
  return std::any_of(m.begin(), m.end(), [&](const MountUsage &u) { return u.mount.dev == dev; });
}

// Two files in dir, one of 8 MiB written, one empty, closed: what a crashed
// job leaves in its /dev/shm.
int leave_two_files(const std::string &dir) {
  const int fd = open((dir + "/big").c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, 8 << 20) != 0)
    return 1;
  std::string mib(1 << 20, 'x');
  for (int i = 0; i < 8; ++i)
    if (pwrite(fd, mib.data(), mib.size(), static_cast<off_t>(i) << 20) != 1 << 20)
      return 2;
  close(fd);
  const int e = open((dir + "/empty").c_str(), O_CREAT | O_RDWR, 0600);
  if (e < 0)
    return 3;
  close(e);
  return 0;
}

struct Dir {
  std::string path;
  explicit Dir(const std::string &stem) : path("/tmp/" + stem + "-" + std::to_string(getpid())) {
    mkdir(path.c_str(), 0700);
  }
  ~Dir() {
    umount2(path.c_str(), MNT_DETACH);
    rmdir(path.c_str());
  }
};

TEST(EndedFilesystems, ATmpfsOfANamespaceThatEndsLeavesEveryTable) {
  { SHMBPF_LOADED(probe, Probe, ProbeOptions{}); } // a kernel shmbpf runs on
  Dir dir("kt-ended-ns");
  struct Facts {
    uint32_t dev = 0;
    int step = 0; // 1: files made; errors are negative
  };
  Shared<Facts> f;
  int quit[2];
  ASSERT_EQ(pipe(quit), 0);
  Child c = spawn("kt-ended-ns", [&] {
    close(quit[1]);
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
        mount("tmpfs", dir.path.c_str(), "tmpfs", 0, "size=16m") != 0) {
      f->step = -1;
      return 1;
    }
    struct stat st {};
    if (stat(dir.path.c_str(), &st) != 0)
      return 2;
    f->dev = kdev_of(st.st_dev);
    if (const int rc = leave_two_files(dir.path)) {
      f->step = -rc - 10;
      return 3;
    }
    f->step = 1;
    char x;
    return read(quit[0], &x, 1) == 0 ? 0 : 4; // until the test lets go
  });
  close(quit[0]);
  c.start();
  for (auto end = std::chrono::steady_clock::now() + 10s;
       f->step == 0 && std::chrono::steady_clock::now() < end;)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(f->step, 1);
  const uint32_t dev = f->dev;
  // Started now, the monitor finds the files in its first scan, with either
  // hook set.
  SHMBPF_MONITOR(m, samples_only());
  EXPECT_EQ(superblock_of(dev), Superblock::alive);
  // What arm64 asks instead of ustat: the namespace's mount table.
  EXPECT_EQ(superblock_by_proc(dev), Superblock::alive);
  ASSERT_TRUE(pump_until(
      *m, [&](const Engine &e) { return on_dev(e, dev) == 2; }, 10s))
      << on_dev(m->engine(), dev) << " files of the namespace's tmpfs in the model";

  const uint64_t gone_before = m->engine().stats().gone;
  close(quit[1]); // its last process exits: the namespace and its tmpfs end
  EXPECT_EQ(c.wait(), 0);
  EXPECT_TRUE(pump_until(
      *m, [&](const Engine &e) { return on_dev(e, dev) == 0 && !mounted(e, dev); }, 15s))
      << on_dev(m->engine(), dev) << " files left";
  // Each file left by one path or the other: the filesystem's end, or its
  // pages freed as the kernel tore the filesystem down, whichever the
  // monitor saw first (the counts have other tests' files too).
  EXPECT_GE(m->engine().stats().gone - gone_before, 2u);
  for (const Orphan &o : m->engine().orphans(Monitor::now_ns(), 0))
    EXPECT_NE(o.segment.key.dev_or_ipcns, dev) << o.segment.path;
}

TEST(EndedFilesystems, AnUnmountedTmpfsLeavesAndAHeldOneStaysUntilLetGo) {
  { SHMBPF_LOADED(probe, Probe, ProbeOptions{}); } // a kernel shmbpf runs on
  TmpfsMount gone, held;
  ASSERT_TRUE(gone.mount("size=16m"));
  ASSERT_TRUE(held.mount("size=16m"));
  struct stat st {};
  ASSERT_EQ(stat(gone.dir().c_str(), &st), 0);
  const uint32_t gone_dev = kdev_of(st.st_dev);
  ASSERT_EQ(stat(held.dir().c_str(), &st), 0);
  const uint32_t held_dev = kdev_of(st.st_dev);
  EXPECT_EQ(run_child("kt-ended-um", [&] { return leave_two_files(gone.dir()); }).status, 0);
  // A child that keeps one file of the other mapped.
  int quit[2];
  ASSERT_EQ(pipe(quit), 0);
  Shared<int> mapped;
  Child keeper = spawn("kt-ended-keep", [&] {
    close(quit[1]);
    const int fd = open((held.dir() + "/kept").c_str(), O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, 65536) != 0)
      return 1;
    void *p = mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      return 2;
    static_cast<char *>(p)[0] = 1;
    *mapped = 1;
    char x;
    return read(quit[0], &x, 1) == 0 ? 0 : 3;
  });
  close(quit[0]);
  keeper.start();
  for (int i = 0; i < 500 && *mapped == 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(*mapped, 1);
  SHMBPF_MONITOR(m, samples_only());
  ASSERT_TRUE(pump_until(
      *m, [&](const Engine &e) { return on_dev(e, gone_dev) == 2 && on_dev(e, held_dev) == 1; },
      10s))
      << on_dev(m->engine(), gone_dev) << " of 2 and " << on_dev(m->engine(), held_dev)
      << " of 1 files seen";

  ASSERT_EQ(umount2(gone.dir().c_str(), 0), 0) << strerror(errno);
  ASSERT_EQ(umount2(held.dir().c_str(), MNT_DETACH), 0) << strerror(errno);
  EXPECT_TRUE(pump_until(
      *m, [&](const Engine &e) { return on_dev(e, gone_dev) == 0; }, 15s));
  // Detached, its file still mapped: the filesystem lives on, so does the file.
  EXPECT_EQ(superblock_of(held_dev), Superblock::alive);
  EXPECT_EQ(superblock_by_proc(held_dev), Superblock::alive); // the mapping
  for (int i = 0; i < 30; ++i) {
    m->poll(100);
    m->drain();
  }
  EXPECT_EQ(on_dev(m->engine(), held_dev), 1u);

  close(quit[1]);
  EXPECT_EQ(keeper.wait(), 0);
  EXPECT_TRUE(pump_until(
      *m, [&](const Engine &e) { return on_dev(e, held_dev) == 0; }, 15s));
}

// Unmounted, and its device number given to the next tmpfs at once, before
// a sample saw it end: the next sample tells them apart by their fsid
// (Linux 6.7 and later give tmpfs one), and the old files go, not to the
// new mount.
// The fallback identity of a tmpfs where statfs gives no fsid (before
// 6.7): its root's generation stays while the filesystem does, and a later
// tmpfs on the same device number draws another.
TEST(EndedFilesystems, ARootsGenerationNamesItsFilesystem) {
  Dir dir("kt-ended-gen");
  std::vector<uint64_t> seen;
  uint32_t first_dev = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(mount("tmpfs", dir.path.c_str(), "tmpfs", 0, "size=1m"), 0) << strerror(errno);
    const int a = open(dir.path.c_str(), O_PATH | O_CLOEXEC);
    const int b = open(dir.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    struct stat st {};
    ASSERT_EQ(fstat(a, &st), 0);
    if (i == 0)
      first_dev = kdev_of(st.st_dev);
    const uint64_t g = root_generation(a);
    EXPECT_NE(g, 0u);
    EXPECT_EQ(root_generation(b), g) << "one filesystem, one generation";
    close(a);
    close(b);
    ASSERT_EQ(umount2(dir.path.c_str(), 0), 0) << strerror(errno);
    if (kdev_of(st.st_dev) == first_dev)
      seen.push_back(g);
  }
  // Lowest free number first: usually all three had the same device.
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end())
      << "a later tmpfs on the same device drew the same generation";
}

TEST(EndedFilesystems, AReusedDeviceNumberInheritsNoFile) {
  { SHMBPF_LOADED(probe, Probe, ProbeOptions{}); } // a kernel shmbpf runs on
  Dir first("kt-ended-a"), second("kt-ended-b");
  ASSERT_EQ(mount("tmpfs", first.path.c_str(), "tmpfs", 0, "size=16m"), 0) << strerror(errno);
  struct stat st {};
  ASSERT_EQ(stat(first.path.c_str(), &st), 0);
  const uint32_t dev = kdev_of(st.st_dev);
  EXPECT_EQ(run_child("kt-ended-old", [&] { return leave_two_files(first.path); }).status, 0);
  SHMBPF_MONITOR(m, samples_only());
  ASSERT_TRUE(pump_until(
      *m, [&](const Engine &e) { return on_dev(e, dev) == 2; }, 10s));
  // The lowest free number is taken first: unless another mount takes it
  // meanwhile (a test beside this one), the next tmpfs gets the same one.
  bool reused = false;
  ASSERT_EQ(umount2(first.path.c_str(), 0), 0) << strerror(errno);
  for (int i = 0; i < 20 && !reused; ++i) {
    ASSERT_EQ(mount("tmpfs", second.path.c_str(), "tmpfs", 0, "size=16m"), 0) << strerror(errno);
    reused = stat(second.path.c_str(), &st) == 0 && kdev_of(st.st_dev) == dev;
    if (!reused)
      umount2(second.path.c_str(), 0);
  }
  if (!reused)
    GTEST_SKIP() << "other mounts kept taking device " << dev;
  const std::string fresh = second.path + "/fresh";
  EXPECT_EQ(run_child("kt-ended-new",
                      [&] {
                        const int fd = open(fresh.c_str(), O_CREAT | O_RDWR, 0600);
                        return fd >= 0 && close(fd) == 0 ? 0 : 1;
                      })
                .status,
            0);
  // The old files go; the new file, once a rescan or its event names it, is
  // on the new mount.
  EXPECT_TRUE(pump_until(
      *m,
      [&](const Engine &e) {
        for (const SegmentInfo &s : e.segments())
          if (s.kind == Kind::tmpfs && s.key.dev_or_ipcns == dev &&
              (s.path.ends_with("/big") || s.path.ends_with("/empty")))
            return false;
        return true;
      },
      15s));
  for (const SegmentInfo &s : m->engine().segments()) {
    if (s.kind == Kind::tmpfs && s.key.dev_or_ipcns == dev && !s.mountpoint.empty()) {
      EXPECT_EQ(s.mountpoint, second.path) << s.path;
    }
  }
}

} // namespace
} // namespace shmbpf::test
