// Each container's memory cgroup in the live model (live/container_memory),
// with real cgroups laid out as the runtimes lay them out, on cgroup v1 (the
// memory controller of a hybrid host) and v2 (the VM guests): a container
// whose process holds 20 MiB in a file of a tmpfs shows 20 MiB (within 10%)
// of shared memory, its limit, and keeps showing them once that process is
// gone, as long as the file pins its pages; a pod's memory-backed emptyDir
// knows the room left to the pod's limit, under either cgroup driver.
#include "container_cgroups.hpp"
#include "harness.hpp"
#include "monitor_harness.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

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

// A child in the container's cgroups holding a file of bytes, filled;
// pid 0 when it could not.
Child hold_in(const ContainerCgroups &cg, const std::string &file, uint64_t bytes) {
  int ready[2];
  if (pipe(ready) != 0)
    return Child{};
  Child holder = spawn("ctr-holder", [&] {
    close(ready[0]);
    if (!cg.enter())
      return 10;
    const int fd = open(file.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0)
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
  const bool filled = read(ready[0], &c, 1) == 1;
  close(ready[0]);
  if (!filled) {
    holder.wait();
    return Child{};
  }
  return holder;
}

TEST(ContainerMemory, AContainerHolding20MiBShowsItAsItsShmem) {
  const std::string id = ContainerCgroups::random_id();
  ContainerCgroups cg;
  if (const std::string failed =
          cg.create("ctr-memory", {"shmbpf-ctrmem.slice", "docker-" + id + ".scope"}, 1, kLimit);
      !failed.empty())
    GTEST_SKIP() << "no memory cgroup with a limit: " << failed;
  TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=64m"));
  const std::string file = tmpfs.dir() + "/held";
  SHMBPF_MONITOR(m, MonitorOptions{});
  Child holder = hold_in(cg, file, kHeld);
  ASSERT_GT(holder.pid, 0) << "the holder did not fill its file";

  auto shows_it = [&](const Engine &e) {
    const auto memory = memory_of(e, id);
    return memory && memory->shmem >= kHeld * 9 / 10;
  };
  const bool seen = pump_until(*m, shows_it, 10s);
  kill(holder.pid, SIGKILL);
  holder.wait();
  ASSERT_TRUE(seen) << "the container's memory was never read as holding the file";
  const CgroupMemory memory = *memory_of(m->engine(), id);
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

// A pod's memory-backed emptyDir as kubelet mounts it, filled by one of
// the pod's containers under the cgroup driver's layout: its room is what
// the pod's cgroup has left of the pod's limit.
void expect_empty_dir_room(bool systemd) {
  const std::string h = ContainerCgroups::random_id();
  const std::string uid = h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" +
                          h.substr(16, 4) + "-" + h.substr(20, 12);
  std::string under = uid;
  std::replace(under.begin(), under.end(), '-', '_');
  const std::string id = ContainerCgroups::random_id();
  const std::vector<std::string> levels =
      systemd ? std::vector<std::string>{"kubepods.slice", "kubepods-besteffort.slice",
                                         "kubepods-besteffort-pod" + under + ".slice",
                                         "cri-containerd-" + id + ".scope"}
              : std::vector<std::string>{"kubepods", "besteffort", "pod" + uid, id};
  ContainerCgroups cg;
  if (const std::string failed = cg.create("pod-memory", levels, 2, kLimit); !failed.empty())
    GTEST_SKIP() << "no memory cgroup with a limit: " << failed;
  TmpfsMount volume;
  ASSERT_TRUE(volume.mount("size=64m", "/pods/" + uid + "/volumes/kubernetes.io~empty-dir/cache"));
  SHMBPF_MONITOR(m, MonitorOptions{});
  Child holder = hold_in(cg, volume.dir() + "/held", kHeld);
  ASSERT_GT(holder.pid, 0) << "the holder did not fill its file";

  auto usage = [&](const Engine &e) {
    for (MountUsage &u : e.mounts())
      if (u.mount.mountpoint == volume.dir())
        return std::optional<MountUsage>(std::move(u));
    return std::optional<MountUsage>();
  };
  const bool seen = pump_until(
      *m,
      [&](const Engine &e) {
        const auto u = usage(e);
        return u && u->memory_room && *u->memory_room <= kLimit - kHeld * 9 / 10;
      },
      10s);
  kill(holder.pid, SIGKILL);
  holder.wait();
  ASSERT_TRUE(seen) << "the volume never had the room to its pod's limit";
  const MountUsage u = *usage(m->engine());
  EXPECT_EQ(u.container.id, uid);
  EXPECT_EQ(u.container.pod_uid, uid);
  // The file, and what else the holder had charged (a few pages).
  EXPECT_GE(*u.memory_room, kLimit - kHeld * 3 / 2);
}

TEST(ContainerMemory, APodsEmptyDirHasTheRoomToThePodsLimitUnderTheCgroupfsDriver) {
  expect_empty_dir_room(false);
}

TEST(ContainerMemory, APodsEmptyDirHasTheRoomToThePodsLimitUnderTheSystemdDriver) {
  expect_empty_dir_room(true);
}

} // namespace
} // namespace shmbpf::test
