// Which memory cgroups a sample reads (live/container_memory): the host's,
// each container's through one of its processes until its directories are
// known, then those directories, until a read fails.
#include "live/container_memory.hpp"

#include "engine_fixture.hpp"

#include <gtest/gtest.h>

#include <string>

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

} // namespace
} // namespace shmbpf
