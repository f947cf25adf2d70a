// Which memory cgroups a sample reads (live/container_memory): the host's,
// each container's through one of its processes until its directories are
// known, then those directories, until a read fails.
#include "live/container_memory.hpp"

#include "engine_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

using namespace test;

const std::string kDockerId(64, 'd');

TEST(ContainerMemory, TheHostThenEachContainerThroughAProcessThenItsDirectories) {
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + kDockerId + ".scope");
  for (uint32_t pid : {501u, 500u}) {
    Event e = exec_of(pid, sec(1), "app");
    e.cgroup_id = 11;
    engine.apply(e);
  }
  ContainerMemory memory;
  auto jobs = memory.jobs(engine);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, "");
  EXPECT_EQ(jobs[1].id, kDockerId);
  EXPECT_EQ(jobs[1].pid, 500u); // the lowest
  EXPECT_FALSE(jobs[1].dirs);

  // The worker found them: kept, and reported by the engine.
  const MemoryCgroupDirs dirs{true, {"/sys/fs/cgroup/memory/docker/x/", "/sys/fs/cgroup/memory/"}};
  jobs[0].found = CgroupMemory{.shmem = 1, .usage = 2, .limit = {3}};
  jobs[1].dirs = dirs;
  jobs[1].found = CgroupMemory{.shmem = 20 << 20, .usage = 24 << 20, .limit = {32 << 20}};
  memory.apply(jobs, engine);
  for (const ContainerInfo &c : engine.containers(sec(2))) {
    ASSERT_TRUE(c.memory) << c.id;
    EXPECT_EQ(c.memory->shmem, c.id.empty() ? 1u : 20u << 20);
  }
  jobs = memory.jobs(engine);
  ASSERT_EQ(jobs.size(), 2u);
  ASSERT_TRUE(jobs[1].dirs);
  EXPECT_EQ(*jobs[1].dirs, dirs);

  // Its processes gone, it is still read where it was; once that fails,
  // it is forgotten (no process leads to it any more).
  engine.apply(exit_of(500, sec(3)));
  engine.apply(exit_of(501, sec(3)));
  jobs = memory.jobs(engine);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_TRUE(jobs[1].dirs);
  memory.apply(jobs, engine); // nothing found this time
  jobs = memory.jobs(engine);
  EXPECT_EQ(jobs.size(), 1u);
  for (const ContainerInfo &c : engine.containers(sec(4)))
    EXPECT_FALSE(c.memory) << c.id;
}

// A pod's own cgroup, above its container's, under either cgroup driver.
TEST(ContainerMemory, APodsCgroupIsTheAncestorThatNamesThePod) {
  const std::string uid = "1234abcd-5678-90ab-cdef-1234567890ab";
  std::string under = uid;
  std::replace(under.begin(), under.end(), '-', '_');
  const std::string m = "/sys/fs/cgroup/memory/";
  const MemoryCgroupDirs cgroupfs{true,
                                  {m + "kubepods/besteffort/pod" + uid + "/" + kDockerId + "/",
                                   m + "kubepods/besteffort/pod" + uid + "/",
                                   m + "kubepods/besteffort/", m + "kubepods/", m}};
  std::string found;
  auto pod = pod_cgroup_dirs(cgroupfs, &found);
  ASSERT_TRUE(pod);
  EXPECT_EQ(found, uid);
  EXPECT_TRUE(pod->v1);
  EXPECT_EQ(pod->dirs, (std::vector<std::string>(cgroupfs.dirs.begin() + 1, cgroupfs.dirs.end())));

  const std::string slice = "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/";
  const std::string pod_slice = slice + "kubepods-burstable-pod" + under + ".slice/";
  const MemoryCgroupDirs systemd{false,
                                 {pod_slice + "cri-containerd-" + kDockerId + ".scope/", pod_slice,
                                  slice, "/sys/fs/cgroup/kubepods.slice/", "/sys/fs/cgroup/"}};
  found.clear();
  pod = pod_cgroup_dirs(systemd, &found);
  ASSERT_TRUE(pod);
  EXPECT_EQ(found, uid);
  EXPECT_EQ(pod->dirs.front(), pod_slice);
  EXPECT_EQ(pod->dirs.size(), 4u);

  // Outside a pod, and a pod's own cgroup, have none.
  EXPECT_FALSE(pod_cgroup_dirs(
      MemoryCgroupDirs{true, {m + "docker/" + kDockerId + "/", m + "docker/", m}}, &found));
  EXPECT_FALSE(pod_cgroup_dirs(
      MemoryCgroupDirs{true, {cgroupfs.dirs.begin() + 1, cgroupfs.dirs.end()}}, &found));
  EXPECT_FALSE(pod_cgroup_dirs(MemoryCgroupDirs{}, &found));
}

// A container in a pod: once its directories are known, its pod's cgroup
// is read too, and what it holds goes to the engine by pod uid.
TEST(ContainerMemory, APodIsReadThroughItsContainers) {
  const std::string uid = "1234abcd-5678-90ab-cdef-1234567890ab";
  const std::string pod_dir = "/sys/fs/cgroup/memory/kubepods/besteffort/pod" + uid + "/";
  Engine engine;
  engine.set_cgroup_path(11, "/kubepods/besteffort/pod" + uid + "/" + kDockerId);
  Event e = exec_of(500, sec(1), "app");
  e.cgroup_id = 11;
  engine.apply(e);
  const std::string volume =
      "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/cache";
  engine.set_mount(tmpfs_mount(50, volume, 77, 64 << 20, 10 << 20));
  ContainerMemory memory;
  auto jobs = memory.jobs(engine);
  ASSERT_EQ(jobs.size(), 2u); // the host, the container through its process
  jobs[1].dirs = MemoryCgroupDirs{true,
                                  {pod_dir + kDockerId + "/", pod_dir,
                                   "/sys/fs/cgroup/memory/kubepods/besteffort/",
                                   "/sys/fs/cgroup/memory/kubepods/", "/sys/fs/cgroup/memory/"}};
  jobs[1].found = CgroupMemory{.shmem = 1, .usage = 2, .limit = {3}};
  memory.apply(jobs, engine);

  jobs = memory.jobs(engine);
  ASSERT_EQ(jobs.size(), 3u);
  const MemoryJob &pod = jobs[2];
  EXPECT_EQ(pod.pod_uid, uid);
  EXPECT_EQ(pod.id, "");
  ASSERT_TRUE(pod.dirs);
  EXPECT_EQ(pod.dirs->dirs.front(), pod_dir);
  jobs[2].found = CgroupMemory{.shmem = 10 << 20, .usage = 20 << 20, .limit = {32 << 20}};
  memory.apply(jobs, engine);
  ASSERT_EQ(engine.mounts().size(), 1u);
  EXPECT_EQ(engine.mounts()[0].memory_room, uint64_t{12} << 20);

  // A round where the pod's cgroup could not be read forgets it.
  jobs = memory.jobs(engine);
  memory.apply(jobs, engine);
  EXPECT_FALSE(engine.mounts()[0].memory_room);
}

} // namespace
} // namespace shmbpf
