// The engine's cgroup and container table on its own: what a cgroup id is,
// the names the runtimes give containers, and the pods that own volumes.
#include "model/container_table.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

const std::string kDocker(64, 'a');
const std::string kCri(64, 'c');
const std::string kPod = "1234abcd-5678-90ab-cdef-1234567890ab";

TEST(ContainerTable, ACgroupIsTheHostAContainerOrNotKnownYet) {
  ContainerTable t;
  t.set_cgroup_path(11, "/system.slice/docker-" + kDocker + ".scope");
  t.set_cgroup_path(13, "/user.slice");
  EXPECT_TRUE(t.knows(11));
  EXPECT_TRUE(t.knows(13));
  EXPECT_FALSE(t.knows(99));
  EXPECT_EQ(t.cgroup_path(11), "/system.slice/docker-" + kDocker + ".scope");
  EXPECT_EQ(t.cgroup_path(99), "");

  ASSERT_TRUE(t.cgroup_container(11));
  ASSERT_NE(*t.cgroup_container(11), nullptr);
  EXPECT_EQ((*t.cgroup_container(11))->id, kDocker);
  EXPECT_EQ((*t.cgroup_container(11))->runtime, "docker");
  ASSERT_TRUE(t.cgroup_container(13));
  EXPECT_EQ(*t.cgroup_container(13), nullptr); // the host
  EXPECT_FALSE(t.cgroup_container(99));        // not described yet
  EXPECT_EQ(t.container_of(99), nullptr);
  EXPECT_EQ(t.container_of(11)->id, kDocker);

  // A cgroup described again takes its new path.
  t.set_cgroup_path(13, "/docker/" + kDocker);
  EXPECT_EQ(t.container_of(13)->id, kDocker);
}

TEST(ContainerTable, EachContainerWaitsForItsNameOnceAndEveryCgroupOfItTakesIt) {
  ContainerTable t;
  t.set_cgroup_path(11, "/system.slice/docker-" + kDocker + ".scope");
  t.set_cgroup_path(12, "/kubepods/burstable/pod" + kPod + "/" + kCri);
  t.set_cgroup_path(14, "/system.slice/docker-" + kDocker + ".scope/init");
  std::vector<ContainerRef> unnamed = t.unnamed();
  ASSERT_EQ(unnamed.size(), 2u); // by id, each once
  EXPECT_EQ(unnamed[0].id, kDocker);
  EXPECT_EQ(unnamed[1].id, kCri);
  EXPECT_EQ(unnamed[1].pod_uid, kPod);

  t.set_container_name(kDocker, ContainerName{"web-1", "", "", ""});
  t.set_container_name(kCri, ContainerName{"api", "api-6b9c", "shop", "other-uid"});
  EXPECT_TRUE(t.unnamed().empty());
  EXPECT_EQ(t.container_of(11)->name, "web-1");
  EXPECT_EQ(t.container_of(14)->name, "web-1");
  EXPECT_EQ(t.container_of(12)->pod, "api-6b9c");
  EXPECT_EQ(t.container_of(12)->pod_namespace, "shop");
  EXPECT_EQ(t.container_of(12)->pod_uid, kPod); // the cgroup's uid over the file's

  // Known names are given at once; a container with an empty name is not
  // looked up again.
  t.set_cgroup_path(15, "/docker/" + kDocker);
  EXPECT_EQ(t.container_of(15)->name, "web-1");
  const std::string quiet(64, 'e');
  t.set_container_name(quiet, ContainerName{});
  t.set_cgroup_path(16, "/system.slice/docker-" + quiet + ".scope");
  EXPECT_TRUE(t.unnamed().empty());
  EXPECT_EQ(t.container_of(16)->name, "");
}

TEST(ContainerTable, APodIsNamedByAnyOfItsNamedContainers) {
  ContainerTable t;
  EXPECT_EQ(t.pod_of(kPod), (ContainerRef{kPod, "kubernetes", kPod}));
  t.set_cgroup_path(12, "/kubepods/burstable/pod" + kPod + "/" + kCri);
  EXPECT_EQ(t.pod_of(kPod).pod, ""); // its container has no name yet
  t.set_container_name(kCri, ContainerName{"api", "api-6b9c", "shop", kPod});
  const ContainerRef pod = t.pod_of(kPod);
  EXPECT_EQ(pod.id, kPod);
  EXPECT_EQ(pod.runtime, "kubernetes");
  EXPECT_EQ(pod.pod, "api-6b9c");
  EXPECT_EQ(pod.pod_namespace, "shop");
  EXPECT_EQ(pod.name, ""); // the pod, not one of its containers
  EXPECT_EQ(t.pod_of("another-uid").pod, "");
}

TEST(ContainerTable, MemoryIsKeptByContainerAndForgottenWhenUnread) {
  ContainerTable t;
  t.set_cgroup_path(11, "/system.slice/docker-" + kDocker + ".scope");
  const CgroupMemory m{.shmem = 20 << 20, .usage = 24 << 20, .limit = {64 << 20}};
  t.set_memory(kDocker, m);
  t.set_memory("", CgroupMemory{.shmem = 1, .usage = 2, .limit = {3}});
  t.set_memory(kCri, CgroupMemory{}); // a container with no cgroup path known
  ASSERT_TRUE(t.memory(kDocker));
  EXPECT_EQ(*t.memory(kDocker), m);
  const auto rows = t.memory_by_container();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].first.id, ""); // the host first
  EXPECT_EQ(rows[1].first.id, kDocker);
  EXPECT_EQ(rows[1].first.runtime, "docker");
  EXPECT_EQ(rows[1].second, m);
  EXPECT_EQ(rows[2].first.id, kCri);
  t.set_memory(kDocker, std::nullopt);
  EXPECT_FALSE(t.memory(kDocker));
  EXPECT_EQ(t.memory_by_container().size(), 2u);
}

} // namespace
} // namespace shmbpf
