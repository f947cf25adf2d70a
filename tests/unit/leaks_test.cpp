#include "model/leaks.hpp"
#include "views/json.hpp"
#include "views/leaks_view.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

Orphan orphan(const std::string &path, uint64_t bytes, const std::string &mount,
              const std::string &container = "") {
  Orphan o;
  o.segment.path = path;
  o.segment.bytes = bytes;
  o.segment.size = bytes;
  o.segment.mountpoint = mount;
  o.segment.pattern = classify_shm_name(path).pattern;
  o.segment.orphan = true;
  if (!container.empty())
    o.segment.container = ContainerRef{container, "docker", ""};
  o.age_ns = 120 * kSec;
  o.segment.age_ns = o.age_ns;
  return o;
}

TEST(Leaks, GroupsByMountContainerAndPattern) {
  const std::string c(64, 'c');
  std::vector<Orphan> in = {orphan("/dev/shm/torch_10_1_0", 3000, "/dev/shm"),
                            orphan("/dev/shm/torch_10_1_1", 2000, "/dev/shm"),
                            orphan("/dev/shm/psm_abc", 500, "/dev/shm", c),
                            orphan("/run/x", 100, "/run")};
  LeakReport r = summarize_orphans(in, "");
  EXPECT_TRUE(r.leaking());
  EXPECT_EQ(r.orphans.size(), 4u);
  EXPECT_EQ(r.orphan_bytes, 5600u);
  ASSERT_EQ(r.by_mount.size(), 2u);
  EXPECT_EQ(r.by_mount[0].mount, "/dev/shm");
  EXPECT_EQ(r.by_mount[0].count, 3u);
  EXPECT_EQ(r.by_mount[0].bytes, 5500u);
  ASSERT_EQ(r.by_container.size(), 2u);
  EXPECT_EQ(r.by_container[0].container.id, ""); // host, 5100 bytes
  EXPECT_EQ(r.by_container[1].container.id, c);
  ASSERT_EQ(r.by_pattern.size(), 3u);
  EXPECT_EQ(r.by_pattern[0].pattern, "torch");
  EXPECT_EQ(r.by_pattern[0].count, 2u);
  EXPECT_EQ(r.by_pattern[2].pattern, "other");

  LeakReport only = summarize_orphans(in, "/dev/shm/torch_*");
  EXPECT_EQ(only.orphans.size(), 2u);
  EXPECT_EQ(only.orphan_bytes, 5000u);
  EXPECT_FALSE(summarize_orphans(in, "/nothing*").leaking());
}

UsageSample sample(uint64_t t_s, std::vector<std::pair<std::string, uint64_t>> procs) {
  UsageSample u;
  u.t_ns = t_s * kSec;
  for (auto &[pid, bytes] : procs)
    u.subjects.push_back({"process", pid, "comm", bytes});
  return u;
}

TEST(Leaks, GrowthMustRiseSteadilyAndLastTheWindow) {
  std::vector<UsageSample> s = {sample(0, {{"1", 100}, {"2", 100}, {"3", 100}}),
                                sample(1, {{"1", 200}, {"2", 300}, {"3", 100}, {"4", 1}}),
                                sample(2, {{"1", 300}, {"2", 150}, {"3", 100}, {"4", 9}}),
                                sample(3, {{"1", 300}, {"2", 400}, {"3", 100}, {"4", 99}})};
  auto g = find_growth(s);
  ASSERT_EQ(g.size(), 1u); // 2 fell once, 3 is flat, 4 was not there at first
  EXPECT_EQ(g[0].what, "process");
  EXPECT_EQ(g[0].id, "1");
  EXPECT_EQ(g[0].from_bytes, 100u);
  EXPECT_EQ(g[0].to_bytes, 300u);
  EXPECT_DOUBLE_EQ(g[0].seconds, 3.0);
  EXPECT_NEAR(g[0].bytes_per_s, 200.0 / 3, 1e-9);
  EXPECT_TRUE(find_growth({s[0]}).empty());  // one sample says nothing
  EXPECT_TRUE(find_growth(s, 1000).empty()); // below min_bytes
}

TEST(LeaksView, JsonShape) {
  LeakReport r = summarize_orphans({orphan("/dev/shm/torch_10_1_0", 4096, "/dev/shm")}, "");
  r.growth.push_back({"mount", "/dev/shm", "7000", 0, 8192, 2.0, 4096});
  auto j = nlohmann::json::parse(leaks_json(r, 200 * kSec));
  EXPECT_EQ(j["orphan_count"], 1);
  EXPECT_EQ(j["orphan_bytes"], 4096);
  ASSERT_EQ(j["orphans"].size(), 1u);
  EXPECT_EQ(j["orphans"][0]["path"], "/dev/shm/torch_10_1_0");
  EXPECT_EQ(j["orphans"][0]["orphan"], true);
  EXPECT_EQ(j["orphans"][0]["age_s"], 120);
  EXPECT_EQ(j["orphans"][0]["pattern"], "torch");
  EXPECT_TRUE(j["orphans"][0]["container"].is_null());
  EXPECT_EQ(j["by_mount"][0]["mount"], "/dev/shm");
  EXPECT_TRUE(j["by_container"][0]["container"].is_null());
  EXPECT_EQ(j["by_pattern"][0]["pattern"], "torch");
  EXPECT_EQ(j["growth"][0]["what"], "mount");
  EXPECT_EQ(j["growth"][0]["bytes_per_s"], 4096.0);
}

BusError fault_on(const std::string &mountpoint, uint32_t pid, uint64_t ts) {
  BusError b;
  b.ts_ns = ts;
  b.pid = pid;
  b.tid = pid + 100; // a worker thread
  b.comm = "python3";
  b.fault = FaultLookup::file;
  b.kind = Kind::tmpfs;
  b.mountpoint = mountpoint;
  b.path = mountpoint + "/torch_1";
  b.offset = 1 << 20;
  b.file_size = 4 << 20;
  b.mount_size = 1 << 20;
  b.mount_used = 1 << 20;
  b.cause = BusCause::mount_full;
  return b;
}

// Faults of a window by mount: most first, each with its latest fault; a
// fault alone is a finding.
TEST(LeaksView, BusErrorsByMountInTextAndJson) {
  LeakReport r;
  r.window = GrowthWindow{10, 10, 11, true};
  EXPECT_FALSE(r.leaking());
  EXPECT_NE(leaks_text(r, 200 * kSec, 60).find("no steady growth or SIGBUS fault seen"),
            std::string::npos);
  r.bus_errors =
      bus_error_mounts({fault_on("/run/a", 1, 190 * kSec), fault_on("/dev/shm", 2, 191 * kSec),
                        fault_on("/dev/shm", 3, 195 * kSec)});
  ASSERT_EQ(r.bus_errors.size(), 2u);
  EXPECT_EQ(r.bus_errors[0].mountpoint, "/dev/shm");
  EXPECT_EQ(r.bus_errors[0].count, 2u);
  EXPECT_EQ(r.bus_errors[0].last.pid, 3u);
  EXPECT_TRUE(r.leaking());

  const std::string t = leaks_text(r, 200 * kSec, 60);
  EXPECT_NE(t.find("bus errors: 2 mounts with SIGBUS faults"), std::string::npos) << t;
  EXPECT_NE(t.find("/dev/shm of host  2 faults, last 5s ago, pid 3 (python3): /dev/shm/torch_1"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("mount-full"), std::string::npos) << t;

  auto j = nlohmann::json::parse(leaks_json(r, 200 * kSec));
  ASSERT_EQ(j["bus_errors"].size(), 2u);
  EXPECT_EQ(j["bus_errors"][0]["mountpoint"], "/dev/shm");
  EXPECT_EQ(j["bus_errors"][0]["count"], 2);
  EXPECT_TRUE(j["bus_errors"][0]["container"].is_null());
  EXPECT_EQ(j["bus_errors"][0]["last"]["pid"], 3);
  EXPECT_EQ(j["bus_errors"][0]["last"]["tid"], 103);
  EXPECT_EQ(j["bus_errors"][0]["last"]["cause"], "mount-full");
  EXPECT_EQ(j["bus_errors"][0]["last"]["path"], "/dev/shm/torch_1");
  EXPECT_EQ(j["bus_errors"][0]["last"]["offset"], 1 << 20);
  EXPECT_TRUE(j["bus_errors"][0]["last"]["container"].is_null());
  EXPECT_EQ(j["bus_errors"][1]["mountpoint"], "/run/a");

  // Every container's /dev/shm is /dev/shm: the container tells them apart.
  BusError in_ctr = fault_on("/dev/shm", 4, 196 * kSec);
  in_ctr.container = ContainerRef{"abc123", "docker", ""};
  const auto groups = bus_error_mounts({fault_on("/dev/shm", 2, 191 * kSec), in_ctr});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].container.id, "");
  EXPECT_EQ(groups[0].last.pid, 2u);
  EXPECT_EQ(groups[1].container.id, "abc123");
  EXPECT_EQ(groups[1].last.pid, 4u);

  // Not watched (no BPF): null, and the text says why.
  r.bus_errors.clear();
  r.bus_errors_unwatched = "BPF cannot load";
  EXPECT_TRUE(nlohmann::json::parse(leaks_json(r, 200 * kSec))["bus_errors"].is_null());
  EXPECT_NE(leaks_text(r, 200 * kSec, 60)
                .find("note: SIGBUS faults not watched during the window: BPF cannot load"),
            std::string::npos);
}

TEST(LeaksView, TextNamesTheCleanCaseAndEscapesNames) {
  EXPECT_NE(leaks_text({}, 0, 60).find("no leaks"), std::string::npos);
  LeakReport r = summarize_orphans({orphan("/dev/shm/evil\x1b[2J", 4096, "/dev/shm")}, "");
  std::string t = leaks_text(r, 200 * kSec, 60);
  EXPECT_NE(t.find("orphans: 1 segments"), std::string::npos) << t;
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << t;
}

} // namespace
} // namespace shmbpf

namespace shmbpf {
namespace {

TEST(Leaks, SharedMemoryIsTheMountTheNameOrTheKind) {
  std::vector<Orphan> in = {orphan("/run/utmp", 4096, "/run"),
                            orphan("/run/torch_1_2_3", 4096, "/run"),
                            orphan("/dev/shm/x", 4096, "/dev/shm"),
                            orphan("/dev/shm/y", 4096, "/var/lib/docker/containers/c/mounts/shm")};
  in[3].segment.mountpoint = "/dev/shm"; // a container's own, as its processes see it
  EXPECT_FALSE(is_shared_memory(in[0].segment));
  for (size_t i = 1; i < in.size(); ++i)
    EXPECT_TRUE(is_shared_memory(in[i].segment)) << in[i].segment.path;
  // Held by nobody, unlinked and without a mount: found through a mapping.
  Orphan unlinked = orphan("/x (deleted)", 4096, "");
  unlinked.segment.state = SegmentState::unlinked;
  EXPECT_TRUE(is_shared_memory(unlinked.segment));
  unlinked.segment.state = SegmentState::linked;
  EXPECT_FALSE(is_shared_memory(unlinked.segment));
  Orphan memfd = orphan("memfd:x", 4096, "");
  memfd.segment.kind = Kind::memfd;
  EXPECT_TRUE(is_shared_memory(memfd.segment));
}

} // namespace
} // namespace shmbpf
