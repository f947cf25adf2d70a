// The live model on real BPF events: a Monitor bootstraps from a scan, then
// follows a child's segments (creator, container, holders, bytes, unlink,
// exit), and rescans after the kernel loses records.
#include "container_sim.hpp"
#include "docker_cgroup.hpp"
#include "harness.hpp"
#include "monitor_harness.hpp"

#include "facts/dev.hpp"
#include "live/monitor.hpp"
#include "sources/mountinfo.hpp"
#include "sources/namespaces.hpp"

#include <fcntl.h>
#include <linux/types.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "shmbpf_names.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;

// In a child named comm: n files dir.file(0).. of 4 KiB, each with one
// byte written when `write` (so it has a page). Returns the child, exited.
Child make_files(const std::string &comm, const ScratchDir &dir, int n, bool write) {
  return run_child(comm, [&] {
    for (int i = 0; i < n; ++i) {
      int fd = open(dir.file(i).c_str(), O_RDWR | O_CREAT, 0600);
      if (fd < 0 || ftruncate(fd, 4096) != 0 || (write && pwrite(fd, "z", 1, 0) != 1))
        return 1;
      close(fd);
    }
    return 0;
  });
}

// Live segments named dir/f*.
size_t files_in(const Engine &e, const std::string &dir) {
  SegmentFilter f;
  f.path_glob = dir + "/f*";
  return e.segments(f).size();
}

std::optional<SegmentInfo> by_path(const Engine &e, const std::string &path) {
  SegmentFilter f;
  f.path_glob = path;
  auto v = e.segments(f, Monitor::now_ns(), 0);
  if (v.empty())
    return std::nullopt;
  return v.front();
}

TEST(Monitor, BootstrapFindsExistingSegmentsWithHolders) {
  const std::string path = "/dev/shm/shmbpf-mon-pre-" + std::to_string(getpid());
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  // A holder that opened the file before shmbpf started.
  Child holder = spawn("mon-preholder", [&] {
    close(pipefd[0]);
    int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 8192) != 0 || pwrite(fd, "x", 1, 4096) != 1)
      return 1;
    char c = 1;
    if (write(pipefd[1], &c, 1) != 1)
      return 2;
    pause();
    return 0;
  });
  close(pipefd[1]);
  holder.start();
  char c;
  ASSERT_EQ(read(pipefd[0], &c, 1), 1);
  close(pipefd[0]);

  {
    SHMBPF_MONITOR(m, MonitorOptions{});
    auto s = by_path(m->engine(), path);
    ASSERT_TRUE(s) << "not bootstrapped";
    EXPECT_TRUE(s->existed_before);
    EXPECT_FALSE(s->creator.known);
    EXPECT_EQ(s->holders, std::vector<uint32_t>{static_cast<uint32_t>(holder.pid)});
    EXPECT_EQ(s->bytes, 4096u);
    EXPECT_EQ(s->size, 8192u);
    EXPECT_FALSE(s->orphan);

    // Its holder dies: the exit event alone makes it an orphan (min-age 0).
    kill(holder.pid, SIGKILL);
    holder.wait();
    EXPECT_TRUE(pump_until(*m, [&](const Engine &e) {
      auto o = e.orphans(Monitor::now_ns(), 0);
      return std::any_of(o.begin(), o.end(),
                         [&](const Orphan &x) { return x.segment.path == path; });
    }));
  }
  unlink(path.c_str());
}

TEST(Monitor, LiveAttributionFollowsASegmentFromCreationToOrphan) {
  DockerCgroup cg("shmbpf-test.slice");
  ASSERT_EQ(cg.create(), "") << "cannot create a cgroup v2 directory";
  SHMBPF_MONITOR(m, MonitorOptions{});
  const std::string base = "/dev/shm/shmbpf-mon-" + std::to_string(getpid());
  const std::string held = base + "-held", left = base + "-left";
  // Whatever fails below, leave nothing behind in /dev/shm.
  struct Cleanup {
    std::vector<std::string> paths;
    ~Cleanup() {
      for (const auto &p : paths)
        ::unlink(p.c_str());
    }
  } cleanup{{held, left}};
  int step[2];
  ASSERT_EQ(pipe(step), 0);

  Child child = spawn("mon-creator", [&] {
    close(step[1]);
    if (!cg.enter())
      return 10;
    int fd = open(held.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, 65536) != 0)
      return 11;
    auto *p = static_cast<char *>(mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    if (p == MAP_FAILED)
      return 12;
    for (int i = 0; i < 65536; i += 4096)
      p[i] = 1;
    int fd2 = open(left.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd2 < 0 || ftruncate(fd2, 16384) != 0 || pwrite(fd2, "abcd", 4, 0) != 4)
      return 13;
    close(fd2); // left behind: linked, unheld
    char c;
    if (read(step[0], &c, 1) != 1) // wait: then unlink the held one
      return 14;
    if (unlink(held.c_str()) != 0)
      return 15;
    if (read(step[0], &c, 1) != 1) // wait: then exit
      return 16;
    return 0;
  });
  close(step[0]);
  child.start();
  const auto pid = static_cast<uint32_t>(child.pid);

  ASSERT_TRUE(pump_until(*m,
                         [&](const Engine &e) {
                           auto s = by_path(e, held);
                           return s && s->bytes == 65536 && by_path(e, left);
                         }))
      << "segments not seen: held "
      << (by_path(m->engine(), held) ? std::to_string(by_path(m->engine(), held)->bytes) : "absent")
      << ", left " << (by_path(m->engine(), left) ? "present" : "absent");
  auto s = *by_path(m->engine(), held);
  EXPECT_EQ(s.kind, Kind::tmpfs);
  EXPECT_EQ(s.state, SegmentState::linked);
  EXPECT_EQ(s.creator.pid, pid);
  EXPECT_EQ(s.creator.comm, "mon-creator");
  EXPECT_FALSE(s.creator.exited);
  EXPECT_FALSE(s.existed_before);
  EXPECT_EQ(s.size, 65536u);
  EXPECT_EQ(s.holders, std::vector<uint32_t>{pid});
  EXPECT_EQ(s.mountpoint, "/dev/shm");
  // The container comes from the creator's cgroup: the model must learn
  // the new cgroup's path from the kernel's cgroup id.
  EXPECT_TRUE(pump_until(*m,
                         [&](const Engine &e) {
                           auto x = by_path(e, held);
                           return x && x->container.id == cg.id();
                         }))
      << "container not attributed: " << by_path(m->engine(), held)->container.id;
  EXPECT_EQ(by_path(m->engine(), held)->container.runtime, "docker");
  // close(2) is not traced: the holder rescan notices it within a sample.
  EXPECT_TRUE(pump_until(*m, [&](const Engine &e) {
    auto x = by_path(e, left);
    return x && x->holders.empty() && x->bytes == 4096;
  })) << "closed file still held";
  auto l = *by_path(m->engine(), left);
  EXPECT_EQ(l.creator.pid, pid);
  auto p = m->engine().process(pid, Monitor::now_ns());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->segments_created, 2u);
  EXPECT_EQ(p->creates, 2u);

  // Unlinked while mapped: still there, with its bytes, until the last holder goes.
  char go = 1;
  ASSERT_EQ(write(step[1], &go, 1), 1);
  ASSERT_TRUE(pump_until(*m, [&](const Engine &e) {
    SegmentFilter f;
    f.pid = pid;
    f.state = SegmentState::unlinked;
    auto v = e.segments(f);
    return v.size() == 1 && v[0].bytes == 65536;
  })) << "unlink not applied";

  ASSERT_EQ(write(step[1], &go, 1), 1);
  close(step[1]);
  EXPECT_EQ(child.wait(), 0);
  ASSERT_TRUE(pump_until(*m, [&](const Engine &e) {
    return !e.process(pid) && e.stats().gone >= 1 && !by_path(e, base + "-held");
  })) << "exit not applied";
  // No unlinked segment of the child is left (the mapped file was freed).
  SegmentFilter mine;
  mine.state = SegmentState::unlinked;
  for (const auto &x : m->engine().segments(mine))
    EXPECT_NE(x.creator.pid, pid) << x.path;
  l = *by_path(m->engine(), left);
  EXPECT_TRUE(l.creator.exited);
  auto now = Monitor::now_ns();
  auto has_left = [&](uint64_t min_age) {
    auto o = m->engine().orphans(now, min_age);
    return std::any_of(o.begin(), o.end(), [&](const Orphan &x) { return x.segment.path == left; });
  };
  EXPECT_TRUE(has_left(0));
  EXPECT_FALSE(has_left(60'000'000'000)); // not before --min-age
  unlink(left.c_str());
}

// A file that a process of a container wrote into the container's own
// /dev/shm and then exited: its path is the container's, reached through
// another process of that mount namespace once the writer is gone, so the
// model still learns how much it holds.
TEST(Monitor, BytesOfAFileWrittenInAContainersShmByAProcessThatExited) {
  ContainerSim ctr("shmbpf-test.slice");
  ASSERT_EQ(ctr.start(), "");
  SHMBPF_MONITOR(m, MonitorOptions{});
  const std::string name = "/dev/shm/shmbpf-mon-ctr-" + std::to_string(getpid());
  const int made = ctr.run([&] {
    const int fd = open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    const std::string data(98304, 'c'); // written, not truncated: no resize event says it
    const bool ok = fd >= 0 && write(fd, data.data(), data.size()) == ssize_t(data.size());
    close(fd);
    return ok ? 0 : 1;
  });
  ASSERT_EQ(made, 0);
  struct stat st {};
  ASSERT_EQ(stat(ctr.host_path(name).c_str(), &st), 0);
  auto held = [&](const Engine &e) {
    auto v = e.segments(SegmentFilter{}, Monitor::now_ns(), 0);
    for (const SegmentInfo &s : v)
      if (s.key == SegmentKey::file(kernel_dev(st.st_dev), st.st_ino))
        return s.bytes;
    return uint64_t{0};
  };
  EXPECT_TRUE(pump_until(
      *m, [&](const Engine &e) { return held(e) == 98304; }, 8s))
      << "bytes seen: " << held(m->engine()) << " " <<
      [&] {
        std::string out;
        for (const SegmentInfo &s : m->engine().segments(SegmentFilter{}, Monitor::now_ns(), 0))
          if (s.path.find("mon-ctr") != std::string::npos)
            out += s.path + " dev " + std::to_string(s.key.dev_or_ipcns) + " ino " +
                   std::to_string(s.key.ino_or_shmid) + " bytes " + std::to_string(s.bytes) + "; ";
        return out + " want dev " + std::to_string(kernel_dev(st.st_dev)) + " ino " +
               std::to_string(st.st_ino);
      }();
}

TEST(Monitor, LostRecordsTriggerAReconcileThatFindsEverything) {
  MonitorOptions opts;
  opts.probe.ring_buffer_bytes = 4096; // a few records: a burst overflows it
  SHMBPF_MONITOR(m, opts);
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-burst-" + std::to_string(getpid())));
  const std::string dir = scratch.path();
  constexpr int kFiles = 300;
  Child child = make_files("mon-burst", scratch, kFiles, /*write=*/true);
  ASSERT_EQ(child.status, 0);
  auto count = [&](const Engine &e) { return files_in(e, dir); };
  EXPECT_TRUE(pump_until(*m, [&](const Engine &e) { return count(e) == kFiles; }));
  EXPECT_GT(m->stats().lost, 0u);
  EXPECT_GE(m->stats().loss_reconciles, 1u);
  EXPECT_EQ(count(m->engine()), static_cast<size_t>(kFiles));
}

// A rescan seeds the kernel with the files new to the model (here, whose
// creation records were lost), and only with those; their unlinks then
// arrive as events, with no further rescan.
TEST(Monitor, RescanSeedsFilesWhoseCreationWasLost) {
  MonitorOptions opts;
  opts.probe.ring_buffer_bytes = 64 << 10;         // the burst below overflows it
  opts.loss_reconcile_gap = std::chrono::hours(1); // rescans only when asked
  opts.reconcile_every = std::chrono::hours(1);
  opts.light_reconcile_every = opts.reconcile_every;
  SHMBPF_MONITOR(m, opts);
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-seed-" + std::to_string(getpid())));
  const std::string dir = scratch.path();
  constexpr int kFiles = 300;
  Child child = make_files("mon-seed", scratch, kFiles, /*write=*/false);
  ASSERT_EQ(child.status, 0);
  auto count = [&](const Engine &e) { return files_in(e, dir); };
  m->drain();
  ASSERT_GT(m->stats().lost, 0u);
  const size_t known = count(m->engine());
  ASSERT_LT(known, static_cast<size_t>(kFiles));
  const size_t seeded = m->session().seeded();
  m->reconcile();
  EXPECT_EQ(count(m->engine()), static_cast<size_t>(kFiles));
  EXPECT_GE(m->session().seeded() - seeded, kFiles - known);
  const uint64_t reconciles = m->stats().reconciles;
  const uint64_t lost = m->stats().lost;
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(unlink(scratch.file(i).c_str()), 0);
    m->poll(0);
  }
  const bool by_events = pump_until(*m, [&](const Engine &e) { return count(e) == 0; });
  if (m->stats().lost == lost) {
    EXPECT_TRUE(by_events) << count(m->engine()) << " files left";
    EXPECT_EQ(m->stats().reconciles, reconciles); // events did it, not a rescan
  } else {
    // Every ring gets every process's records: tests running alongside
    // overflowed this small one meanwhile, and unlinks may have gone with
    // their records. A rescan must then account for them.
    m->reconcile();
    EXPECT_EQ(count(m->engine()), 0u) << m->stats().lost - lost << " records lost meanwhile";
  }
}

// close(2) is not traced: a file closed and unlinked by a process that
// lives on is found unheld by the rescan of its holders, within seconds,
// not at the next full reconcile.
TEST(Monitor, ClosedAndUnlinkedFileIsGoneWhileItsCreatorLives) {
  MonitorOptions opts;
  opts.reconcile_every = std::chrono::hours(1);
  opts.light_reconcile_every = opts.reconcile_every;
  SHMBPF_MONITOR(m, opts);
  const std::string path = "/dev/shm/shmbpf-mon-closed-" + std::to_string(getpid());
  int step[2];
  ASSERT_EQ(pipe(step), 0);
  Child child = spawn("mon-closer", [&] {
    close(step[1]);
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, 8192) != 0 || pwrite(fd, "x", 1, 0) != 1 || close(fd) != 0 ||
        unlink(path.c_str()) != 0)
      return 1;
    char c;
    return read(step[0], &c, 1) == 1 ? 0 : 2; // live on until told
  });
  close(step[0]);
  child.start();
  auto count = [&](const Engine &e) {
    SegmentFilter f;
    f.path_glob = path;
    return e.segments(f).size();
  };
  EXPECT_TRUE(pump_until(*m, [&](const Engine &e) { return count(e) == 1; }));
  EXPECT_TRUE(pump_until(
      *m, [&](const Engine &e) { return count(e) == 0; }, 10s));
  EXPECT_EQ(m->stats().reconciles, 1u); // the bootstrap only
  ASSERT_EQ(write(step[1], "x", 1), 1);
  close(step[1]);
  EXPECT_EQ(child.wait(), 0);
  ::unlink(path.c_str());
}

// A file is an inode, not a name: one with two names before start is one
// segment with both; one created, linked to a second name and unlinked from
// its first lives on under the second, from the events alone (no rescan).
TEST(Monitor, HardLinksKeepTheSegmentWhenANameGoes) {
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-links-" + std::to_string(getpid())));
  const std::string dir = scratch.path();
  const std::string pre1 = dir + "/pre1", pre2 = dir + "/pre2", l1 = dir + "/l1", l2 = dir + "/l2";
  int fd = open(pre1.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0) << strerror(errno);
  close(fd);
  ASSERT_EQ(link(pre1.c_str(), pre2.c_str()), 0) << strerror(errno);
  struct stat pre {};
  ASSERT_EQ(stat(pre1.c_str(), &pre), 0);
  const SegmentKey pre_key = SegmentKey::file(kdev_of(pre.st_dev), pre.st_ino);

  MonitorOptions opts;
  opts.reconcile_every = std::chrono::hours(1);
  opts.light_reconcile_every = opts.reconcile_every;
  SHMBPF_MONITOR(m, opts);
  auto s = m->engine().segment(pre_key);
  ASSERT_TRUE(s) << "not bootstrapped";
  EXPECT_EQ(s->nlink, 2u);
  std::vector<std::string> names = {s->path};
  names.insert(names.end(), s->other_paths.begin(), s->other_paths.end());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{pre1, pre2}));

  Child child = run_child("mon-linker", [&] {
    int f = open(l1.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (f < 0 || ftruncate(f, 4096) != 0 || close(f) != 0)
      return 1;
    if (link(l1.c_str(), l2.c_str()) != 0 || unlink(l1.c_str()) != 0)
      return 2;
    return unlink(pre1.c_str()) == 0 ? 0 : 3; // a name the kernel was seeded with
  });
  ASSERT_EQ(child.status, 0);
  struct stat st {};
  ASSERT_EQ(stat(l2.c_str(), &st), 0);
  const SegmentKey key = SegmentKey::file(kdev_of(st.st_dev), st.st_ino);
  auto named = [](const Engine &e, SegmentKey k, const std::string &path) {
    auto seg = e.segment(k);
    return seg && seg->state == SegmentState::linked && seg->path == path && seg->nlink == 1 &&
           seg->other_paths.empty();
  };
  EXPECT_TRUE(
      pump_until(*m, [&](const Engine &e) { return named(e, key, l2) && named(e, pre_key, pre2); }))
      << "l2: " << (m->engine().segment(key) ? m->engine().segment(key)->path : "(none)")
      << ", pre2: "
      << (m->engine().segment(pre_key) ? m->engine().segment(pre_key)->path : "(none)");
  s = m->engine().segment(key);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->creator.pid, static_cast<uint32_t>(child.pid)); // the created segment itself
  EXPECT_EQ(m->stats().reconciles, 1u);                        // the bootstrap only
}

TEST(Monitor, UnlinkedNamesLeaveTheKernelsNameMap) {
  SHMBPF_MONITOR(m, MonitorOptions{});
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-names-" + std::to_string(getpid())));
  m->drain();
  // Leaf names of this test's own: other processes' files do not count.
  auto leaf = [](int i) {
    return "mon-names-" + std::to_string(getpid()) + "-" + std::to_string(i);
  };
  // Files that never get a page: no free event would ever clean up after them.
  constexpr int kFiles = 200;
  Child child = run_child("mon-names", [&] {
    for (int i = 0; i < kFiles; ++i) {
      std::string p = scratch.path() + "/" + leaf(i);
      int fd = open(p.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      if (fd < 0 || ftruncate(fd, 1 << 20) != 0 || close(fd) != 0 || unlink(p.c_str()) != 0)
        return 1;
    }
    return 0;
  });
  ASSERT_EQ(child.status, 0);
  EXPECT_TRUE(pump_until(*m, [&](const Engine &e) { return e.stats().gone >= kFiles; }));
  int left = 0;
  for (int i = 0; i < kFiles; ++i)
    left += m->session().probe().tracks_name(leaf(i));
  scratch.remove();
  EXPECT_EQ(left, 0) << "of " << kFiles << " names unlinked";
}

// This process's shared writable mappings of BPF maps (the name table,
// the ring buffer's consumer page, libbpf's global data), each one's size.
std::vector<size_t> writable_bpf_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::vector<size_t> out;
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (line.find("bpf-map") != std::string::npos &&
        std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
        std::string_view(perms) == "rw-s")
      out.push_back(hi - lo);
  }
  return out;
}

// This process's descriptor of the kernel's name table: the mmapable BPF
// array of `buckets` name buckets (/proc/self/fdinfo); -1 when none.
int name_table_fd(size_t buckets) {
  for (const auto &entry : std::filesystem::directory_iterator("/proc/self/fdinfo")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    if (s.find("map_type:\t2\n") != std::string::npos &&
        s.find("value_size:\t" + std::to_string(sizeof(shmbpf_name_bucket)) + "\n") !=
            std::string::npos &&
        s.find("max_entries:\t" + std::to_string(buckets) + "\n") != std::string::npos &&
        s.find("map_flags:\t0x400\n") != std::string::npos) // BPF_F_MMAPABLE
      return std::stoi(entry.path().filename().string());
  }
  return -1;
}

// The kernel's name table is mapped into the process only while names are
// written or read: not once the start-up seeding is over, nor after a
// rescan seeded a file the kernel did not know. The kernel keeps the table
// either way: a file seeded at start and one seeded by the rescan (the
// table mapped again) are both followed through their unlinks.
TEST(Monitor, NameTableIsMappedOnlyWhileNamesAreWritten) {
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-unmap-" + std::to_string(getpid())));
  const std::string before = scratch.file(0); // there before start
  const std::string later = scratch.file(1);  // made by mknod: no event names it
  const int made = open(before.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(made, 0);
  close(made);
  MonitorOptions opts;
  opts.reconcile_every = std::chrono::hours(1); // rescans only when asked
  opts.light_reconcile_every = opts.reconcile_every;
  opts.loss_reconcile_gap = std::chrono::hours(1);
  SHMBPF_MONITOR(m, opts);
  const Probe &probe = m->session().probe();
  const size_t bytes = probe.name_table_bytes();
  auto whole_tables = [&] {
    auto v = writable_bpf_mappings();
    return std::count(v.begin(), v.end(), bytes);
  };
  auto leaf = [](const std::string &p) { return p.substr(p.rfind('/') + 1); };
  EXPECT_GE(probe.name_table_maps(), 2u); // the check at load, the seeding
  EXPECT_EQ(whole_tables(), 0) << "the name table is mapped after the start-up seeding";
  const size_t others = writable_bpf_mappings().size();
  // What is looked for is there while mapped.
  {
    const int fd = name_table_fd(probe.name_capacity() / SHMBPF_NAME_WAYS);
    ASSERT_GE(fd, 0);
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(whole_tables(), 1);
    munmap(p, bytes);
  }
  EXPECT_TRUE(probe.tracks_name(leaf(before)));
  ASSERT_EQ(mknod(later.c_str(), S_IFREG | 0600, 0), 0);
  EXPECT_FALSE(probe.tracks_name(leaf(later)));
  const uint64_t maps = probe.name_table_maps();
  m->reconcile(); // `later` is new to the model: seeded
  EXPECT_GT(probe.name_table_maps(), maps);
  EXPECT_TRUE(probe.tracks_name(leaf(later)));
  EXPECT_EQ(files_in(m->engine(), scratch.path()), 2u);
  EXPECT_EQ(whole_tables(), 0) << "the name table is mapped after the rescan's seeding";
  EXPECT_EQ(writable_bpf_mappings().size(), others) << "a window of it stayed mapped";
  const uint64_t reconciles = m->stats().reconciles;
  ASSERT_EQ(unlink(before.c_str()), 0);
  ASSERT_EQ(unlink(later.c_str()), 0);
  EXPECT_TRUE(pump_until(*m, [&](const Engine &e) { return files_in(e, scratch.path()) == 0; }));
  EXPECT_EQ(m->stats().reconciles, reconciles); // events did it, not a rescan
  EXPECT_FALSE(probe.tracks_name(leaf(before)));
  EXPECT_FALSE(probe.tracks_name(leaf(later)));
  EXPECT_EQ(writable_bpf_mappings().size(), others);
}

// The reads of a sample run on a worker thread while the consumer keeps
// reading the ring buffer: what it reads meanwhile is held back, and
// applied after the sample's result, in order. Here the first sample's
// worker waits until a child has created, resized and unlinked files.
TEST(Monitor, EventsReadDuringAGatherAreAppliedAfterItInOrder) {
  MonitorOptions opts;
  opts.reconcile_every = std::chrono::hours(1);
  opts.light_reconcile_every = opts.reconcile_every;
  opts.sample_every = 1ms;
  std::promise<void> open_gate;
  std::shared_future<void> gate = open_gate.get_future().share();
  std::atomic<int> gathers{0};
  opts.before_gather = [&gathers, gate] {
    if (gathers++ == 0)
      gate.wait();
  };
  SHMBPF_MONITOR(m, opts);
  // Declared after the monitor, so gone before it: a failed assertion
  // below must not leave the worker waiting (the monitor waits for it).
  struct OpenAtExit {
    std::promise<void> &gate;
    bool open = false;
    void operator()() {
      if (!std::exchange(open, true))
        gate.set_value();
    }
    ~OpenAtExit() { (*this)(); }
  } opener{open_gate};
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-held-" + std::to_string(getpid())));
  const std::string dir = scratch.path();
  std::this_thread::sleep_for(5ms);
  m->poll(0); // starts the first sample, whose worker waits at the gate
  for (int i = 0; i < 500 && gathers.load() == 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(gathers.load(), 1);
  constexpr int kFiles = 400;
  Child child = run_child("mon-held", [&] {
    for (int i = 0; i < kFiles; ++i) {
      std::string p = scratch.file(i);
      int fd = open(p.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      if (fd < 0 || ftruncate(fd, 4096 * (1 + i % 4)) != 0 || close(fd) != 0)
        return 1;
      if (i % 2 == 1 && unlink(p.c_str()) != 0)
        return 1;
    }
    return 0;
  });
  ASSERT_EQ(child.status, 0);
  // Creates, resizes and unlinks: all read, none applied yet.
  const uint64_t want_held = kFiles * 2 + kFiles / 2;
  auto end = std::chrono::steady_clock::now() + 5s;
  while (m->stats().held_peak < want_held && std::chrono::steady_clock::now() < end)
    m->poll(20);
  EXPECT_GE(m->stats().held_peak, want_held);
  EXPECT_EQ(files_in(m->engine(), dir), 0u);
  opener();
  m->drain();
  EXPECT_EQ(m->stats().lost, 0u);
  // In order: every unlink came after its create, every size after its
  // resize.
  EXPECT_EQ(files_in(m->engine(), dir), static_cast<size_t>(kFiles / 2));
  for (int i = 0; i < kFiles; i += 2) {
    auto s = by_path(m->engine(), scratch.file(i));
    ASSERT_TRUE(s) << i;
    EXPECT_EQ(s->size, 4096u * (1 + i % 4)) << i;
    EXPECT_EQ(s->creator.pid, static_cast<uint32_t>(child.pid)) << i;
  }
}

// A process that creates and unlinks files faster than samples come (and
// closes them unseen) has them destroyed in batches, each after a rescan
// of its fds, so that no one rescan destroys a second's worth at once.
TEST(Monitor, UnlinkedFilesOfALiveProcessGoInBatchesBetweenSamples) {
  MonitorOptions opts;
  opts.reconcile_every = std::chrono::hours(1);
  opts.light_reconcile_every = opts.reconcile_every;
  opts.sample_every = std::chrono::hours(1); // no sample: only the batches
  SHMBPF_MONITOR(m, opts);
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-batch-" + std::to_string(getpid())));
  const std::string dir = scratch.path();
  // More than two batches (4,096 each): a batch counts the unlinked files of
  // every process (tests running alongside, another shmbpf's), so the first
  // may take fewer of this child's than 4,096; the second takes the rest.
  // The child goes in chunks, each after the model has read the one before:
  // a slow build (TSan) must not lose records of a burst the ring cannot
  // hold, and a chunk is still far faster than a sample.
  constexpr int kFiles = 9000;
  constexpr int kChunk = 500;
  int step[2];
  ASSERT_EQ(pipe(step), 0);
  Child child = spawn("mon-batch", [&] {
    close(step[1]);
    char c;
    for (int i = 0; i < kFiles; ++i) {
      if (i > 0 && i % kChunk == 0 && read(step[0], &c, 1) != 1)
        return 3;
      std::string p = scratch.file(i);
      int fd = open(p.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      if (fd < 0 || close(fd) != 0 || unlink(p.c_str()) != 0)
        return 1;
    }
    return read(step[0], &c, 1) == 1 ? 0 : 2; // live on until told
  });
  close(step[0]);
  child.start();
  auto creates = [&](const Engine &e) -> int64_t {
    auto p = e.process(static_cast<uint32_t>(child.pid));
    return p ? static_cast<int64_t>(p->creates) : 0;
  };
  for (int done = kChunk; done < kFiles; done += kChunk) {
    ASSERT_TRUE(pump_until(
        *m, [&](const Engine &e) { return creates(e) >= done; }, 20s))
        << creates(m->engine()) << " of " << done << " created";
    ASSERT_EQ(write(step[1], "c", 1), 1);
  }
  // Its files the model has seen go (not every process's: tests running
  // alongside remove files too).
  auto gone = [&](const Engine &e) -> int64_t {
    return creates(e) - static_cast<int64_t>(files_in(e, dir));
  };
  // Alive, so only a rescan of its fds can tell the files are closed.
  EXPECT_TRUE(pump_until(
      *m, [&](const Engine &e) { return gone(e) >= 4096; }, 10s))
      << gone(m->engine()) << " gone";
  EXPECT_EQ(m->stats().lost, 0u);
  EXPECT_EQ(m->stats().reconciles, 1u); // the bootstrap only
  ASSERT_EQ(write(step[1], "x", 1), 1);
  close(step[1]);
  EXPECT_EQ(child.wait(), 0);
}

} // namespace
} // namespace shmbpf::test

namespace shmbpf::test {
namespace {

// The inodes of the regular files under dir (test's own walk).
std::set<uint64_t> inodes_under(const std::string &dir) {
  std::set<uint64_t> out;
  for (const auto &e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink()) {
      struct stat st {};
      if (::lstat(e.path().c_str(), &st) == 0)
        out.insert(st.st_ino);
    }
  return out;
}

// The Monitor builds its tables from a full scan made while the probe
// loads, and trusts it when a listing made once attached (directory entries
// only) finds the same files: the two must agree whenever nothing changed,
// whatever the directory holds.
TEST(Monitor, ListingAfterAttachAgreesWithTheFullScan) {
  ScratchDir scratch;
  ASSERT_TRUE(scratch.make("/dev/shm/shmbpf-mon-agree-" + std::to_string(getpid())));
  const std::string dir = scratch.path();
  std::string deep = dir;
  for (int d = 0; d < 4; ++d) { // down to depth 5 under /dev/shm
    deep += "/d" + std::to_string(d);
    ASSERT_EQ(mkdir(deep.c_str(), 0700), 0);
    ASSERT_EQ(close(open((deep + "/f").c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  }
  for (int i = 0; i < 50; ++i)
    ASSERT_EQ(close(open((dir + "/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  ASSERT_EQ(link((dir + "/f0").c_str(), (dir + "/hardlink").c_str()), 0);
  ASSERT_EQ(symlink((dir + "/f1").c_str(), (dir + "/symlink").c_str()), 0);
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);

  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  const uint32_t dev = kernel_dev(st.st_dev);
  const std::set<uint64_t> mine = inodes_under(dir);
  auto ours = [&](std::vector<SeedKey> keys) {
    std::erase_if(keys, [&](const SeedKey &k) { return k.dev != dev || !mine.count(k.ino); });
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  const auto namespaces = scan_mount_namespaces();
  const auto listed = ours(list_filesystems(namespaces));
  const auto scanned = ours(seed_keys(scan_system(namespaces).filesystems));
  scratch.remove();
  // 50 files and the hard link's second name at depth 2 (/dev/shm's files
  // are at 1), and one file at each of the depths 3 to 6.
  EXPECT_EQ(listed.size(), 50u + 1 + 4);
  EXPECT_EQ(listed, scanned);
}

// A file made and a file removed while the probe loads (after the first
// scan, before attach): the listing after attach sees the change, and that
// filesystem is scanned again.
TEST(Monitor, FilesMadeOrRemovedWhileLoadingAreInTheTables) {
  const std::string made = "/dev/shm/shmbpf-mon-made-" + std::to_string(getpid());
  const std::string gone = "/dev/shm/shmbpf-mon-gone-" + std::to_string(getpid());
  int fd = open(gone.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  MonitorOptions opts;
  opts.probe.before_attach = [&] {
    int f = open(made.c_str(), O_CREAT | O_WRONLY, 0600);
    if (f >= 0) {
      EXPECT_EQ(ftruncate(f, 12288), 0);
      close(f);
    }
    unlink(gone.c_str());
  };
  {
    SHMBPF_MONITOR(m, opts);
    EXPECT_GE(m->stats().start_rescans, 1u); // /dev/shm; others may change too
    auto s = by_path(m->engine(), made);
    ASSERT_TRUE(s) << "made while loading, not in the tables";
    EXPECT_EQ(s->size, 12288u);
    EXPECT_FALSE(by_path(m->engine(), gone)) << "removed while loading, still in the tables";
  }
  unlink(made.c_str());
  unlink(gone.c_str());
}

} // namespace
} // namespace shmbpf::test
