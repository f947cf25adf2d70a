// The engine's summaries (model/engine_summaries.cpp): by process, by
// container (cgroup v1 and v2 ids, runtime names, pods and their volumes)
// and the host's totals.
#include "engine_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

namespace shmbpf {
namespace {

using namespace test;

TEST(Engine, ProcessAggregation) {
  Engine engine;
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(1)));
  engine.apply(create(100, 2, "/dev/shm/b", sec(2)));
  engine.apply(resize(100, 2, kMiB, kMiB, sec(2)));
  engine.apply(create(200, 3, "/dev/shm/c", sec(2)));
  engine.apply(resize(200, 3, 2 * kMiB, 2 * kMiB, sec(2)));
  engine.apply(open_sized(100, 3, "/dev/shm/c", sec(3), 2 * kMiB));
  engine.apply(memfd(100, 50, "ring", sec(3), 0));
  engine.apply(unlink_file(100, "/dev/shm/b", sec(4), 2));
  engine.apply(shmget(100, 1, 0x77, 4096, sec(4)));
  engine.apply(shmat(100, 1, 0x1000, sec(4)));

  auto procs = engine.processes(sec(4));
  ASSERT_EQ(procs.size(), 2u);
  const ProcessInfo &p = procs[0];
  EXPECT_EQ(p.pid, 100u);
  EXPECT_EQ(p.comm, "p100");
  EXPECT_EQ(p.segments_created, 4u); // a, b (unlinked, held), ring, the SysV segment
  EXPECT_EQ(p.bytes_created, 2 * kMiB);
  EXPECT_EQ(p.segments_held, 5u); // the same four and c
  EXPECT_EQ(p.bytes_held, 4 * kMiB);
  EXPECT_EQ(p.sysv_attachments, 1u);
  EXPECT_EQ(p.creates, 4u);
  EXPECT_EQ(p.unlinks, 1u);
  EXPECT_EQ(p.last_create_ns, sec(4));
  EXPECT_EQ(p.last_unlink_ns, sec(4));
  EXPECT_GT(p.create_rate, 0.3);
  EXPECT_LT(p.create_rate, 0.4); // 4 hits, tau 10 s: just under 0.4/s
  EXPECT_LT(engine.processes(sec(100))[0].create_rate, p.create_rate / 100);
  EXPECT_EQ(procs[1].pid, 200u);
  EXPECT_EQ(procs[1].segments_created, 1u);
  EXPECT_EQ(procs[1].segments_held, 1u);

  engine.apply(exit_of(100, sec(5)));
  auto p200 = engine.process(200);
  ASSERT_TRUE(p200);
  EXPECT_EQ(p200->segments_created, 1u);
  EXPECT_EQ(engine.processes().size(), 1u);
}

TEST(Engine, ContainerAggregation) {
  const std::string docker_id(64, 'a');
  const std::string cri_id(64, 'c');
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + docker_id + ".scope");
  engine.set_cgroup_path(12, "/kubepods.slice/kubepods-burstable.slice/"
                             "kubepods-burstable-pod1234abcd_5678_90ab_cdef_1234567890ab.slice/"
                             "cri-containerd-" +
                                 cri_id + ".scope");
  engine.set_cgroup_path(13, "/user.slice/user-1000.slice/session-2.scope");
  auto in = [](Event e, uint64_t cgroup) {
    e.cgroup_id = cgroup;
    return e;
  };
  engine.apply(in(create(100, 1, "/dev/shm/d1", sec(1)), 11));
  engine.apply(in(resize(100, 1, kMiB, kMiB, sec(1)), 11));
  engine.apply(in(exec_of(101, sec(1), "worker"), 11));
  engine.apply(in(create(200, 2, "/dev/shm/k1", sec(1)), 12));
  engine.apply(in(create(200, 3, "/dev/shm/k2", sec(1)), 12));
  engine.apply(in(resize(200, 3, 2 * kMiB, 2 * kMiB, sec(1)), 12));
  engine.apply(in(create(300, 4, "/dev/shm/h1", sec(1)), 13));
  engine.apply(in(open_file(101, 4, "/dev/shm/h1", sec(1)), 11));

  auto rows = engine.containers(sec(1));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].id, "");
  EXPECT_EQ(rows[0].runtime, "host");
  EXPECT_EQ(rows[0].processes, 1u);
  EXPECT_EQ(rows[0].segments, 1u);
  EXPECT_EQ(rows[1].id, docker_id);
  EXPECT_EQ(rows[1].runtime, "docker");
  EXPECT_EQ(rows[1].processes, 2u);
  EXPECT_EQ(rows[1].segments, 1u);
  EXPECT_EQ(rows[1].bytes, kMiB);
  EXPECT_EQ(rows[1].creates, 1u);
  EXPECT_EQ(rows[2].id, cri_id);
  EXPECT_EQ(rows[2].runtime, "containerd");
  EXPECT_EQ(rows[2].pod_uid, "1234abcd-5678-90ab-cdef-1234567890ab");
  EXPECT_EQ(rows[2].segments, 2u);
  EXPECT_EQ(rows[2].bytes, 2 * kMiB);

  // Segments keep their container after the creator exits.
  engine.apply(exit_of(200, sec(2)));
  EXPECT_EQ(engine.segment(file_key(2))->creator.container_id, cri_id);
  EXPECT_EQ(engine.containers()[2].processes, 0u);
  EXPECT_EQ(engine.containers()[2].segments, 2u);

  auto p = engine.process(100);
  EXPECT_EQ(p->container_id, docker_id);
  EXPECT_EQ(p->runtime, "docker");
  EXPECT_EQ(engine.process(300)->container_id, "");

  SegmentFilter by_short_id;
  by_short_id.container = docker_id.substr(0, 12);
  auto segs = engine.segments(by_short_id); // created in it, or held from it
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].path, "/dev/shm/d1");
  EXPECT_EQ(segs[1].path, "/dev/shm/h1");
  SegmentFilter host;
  host.container = "";
  segs = engine.segments(host);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].path, "/dev/shm/h1");

  EXPECT_TRUE(engine.unknown_cgroups().empty());
  engine.add_process(400, 1, 0, "new", 99, 0);
  EXPECT_EQ(engine.unknown_cgroups(), std::vector<uint64_t>{99});
}

TEST(EngineQueries, TotalsByKindOrphansRatesAndSigbus) {
  Engine engine = with_host_shm();
  engine.apply(create(100, 1, "/dev/shm/a", sec(1)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(1)));
  engine.apply(memfd(100, 2, "buf", sec(1), 0));
  engine.apply(unlink_file(100, "/dev/shm/a", sec(2)));
  engine.apply(create(200, 3, "/dev/shm/b", sec(2)));
  engine.apply(resize(200, 3, 2 * kMiB, 2 * kMiB, sec(2)));
  engine.apply(exit_of(200, sec(3)));
  Event bus = process_event(EventType::sigbus, 100, sec(3));
  bus.si_code = 2;
  engine.apply(bus);

  EngineTotals t = engine.totals(sec(100), sec(60));
  EXPECT_EQ(t.tmpfs.segments, 2u); // a (unlinked, held by 100) and b
  EXPECT_EQ(t.tmpfs.bytes, 3 * kMiB);
  EXPECT_EQ(t.memfd.segments, 1u);
  EXPECT_EQ(t.sysv.segments, 0u);
  EXPECT_EQ(t.orphans, 1u); // b: creator exited, nobody holds it
  EXPECT_EQ(t.orphan_bytes, 2 * kMiB);
  EXPECT_EQ(t.creates, 3u);
  EXPECT_EQ(t.unlinks, 1u);
  EXPECT_EQ(t.sigbus, 1u);
  // Rates survive the exit of the processes that made them.
  EXPECT_GT(engine.totals(sec(4), 0).create_rate, 0.0);
}

// A cgroup v1-only host: the scan names a process's cgroup by its v1 path
// (path_cgroup_id); the kernel's v2 id that its events carry is the v2
// root's and must not take the container away.
TEST(Engine, ACgroupV1PathIdOutlivesTheKernelsV2Id) {
  const std::string docker_id(64, 'd');
  const uint64_t v1 = path_cgroup_id("/docker/" + docker_id);
  ASSERT_TRUE(is_path_cgroup_id(v1));
  Engine engine;
  engine.set_cgroup_path(v1, "/docker/" + docker_id);
  engine.add_process(100, 1, 0, "app", v1, 0);
  Event e = create(100, 1, "/dev/shm/v1", sec(1));
  e.cgroup_id = 1; // the v2 root
  engine.apply(e);
  EXPECT_EQ(engine.process(100)->container_id, docker_id);
  EXPECT_EQ(engine.segment(file_key(1))->creator.container_id, docker_id);
  // Where the kernel's ids are real (v2), an event's id still moves a
  // process to its new cgroup.
  engine.set_cgroup_path(7, "/system.slice/x.service");
  engine.add_process(200, 1, 0, "svc", 7, 0);
  e = create(200, 2, "/dev/shm/v2", sec(1));
  e.cgroup_id = 8;
  engine.set_cgroup_path(8, "/system.slice/docker-" + docker_id + ".scope");
  engine.apply(e);
  EXPECT_EQ(engine.process(200)->container_id, docker_id);
}

// On a v1-only host a process forked after the last scan has no path-made
// id of its own: it starts in its parent's cgroups, and what it creates is
// its parent's container's, even when it exits before any rescan.
TEST(Engine, ACgroupV1ChildNoScanSawTakesItsParentsPathId) {
  const std::string docker_id(64, 'e');
  const uint64_t v1 = path_cgroup_id("/docker/" + docker_id);
  Engine engine;
  engine.set_cgroup_path(v1, "/docker/" + docker_id);
  engine.set_cgroup_path(1, "/");
  engine.add_process(100, 1, 0, "sh", v1, 0);
  Event e = create(101, 1, "/dev/shm/child", sec(1));
  e.ppid = 100;
  e.cgroup_id = 1; // the v2 root
  engine.apply(e);
  EXPECT_EQ(engine.process(101)->container_id, docker_id);
  Event gone = process_event(EventType::exit, 101, sec(2));
  gone.ppid = 100;
  gone.cgroup_id = 1;
  engine.apply(gone);
  EXPECT_EQ(engine.segment(file_key(1))->creator.container_id, docker_id);

  // A child of a process whose id is the kernel's keeps the kernel's.
  engine.add_process(200, 1, 0, "init", 1, 0);
  e = create(201, 2, "/dev/shm/host", sec(3));
  e.ppid = 200;
  e.cgroup_id = 1;
  engine.apply(e);
  EXPECT_EQ(engine.process(201)->container_id, "");
  EXPECT_EQ(engine.segment(file_key(2))->creator.container_id, "");
  // Nor does a process the engine knew already take its parent's.
  engine.add_process(300, 1, 0, "svc", 1, 0);
  e = create(300, 3, "/dev/shm/svc", sec(4));
  e.ppid = 100;
  e.cgroup_id = 1;
  engine.apply(e);
  EXPECT_EQ(engine.process(300)->container_id, "");
}

TEST(Engine, ContainerNamesOncePerIdAndOnEveryView) {
  const std::string docker_id(64, 'a');
  const std::string cri_id(64, 'c');
  const std::string pod = "1234abcd-5678-90ab-cdef-1234567890ab";
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + docker_id + ".scope");
  engine.set_cgroup_path(12, "/kubepods/burstable/pod" + pod + "/" + cri_id);
  engine.set_cgroup_path(13, "/user.slice");
  // Each container once, the host never.
  auto unnamed = engine.unnamed_containers();
  ASSERT_EQ(unnamed.size(), 2u);
  EXPECT_EQ(unnamed[0].id, docker_id);
  EXPECT_EQ(unnamed[1].id, cri_id);
  EXPECT_EQ(unnamed[1].pod_uid, pod);

  auto in = [](Event e, uint64_t cgroup) {
    e.cgroup_id = cgroup;
    return e;
  };
  engine.apply(in(create(100, 1, "/dev/shm/d1", sec(1)), 11));
  engine.apply(in(create(200, 2, "/dev/shm/k1", sec(1)), 12));
  engine.set_container_name(docker_id, ContainerName{"web-1", "", "", ""});
  engine.set_container_name(cri_id, ContainerName{"api", "api-6b9c", "shop", "other-uid"});
  EXPECT_TRUE(engine.unnamed_containers().empty());

  auto rows = engine.containers(sec(1));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].name, "web-1");
  EXPECT_EQ(rows[1].pod, "");
  EXPECT_EQ(rows[2].name, "api");
  EXPECT_EQ(rows[2].pod, "api-6b9c");
  EXPECT_EQ(rows[2].pod_namespace, "shop");
  EXPECT_EQ(rows[2].pod_uid, pod); // the cgroup's uid over the file's
  EXPECT_EQ(engine.segment(file_key(1))->container.name, "web-1");
  EXPECT_EQ(engine.process(200)->container_name, "api");
  EXPECT_EQ(engine.process(200)->pod_namespace, "shop");

  // A cgroup of a known container takes its name without a new lookup; a
  // container whose files said nothing is not looked up again.
  engine.set_cgroup_path(14, "/system.slice/docker-" + docker_id + ".scope/init");
  engine.set_container_name(std::string(64, 'e'), ContainerName{});
  engine.set_cgroup_path(15, "/system.slice/docker-" + std::string(64, 'e') + ".scope");
  EXPECT_TRUE(engine.unnamed_containers().empty());
  engine.apply(in(create(101, 3, "/dev/shm/d2", sec(2)), 14));
  EXPECT_EQ(engine.segment(file_key(3))->container.name, "web-1");

  // --container takes a name as well as an id prefix.
  SegmentFilter by_name;
  by_name.container = "api";
  auto segs = engine.segments(by_name);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].path, "/dev/shm/k1");
}

// A container's own /dev/shm fills towards two limits: its size and the
// container's memory limit, which its pages are charged to.
TEST(Engine, AContainersShmKnowsTheRoomToItsMemoryLimit) {
  const std::string id(64, 'a');
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + id + ".scope");
  engine.add_process(500, 1, 0, "app", 11, 7000);
  MountState shm = tmpfs_mount(kMntId, "/dev/shm", kDev, 64 * kMiB, 10 * kMiB);
  shm.mntns = 7000;
  engine.set_mount(shm);
  engine.sample_mounts(sec(100));
  for (int i = 1; i <= 4; ++i) {
    engine.apply(create(500, i, "/dev/shm/f" + std::to_string(i), sec(100 + i)));
    engine.apply(resize(500, i, kMiB, kMiB, sec(100 + i)));
    engine.sample_mounts(sec(100 + i));
  }
  auto m = engine.mounts();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].container.id, id);
  EXPECT_FALSE(m[0].memory_room); // not read yet
  EXPECT_EQ(m[0].peak_used_bytes, 14 * kMiB);
  // 32 MiB limit, 24 MiB charged: 8 MiB of room, at 1 MiB a second.
  engine.set_container_memory(
      id, CgroupMemory{.shmem = 14 * kMiB, .usage = 24 * kMiB, .limit = {32 * kMiB}});
  m = engine.mounts();
  ASSERT_TRUE(m[0].memory_room);
  EXPECT_EQ(*m[0].memory_room, 8 * kMiB);
  ASSERT_TRUE(m[0].seconds_to_memory_limit);
  EXPECT_NEAR(*m[0].seconds_to_memory_limit, 8.0, 1e-6);
  ASSERT_TRUE(m[0].seconds_to_full);
  EXPECT_NEAR(*m[0].seconds_to_full, 50.0, 1e-6);
  // Without a limit there is no room to tell.
  engine.set_container_memory(id, CgroupMemory{.shmem = 1, .usage = 2, .limit = {}});
  EXPECT_FALSE(engine.mounts()[0].memory_room);
}

TEST(Engine, EmptyDirVolumeBelongsToItsPod) {
  const std::string pod = "1234abcd-5678-90ab-cdef-1234567890ab";
  const std::string volume =
      "/var/lib/kubelet/pods/" + pod + "/volumes/kubernetes.io~empty-dir/cache";
  Engine engine;
  engine.set_mount(tmpfs_mount(50, volume, 77));
  engine.set_mount(tmpfs_mount(51, "/run/user/1000", 78));
  auto owner = [&](const std::string &mountpoint) {
    for (const MountUsage &m : engine.mounts())
      if (m.mount.mountpoint == mountpoint)
        return m.container;
    return ContainerRef{"missing", "", ""};
  };
  EXPECT_EQ(owner(volume), (ContainerRef{pod, "kubernetes", pod}));
  EXPECT_EQ(owner("/run/user/1000"), ContainerRef{});
  // Once one of its containers is named, the volume carries the pod's name.
  const std::string ctr(64, 'c');
  engine.set_cgroup_path(12, "/kubepods/burstable/pod" + pod + "/" + ctr);
  engine.set_container_name(ctr, ContainerName{"api", "api-6b9c", "shop", pod});
  const ContainerRef named = owner(volume);
  EXPECT_EQ(named.id, pod);
  EXPECT_EQ(named.pod, "api-6b9c");
  EXPECT_EQ(named.pod_namespace, "shop");
  EXPECT_EQ(named.name, ""); // the pod's volume, not one container's
}

// A memory-backed emptyDir seen from the host is charged under its pod's
// cgroup: its room is to the pod's limit, once the pod's cgroup is read.
TEST(Engine, AnEmptyDirKnowsTheRoomToItsPodsMemoryLimit) {
  const std::string pod = "1234abcd-5678-90ab-cdef-1234567890ab";
  const std::string volume =
      "/var/lib/kubelet/pods/" + pod + "/volumes/kubernetes.io~empty-dir/cache";
  Engine engine;
  engine.set_mount(tmpfs_mount(50, volume, 77, 64 * kMiB, 10 * kMiB));
  engine.set_mount(tmpfs_mount(51, "/run/user/1000", 78, 64 * kMiB, 10 * kMiB));
  auto room = [&](const std::string &mountpoint) {
    for (const MountUsage &m : engine.mounts())
      if (m.mount.mountpoint == mountpoint)
        return m.memory_room;
    return std::optional<uint64_t>(42);
  };
  EXPECT_FALSE(room(volume)); // not read yet
  engine.set_pod_memory(
      {{pod, CgroupMemory{.shmem = 10 * kMiB, .usage = 20 * kMiB, .limit = {32 * kMiB}}}});
  EXPECT_EQ(room(volume), 12 * kMiB);
  EXPECT_FALSE(room("/run/user/1000")); // the host's
  engine.set_pod_memory({});            // the pod's cgroup is gone
  EXPECT_FALSE(room(volume));
}

} // namespace
} // namespace shmbpf
