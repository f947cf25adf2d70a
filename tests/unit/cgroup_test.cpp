// /proc/<pid>/cgroup on cgroup v2, hybrid and v1-only hosts: the lines, the
// path that tells a process's container, and where its memory limit is.
#include "facts/scan.hpp"
#include "model/containers.hpp"
#include "sources/cgroup.hpp"
#include "sources/mountinfo.hpp"

#include "runtime_dir.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

const std::string kId = "b5cef74f6831d2eeb1f503f3496dcabc751302bd5cdeb1939dbd4066e7c77c4e";

// A docker container (cgroupfs driver) on this project's test machine, a
// hybrid host: every v1 hierarchy and the unified one.
std::string hybrid_container() {
  std::string t;
  for (const char *h : {"9:name=systemd", "8:pids", "7:blkio", "6:freezer", "5:devices", "4:memory",
                        "3:cpuset", "2:cpuacct", "1:cpu", "0:"})
    t += std::string(h) + ":/docker/" + kId + "\n";
  return t;
}

// A process of the same machine that no manager put in a v2 cgroup.
const char *kHybridHost = "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n"
                          "4:memory:/process_api/892017c335a2fab0049691d86f7a6980\n"
                          "3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n";

TEST(CgroupLines, ParsesEveryField) {
  const auto lines = parse_cgroup_lines("12:cpu,cpuacct:/user.slice\n"
                                        "1:name=systemd:/a:b/c\n" // a colon in a cgroup's name
                                        "0::/\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].hierarchy, 12u);
  EXPECT_EQ(lines[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(lines[0].path, "/user.slice");
  EXPECT_TRUE(lines[0].has("cpuacct"));
  EXPECT_FALSE(lines[0].has("cpu,cpuacct"));
  EXPECT_FALSE(lines[0].v2());
  EXPECT_EQ(lines[1].controllers, (std::vector<std::string>{"name=systemd"}));
  EXPECT_EQ(lines[1].path, "/a:b/c");
  EXPECT_TRUE(lines[2].v2());
  EXPECT_EQ(lines[2].path, "/");
  // No trailing newline; malformed lines skipped.
  const auto odd =
      parse_cgroup_lines("x:memory:/a\n3:memory\n:memory:/b\n4:memory:rel\n\n5:pids:/c");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].hierarchy, 5u);
  EXPECT_EQ(odd[0].path, "/c");
  EXPECT_TRUE(parse_cgroup_lines("").empty());
}

TEST(CgroupPath, V2Only) {
  const auto lines = parse_cgroup_lines("0::/system.slice/docker-" + kId + ".scope\n");
  EXPECT_EQ(process_cgroup_path(lines), "/system.slice/docker-" + kId + ".scope");
  EXPECT_EQ(process_cgroup_path(parse_cgroup_lines("0::/\n")), "/");
}

TEST(CgroupPath, HybridContainerAndHost) {
  const auto path = process_cgroup_path(parse_cgroup_lines(hybrid_container()));
  EXPECT_EQ(path, "/docker/" + kId);
  auto c = container_from_cgroup_path(*path);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, kId);
  EXPECT_EQ(c->runtime, "docker");
  // v2 says "/", memory a deeper path: that one, a host cgroup all the same.
  const auto host = process_cgroup_path(parse_cgroup_lines(kHybridHost));
  EXPECT_EQ(host, "/process_api/892017c335a2fab0049691d86f7a6980");
  EXPECT_FALSE(container_from_cgroup_path(*host));
  // A deeper v2 line wins over v1.
  EXPECT_EQ(process_cgroup_path(parse_cgroup_lines("4:memory:/docker/x\n0::/user.slice\n")),
            "/user.slice");
}

TEST(CgroupPath, V1OnlyDockerCgroupfs) {
  const std::string text = "11:pids:/docker/" + kId + "\n4:memory:/docker/" + kId +
                           "\n1:name=systemd:/docker/" + kId + "\n";
  const auto path = process_cgroup_path(parse_cgroup_lines(text));
  EXPECT_EQ(path, "/docker/" + kId);
  ASSERT_TRUE(container_from_cgroup_path(*path));
  EXPECT_EQ(container_from_cgroup_path(*path)->id, kId);
}

TEST(CgroupPath, V1OnlyDockerSystemd) {
  // The systemd driver's scope in name=systemd; memory says the same slice
  // with another name on some hosts: name=systemd comes first.
  const std::string text = "12:memory:/system.slice/docker-" + kId +
                           ".scope\n"
                           "5:cpu,cpuacct:/system.slice/docker-" +
                           kId +
                           ".scope\n"
                           "1:name=systemd:/system.slice/docker-" +
                           kId + ".scope\n";
  const auto path = process_cgroup_path(parse_cgroup_lines(text));
  EXPECT_EQ(path, "/system.slice/docker-" + kId + ".scope");
  ASSERT_TRUE(container_from_cgroup_path(*path));
  EXPECT_EQ(container_from_cgroup_path(*path)->runtime, "docker");
  // Without name=systemd: memory's; without either, the first deeper one.
  EXPECT_EQ(process_cgroup_path(parse_cgroup_lines("3:cpu:/a\n2:memory:/b\n1:name=systemd:/\n")),
            "/b");
  EXPECT_EQ(process_cgroup_path(parse_cgroup_lines("3:cpu:/\n2:pids:/p\n1:devices:/d\n")), "/p");
  EXPECT_EQ(process_cgroup_path(parse_cgroup_lines("3:cpu:/\n1:name=systemd:/\n")), "/");
  EXPECT_FALSE(process_cgroup_path({}));
}

TEST(CgroupPath, V1OnlyKubepods) {
  const std::string pod = "pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  const std::string dir = "/kubepods/burstable/" + pod + "/" + kId;
  const std::string text =
      "11:memory:" + dir + "\n7:cpu,cpuacct:" + dir + "\n1:name=systemd:" + dir + "\n";
  const auto path = process_cgroup_path(parse_cgroup_lines(text));
  EXPECT_EQ(path, dir);
  auto c = container_from_cgroup_path(*path);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pod_uid, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  EXPECT_EQ(c->id, kId);
}

TEST(MemoryLimit, ParsesV1AndV2Values) {
  EXPECT_EQ(parse_memory_limit("67108864\n")->bytes, 67108864u);
  EXPECT_EQ(parse_memory_limit("0")->bytes, 0u);
  EXPECT_FALSE(parse_memory_limit("max\n")->bytes);
  // v1's page-counter maximum and anything from 2^62 up: no limit.
  EXPECT_FALSE(parse_memory_limit("9223372036854771712\n")->bytes);
  EXPECT_FALSE(parse_memory_limit("4611686018427387904")->bytes);
  EXPECT_EQ(parse_memory_limit("4611686018427387903")->bytes, 4611686018427387903u);
  for (const char *bad : {"", "\n", "-1", "12k", "max max", "1 2", "18446744073709551616"})
    EXPECT_FALSE(parse_memory_limit(bad)) << bad;
}

TEST(MemoryLimit, TighterIsTheSmallest) {
  const MemoryLimit none, small{100}, big{200};
  EXPECT_EQ(tighter(none, small).bytes, 100u);
  EXPECT_EQ(tighter(big, none).bytes, 200u);
  EXPECT_EQ(tighter(big, small).bytes, 100u);
  EXPECT_EQ(tighter(small, big).bytes, 100u);
  EXPECT_FALSE(tighter(none, none).bytes);
}

// This machine's cgroup mounts (a hybrid host).
const char *kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(MemoryLimitFiles, HybridReadsV1Memory) {
  const auto mounts = parse_mountinfo(kHybridMounts);
  EXPECT_EQ(
      memory_limit_files(parse_cgroup_lines(hybrid_container()), mounts),
      (std::vector<std::string>{"/sys/fs/cgroup/memory/docker/" + kId + "/memory.limit_in_bytes",
                                "/sys/fs/cgroup/memory/docker/memory.limit_in_bytes",
                                "/sys/fs/cgroup/memory/memory.limit_in_bytes"}));
  // The controller's mount is told by its super options, not its place.
  auto moved = parse_mountinfo("41 31 0:38 / /cg2 rw - cgroup2 cgroup2 rw\n"
                               "32 31 0:29 / /cg/a rw - cgroup cgroup rw,cpu,cpuacct\n"
                               "35 31 0:32 / /cg/b rw - cgroup cgroup rw,xattr,memory\n");
  EXPECT_EQ(
      memory_limit_files(parse_cgroup_lines("4:memory:/x\n0::/y\n"), moved),
      (std::vector<std::string>{"/cg/b/x/memory.limit_in_bytes", "/cg/b/memory.limit_in_bytes"}));
  // memory named but its hierarchy not mounted: nothing, not v2's files.
  EXPECT_TRUE(memory_limit_files(parse_cgroup_lines("4:memory:/x\n0::/y\n"),
                                 parse_mountinfo("41 31 0:38 / /cg2 rw - cgroup2 cgroup2 rw\n"))
                  .empty());
}

TEST(MemoryLimitFiles, V2ReadsMemoryMax) {
  const auto mounts = parse_mountinfo("30 23 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime "
                                      "- cgroup2 cgroup2 rw,nsdelegate\n");
  const std::string scope = "/system.slice/docker-" + kId + ".scope";
  EXPECT_EQ(memory_limit_files(parse_cgroup_lines("0::" + scope + "\n"), mounts),
            (std::vector<std::string>{"/sys/fs/cgroup" + scope + "/memory.max",
                                      "/sys/fs/cgroup/system.slice/memory.max",
                                      "/sys/fs/cgroup/memory.max"}));
  EXPECT_EQ(memory_limit_files(parse_cgroup_lines("0::/\n"), mounts),
            (std::vector<std::string>{"/sys/fs/cgroup/memory.max"}));
  // Inside a cgroup namespace whose mount is of a subtree: up to its root.
  const auto sub =
      parse_mountinfo("30 23 0:27 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(
      memory_limit_files(parse_cgroup_lines("0::/kubepods/pod1/c1\n"), sub),
      (std::vector<std::string>{"/sys/fs/cgroup/c1/memory.max", "/sys/fs/cgroup/memory.max"}));
  // Outside of what the mount shows, or of the reader's cgroup namespace.
  EXPECT_TRUE(memory_limit_files(parse_cgroup_lines("0::/other\n"), sub).empty());
  EXPECT_TRUE(memory_limit_files(parse_cgroup_lines("0::/../../user.slice\n"), mounts).empty());
  // No cgroup2 mount, no lines.
  EXPECT_TRUE(memory_limit_files(parse_cgroup_lines("0::/a\n"), {}).empty());
  EXPECT_TRUE(memory_limit_files({}, mounts).empty());
}

TEST(MemoryCgroupDirs, SaysWhichVersionAndEndsInASlash) {
  const auto hybrid =
      memory_cgroup_dirs(parse_cgroup_lines(hybrid_container()), parse_mountinfo(kHybridMounts));
  EXPECT_TRUE(hybrid.v1);
  EXPECT_EQ(hybrid.dirs,
            (std::vector<std::string>{"/sys/fs/cgroup/memory/docker/" + kId + "/",
                                      "/sys/fs/cgroup/memory/docker/", "/sys/fs/cgroup/memory/"}));
  const auto v2 =
      memory_cgroup_dirs(parse_cgroup_lines("0::/a\n"),
                         parse_mountinfo("30 23 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"));
  EXPECT_FALSE(v2.v1);
  EXPECT_EQ(v2.dirs, (std::vector<std::string>{"/sys/fs/cgroup/a/", "/sys/fs/cgroup/"}));
}

// memory.stat as v1 (this machine's) and v2 kernels write it.
TEST(MemoryStat, ShmemOfTheCgroupAndItsDescendants) {
  // v1: the cgroup's own, then total_ (with its descendants), which wins.
  EXPECT_EQ(parse_memory_stat_shmem("cache 1\nrss 2\nshmem 4096\nmapped_file 0\n"
                                    "total_cache 1\ntotal_shmem 8192\n"),
            8192u);
  // v2: one hierarchical count.
  EXPECT_EQ(parse_memory_stat_shmem("anon 12288\nfile 26238976\nkernel 0\nshmem 26189824\n"
                                    "file_mapped 0\n"),
            26189824u);
  // Without a trailing newline; shmem_thp and the like are other lines.
  EXPECT_EQ(parse_memory_stat_shmem("shmem_thp 5\nshmem 7"), 7u);
  EXPECT_FALSE(parse_memory_stat_shmem(""));
  EXPECT_FALSE(parse_memory_stat_shmem("anon 1\nshmem_thp 5\n"));
  EXPECT_FALSE(parse_memory_stat_shmem("shmem x\nshmem -1\nshmem 1 2\nshmem\n"));
}

// The host's row: /proc/meminfo as the kernel writes it.
TEST(Meminfo, TheHostsShmemUsageAndMemory) {
  const auto m = parse_meminfo("MemTotal:        8000000 kB\nMemFree:         1000000 kB\n"
                               "MemAvailable:    6000000 kB\nBuffers:           12345 kB\n"
                               "Shmem:             25600 kB\nShmemHugePages:        0 kB\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->shmem, uint64_t{25600} * 1024);
  EXPECT_EQ(m->usage, uint64_t{2000000} * 1024);
  EXPECT_EQ(m->limit.bytes, uint64_t{8000000} * 1024);
  EXPECT_FALSE(parse_meminfo("MemTotal: 1 kB\nShmem: 1 kB\n")); // no MemAvailable
  EXPECT_FALSE(parse_meminfo("MemTotal: 1 kB\nMemAvailable: 1 kB\nShmem: x kB\n"));
  EXPECT_FALSE(parse_meminfo("MemTotal: 1 MB\nMemAvailable: 1 kB\nShmem: 1 kB\n"));
  EXPECT_FALSE(parse_meminfo("MemTotal: 99999999999999999999 kB\nMemAvailable: 1 kB\n"
                             "Shmem: 1 kB\n"));
}

// The host's top-level cgroups: the children of the memory hierarchy's
// mount, as a v1 hierarchy's files give them (here in a directory that
// stands for the mount), by name; one whose files cannot be read (a v2
// child without the memory controller) is left out.
TEST(TopMemoryCgroups, EachChildOfTheHierarchysRootByName) {
  const RuntimeDir d;
  auto cgroup = [&](const std::string &dir, const std::string &usage, const std::string &limit) {
    d.write(d.root / dir / "memory.stat", "cache 1\nshmem 4096\ntotal_shmem 8192\n");
    d.write(d.root / dir / "memory.usage_in_bytes", usage + "\n");
    d.write(d.root / dir / "memory.limit_in_bytes", limit + "\n");
  };
  d.write(d.root / "memory.limit_in_bytes", "9223372036854771712\n");
  cgroup("user.slice", "1000", "9223372036854771712");
  cgroup("system.slice", "2000", "1048576");
  cgroup("kubepods", "3000", "9223372036854771712");
  d.write(d.root / "init.scope" / "cgroup.procs", "1\n"); // no memory files
  const std::string line =
      "40 30 0:38 / " + d.root.string() + " rw,nosuid - cgroup cgroup rw,memory\n";
  const auto top = read_top_memory_cgroups(parse_mountinfo(line));
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0], (NamedCgroupMemory{"/kubepods", {8192, 3000, {}}}));
  EXPECT_EQ(top[1], (NamedCgroupMemory{"/system.slice", {8192, 2000, {1048576}}}));
  EXPECT_EQ(top[2], (NamedCgroupMemory{"/user.slice", {8192, 1000, {}}}));
  EXPECT_EQ(read_top_memory_cgroups(parse_mountinfo(line), 2).size(), 2u);
  EXPECT_TRUE(read_top_memory_cgroups({}).empty()); // no hierarchy mounted
}

TEST(ScanCgroupId, V2IdElseThePathOnCgroupV1OnlyHosts) {
  const std::string docker = "/docker/" + std::string(64, 'a');
  EXPECT_EQ(scan_cgroup_id(4242, docker), 4242u); // v2 gave one: the kernel's
  const uint64_t v1 = scan_cgroup_id(0, docker);
  EXPECT_TRUE(is_path_cgroup_id(v1));
  EXPECT_EQ(v1, path_cgroup_id(docker));
  EXPECT_NE(v1, scan_cgroup_id(0, "/docker/" + std::string(64, 'b')));
  EXPECT_EQ(scan_cgroup_id(0, "/"), 0u);
  EXPECT_EQ(scan_cgroup_id(0, ""), 0u);
  // A v1-only host's text: "0::/" and the container in the v1 lines.
  const auto lines =
      parse_cgroup_lines("12:memory:" + docker + "\n1:name=systemd:" + docker + "\n0::/\n");
  EXPECT_EQ(process_cgroup_path(lines), docker);
}

} // namespace
} // namespace shmbpf
