// A pod as kubelet makes it, with a real containerd (its root, state and
// socket set in its own config.toml, found from the running daemon: no
// --runtime-root anywhere): a container started in namespace k8s.io with
// CRI's annotations, host networking, a cgroup as kubelet's cgroupfs or
// systemd driver lays it out, and a memory-backed emptyDir at /dev/shm.
// Its process writes a torch_* file there. Every output names the pod,
// its namespace and the container: ls (segments and containers), audit
// (the emptyDir has no sizeLimit), top,
// serve's /metrics (the emptyDir's usage by pod), and leaks once the
// container is gone and the file is an orphan. A restarted container finds
// what its earlier instance left, marked as left by a restart.
#include "e2e/background.hpp"
#include "e2e/containerd.hpp"
#include "e2e/export_records.hpp"
#include "e2e/run_cli.hpp"
#include "e2e/serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The row of rows whose key holds value, or null.
json row_with(const json &rows, const std::string &key, const std::string &value) {
  for (const json &r : rows)
    if (r.is_object() && r.contains(key) && r[key].is_string() && r[key] == value)
      return r;
  return nullptr;
}

void expect_names(const json &container, const KubePod &pod) {
  ASSERT_TRUE(container.is_object()) << container.dump();
  EXPECT_EQ(container["id"], pod.id);
  EXPECT_EQ(container["name"], pod.container);
  EXPECT_EQ(container["pod"], pod.name);
  EXPECT_EQ(container["namespace"], pod.pod_namespace);
  EXPECT_EQ(container["pod_uid"], pod.uid);
}

// What each test starts from: a containerd, a pod with its emptyDir, and
// a serve that watches them (start()).
struct PodUnderServe {
  explicit PodUnderServe(const ContainerdPrograms &programs) : containerd(programs) {}
  Containerd containerd;
  KubePod pod = KubePod::random();
  std::string dshm;
  TempDir dir;
  std::string sock = (dir.path / "sock").string();
  int port = free_port();
  std::optional<ShmbpfProcess> serve;
};

// The daemon ready, the emptyDir of size mounted ("" for no sizeLimit).
void start(PodUnderServe &b, const std::string &size) {
  ASSERT_TRUE(b.containerd.wait_ready(30s)) << b.containerd.log();
  b.dshm = b.containerd.mount_empty_dir(b.pod, "dshm", size);
  ASSERT_FALSE(b.dshm.empty()) << "cannot mount the emptyDir";
  b.serve.emplace(std::vector<std::string>{"serve", "--no-state", "--listen",
                                           "127.0.0.1:" + std::to_string(b.port), "--socket",
                                           b.sock});
  SHMBPF_SERVE_READY(*b.serve, b.port);
}

void kubelet_shaped_pod(KubePod::Driver driver) {
  SHMBPF_REQUIRE_ROOT();
  const ContainerdPrograms programs;
  SHMBPF_REQUIRE_CONTAINERD(programs);
  PodUnderServe b(programs);
  b.pod.driver = driver;
  // No sizeLimit, as most pods have it: audit says so.
  start(b, "");
  if (::testing::Test::HasFatalFailure())
    return;
  Containerd &c = b.containerd;
  const KubePod &pod = b.pod;
  const std::string &dshm = b.dshm, &sock = b.sock;
  const int port = b.port;
  ShmbpfProcess &serve = *b.serve;

  // Named after the pod: tests running alongside make files of their own.
  const std::string file = "torch_" + pod.id.substr(0, 12) + "_a_";
  const Ran run =
      c.run(pod, dshm,
            "echo batch > /dev/shm/" + file + "0 && head -c 65536 /dev/zero > /dev/shm/" + file +
                "1; exec sleep 1000");
  ASSERT_EQ(run.code, 0) << run.out << c.log();

  // ls: the segment and the container, named from containerd's files.
  json seg;
  for (int i = 0; i < 50 && !seg.is_object(); ++i) {
    const CliResult ls = run_shmbpf("ls --json --match '*/" + file + "1'");
    ASSERT_EQ(ls.code, 0) << ls.err;
    const json segs = ls.json()["segments"];
    if (!segs.empty() && segs[0]["container"].is_object() &&
        segs[0]["container"]["name"] != nullptr)
      seg = segs[0];
    else
      std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(seg.is_object()) << "the container's file was never listed with its names";
  expect_names(seg["container"], pod);
  const CliResult by = run_shmbpf("ls --by container --json");
  ASSERT_EQ(by.code, 0) << by.err;
  expect_names(row_with(by.json()["containers"], "id", pod.id), pod);

  // audit: the emptyDir at the container's /dev/shm has no size limit.
  const CliResult audit = run_shmbpf("audit --json --fail-on none --rule unbounded-shm-mount");
  ASSERT_EQ(audit.code, 0) << audit.err;
  json unbounded;
  const json report = audit.json();
  for (const json &f : report["findings"])
    if (f["container"].is_object() && f["container"]["id"] == pod.id)
      unbounded = f;
  ASSERT_TRUE(unbounded.is_object()) << "no finding about the pod's emptyDir: " << audit.out;
  expect_names(unbounded["container"], pod);

  // top, from the daemon's live model and on its own.
  for (const std::string &cmd : {"top --server " + sock + " -b -n 1 --by container",
                                 std::string("top -b -n 2 -d 0.3 --by container")}) {
    const CliResult top = run_shmbpf(cmd);
    ASSERT_EQ(top.code, 0) << top.err;
    bool named = false;
    for (const std::string &line : lines_of(top.out))
      named = named || (line.starts_with(pod.id.substr(0, 12)) &&
                        line.find(" " + pod.container + " ") != std::string::npos &&
                        line.find(" " + pod.name + " ") != std::string::npos &&
                        line.find(" " + pod.pod_namespace + " ") != std::string::npos);
    EXPECT_TRUE(named) << cmd << "\n" << top.out;
  }

  // /metrics: the segments and the emptyDir's usage, by pod.
  const std::vector<std::string> labels = {"namespace=\"" + pod.pod_namespace + "\"",
                                           "pod=\"" + pod.name + "\"",
                                           "container=\"" + pod.container + "\""};
  std::optional<double> used, bytes;
  std::string scraped;
  for (int i = 0; i < 50 && !(used && *used >= 65536 && bytes && *bytes >= 65536); ++i) {
    if (auto m = get(port, "/metrics"); m && m->status == 200) {
      used = metric(m->body, "shmbpf_mount_used_bytes", labels);
      bytes = metric(m->body, "shmbpf_segment_bytes", labels);
      scraped = m->body;
    }
    std::this_thread::sleep_for(200ms);
  }
  auto series = [&](const std::string &family) {
    std::string out;
    for (const std::string &line : lines_of(scraped))
      if (line.starts_with(family + "{"))
        out += line + "\n";
    return out;
  };
  ASSERT_TRUE(used) << "no mount series labelled with the pod:\n"
                    << series("shmbpf_mount_used_bytes");
  EXPECT_GE(*used, 65536.0) << series("shmbpf_mount_used_bytes");
  ASSERT_TRUE(bytes) << "no segment series labelled with the pod:\n"
                     << series("shmbpf_segment_bytes");
  EXPECT_GE(*bytes, 65536.0) << series("shmbpf_segment_bytes");

  // The container dies; its files stay in the pod's emptyDir: orphans,
  // still named by the daemon that saw them made.
  ASSERT_TRUE(c.stop(pod.id));
  json leak;
  std::string last;
  for (int i = 0; i < 50 && !leak.is_object(); ++i) {
    const CliResult leaks = run_shmbpf("leaks --server " + sock + " --min-age 0 --json");
    ASSERT_LE(leaks.code, 1) << leaks.err; // 1: leaks were found
    last = leaks.out;
    const json report = leaks.json();
    for (const json &g : report["by_container"])
      if (g["container"].is_object() && g["container"]["id"] == pod.id)
        leak = g;
    if (!leak.is_object())
      std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(leak.is_object()) << "the pod's orphans were never reported: " << last;
  expect_names(leak["container"], pod);

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
}

// A pod's container writes its emptyDir at /dev/shm and crashes; kubelet
// starts the same container again (a new id, the same pod and volume).
// What the first left is marked as left by a restart in leaks, top and
// /metrics, with the pod's names and the earlier container's id.
TEST(ContainerdPod, ARestartedContainerFindsWhatItsEarlierInstanceLeftMarked) {
  SHMBPF_REQUIRE_ROOT();
  const ContainerdPrograms programs;
  SHMBPF_REQUIRE_CONTAINERD(programs);
  PodUnderServe b(programs);
  start(b, "64m");
  if (HasFatalFailure())
    return;
  Containerd &c = b.containerd;
  KubePod &pod = b.pod;
  const std::string &dshm = b.dshm, &sock = b.sock;
  const int port = b.port;
  ShmbpfProcess &serve = *b.serve;

  // The first instance writes, runs a moment (time for its cgroup to be
  // read) and crashes.
  const std::string earlier = pod.id;
  const std::string file = "torch_" + earlier.substr(0, 12) + "_r_0";
  const Ran first =
      c.run(pod, dshm, "head -c 65536 /dev/zero > /dev/shm/" + file + " && sleep 2; exit 3");
  ASSERT_EQ(first.code, 0) << first.out << c.log();
  auto orphan_of = [&](const std::string &want_id) {
    json found;
    std::string last;
    for (int i = 0; i < 75 && !found.is_object(); ++i) {
      const CliResult leaks = run_shmbpf("leaks --server " + sock + " --min-age 0 --json");
      EXPECT_LE(leaks.code, 1) << leaks.err; // 1: leaks were found
      last = leaks.out;
      const json report = leaks.json();
      for (const json &o : report["orphans"])
        if (o["path"] == dshm + "/" + file || o["path"] == "/dev/shm/" + file)
          if (o["container"].is_object() && o["container"]["id"] == earlier &&
              (want_id.empty() || o["restart_orphan"] == true))
            found = o;
      if (!found.is_object())
        std::this_thread::sleep_for(200ms);
    }
    EXPECT_TRUE(found.is_object()) << "no such orphan of " << earlier << ": " << last
                                   << run_shmbpf("ls --server " + sock).out << c.ctr("task ls").out;
    return found;
  };
  const json before = orphan_of("");
  ASSERT_TRUE(before.is_object());
  EXPECT_EQ(before["restart_orphan"], false); // the pod runs nothing yet
  expect_names(before["container"], pod);

  // kubelet starts the container again: a new id in the same pod.
  pod.id = KubePod::random().id;
  const Ran second = c.run(pod, dshm, "exec sleep 1000");
  ASSERT_EQ(second.code, 0) << second.out << c.log();
  const json after = orphan_of(pod.id);
  ASSERT_TRUE(after.is_object());
  EXPECT_EQ(after["container"]["pod_uid"], pod.uid);
  EXPECT_EQ(after["container"]["name"], pod.container);

  // leaks says so in its text, top in the segment's state (ls as well, once
  // the orphan is a minute old).
  const CliResult text = run_shmbpf("leaks --server " + sock + " --min-age 0");
  EXPECT_NE(text.out.find("left by restarts: "), std::string::npos) << text.out;
  const CliResult top = run_shmbpf("top --server " + sock + " -b -n 1 --by segments");
  ASSERT_EQ(top.code, 0) << top.err;
  bool marked = false;
  for (const std::string &line : lines_of(top.out))
    marked = marked || (line.find(file) != std::string::npos &&
                        line.find("restart-orphan") != std::string::npos);
  EXPECT_TRUE(marked) << top.out;

  // /metrics: the bytes by pod, under the earlier container's id (as
  // kube-state-metrics writes it where the cgroup path names the runtime).
  const std::string scheme = pod.driver == KubePod::Driver::systemd ? "containerd://" : "";
  std::optional<double> left;
  for (int i = 0; i < 50 && !(left && *left >= 65536); ++i) {
    if (auto m = get(port, "/metrics"); m && m->status == 200)
      left = metric(m->body, "shmbpf_restart_orphaned_bytes",
                    {"namespace=\"" + pod.pod_namespace + "\"", "pod=\"" + pod.name + "\"",
                     "container_id=\"" + scheme + earlier + "\""});
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(left) << "no shmbpf_restart_orphaned_bytes series for the pod";
  EXPECT_GE(*left, 65536.0);

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
}

TEST(ContainerdPod, AKubeletShapedPodIsNamedEverywhereUnderTheCgroupfsDriver) {
  kubelet_shaped_pod(KubePod::Driver::cgroupfs);
}

TEST(ContainerdPod, AKubeletShapedPodIsNamedEverywhereUnderTheSystemdDriversLayout) {
  kubelet_shaped_pod(KubePod::Driver::systemd);
}

} // namespace
} // namespace shmbpf::test
