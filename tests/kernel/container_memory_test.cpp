// Each container's memory cgroup in the live model (live/container_memory):
// a container (a docker-like cgroup for its identity, a memory cgroup with
// a limit) whose process holds 20 MiB in a file of a tmpfs shows 20 MiB
// (within 10%) of shared memory, its limit, and keeps showing them once
// that process is gone, as long as the file pins its pages.
#include "docker_cgroup.hpp"
#include "harness.hpp"
#include "memory_cgroup.hpp"
#include "monitor_harness.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <optional>
#include <string>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kLimit = 256 * kMiB;
constexpr uint64_t kHeld = 20 * kMiB;

std::optional<CgroupMemory> memory_of(const Engine &e, const std::string &id) {
  for (const ContainerInfo &c : e.containers(Monitor::now_ns()))
    if (c.id == id)
      return c.memory;
  return std::nullopt;
}

TEST(ContainerMemory, AContainerHolding20MiBShowsItAsItsShmem) {
  MemoryCgroup mem;
  if (const std::string failed = mem.create("ctr-memory", kLimit); !failed.empty())
    GTEST_SKIP() << "no memory cgroup with a limit: " << failed;
  if (!mem.v1())
    GTEST_SKIP() << "the memory controller is on cgroup v2: a process has one cgroup there, and "
                    "the VM layer checks it";
  DockerCgroup docker("shmbpf-ctrmem.slice");
  ASSERT_EQ(docker.create(), "") << "cannot create a cgroup v2 directory";
  TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=64m"));
  const std::string file = tmpfs.dir() + "/held";
  SHMBPF_MONITOR(m, MonitorOptions{});
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  Child holder = spawn("ctr-holder", [&] {
    close(ready[0]);
    if (!docker.enter() || !mem.enter())
      return 10;
    const int fd = open(file.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || fallocate(fd, 0, 0, static_cast<off_t>(kHeld)) != 0)
      return 11;
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
      return 12;
    pause();
    return 0;
  });
  close(ready[1]);
  holder.start();
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the holder did not fill its file";
  close(ready[0]);

  auto shows_it = [&](const Engine &e) {
    const auto memory = memory_of(e, docker.id());
    return memory && memory->shmem >= kHeld * 9 / 10;
  };
  const bool seen = pump_until(*m, shows_it, 10s);
  kill(holder.pid, SIGKILL);
  holder.wait();
  ASSERT_TRUE(seen) << "the container's memory was never read as holding the file";
  const CgroupMemory memory = *memory_of(m->engine(), docker.id());
  EXPECT_GE(memory.shmem, kHeld * 9 / 10);
  EXPECT_LE(memory.shmem, kHeld * 11 / 10);
  EXPECT_GE(memory.usage, memory.shmem);
  EXPECT_EQ(memory.limit.bytes, kLimit);
  // The host's row is the machine's memory.
  const auto host = memory_of(m->engine(), "");
  ASSERT_TRUE(host);
  EXPECT_TRUE(host->limit.bytes);

  // Its process gone, the file still pins the pages charged to it: the
  // next samples read the cgroup where it was.
  std::this_thread::sleep_for(2500ms);
  EXPECT_TRUE(pump_until(*m, shows_it, 5s));
}

} // namespace
} // namespace shmbpf::test
