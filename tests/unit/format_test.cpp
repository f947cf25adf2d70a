// The cells every view shares (views/format.hpp).
#include "views/format.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace shmbpf {
namespace {

constexpr uint64_t sec = 1'000'000'000;

TEST(Format, HumanBytes) {
  EXPECT_EQ(human_bytes(0), "0B");
  EXPECT_EQ(human_bytes(512), "512B");
  EXPECT_EQ(human_bytes(1024), "1.0K");
  EXPECT_EQ(human_bytes(64 * 1024), "64K");
  EXPECT_EQ(human_bytes(1024 * 1024), "1.0M");
  EXPECT_EQ(human_bytes(1536 * 1024), "1.5M");
  EXPECT_EQ(human_bytes(3ull << 30), "3.0G");
  EXPECT_EQ(human_bytes(UINT64_MAX), "16E");
}

TEST(Format, HumanAge) {
  EXPECT_EQ(human_age(std::nullopt), "?");
  EXPECT_EQ(human_age(0), "0s");
  EXPECT_EQ(human_age(5), "5s");
  EXPECT_EQ(human_age(180), "3m");
  EXPECT_EQ(human_age(2 * 3600 + 59), "2h");
  EXPECT_EQ(human_age(4 * 86400), "4d");
}

TEST(Format, RatesPercentsAndLimits) {
  EXPECT_EQ(rate_text(0.04), "0");
  EXPECT_EQ(rate_text(2.5), "2.5");
  EXPECT_EQ(rate_text(12.4), "12");
  EXPECT_EQ(rate_text(NAN), "0");
  EXPECT_EQ(bytes_rate_text(1 << 20, true), "+1.0M/s");
  EXPECT_EQ(bytes_rate_text(-4096, true), "-4.0K/s");
  EXPECT_EQ(bytes_rate_text(4096, false), "4.0K/s");
  EXPECT_EQ(bytes_rate_text(0.5, true), "0/s");
  EXPECT_EQ(percent_text(93.75), "93.8%");
  EXPECT_EQ(percent_text(std::nullopt), "-");
  EXPECT_EQ(percent_text(INFINITY), "-");
  EXPECT_EQ(size_limit_text(0), "unlimited");
  EXPECT_EQ(size_limit_text(64ull << 20), "64M");
}

TEST(Format, NamesAreEscapedAndIdsShortened) {
  EXPECT_EQ(or_dash(""), "-");
  EXPECT_EQ(or_dash("a\x1b[2J"), "a\\x1b[2J");
  EXPECT_EQ(short_id(""), "-");
  EXPECT_EQ(short_id("0123456789abcdef"), "0123456789ab");
  EXPECT_EQ(container_label(""), "host");
  EXPECT_EQ(container_label("0123456789abcdef"), "0123456789ab");
}

TEST(Format, SegmentCells) {
  SegmentInfo s;
  s.created_ns = 100 * sec;
  EXPECT_EQ(age_cell(s, 400 * sec), "5m");
  s.age_ns = 7 * sec; // set by the query: wins over the creation time
  EXPECT_EQ(age_cell(s, 400 * sec), "7s");
  EXPECT_EQ(age_cell(SegmentInfo{}, 400 * sec), "?");

  EXPECT_EQ(creator_cell(s.creator), "?");
  s.creator = {};
  s.creator.pid = 42;
  s.creator.comm = "py\nthon";
  s.creator.known = true;
  EXPECT_EQ(creator_cell(s.creator), "42/py\\nthon");
  s.creator.exited = true;
  EXPECT_EQ(creator_cell(s.creator), "42/py\\nthon (exited)");

  EXPECT_EQ(holders_cell(s), "-");
  s.nattch = 2;
  EXPECT_EQ(holders_cell(s), "2 attached");
  s.holders = {1, 2, 3, 4, 5};
  EXPECT_EQ(holders_cell(s), "1,2,3,+2");

  EXPECT_EQ(state_cell(s), "linked");
  s.orphan = true;
  s.state = SegmentState::unlinked;
  EXPECT_EQ(state_cell(s), "unlinked orphan");
}

// An OOM kill in a line: who, what its cgroup held against its limit, and
// the file that took most of it.
TEST(Format, OomKillText) {
  OomKill k;
  k.ts_ns = sec;
  k.pid = 4321;
  k.comm = "python3";
  EXPECT_EQ(oom_kill_text(k, 3 * sec), "2s ago, pid 4321 (python3): memory cgroup not read");
  k.memory = CgroupMemory{.shmem = 26u << 20, .usage = 32u << 20, .limit = {32u << 20}};
  k.largest = {{"/dev/shm/torch_1_2_3", 25u << 20, 64u << 20}};
  EXPECT_EQ(oom_kill_text(k, 3 * sec), "2s ago, pid 4321 (python3): shmem 26M of limit 32M (81%), "
                                       "largest /dev/shm/torch_1_2_3 (25M)");
  // In a container, unnamed victim; on a host out of memory, of the usage.
  k.container.id = std::string(64, 'c');
  k.container.name = "trainer";
  k.comm.clear();
  k.memory->limit = {};
  k.largest.clear();
  EXPECT_EQ(oom_kill_text(k, 3 * sec),
            "2s ago, container trainer (host pid 4321) (?): shmem 26M of usage 32M (81%)");
  k.largest = {{"/dev/shm/mapped", 0, 64u << 20}}; // pages never counted
  EXPECT_EQ(oom_kill_text(k, 3 * sec), "2s ago, container trainer (host pid 4321) (?): shmem 26M "
                                       "of usage 32M (81%), largest /dev/shm/mapped (size 64M)");
  k.largest = {{"/dev/shm/\x1b[2J", 1, 1}};
  EXPECT_EQ(oom_kill_text(k, 3 * sec).find('\x1b'), std::string::npos);
}

// Which limit a container's /dev/shm meets first, and the size it needs.
TEST(Format, OomBeforeFullAndTheRightSize) {
  MountUsage m;
  m.mount.mountpoint = "/dev/shm";
  m.mount.size_limit = 64u << 20;
  m.mount.used_bytes = 10u << 20;
  EXPECT_FALSE(oom_before_full(m)); // no memory limit known
  m.memory_room = 20u << 20;        // 20 MiB to the limit, 54 MiB to full
  EXPECT_TRUE(oom_before_full(m));
  m.memory_room = 60u << 20;
  EXPECT_FALSE(oom_before_full(m));
  m.mount.size_limit = 0; // an unlimited tmpfs only meets the memory limit
  EXPECT_TRUE(oom_before_full(m));

  // The host's mounts have no size to suggest.
  m.peak_used_bytes = 40u << 20;
  EXPECT_FALSE(right_size(m));
  EXPECT_EQ(right_size_text(m), "-");
  m.container.id = std::string(64, 'c');
  EXPECT_EQ(right_size(m), uint64_t{50} << 20); // 40 MiB and a quarter
  EXPECT_EQ(right_size_text(m), "--shm-size=50m");
  m.peak_used_bytes = 1;
  EXPECT_EQ(right_size_text(m), "--shm-size=1m");
  // A pod's container: Kubernetes sizes a /dev/shm as an emptyDir there.
  m.container.pod_uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  EXPECT_EQ(right_size_text(m), "sizeLimit=1Mi");
  m.container.pod_uid.clear();
  // The runtime's other tmpfs mounts (its /dev) are not sized by users.
  m.mount.mountpoint = "/dev";
  EXPECT_FALSE(right_size(m));
  m.mount.mountpoint = "/var/lib/kubelet/pods/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/volumes/"
                       "kubernetes.io~empty-dir/cache";
  m.peak_used_bytes = (100u << 20) + 1;
  EXPECT_EQ(right_size_text(m), "sizeLimit=126Mi");
}

TEST(Format, MountsNearlyFullOrFillingSoonAlert) {
  MountUsage m;
  EXPECT_FALSE(mount_alert(m));
  m.percent = 90.5;
  EXPECT_TRUE(mount_alert(m));
  m.percent = 50;
  m.seconds_to_full = 3599;
  EXPECT_TRUE(mount_alert(m));
  EXPECT_EQ(seconds_to_full(m), 3599u);
  m.seconds_to_full = 7200;
  EXPECT_FALSE(mount_alert(m));
  m.seconds_to_full = -1;
  EXPECT_EQ(seconds_to_full(m), std::nullopt);
  // Its owner's memory limit within the hour stands out as well.
  m.seconds_to_memory_limit = 1800;
  EXPECT_TRUE(mount_alert(m));
  m.seconds_to_memory_limit = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(mount_alert(m));
}

} // namespace
} // namespace shmbpf
