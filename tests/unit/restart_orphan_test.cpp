// Orphans a restart leaves (Engine::left_by_restart): files an earlier
// container of a pod made in the pod's memory-backed emptyDir, found by
// the container kubelet started in its place. Marked in every view that
// marks orphans: ls and top (state), leaks (counts, text and JSON), the
// export's orphan records and /metrics.
#include "model/leaks.hpp"
#include "views/export_view.hpp"
#include "views/format.hpp"
#include "views/leaks_view.hpp"
#include "views/metrics.hpp"

#include "synthetic_events.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint32_t kHostNs = 7000;
constexpr uint32_t kPodNs = 7001;
constexpr FileAt kEmptyDir{60, 45};
const std::string kUid = "1234abcd-5678-90ab-cdef-1234567890ab";
const MountState kVolume{
    46,  kHostNs,   "/var/lib/kubelet/pods/" + kUid + "/volumes/kubernetes.io~empty-dir/dshm",
    60,  64u << 20, 0,
    true};
const std::string kFirst(64, 'a'), kSecond(64, 'b'), kSidecar(64, 'c'), kDocker(64, 'd');

std::string pod_cgroup(const std::string &id) {
  return "/kubepods/besteffort/pod" + kUid + "/" + id;
}

// pid, in cgroup, writes path (bytes resident) on the emptyDir at ts and
// exits a second later.
void made_and_died(Engine &engine, uint64_t cgroup, uint32_t pid, uint64_t ino,
                   const std::string &path, uint64_t bytes, uint64_t ts) {
  Event made = created_file(kEmptyDir, pid, ino, path, bytes, ts);
  made.cgroup_id = cgroup;
  engine.apply(made);
  Event died = process_event(EventType::exit, pid, ts + kSec);
  died.cgroup_id = cgroup;
  engine.apply(died);
}

// A pod whose container "trainer" (kFirst, cgroup 21) wrote a MiB to its
// emptyDir at /dev/shm and died; the file stays.
class RestartOrphan : public ::testing::Test {
protected:
  RestartOrphan() {
    engine.set_cgroup_path(21, pod_cgroup(kFirst));
    engine.set_cgroup_path(22, pod_cgroup(kSecond));
    engine.set_cgroup_path(23, pod_cgroup(kSidecar));
    engine.set_cgroup_path(24, "/system.slice/docker-" + kDocker + ".scope");
    // Kubelet mounts the emptyDir, then the container's runtime at /dev/shm.
    engine.set_mount(kVolume);
    engine.set_mount({45, kPodNs, "/dev/shm", 60, 64u << 20, 0, true});
    engine.set_container_name(kFirst, ContainerName{"trainer", "job-7f9c", "ml", kUid});
    engine.set_container_name(kSecond, ContainerName{"trainer", "job-7f9c", "ml", kUid});
    engine.set_container_name(kSidecar, ContainerName{"logs", "job-7f9c", "ml", kUid});
    made_and_died(engine, 21, 300, 9, "/dev/shm/batch_0", 1u << 20, 10 * kSec);
  }

  // A live process in cgroup (the container kubelet started).
  void runs(uint32_t pid, uint64_t cgroup) {
    engine.add_process(pid, 1, 0, "python3", cgroup, kPodNs);
  }

  std::vector<Orphan> orphans() const { return engine.orphans(20 * kSec, 0); }

  Engine engine;
};

TEST_F(RestartOrphan, AnOrphanOfAPodThatRunsNoContainerIsNoRestarts) {
  const auto o = orphans();
  ASSERT_EQ(o.size(), 1u);
  EXPECT_FALSE(o[0].segment.restart_orphan);
  EXPECT_EQ(state_cell(o[0].segment), "linked orphan");
}

// The container's /dev/shm mount ends with it; its files are then seen
// through kubelet's mount of the volume, and are shared memory still.
TEST_F(RestartOrphan, TheEmptyDirStaysSharedMemoryOnceItsContainerEnds) {
  engine.reconcile_mounts({kVolume});
  const auto o = orphans();
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].segment.mountpoint, kVolume.mountpoint);
  runs(400, 22);
  EXPECT_TRUE(orphans()[0].segment.restart_orphan);
  // A scratch emptyDir never mounted at /dev/shm is no shared memory.
  Engine scratch;
  scratch.set_mount(kVolume);
  Event made = created_file({60, 46}, 300, 9, kVolume.mountpoint + "/cache.bin", 4096, kSec);
  scratch.apply(made);
  scratch.apply(process_event(EventType::exit, 300, 2 * kSec));
  EXPECT_TRUE(scratch.orphans(20 * kSec, 0).empty());
}

TEST_F(RestartOrphan, TheSameContainerStartedAgainFindsItLeftByARestart) {
  runs(400, 22);
  const auto o = orphans();
  ASSERT_EQ(o.size(), 1u);
  const SegmentInfo &s = o[0].segment;
  EXPECT_TRUE(s.restart_orphan);
  EXPECT_EQ(s.container.id, kFirst); // the container that made it
  EXPECT_EQ(state_cell(s), "linked restart-orphan");

  // Every other view says the same.
  const auto listed = engine.segments({}, 20 * kSec, 0);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].restart_orphan);
  const SegmentScan scan(engine, 20 * kSec, 0);
  scan.for_each(
      [&](const SegmentScan::Item &item) { EXPECT_TRUE(scan.info(item).restart_orphan); });
  size_t grouped = 0;
  for (const SegmentGroup &g : engine.segment_groups(20 * kSec, 0))
    if (g.restart_orphan) {
      EXPECT_TRUE(g.orphan);
      EXPECT_EQ(g.container.id, kFirst);
      grouped += g.segments;
    }
  EXPECT_EQ(grouped, 1u);
}

TEST_F(RestartOrphan, ASiblingContainerOfAnotherNameIsNoRestart) {
  runs(400, 23);
  EXPECT_FALSE(orphans()[0].segment.restart_orphan);
  runs(401, 22); // then the trainer comes back
  EXPECT_TRUE(orphans()[0].segment.restart_orphan);
}

TEST_F(RestartOrphan, WhileNamesAreUnknownAnyOtherLiveContainerOfThePodIsTheRestart) {
  Engine unnamed;
  unnamed.set_cgroup_path(21, pod_cgroup(kFirst));
  unnamed.set_cgroup_path(23, pod_cgroup(kSidecar));
  made_and_died(unnamed, 21, 300, 9, "/dev/shm/psm_1", 4096, 10 * kSec);
  EXPECT_FALSE(unnamed.orphans(20 * kSec, 0)[0].segment.restart_orphan);
  unnamed.add_process(400, 1, 0, "sh", 23, kPodNs);
  EXPECT_TRUE(unnamed.orphans(20 * kSec, 0)[0].segment.restart_orphan);
}

TEST_F(RestartOrphan, WhileItsOwnContainerRunsItIsAPlainOrphan) {
  runs(400, 21); // the creator died, its container lives on
  runs(401, 22);
  const auto o = orphans();
  ASSERT_EQ(o.size(), 1u);
  EXPECT_FALSE(o[0].segment.restart_orphan);
}

TEST_F(RestartOrphan, OutsideKubernetesNothingRestarts) {
  made_and_died(engine, 24, 500, 10, "/dev/shm/psm_2", 4096, 12 * kSec);
  runs(400, 22);
  runs(501, 24);
  for (const Orphan &o : orphans())
    EXPECT_EQ(o.segment.restart_orphan, o.segment.container.id == kFirst) << o.segment.path;
}

TEST_F(RestartOrphan, LeaksCountsThemAndSaysSo) {
  runs(400, 22);
  const LeakReport r = summarize_orphans(orphans(), "");
  EXPECT_EQ(r.restart_orphans, 1u);
  EXPECT_EQ(r.restart_orphan_bytes, 1u << 20);
  ASSERT_EQ(r.by_container.size(), 1u);
  EXPECT_EQ(r.by_container[0].restart_count, 1u);
  const std::string text = leaks_text(r, 20 * kSec, 0);
  EXPECT_NE(text.find("left by restarts: 1 segments, 1.0M"), std::string::npos) << text;
  EXPECT_NE(text.find("1 segments, 1.0M, 1 left by a restart"), std::string::npos) << text;
  EXPECT_NE(text.find("restart-orphan"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(leaks_json(r, 20 * kSec));
  EXPECT_EQ(j["restart_orphan_count"], 1);
  EXPECT_EQ(j["restart_orphan_bytes"], 1u << 20);
  EXPECT_EQ(j["orphans"][0]["restart_orphan"], true);
  EXPECT_EQ(j["by_container"][0]["restart_count"], 1);
  EXPECT_EQ(j["by_pattern"][0]["restart_count"], 1);

  // Without the restart, nothing of the kind is said.
  const std::string none = leaks_text(summarize_orphans({}, ""), 20 * kSec, 0);
  EXPECT_EQ(none.find("restart"), std::string::npos);
}

TEST_F(RestartOrphan, TheExportsOrphanRecordSaysItWasLeftByARestart) {
  runs(400, 22);
  ExportFormatter fmt(TraceClock{0});
  std::string out;
  fmt.append_orphan(out, 20 * kSec, orphans()[0].segment);
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["restart_orphan"], true);
}

TEST_F(RestartOrphan, MetricsCountThemByPodWithZerosForThePodsOtherPlaces) {
  runs(400, 22);
  Event live = created_file(kEmptyDir, 400, 11, "/dev/shm/psm_live", 8192, 15 * kSec);
  live.cgroup_id = 22;
  engine.apply(live);
  MetricsCounters c;
  c.now_ns = 20 * kSec;
  c.host_mntns = kHostNs;
  const std::string text = metrics_text(take_metrics_snapshot(engine, c));
  auto line_of = [&](const std::string &family, const std::string &id) {
    for (size_t at = text.find(family + "{"); at != std::string::npos;
         at = text.find(family + "{", at + 1)) {
      const std::string line = text.substr(at, text.find('\n', at) - at);
      if (line.find("container_id=\"" + id + "\"") != std::string::npos)
        return line;
    }
    return std::string();
  };
  const std::string first = line_of("shmbpf_restart_orphaned_bytes", kFirst);
  EXPECT_NE(first.find("pod=\"job-7f9c\""), std::string::npos) << text;
  EXPECT_NE(first.find("namespace=\"ml\""), std::string::npos) << first;
  EXPECT_NE(first.find(",uid=\"" + kUid + "\""), std::string::npos) << first;
  EXPECT_TRUE(first.ends_with(" 1048576")) << first;
  EXPECT_TRUE(line_of("shmbpf_restart_orphaned_segments", kFirst).ends_with(" 1")) << text;
  // The running container's place has its 0; the host has no series.
  EXPECT_TRUE(line_of("shmbpf_restart_orphaned_segments", kSecond).ends_with(" 0")) << text;
  EXPECT_EQ(line_of("shmbpf_restart_orphaned_segments", ""), "") << text;
}

} // namespace
} // namespace shmbpf::test
