// Container names from the runtimes' files: the parsers on samples shaped
// as Docker, containerd, CRI-O, Podman and the kubelet write them, and the
// reader on the same files laid out in a directory as on a host.
#include "sources/json_value.hpp"
#include "sources/runtime_names.hpp"

#include "unit/runtime_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shmbpf {
namespace {

namespace fs = std::filesystem;

const std::string kId = "5687ebe33357a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a";
const std::string kPodUid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

// Trimmed from a real config.v2.json: the fields around the ones read.
const std::string kDockerConfig = R"({"StreamConfig":{},"State":{"Running":true,"Pid":4242},
"ID":")" + kId + R"(","Created":"2026-12-01T10:00:00.1Z","Path":"sleep","Args":["1000"],
"Config":{"Hostname":"5687ebe33357","Env":["PATH=/bin"],"Cmd":["sleep","1000"],
"Labels":{"com.example.team":"shm \u00e9quipe"}},"Image":"sha256:00ff","Name":"/web-1",
"RestartCount":0,"Driver":"overlay2","MountLabel":"","HostnamePath":"/var/lib/docker/x"})";

// containerd's CRI plugin: the bundle's config.json of a pod's container.
const std::string kContainerdConfig = R"({"ociVersion":"1.1.0","process":{"args":["/pause"]},
"annotations":{"io.kubernetes.cri.container-name":"api","io.kubernetes.cri.container-type":
"container","io.kubernetes.cri.image-name":"registry.example/api:1.2",
"io.kubernetes.cri.sandbox-id":"aa","io.kubernetes.cri.sandbox-name":"api-6b9c-x2x",
"io.kubernetes.cri.sandbox-namespace":"shop","io.kubernetes.cri.sandbox-uid":")" +
                                      kPodUid + R"("}})";

// CRI-O's userdata/config.json.
const std::string kCrioConfig = R"({"ociVersion":"1.0.2-dev","annotations":{
"io.container.manager":"cri-o","io.kubernetes.container.name":"worker",
"io.kubernetes.pod.name":"batch-1","io.kubernetes.pod.namespace":"jobs",
"io.kubernetes.pod.uid":")" + kPodUid +
                                R"("}})";

// containers/storage's overlay-containers/containers.json (Podman).
const std::string kStorage = R"([{"id":"1111","names":["other"],"image":"ab","layer":"cd"},
{"id":")" + kId + R"(","names":["db-primary","alias"],"image":"ef","layer":"01",
"metadata":"{\"image-name\":\"db\"}","created":"2026-12-01T10:00:00Z"}])";

TEST(JsonValue, ParsesNestingEscapesAndNumbers) {
  auto v = parse_json(R"( {"a":[1,-2.5e3,true,null],"s":"x\"\\\/\n\u00e9\ud83d\ude00"} )");
  ASSERT_TRUE(v);
  ASSERT_EQ(v->type, JsonValue::Type::object);
  ASSERT_NE(v->get("a"), nullptr);
  EXPECT_EQ(v->get("a")->items.size(), 4u);
  EXPECT_EQ(v->get("a")->items[1].text, "-2.5e3");
  EXPECT_EQ(v->str("s"), "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v->str("missing"), "");
}

TEST(JsonValue, RefusesWhatIsNotOneValidDocument) {
  for (const char *bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1}x", "\"\x01\"", "01x", "\"\\q\"",
                          "{a:1}", "[1 2]", "\"\\u12\""})
    EXPECT_FALSE(parse_json(bad)) << bad;
}

TEST(JsonValue, RefusesTooDeepAndTooLarge) {
  std::string deep(kJsonMaxDepth + 1, '[');
  deep += std::string(kJsonMaxDepth + 1, ']');
  EXPECT_FALSE(parse_json(deep));
  std::string ok(kJsonMaxDepth - 1, '[');
  ok += std::string(kJsonMaxDepth - 1, ']');
  EXPECT_TRUE(parse_json(ok));
  EXPECT_FALSE(parse_json("\"" + std::string(kJsonMaxBytes, 'a') + "\""));
}

TEST(RuntimeNames, DockerConfig) {
  auto n = parse_docker_config(kDockerConfig);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->name, "web-1");
  EXPECT_EQ(n->pod, "");
  EXPECT_EQ(n->pod_namespace, "");
}

TEST(RuntimeNames, DockershimLabelsNameThePod) {
  auto n = parse_docker_config(R"({"Name":"/k8s_app_web-0_prod_)" + kPodUid +
                               R"(_0","Config":{"Labels":{"io.kubernetes.container.name":"app",
"io.kubernetes.pod.name":"web-0","io.kubernetes.pod.namespace":"prod",
"io.kubernetes.pod.uid":")" + kPodUid +
                               R"("}}})");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->name, "app");
  EXPECT_EQ(n->pod, "web-0");
  EXPECT_EQ(n->pod_namespace, "prod");
  EXPECT_EQ(n->pod_uid, kPodUid);
}

TEST(RuntimeNames, ContainerdCriAnnotations) {
  auto n = parse_oci_annotations(kContainerdConfig);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, (ContainerName{"api", "api-6b9c-x2x", "shop", kPodUid}));
}

TEST(RuntimeNames, ContainerdSandboxHasOnlyThePod) {
  auto n = parse_oci_annotations(R"({"annotations":{"io.kubernetes.cri.container-type":"sandbox",
"io.kubernetes.cri.sandbox-name":"api-6b9c-x2x","io.kubernetes.cri.sandbox-namespace":"shop"}})");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->name, "");
  EXPECT_EQ(n->pod, "api-6b9c-x2x");
  EXPECT_EQ(n->pod_namespace, "shop");
}

TEST(RuntimeNames, CrioAnnotations) {
  auto n = parse_oci_annotations(kCrioConfig);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, (ContainerName{"worker", "batch-1", "jobs", kPodUid}));
}

TEST(RuntimeNames, NothingUsefulIsNoName) {
  EXPECT_FALSE(parse_docker_config(R"({"ID":"x","Name":"","Config":{}})"));
  EXPECT_FALSE(parse_docker_config(R"(["Name","/x"])"));
  EXPECT_FALSE(parse_oci_annotations(R"({"ociVersion":"1.0"})"));
  EXPECT_FALSE(parse_oci_annotations(R"({"annotations":{"io.kubernetes.pod.name":7}})"));
  EXPECT_FALSE(parse_docker_config("{\"Name\":\"/web-1\""));
}

TEST(RuntimeNames, StorageContainers) {
  auto n = parse_storage_containers(kStorage, kId);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->name, "db-primary");
  EXPECT_FALSE(parse_storage_containers(kStorage, "2222"));
  EXPECT_FALSE(parse_storage_containers(R"([{"id":"1111","names":[]}])", "1111"));
}

TEST(RuntimeNames, PodLogDirectory) {
  auto n = parse_pod_log_dir("shop_api-6b9c-x2x_" + kPodUid, kPodUid);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->pod, "api-6b9c-x2x");
  EXPECT_EQ(n->pod_namespace, "shop");
  EXPECT_FALSE(parse_pod_log_dir("shop_api_" + kPodUid, "ffffffff-4b5a-6978-8796-a5b4c3d2e1f0"));
  EXPECT_FALSE(parse_pod_log_dir("_api_" + kPodUid, kPodUid));
  EXPECT_FALSE(parse_pod_log_dir("shop__" + kPodUid, kPodUid));
  EXPECT_FALSE(parse_pod_log_dir("a_b_c_" + kPodUid, kPodUid));
  EXPECT_FALSE(parse_pod_log_dir("shop" + kPodUid, kPodUid));
}

TEST(RuntimeNames, RuntimeRootOption) {
  RuntimeRoots r;
  EXPECT_TRUE(set_runtime_root(r, "docker=/srv/docker"));
  EXPECT_EQ(r.docker, "/srv/docker");
  EXPECT_TRUE(set_runtime_root(r, "pod-logs=/data/pods"));
  EXPECT_EQ(r.pod_logs, "/data/pods");
  EXPECT_TRUE(set_runtime_root(r, "cri-o=/x"));
  EXPECT_EQ(r.crio, "/x");
  auto unknown = set_runtime_root(r, "rkt=/var/lib/rkt");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("rkt"), std::string::npos);
  EXPECT_FALSE(set_runtime_root(r, "docker"));
  EXPECT_FALSE(set_runtime_root(r, "docker=relative/dir"));
  EXPECT_FALSE(set_runtime_root(r, "docker="));
  EXPECT_EQ(r.docker, "/srv/docker");
}

using Host = RuntimeDir;

TEST(RuntimeNamesReader, EachRuntimeWhereItKeepsItsFiles) {
  Host h;
  h.write(h.root / "docker/containers" / kId / "config.v2.json", kDockerConfig);
  EXPECT_EQ(read_container_name(h.roots, "docker", kId, "").name, "web-1");

  const std::string other = std::string(64, 'c');
  h.write(h.root / "containerd/io.containerd.runtime.v2.task/k8s.io" / other / "config.json",
          kContainerdConfig);
  EXPECT_EQ(read_container_name(h.roots, "containerd", other, kPodUid),
            (ContainerName{"api", "api-6b9c-x2x", "shop", kPodUid}));
  // A cgroupfs-driver pod does not say which runtime: every one is tried.
  EXPECT_EQ(read_container_name(h.roots, "kubernetes", other, kPodUid).name, "api");

  const std::string third = std::string(64, 'd');
  h.write(h.root / "crio/overlay-containers" / third / "userdata/config.json", kCrioConfig);
  EXPECT_EQ(read_container_name(h.roots, "cri-o", third, kPodUid).pod, "batch-1");

  h.write(h.root / "storage/overlay-containers/containers.json", kStorage);
  EXPECT_EQ(read_container_name(h.roots, "podman", kId, "").name, "db-primary");

  // The runtime the cgroup named is the one asked.
  EXPECT_EQ(read_container_name(h.roots, "podman", other, ""), ContainerName{});
}

TEST(RuntimeNamesReader, PodLogsWhenTheRuntimeFilesSayNothing) {
  Host h;
  fs::create_directories(h.root / "pods" / "other_x_11111111-2222-3333-4444-555555555555");
  fs::create_directories(h.root / "pods" / ("shop_api-6b9c-x2x_" + kPodUid));
  ContainerName n = read_container_name(h.roots, "containerd", std::string(64, 'e'), kPodUid);
  EXPECT_EQ(n.name, "");
  EXPECT_EQ(n.pod, "api-6b9c-x2x");
  EXPECT_EQ(n.pod_namespace, "shop");
}

TEST(RuntimeNamesReader, RefusesSymlinksSpecialFilesAndLargeFiles) {
  Host h;
  // A container that replaced its state file with a link to a file of its
  // choosing, or its directory with a link out of the root.
  h.write(h.root / "elsewhere/config.v2.json", kDockerConfig);
  fs::create_directories(h.root / "docker/containers" / kId);
  fs::create_symlink(h.root / "elsewhere/config.v2.json",
                     h.root / "docker/containers" / kId / "config.v2.json");
  EXPECT_EQ(read_container_name(h.roots, "docker", kId, ""), ContainerName{});
  const std::string linked_dir = std::string(64, 'a');
  fs::create_directory_symlink(h.root / "elsewhere", h.root / "docker/containers" / linked_dir);
  EXPECT_EQ(read_container_name(h.roots, "docker", linked_dir, ""), ContainerName{});
  EXPECT_FALSE(read_file_below(h.roots.docker, "containers/" + linked_dir + "/config.v2.json"));

  // A FIFO must not hang the reader.
  const std::string fifo = std::string(64, 'b');
  fs::create_directories(h.root / "docker/containers" / fifo);
  ASSERT_EQ(mkfifo((h.root / "docker/containers" / fifo / "config.v2.json").c_str(), 0600), 0);
  EXPECT_EQ(read_container_name(h.roots, "docker", fifo, ""), ContainerName{});

  h.write(h.root / "big/file", std::string(2000, 'x'));
  EXPECT_TRUE(read_file_below(h.root.string(), "big/file", 2000));
  EXPECT_FALSE(read_file_below(h.root.string(), "big/file", 1999));
  EXPECT_FALSE(read_file_below(h.root.string(), "big/../big/file"));
  EXPECT_FALSE(read_file_below(h.root.string(), "big//file"));
}

} // namespace
} // namespace shmbpf
