// /metrics from a synthetic engine: the families and their series, the
// labels Kubernetes users join on, orphans counted whatever their age, one
// series per filesystem, escaping, and never a pid, a path or a name.
#include "views/metrics.hpp"

#include "model/leaks.hpp"
#include "views/export_view.hpp"

#include "synthetic_events.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kMiB = 1 << 20;
constexpr uint32_t kHostNs = 7000;
constexpr uint32_t kCtrNs = 7001;
constexpr uint32_t kIpcNs = 4026531839u;
constexpr FileAt kHostShm{26, 25};
constexpr FileAt kCtrShm{50, 40};
const std::string kDockerId(64, 'd');
const std::string kPodCtrId(64, 'c');
// As the container_id label gives them (kube-state-metrics' form).
const std::string kDockerCid = "docker://" + kDockerId;
const std::string kPodCtrCid = "containerd://" + kPodCtrId;
const std::string kPodUid = "1234abcd-5678-90ab-cdef-1234567890ab";
const std::string kWeird = "/mnt/we\"ird\\dir\nx";

MountState mount(uint32_t mnt_id, uint32_t mntns, std::string mountpoint, uint32_t dev,
                 uint64_t limit, uint64_t used) {
  return {mnt_id, mntns, std::move(mountpoint), dev, limit, used, true};
}

// A host, a docker container with its own /dev/shm, a Kubernetes pod's
// container, orphans and live segments of every kind.
Engine synthetic_engine() {
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + kDockerId + ".scope");
  engine.set_cgroup_path(12, "/kubepods.slice/kubepods-burstable.slice/"
                             "kubepods-burstable-pod1234abcd_5678_90ab_cdef_1234567890ab.slice/"
                             "cri-containerd-" +
                                 kPodCtrId + ".scope");
  engine.set_cgroup_path(13, "/user.slice/user-1000.slice/session-2.scope");
  engine.set_mount(mount(25, kHostNs, "/dev/shm", 26, 64 * kMiB, 0));
  engine.set_mount(mount(40, kCtrNs, "/dev/shm", 50, 64 * kMiB, 0));
  // The container's /dev/shm as docker mounts it on the host too.
  engine.set_mount(mount(41, kHostNs, "/var/lib/docker/containers/x/mounts/shm", 50, 64 * kMiB, 0));
  engine.set_mount(mount(42, kHostNs, "/run", 27, 0, 4096));
  engine.set_mount(mount(43, kHostNs, kWeird, 28, 8 * kMiB, 0));
  engine.add_process(1, 0, 0, "systemd", 13, kHostNs, kIpcNs);
  engine.add_process(500, 1, 0, "app", 11, kCtrNs);

  auto in = [](Event e, uint64_t cgroup) {
    e.cgroup_id = cgroup;
    return e;
  };
  uint64_t ts = 10 * kSec;
  // Host: torch_100 leaks two files (its creator exits holding nothing).
  engine.apply(in(created_file(kHostShm, 100, 1, "/dev/shm/torch_100_a_0", kMiB, ts++), 13));
  engine.apply(in(created_file(kHostShm, 100, 2, "/dev/shm/torch_100_a_1", 2 * kMiB, ts++), 13));
  engine.apply(in(process_event(EventType::exit, 100, ts++), 13));
  // A live holder: a file, a memfd, a SysV segment.
  engine.apply(in(created_file(kHostShm, 200, 3, "/dev/shm/model.bin", 4096, ts++), 13));
  engine.apply(in(created_memfd(200, 4, "pool", ts++), 13));
  engine.apply(in(created_sysv(200, kIpcNs, 7, 0x5000, 8192, ts++), 13));
  // The docker container: one file its creator still holds, one orphan.
  engine.apply(in(created_file(kCtrShm, 500, 5, "/dev/shm/psm_live", 8192, ts++), 11));
  engine.apply(in(created_file(kCtrShm, 501, 6, "/dev/shm/psm_gone", 16384, ts++), 11));
  engine.apply(in(process_event(EventType::exit, 501, ts++), 11));
  // The pod's container, on the host's /dev/shm.
  engine.apply(in(created_file(kHostShm, 600, 7, "/dev/shm/kube_seg", 4096, ts++), 12));
  // A file on the mount with a hostile name.
  engine.apply(in(created_file({28, 43}, 200, 8, kWeird + "/f", 4096, ts++), 13));
  engine.apply(in(sigbus_fault(200, ts++), 13));
  // The container's writer is OOM-killed twice, the second time with its
  // cgroup read: 48 MiB of shared memory in 64 MiB charged, at the limit.
  for (int i = 0; i < 2; ++i) {
    Event kill = in(process_event(EventType::oom, 500, ts++), 11);
    kill.target_pid = 500;
    if (i == 1)
      kill.memcg = CgroupMemory{.shmem = 48 * kMiB, .usage = 64 * kMiB, .limit = {64 * kMiB}};
    engine.apply(kill);
  }
  // The container's /dev/shm is full for its writer, twice.
  for (int i = 0; i < 2; ++i)
    engine.apply(in(write_without_space(kCtrShm, 500, 5, "/dev/shm/psm_live", ts++), 11));
  // The memory cgroups as the last sample read them: the container's has a
  // limit, the host's row is the machine's.
  engine.set_container_memory(
      kDockerId, CgroupMemory{.shmem = 20 * kMiB, .usage = 30 * kMiB, .limit = {64 * kMiB}});
  engine.set_container_memory("", CgroupMemory{.shmem = kMiB, .usage = 900 * kMiB, .limit = {}});
  engine.set_host_cgroups(
      {{"/system.slice", CgroupMemory{.shmem = 3 * kMiB, .usage = 300 * kMiB, .limit = {}}},
       {"/kubepods", CgroupMemory{.shmem = 5 * kMiB, .usage = 500 * kMiB, .limit = {kMiB << 10}}}});
  // The host's /dev/shm grows a MiB a second for a minute.
  for (int i = 0; i <= 60; ++i) {
    engine.reconcile_mounts(
        {mount(25, kHostNs, "/dev/shm", 26, 64 * kMiB, i * kMiB),
         mount(40, kCtrNs, "/dev/shm", 50, 64 * kMiB, 24576),
         mount(41, kHostNs, "/var/lib/docker/containers/x/mounts/shm", 50, 64 * kMiB, 24576),
         mount(42, kHostNs, "/run", 27, 0, 4096), mount(43, kHostNs, kWeird, 28, 8 * kMiB, 4096)});
    engine.sample_mounts((100 + static_cast<uint64_t>(i)) * kSec);
  }
  return engine;
}

MetricsCounters counters() {
  MetricsCounters c;
  c.now_ns = 200 * kSec;
  c.boot_to_realtime_ns = 1'700'000'000 * static_cast<int64_t>(kSec);
  c.host_mntns = kHostNs;
  c.events[static_cast<size_t>(EventType::create)] = 9;
  c.events[static_cast<size_t>(EventType::exit)] = 2;
  c.lost = 5;
  c.hooks = {{"syscalls/sys_exit_openat", "tracepoint__syscalls__sys_exit_openat", Build::fast, "",
              "create, open", ""},
             {"mm_filemap_delete_from_page_cache", "", Build::fast, "no such tracepoint", "free",
              "frees not seen"}};
  c.attached = true;
  c.agent = {"0.1.0", "0123456789ab", ""};
  c.kernel = "6.1.0-test";
  return c;
}

// One sample line, parsed back as Prometheus would (label values unescaped
// by the format's rule only).
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> help, type;
  std::vector<std::string> order; // family names as their TYPE lines come
  std::vector<std::string> errors;

  std::vector<Sample> of(const std::string &name) const {
    std::vector<Sample> out;
    for (const Sample &s : samples)
      if (s.name == name)
        out.push_back(s);
    return out;
  }
  // The value of the one sample of name whose labels include these.
  std::string value(const std::string &name, const std::map<std::string, std::string> &want) const {
    std::string found = "(none)";
    int n = 0;
    for (const Sample &s : of(name)) {
      bool all = true;
      for (const auto &[k, v] : want)
        all = all && s.labels.count(k) && s.labels.at(k) == v;
      if (all) {
        found = s.value;
        ++n;
      }
    }
    return n > 1 ? "(several)" : found;
  }
};

Exposition parse(const std::string &text) {
  Exposition x;
  std::istringstream in(text);
  std::string family;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const size_t sp = line.find(' ', 7);
      const std::string name = line.substr(7, sp - 7);
      (line[2] == 'H' ? x.help : x.type)[name] = line.substr(sp + 1);
      if (line[2] == 'T') {
        if (std::find(x.order.begin(), x.order.end(), name) != x.order.end())
          x.errors.push_back("family twice: " + name);
        x.order.push_back(name);
        family = name;
      }
      continue;
    }
    Sample s;
    size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (s.name != family)
      x.errors.push_back("sample outside its family: " + line);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const size_t eq = line.find("=\"", i);
        const std::string key = line.substr(i, eq - i);
        std::string v;
        for (i = eq + 2; line[i] != '"'; ++i) {
          if (line[i] == '\\') {
            ++i;
            v += line[i] == 'n' ? '\n' : line[i];
          } else {
            v += line[i];
          }
        }
        ++i; // the closing quote
        if (line[i] == ',')
          ++i;
        s.labels[key] = v;
      }
      ++i;
    }
    s.value = line.substr(i + 1);
    x.samples.push_back(std::move(s));
  }
  return x;
}

class Metrics : public ::testing::Test {
protected:
  Engine engine = synthetic_engine();
  std::string text = metrics_text(take_metrics_snapshot(engine, counters()));
  Exposition x = parse(text);
};

TEST_F(Metrics, EveryFamilyOnceWithHelpAndTypeAndItsSamplesTogether) {
  EXPECT_TRUE(x.errors.empty()) << ::testing::PrintToString(x.errors) << text;
  const std::vector<std::string> families = {"shmbpf_build_info",
                                             "shmbpf_segments",
                                             "shmbpf_segment_bytes",
                                             "shmbpf_orphaned_segments",
                                             "shmbpf_orphaned_bytes",
                                             "shmbpf_restart_orphaned_segments",
                                             "shmbpf_restart_orphaned_bytes",
                                             "shmbpf_mount_size_bytes",
                                             "shmbpf_mount_used_bytes",
                                             "shmbpf_mount_peak_used_bytes",
                                             "shmbpf_mount_seconds_to_full",
                                             "shmbpf_mount_seconds_to_memory_limit",
                                             "shmbpf_mounts_folded",
                                             "shmbpf_mounts_folded_used_bytes",
                                             "shmbpf_container_shmem_bytes",
                                             "shmbpf_container_memory_usage_bytes",
                                             "shmbpf_container_memory_limit_bytes",
                                             "shmbpf_cgroup_shmem_bytes",
                                             "shmbpf_cgroup_memory_usage_bytes",
                                             "shmbpf_cgroup_memory_limit_bytes",
                                             "shmbpf_events_total",
                                             "shmbpf_events_lost_total",
                                             "shmbpf_sigbus_total",
                                             "shmbpf_nospace_total",
                                             "shmbpf_oom_kills_total",
                                             "shmbpf_oom_last_kill_timestamp_seconds",
                                             "shmbpf_oom_last_kill_shmem_bytes",
                                             "shmbpf_oom_last_kill_shmem_ratio",
                                             "shmbpf_oom_last_kill_limit_bytes",
                                             "shmbpf_bpf_program_attached"};
  EXPECT_EQ(x.order, families);
  for (const auto &f : families) {
    EXPECT_FALSE(x.help[f].empty()) << f;
    EXPECT_EQ(x.type[f], f.ends_with("_total") ? "counter" : "gauge") << f;
  }
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(Metrics, SegmentsByContainerMountKindAndState) {
  const std::map<std::string, std::string> host_shm = {
      {"container_id", ""}, {"uid", ""}, {"mountpoint", "/dev/shm"}, {"kind", "tmpfs"}};
  auto with = [](std::map<std::string, std::string> m, const std::string &state) {
    m["state"] = state;
    return m;
  };
  // torch_100_a_0, torch_100_a_1 and model.bin.
  EXPECT_EQ(x.value("shmbpf_segments", with(host_shm, "linked")), "3");
  EXPECT_EQ(x.value("shmbpf_segment_bytes", with(host_shm, "linked")),
            std::to_string(3 * kMiB + 4096));
  EXPECT_EQ(x.value("shmbpf_segments", {{"kind", "memfd"}, {"state", "unlinked"}}), "1");
  EXPECT_EQ(x.value("shmbpf_segments", {{"kind", "sysv"}, {"mountpoint", ""}}), "1");
  // The docker container's /dev/shm, named as its processes see it.
  EXPECT_EQ(x.value("shmbpf_segments", {{"container_id", kDockerCid}, {"mountpoint", "/dev/shm"}}),
            "2");
  EXPECT_EQ(
      x.value("shmbpf_segment_bytes", {{"container_id", kDockerCid}, {"mountpoint", "/dev/shm"}}),
      "24576");
  // The pod's container: its uid known, its names not (the runtime's files
  // have not been read).
  const std::map<std::string, std::string> pod = {{"container_id", kPodCtrCid}, {"uid", kPodUid}};
  EXPECT_EQ(x.value("shmbpf_segments", pod), "1");
  for (const Sample &s : x.of("shmbpf_segments")) {
    EXPECT_EQ(s.labels.at("namespace"), "");
    EXPECT_EQ(s.labels.at("pod"), "");
    EXPECT_EQ(s.labels.at("container"), "");
  }
}

TEST_F(Metrics, NamesFromTheRuntimesFilesAsCadvisorLabelsThem) {
  engine.set_container_name(kDockerId, ContainerName{"web-1", "", "", ""});
  engine.set_container_name(kPodCtrId, ContainerName{"api", "api-6b9c", "shop", kPodUid});
  const Exposition named = parse(metrics_text(take_metrics_snapshot(engine, counters())));
  EXPECT_TRUE(named.errors.empty());
  EXPECT_EQ(named.value("shmbpf_segments", {{"container", "web-1"},
                                            {"container_id", kDockerCid},
                                            {"pod", ""},
                                            {"mountpoint", "/dev/shm"}}),
            "2");
  EXPECT_EQ(named.value("shmbpf_segments", {{"namespace", "shop"},
                                            {"pod", "api-6b9c"},
                                            {"uid", kPodUid},
                                            {"container", "api"},
                                            {"container_id", kPodCtrCid}}),
            "1");
  EXPECT_EQ(named.value("shmbpf_mount_used_bytes", {{"device", "0:50"}, {"container", "web-1"}}),
            "24576");
  // Names add labels, not series.
  for (const char *f : {"shmbpf_segments", "shmbpf_orphaned_bytes", "shmbpf_mount_used_bytes"})
    EXPECT_EQ(named.of(f).size(), x.of(f).size()) << f;
}

TEST_F(Metrics, OrphansWhateverTheirAgeAndZeroWhereNone) {
  EXPECT_EQ(x.value("shmbpf_orphaned_segments",
                    {{"container_id", ""}, {"mountpoint", "/dev/shm"}, {"kind", "tmpfs"}}),
            "2");
  EXPECT_EQ(x.value("shmbpf_orphaned_bytes",
                    {{"container_id", ""}, {"mountpoint", "/dev/shm"}, {"kind", "tmpfs"}}),
            std::to_string(3 * kMiB));
  EXPECT_EQ(x.value("shmbpf_orphaned_segments", {{"container_id", kDockerCid}}), "1");
  EXPECT_EQ(x.value("shmbpf_orphaned_bytes", {{"container_id", kDockerCid}}), "16384");
  EXPECT_EQ(x.value("shmbpf_orphaned_segments", {{"kind", "memfd"}}), "0");
  EXPECT_EQ(x.value("shmbpf_orphaned_segments", {{"container_id", kPodCtrCid}}), "0");
  EXPECT_EQ(x.of("shmbpf_orphaned_segments").size(), x.of("shmbpf_orphaned_bytes").size());
}

// One orphan everywhere (docs/LEAKS.md): the metric's sum is what leaks,
// the export, top's header and ls count, and files on /run that are not
// shared memory are in none of them.
TEST(MetricsOrphans, TheSumIsTheOrphanCountOfEveryOtherView) {
  Engine engine = synthetic_engine();
  auto in = [](Event e) {
    e.cgroup_id = 13;
    return e;
  };
  const FileAt run{27, 42};
  engine.apply(in(created_file(run, 700, 20, "/run/daemon.pid", 4096, 20 * kSec)));
  engine.apply(in(created_file(run, 700, 21, "/run/torch_700_b_0", 8192, 21 * kSec)));
  engine.apply(in(process_event(EventType::exit, 700, 22 * kSec)));
  const MetricsCounters c = counters();
  const Exposition x = parse(metrics_text(take_metrics_snapshot(engine, c)));
  double sum = 0;
  for (const Sample &s : x.of("shmbpf_orphaned_segments"))
    sum += std::stod(s.value);

  const std::vector<Orphan> orphans = engine.orphans(c.now_ns, 0);
  const LeakReport leaks = summarize_orphans(orphans, "");
  EXPECT_EQ(sum, static_cast<double>(leaks.orphans.size()));
  EXPECT_EQ(engine.totals(c.now_ns, 0).orphans, leaks.orphans.size());
  size_t flagged = 0;
  for (const SegmentInfo &s : engine.segments({}, c.now_ns, 0))
    flagged += s.orphan;
  EXPECT_EQ(flagged, leaks.orphans.size());
  OrphanWatch watch;
  EXPECT_EQ(watch.update(orphans).appeared.size(), leaks.orphans.size());
  // torch_100's two, the container's psm_gone, and /run's torch file.
  EXPECT_EQ(leaks.orphans.size(), 4u);
  EXPECT_EQ(x.value("shmbpf_orphaned_segments", {{"mountpoint", "/run"}, {"kind", "tmpfs"}}), "1");
  for (const SegmentInfo &s : leaks.orphans)
    EXPECT_NE(s.path, "/run/daemon.pid");
  // Only asked for by name (leaks --all-mounts) is the pid file there.
  const auto all = engine.orphans(c.now_ns, 0, OrphanScope::all_mounts);
  EXPECT_EQ(all.size(), 5u);
}

TEST_F(Metrics, OneSeriesPerFilesystemWithItsContainer) {
  // The container's /dev/shm is one filesystem mounted twice: one series,
  // under the name its processes see, labelled with the container.
  const auto used = x.of("shmbpf_mount_used_bytes");
  ASSERT_EQ(used.size(), 4u) << text;
  EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"device", "0:50"}}), "24576");
  EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"device", "0:50"}, {"container_id", kDockerCid}}),
            "24576");
  EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"device", "0:50"}, {"mountpoint", "/dev/shm"}}),
            "24576");
  EXPECT_EQ(x.value("shmbpf_mount_size_bytes", {{"device", "0:26"}, {"container_id", ""}}),
            std::to_string(64 * kMiB));
  // /run has no size limit: no size, no time to full.
  EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"mountpoint", "/run"}}), "4096");
  EXPECT_EQ(x.value("shmbpf_mount_size_bytes", {{"mountpoint", "/run"}}), "(none)");
  EXPECT_EQ(x.value("shmbpf_mount_seconds_to_full", {{"mountpoint", "/run"}}), "(none)");
  // A MiB a second with 4 MiB left; the container's does not grow.
  const double to_full = std::stod(x.value("shmbpf_mount_seconds_to_full", {{"device", "0:26"}}));
  EXPECT_NEAR(to_full, 4.0, 0.5);
  // Not growing: no series (never +Inf, which sorts and graphs badly).
  EXPECT_EQ(x.value("shmbpf_mount_seconds_to_full", {{"device", "0:50"}}), "(none)");
  EXPECT_EQ(x.value("shmbpf_mount_size_bytes", {{"device", "0:50"}}), std::to_string(64 * kMiB));
  // The container's /dev/shm: its memory limit (64 MiB, 30 MiB charged)
  // with no growth; the host's has no limit to tell.
  EXPECT_EQ(x.value("shmbpf_mount_seconds_to_memory_limit", {{"device", "0:50"}}), "(none)");
  EXPECT_EQ(text.find("Inf"), std::string::npos);
  EXPECT_EQ(x.value("shmbpf_mount_seconds_to_memory_limit", {{"device", "0:26"}}), "(none)");
  // The most the host's /dev/shm held: 60 MiB, at the last sample.
  EXPECT_EQ(x.value("shmbpf_mount_peak_used_bytes", {{"device", "0:26"}}),
            std::to_string(60 * kMiB));
}

TEST_F(Metrics, EachContainersMemoryCgroup) {
  EXPECT_EQ(x.value("shmbpf_container_shmem_bytes", {{"container_id", kDockerCid}}),
            std::to_string(20 * kMiB));
  EXPECT_EQ(x.value("shmbpf_container_memory_usage_bytes", {{"container_id", kDockerCid}}),
            std::to_string(30 * kMiB));
  EXPECT_EQ(x.value("shmbpf_container_memory_limit_bytes", {{"container_id", kDockerCid}}),
            std::to_string(64 * kMiB));
  EXPECT_EQ(x.value("shmbpf_container_shmem_bytes", {{"container_id", ""}}), std::to_string(kMiB));
  // Without a limit, no limit series.
  EXPECT_EQ(x.value("shmbpf_container_memory_limit_bytes", {{"container_id", ""}}), "(none)");
  EXPECT_EQ(x.of("shmbpf_container_shmem_bytes").size(), 2u);
  // The host's top-level cgroups, by path.
  EXPECT_EQ(x.value("shmbpf_cgroup_shmem_bytes", {{"cgroup", "/system.slice"}}),
            std::to_string(3 * kMiB));
  EXPECT_EQ(x.value("shmbpf_cgroup_memory_usage_bytes", {{"cgroup", "/kubepods"}}),
            std::to_string(500 * kMiB));
  EXPECT_EQ(x.value("shmbpf_cgroup_memory_limit_bytes", {{"cgroup", "/kubepods"}}),
            std::to_string(kMiB << 10));
  EXPECT_EQ(x.value("shmbpf_cgroup_memory_limit_bytes", {{"cgroup", "/system.slice"}}), "(none)");
  EXPECT_EQ(x.of("shmbpf_cgroup_shmem_bytes").size(), 2u);
}

TEST_F(Metrics, CountersProgramsAndBuild) {
  EXPECT_EQ(x.value("shmbpf_events_total", {{"event", "create"}}), "9");
  EXPECT_EQ(x.value("shmbpf_events_total", {{"event", "exit"}}), "2");
  EXPECT_EQ(x.value("shmbpf_events_total", {{"event", "shmget"}}), "0");
  // One series per event type, link, nospace and oom included.
  EXPECT_EQ(x.of("shmbpf_events_total").size(), 17u);
  EXPECT_EQ(x.value("shmbpf_events_total", {{"event", "nospace"}}), "0");
  EXPECT_EQ(x.value("shmbpf_events_total", {{"event", "oom"}}), "0");
  EXPECT_EQ(x.value("shmbpf_events_lost_total", {}), "5");
  // The synthetic fault names no file: the host's group without a mountpoint.
  EXPECT_EQ(x.value("shmbpf_sigbus_total", {{"container_id", ""}, {"mountpoint", ""}}), "1");
  EXPECT_EQ(x.of("shmbpf_sigbus_total").size(), 1u);
  // The container's writes without space, on its own /dev/shm; the host's
  // series is there at 0.
  EXPECT_EQ(
      x.value("shmbpf_nospace_total", {{"container_id", kDockerCid}, {"mountpoint", "/dev/shm"}}),
      "2");
  EXPECT_EQ(x.value("shmbpf_nospace_total", {{"container_id", ""}, {"mountpoint", ""}}), "0");
  EXPECT_EQ(x.of("shmbpf_nospace_total").size(), 2u);
  // The container's OOM kills, and what the latest found.
  EXPECT_EQ(x.value("shmbpf_oom_kills_total", {{"container_id", kDockerCid}}), "2");
  // The host's series is there at 0, as for the other failures.
  EXPECT_EQ(x.value("shmbpf_oom_kills_total", {{"container_id", ""}}), "0");
  EXPECT_EQ(x.of("shmbpf_oom_kills_total").size(), 2u);
  EXPECT_EQ(x.of("shmbpf_oom_last_kill_shmem_bytes").size(), 1u);
  EXPECT_EQ(x.value("shmbpf_oom_last_kill_shmem_bytes", {{"container_id", kDockerCid}}),
            std::to_string(48 * kMiB));
  EXPECT_EQ(x.value("shmbpf_oom_last_kill_shmem_ratio", {{"container_id", kDockerCid}}), "0.75");
  EXPECT_EQ(x.value("shmbpf_oom_last_kill_limit_bytes", {{"container_id", kDockerCid}}),
            std::to_string(64 * kMiB));
  // Boot time 10 s (and a few ns) plus the clock's offset.
  EXPECT_NEAR(
      std::stod(x.value("shmbpf_oom_last_kill_timestamp_seconds", {{"container_id", kDockerCid}})),
      1'700'000'010.0, 0.01);
  EXPECT_EQ(x.value("shmbpf_bpf_program_attached",
                    {{"hook", "syscalls/sys_exit_openat"},
                     {"program", "tracepoint__syscalls__sys_exit_openat"}}),
            "1");
  EXPECT_EQ(x.value("shmbpf_bpf_program_attached", {{"hook", "mm_filemap_delete_from_page_cache"}}),
            "0");
  EXPECT_EQ(x.value("shmbpf_build_info",
                    {{"version", "0.1.0"}, {"revision", "0123456789ab"}, {"kernel", "6.1.0-test"}}),
            "1");
}

// --node-name: the node on every sample, first; none without it.
TEST_F(Metrics, TheNodeLabelOnEverySample) {
  for (const Sample &s : x.samples)
    EXPECT_EQ(s.labels.count("node"), 0u) << s.name;
  MetricsCounters c = counters();
  c.agent.node = "gpu-node-7";
  c.process = SelfStats{};
  const std::string with = metrics_text(take_metrics_snapshot(engine, c));
  const Exposition n = parse(with);
  EXPECT_TRUE(n.errors.empty());
  ASSERT_GT(n.samples.size(), x.samples.size()); // the process_* ones too
  for (const Sample &s : n.samples)
    EXPECT_EQ(s.labels.count("node") ? s.labels.at("node") : "(none)", "gpu-node-7") << s.name;
  EXPECT_NE(with.find("process_open_fds{node=\"gpu-node-7\"} 0\n"), std::string::npos) << with;
  EXPECT_NE(with.find("shmbpf_build_info{node=\"gpu-node-7\",version=\"0.1.0\""),
            std::string::npos);
}

// The agent's own process, under the names client libraries give them.
TEST_F(Metrics, TheAgentsOwnProcess) {
  for (const char *f : {"process_cpu_seconds_total", "process_resident_memory_bytes"})
    EXPECT_TRUE(x.of(f).empty()) << f;
  MetricsCounters c = counters();
  c.process = SelfStats{12.5, 80 * kMiB, 900 * kMiB, 17, 1024, 1'700'000'000.25};
  const Exposition p = parse(metrics_text(take_metrics_snapshot(engine, c)));
  EXPECT_EQ(p.value("process_cpu_seconds_total", {}), "12.5");
  EXPECT_EQ(p.value("process_resident_memory_bytes", {}), std::to_string(80 * kMiB));
  EXPECT_EQ(p.value("process_virtual_memory_bytes", {}), std::to_string(900 * kMiB));
  EXPECT_EQ(p.value("process_open_fds", {}), "17");
  EXPECT_EQ(p.value("process_max_fds", {}), "1024");
  EXPECT_EQ(p.value("process_start_time_seconds", {}), "1700000000.25");
  EXPECT_EQ(p.type.at("process_cpu_seconds_total"), "counter");
  EXPECT_EQ(p.type.at("process_open_fds"), "gauge");
}

TEST_F(Metrics, ExportCountersOnlyWithAnExportFile) {
  for (const char *f : {"shmbpf_export_records_total", "shmbpf_export_dropped_records_total",
                        "shmbpf_export_errors_total", "shmbpf_export_rotations_total"})
    EXPECT_TRUE(x.of(f).empty()) << f;
  MetricsCounters c = counters();
  c.export_file = ExportCounters{120, 7, 2, 3};
  const std::string with = metrics_text(take_metrics_snapshot(engine, c));
  const Exposition e = parse(with);
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << with;
  EXPECT_EQ(e.value("shmbpf_export_records_total", {}), "120");
  EXPECT_EQ(e.value("shmbpf_export_dropped_records_total", {}), "7");
  EXPECT_EQ(e.value("shmbpf_export_errors_total", {}), "2");
  EXPECT_EQ(e.value("shmbpf_export_rotations_total", {}), "3");
  for (const char *f : {"shmbpf_export_records_total", "shmbpf_export_dropped_records_total",
                        "shmbpf_export_errors_total", "shmbpf_export_rotations_total"}) {
    EXPECT_EQ(e.type.at(f), "counter") << f;
    EXPECT_FALSE(e.help.at(f).empty()) << f;
  }
}

TEST_F(Metrics, NoPidPathOrNameEverALabel) {
  const std::set<std::string> allowed = {
      "namespace", "pod",    "uid",          "container", "container_id", "mountpoint",
      "kind",      "state",  "device",       "event",     "hook",         "program",
      "version",   "kernel", "userns_owner", "cgroup", // the host's top-level cgroups: at most 64
      "revision",  "node"};
  for (const Sample &s : x.samples)
    for (const auto &[k, v] : s.labels)
      EXPECT_TRUE(allowed.count(k)) << "label " << k << " in " << s.name;
  for (const char *name : {"torch_100", "model.bin", "psm_", "kube_seg", "pool", "SYSV", "/f\""})
    EXPECT_EQ(text.find(name), std::string::npos) << name << " in\n" << text;
  // Pids of the processes above, as a label value or anywhere.
  for (const char *pid : {"\"100\"", "\"200\"", "\"500\"", "\"501\"", "\"600\""})
    EXPECT_EQ(text.find(pid), std::string::npos) << pid;
}

// What any user can mount (unshare -Urm, then mount -t tmpfs) gets series
// up to kForeignMountSeries filesystems, the largest; the rest are folded:
// counted, their bytes summed, their segments and failures under one
// mountpoint. Each foreign filesystem names the uid that made its namespace.
TEST(MetricsForeignMounts, PastTheLimitTheyAreFoldedAndCounted) {
  for (const size_t extra : {size_t{0}, size_t{8}}) {
    Engine engine;
    engine.set_mount(mount(25, kHostNs, "/dev/shm", 26, 64 * kMiB, 4096));
    const size_t n = kForeignMountSeries + extra;
    uint64_t folded_bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      MountState m = mount(static_cast<uint32_t>(100 + i), 9000, "/tmp/f" + std::to_string(i),
                           static_cast<uint32_t>(300 + i), 0, 4096 * (i + 1));
      m.foreign = true;
      m.owner_uid = 65534;
      engine.set_mount(m);
      if (i < extra) // the smallest are folded (two with a 4 KiB file below)
        folded_bytes += m.used_bytes + (i < 2 ? 4096 : 0);
    }
    engine.add_process(77, 1, 65534, "sh", 13, 9000);
    uint64_t ts = 10 * kSec;
    for (uint32_t i = 0; i < 4; ++i) { // files on the two smallest and two largest
      const uint32_t at = i < 2 ? i : static_cast<uint32_t>(n) - 4 + i;
      engine.apply(created_file({300 + at, 100 + at}, 77, 10 + i,
                                "/tmp/f" + std::to_string(at) + "/x", 4096, ts++));
    }
    engine.apply(write_without_space({300, 100}, 77, 10, "/tmp/f0/x", ts++));
    engine.apply(write_without_space({301, 101}, 77, 11, "/tmp/f1/x", ts++));
    const Exposition x = parse(metrics_text(take_metrics_snapshot(engine, counters())));
    EXPECT_TRUE(x.errors.empty());
    EXPECT_EQ(x.of("shmbpf_mount_used_bytes").size(), 1 + kForeignMountSeries) << extra;
    EXPECT_EQ(x.value("shmbpf_mounts_folded", {}), std::to_string(extra));
    EXPECT_EQ(x.value("shmbpf_mounts_folded_used_bytes", {}), std::to_string(folded_bytes));
    EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"device", "0:26"}}), "4096");
    EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"device", "0:26"}, {"userns_owner", ""}}),
              "4096");
    const std::string largest = "0:" + std::to_string(300 + n - 1);
    EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"device", largest}, {"userns_owner", "65534"}}),
              std::to_string(4096 * n + 4096)); // and its file
    if (extra) {
      EXPECT_EQ(x.value("shmbpf_mount_used_bytes", {{"device", "0:300"}}), "(none)");
      EXPECT_EQ(x.value("shmbpf_segments", {{"mountpoint", "(folded)"}}), "2");
      EXPECT_EQ(x.value("shmbpf_segments", {{"mountpoint", "/tmp/f0"}}), "(none)");
      EXPECT_EQ(x.value("shmbpf_nospace_total", {{"mountpoint", "(folded)"}}), "2");
    } else {
      EXPECT_EQ(x.value("shmbpf_segments", {{"mountpoint", "/tmp/f0"}}), "1");
      EXPECT_EQ(x.value("shmbpf_nospace_total", {{"mountpoint", "/tmp/f0"}}), "1");
    }
    EXPECT_EQ(x.value("shmbpf_segments", {{"mountpoint", "/tmp/f" + std::to_string(n - 1)}}), "1");
  }
}

TEST_F(Metrics, MountpointsEscapedOnOneLine) {
  // The hostile mountpoint reads back (format escaping undone) as
  // escape_text wrote it: quote kept, backslash doubled, newline as \n.
  const std::string as_shown = "/mnt/we\"ird\\\\dir\\nx";
  EXPECT_EQ(x.value("shmbpf_mount_size_bytes", {{"mountpoint", as_shown}}),
            std::to_string(8 * kMiB));
  EXPECT_EQ(x.value("shmbpf_segments", {{"mountpoint", as_shown}}), "1");
  for (const Sample &s : x.samples)
    for (const auto &[k, v] : s.labels)
      EXPECT_EQ(v.find('\n'), std::string::npos) << k;
  // Every line is a comment or a sample of a known family.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    EXPECT_TRUE(line.starts_with("# ") || line.starts_with("shmbpf_")) << line;
}

TEST(MetricsGroups, EngineGroupsMergeCgroupsOfOneContainer) {
  Engine engine;
  const std::string id(64, 'e');
  // Two cgroups of one container (a scope and a nested one).
  engine.set_cgroup_path(21, "/system.slice/docker-" + id + ".scope");
  engine.set_cgroup_path(22, "/system.slice/docker-" + id + ".scope/init");
  engine.set_mount(mount(25, kHostNs, "/dev/shm", 26, 0, 0));
  Event a = created_file(kHostShm, 300, 1, "/dev/shm/a", 4096, kSec);
  a.cgroup_id = 21;
  Event b = created_file(kHostShm, 301, 2, "/dev/shm/b", 8192, kSec);
  b.cgroup_id = 22;
  engine.apply(a);
  engine.apply(b);
  auto groups = engine.segment_groups(2 * kSec, 0);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].container.id, id);
  EXPECT_EQ(groups[0].mountpoint, "/dev/shm");
  EXPECT_EQ(groups[0].segments, 2u);
  EXPECT_EQ(groups[0].bytes, 12288u);
  EXPECT_FALSE(groups[0].orphan);
}

} // namespace
} // namespace shmbpf::test
