// Kernel tests of OOM kills: a child in a memory cgroup with a 32 MiB limit
// maps a 64 MiB file of a tmpfs and touches every page, until the kernel
// kills it. The oom event names the victim and carries what its cgroup
// held (its shared memory, its limit); the live model names the file.
#include "container_cgroups.hpp"
#include "harness.hpp"
#include "monitor_harness.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kLimit = 32 * kMiB;
constexpr uint64_t kFile = 64 * kMiB;

// Touches one byte of every page of the mapping. Left uninstrumented: a
// sanitizer's store check writes its own shadow page for each page
// touched, charged to the same cgroup, and under TSan the file's pages were
// then only half of what the cgroup held at the kill.
__attribute__((no_sanitize("address", "thread"))) void touch_every_page(volatile char *p,
                                                                        uint64_t bytes) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (uint64_t off = 0; off < bytes; off += page)
    p[off] = 1;
}

// In a child: joins the cgroup and fills file through a mapping. The exit
// status says which step failed if the kernel does not kill it.
int fill_in(const ContainerCgroups &cg, const std::string &file) {
  if (!cg.enter())
    return 1;
  const int fd = open(file.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(kFile)) != 0)
    return 2;
  auto *p =
      static_cast<volatile char *>(mmap(nullptr, kFile, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (p == MAP_FAILED)
    return 3;
  touch_every_page(p, kFile);
  return 4; // should have been killed before
}

// The cgroup, or the test is skipped: not a BPF failure (a v2 host whose
// root does not hand the memory controller down has no place for it).
#define OOM_CGROUP(cg)                                                                             \
  ContainerCgroups cg;                                                                             \
  if (const std::string failed = cg.create("oom-test", {"limited", "inner"}, 0, kLimit);           \
      !failed.empty())                                                                             \
  GTEST_SKIP() << "no memory cgroup with a limit: " << failed

void expect_killed(const Child &c) {
  ASSERT_TRUE(WIFSIGNALED(c.status)) << "exit status " << WEXITSTATUS(c.status);
  EXPECT_EQ(WTERMSIG(c.status), SIGKILL);
}

// After the victim is reaped no /proc entry leads to its cgroup: the
// record's memory cgroup id (its directory's inode) does.
TEST(OomKill, AMemoryCgroupIsFoundByItsId) {
  OOM_CGROUP(cg);
  struct stat st {};
  ASSERT_EQ(stat(cg.memory_dir(1).c_str(), &st), 0);
  const auto dirs = find_memory_cgroup(st.st_ino, read_mountinfo(0));
  ASSERT_TRUE(dirs);
  EXPECT_EQ(dirs->v1, cg.v1());
  ASSERT_GE(dirs->dirs.size(), 3u); // inner, the limited one, ..., the root
  EXPECT_EQ(dirs->dirs[0], cg.memory_dir(1) + "/");
  const auto memory = read_cgroup_memory(*dirs);
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->limit.bytes, kLimit);
  EXPECT_EQ(memory->shmem, 0u);
  EXPECT_FALSE(find_memory_cgroup(st.st_ino, read_mountinfo(0), 1)); // not within one directory
  EXPECT_FALSE(find_memory_cgroup(0, read_mountinfo(0)));
}

TEST(OomKill, TheEventNamesTheVictimAndWhatItsCgroupHeld) {
  OOM_CGROUP(cg);
  TmpfsMount tmpfs; // its pages go with it, before the cgroup
  ASSERT_TRUE(tmpfs.mount("size=128m"));
  SHMBPF_COLLECTOR(col);
  const std::string file = tmpfs.dir() + "/oom-fill";
  const Child c = run_child("oom-filler", [&] { return fill_in(cg, file); });
  expect_killed(c);

  const auto kills = col->wait_for(
      [&](const Event &e) { return e.type == EventType::oom && e.target_pid == uint32_t(c.pid); });
  ASSERT_EQ(kills.size(), 1u);
  const Event &e = kills[0];
  // A cgroup's OOM runs in the task whose charge failed: the filler.
  EXPECT_EQ(e.pid, uint32_t(c.pid));
  EXPECT_EQ(e.comm, "oom-filler");
  struct stat st {};
  ASSERT_EQ(stat(cg.memory_dir(1).c_str(), &st), 0);
  EXPECT_EQ(e.memcg_id, st.st_ino);
  ASSERT_TRUE(e.memcg) << "the victim's memory cgroup was not read";
  EXPECT_EQ(e.memcg->limit.bytes, kLimit);
  // Most of the charge was the file's pages, which outlive the victim.
  EXPECT_GE(e.memcg->shmem, kLimit / 2);
  EXPECT_LE(e.memcg->shmem, kLimit);
  EXPECT_LE(e.memcg->usage, kLimit);
  if (e.victim_mem) {
    EXPECT_EQ(e.target_comm, "oom-filler");
    EXPECT_EQ(e.target_uid, getuid());
    // The kernel's per-CPU counters of mapped pages run a little off.
    EXPECT_GE(e.victim_shmem_rss, kLimit / 2);
    EXPECT_LE(e.victim_shmem_rss, kLimit + kLimit / 8);
  } else {
    EXPECT_EQ(e.target_comm, "");
    EXPECT_EQ(e.victim_shmem_rss, 0u);
  }
}

TEST(OomKill, TheModelNamesTheFileThatFilledTheCgroup) {
  OOM_CGROUP(cg);
  TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=128m"));
  SHMBPF_MONITOR(m, MonitorOptions{});
  const std::string file = tmpfs.dir() + "/oom-fill";
  const Child c = run_child("oom-filler", [&] { return fill_in(cg, file); });
  expect_killed(c);

  // The victim's exit names it on kernels whose record does not. Tests
  // running alongside have kills of their own: this one is by its pid.
  auto ours = [&](const Engine &e) {
    std::vector<OomKill> found;
    for (OomKill &k : e.oom_kills_since(0))
      if (k.pid == uint32_t(c.pid))
        found.push_back(std::move(k));
    return found;
  };
  ASSERT_TRUE(pump_until(*m, [&](const Engine &e) {
    const auto kills = ours(e);
    return !kills.empty() && !kills.back().comm.empty();
  }));
  const auto kills = ours(m->engine());
  ASSERT_EQ(kills.size(), 1u);
  const OomKill &k = kills[0];
  EXPECT_EQ(k.comm, "oom-filler");
  EXPECT_GE(m->engine().oom_kills(), 1u);
  ASSERT_TRUE(k.memory);
  EXPECT_EQ(k.memory->limit.bytes, kLimit);
  ASSERT_TRUE(k.shmem_share());
  EXPECT_GE(*k.shmem_share(), 0.5);
  // Faults filled it without an event: its pages were counted at the kill.
  ASSERT_FALSE(k.largest.empty());
  EXPECT_EQ(k.largest[0].path, file);
  EXPECT_GE(k.largest[0].bytes, kLimit / 2);
  EXPECT_LE(k.largest[0].bytes, kLimit);
  EXPECT_EQ(k.largest[0].size, kFile);
}

} // namespace
} // namespace shmbpf::test
