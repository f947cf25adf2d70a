// reap's choice of targets from a made-up scan, the verdicts of its
// checks at removal, and its report.
#include "model/apply_scan.hpp"
#include "model/reap.hpp"
#include "views/reap_view.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace shmbpf {
namespace {

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kNow = 100'000 * kSec;
constexpr uint32_t kHostDev = 25, kBoxDev = 26;
constexpr uint32_t kHostMntns = 4001, kBoxMntns = 4002, kIpcns = 5001;

TmpfsFile file(uint32_t dev, uint64_t ino, std::string path, uint64_t bytes, int64_t age_s) {
  TmpfsFile f;
  f.dev = dev;
  f.ino = ino;
  f.leaf = path.substr(path.rfind('/') + 1);
  f.path = std::move(path);
  f.size = f.bytes = bytes;
  f.nlink = 1;
  f.mtime_s = static_cast<int64_t>(kNow / kSec) - age_s;
  return f;
}

MountState mount(uint32_t mnt_id, uint32_t mntns, std::string mp, uint32_t dev) {
  MountState m;
  m.mnt_id = mnt_id;
  m.mntns = mntns;
  m.mountpoint = std::move(mp);
  m.dev = dev;
  return m;
}

ScannedProcess process(uint32_t pid, std::string comm) {
  ScannedProcess p;
  p.id.pid = pid;
  p.id.ppid = 1;
  p.id.comm = std::move(comm);
  p.id.mntns = kHostMntns;
  p.id.ipcns = kIpcns;
  return p;
}

// The host's /dev/shm and a container's, with orphans, a held file, a
// young orphan, a torch file whose pid lives, a /run file, an unlinked
// file someone holds and two SysV segments (one attached).
Engine engine_with_leftovers() {
  EngineConfig cfg;
  cfg.start_ns = kNow;
  cfg.realtime_offset_ns = 0;
  Engine engine(cfg);
  SystemScan scan;
  ScannedFs host;
  host.dev = kHostDev;
  host.mnt_id = 30;
  host.mountpoint = "/dev/shm";
  host.files = {file(kHostDev, 1, "/dev/shm/torch_999_1_0", 4096, 3600),
                file(kHostDev, 2, "/dev/shm/held", 8192, 3600),
                file(kHostDev, 3, "/dev/shm/young", 4096, 10),
                file(kHostDev, 4, "/dev/shm/torch_77_1_0", 4096, 3600),
                file(kHostDev, 5, "/dev/shm/sub/dir/deep", 12288, 3600)};
  ScannedFs box;
  box.dev = kBoxDev;
  box.mnt_id = 40;
  box.mountpoint = "/dev/shm";
  box.files = {file(kBoxDev, 1, "/dev/shm/torch_999_1_0", 16384, 3600)};
  ScannedFs run;
  run.dev = 27;
  run.mnt_id = 31;
  run.mountpoint = "/run";
  run.files = {file(27, 9, "/run/pidfile", 4096, 3600)};
  scan.filesystems = {host, box, run};
  scan.mounts = {mount(30, kHostMntns, "/dev/shm", kHostDev), mount(31, kHostMntns, "/run", 27),
                 mount(40, kBoxMntns, "/dev/shm", kBoxDev)};

  ScannedProcess holder = process(50, "holder");
  HeldFile h;
  h.dev = kHostDev;
  h.ino = 2;
  h.via_fd = true;
  h.path = "/dev/shm/held";
  HeldFile gone;
  gone.dev = kHostDev;
  gone.ino = 8;
  gone.via_map = true;
  gone.deleted = true;
  gone.stat_ok = true;
  gone.bytes = 65536;
  gone.path = "/dev/shm/unlinked";
  holder.holdings = {h, gone};
  scan.processes = {holder, process(77, "trainer")};

  SysvEntry free_seg;
  free_seg.shmid = 11;
  free_seg.key = 0x1234;
  free_seg.size = free_seg.rss_bytes = 1 << 20;
  free_seg.cpid = 60000;
  free_seg.ctime_s = static_cast<int64_t>(kNow / kSec) - 7200;
  SysvEntry attached = free_seg;
  attached.shmid = 12;
  attached.nattch = 1;
  scan.ipc = {{kIpcns, {free_seg, attached}}};
  bootstrap(engine, scan);
  return engine;
}

std::vector<std::string> paths(const ReapPlan &plan) {
  std::vector<std::string> out;
  for (const ReapTarget &t : plan.targets)
    out.push_back(t.segment.path + "@" + std::to_string(t.segment.key.dev_or_ipcns));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Reap, PlanTakesOldOrphansWithNamesOnly) {
  const Engine engine = engine_with_leftovers();
  const ReapPlan plan = plan_reap(engine, kNow, {});
  // Not the held file, the young one, the torch file of a live pid, the
  // /run file, the attached segment or the unlinked file.
  EXPECT_EQ(paths(plan),
            (std::vector<std::string>{"/dev/shm/sub/dir/deep@25", "/dev/shm/torch_999_1_0@25",
                                      "/dev/shm/torch_999_1_0@26", "SYSV00001234@5001"}));
  for (const ReapTarget &t : plan.targets) {
    if (t.segment.kind == Kind::sysv) {
      EXPECT_EQ(t.mntns, 0u);
      EXPECT_EQ(t.creator_pid, 60000u); // from the kernel's cpid
      EXPECT_GE(t.age_ns, 7200 * kSec); // aged from shm_ctime
      continue;
    }
    EXPECT_EQ(t.mntns, t.segment.key.dev_or_ipcns == kBoxDev ? kBoxMntns : kHostMntns);
    if (t.segment.path == "/dev/shm/sub/dir/deep")
      EXPECT_EQ(t.relative_path, "sub/dir/deep");
    else
      EXPECT_EQ(t.relative_path, "torch_999_1_0");
  }
  ASSERT_EQ(plan.held.size(), 1u);
  EXPECT_EQ(plan.held[0].segment.path, "/dev/shm/unlinked");
  EXPECT_EQ(plan.held[0].segment.holders, std::vector<uint32_t>{50});
}

TEST(Reap, FiltersNarrowThePlan) {
  const Engine engine = engine_with_leftovers();
  ReapFilter f;
  f.kind = Kind::sysv;
  EXPECT_EQ(paths(plan_reap(engine, kNow, f)), std::vector<std::string>{"SYSV00001234@5001"});
  f = {};
  f.kind = Kind::tmpfs;
  f.match = "*/torch_*";
  EXPECT_EQ(paths(plan_reap(engine, kNow, f)),
            (std::vector<std::string>{"/dev/shm/torch_999_1_0@25", "/dev/shm/torch_999_1_0@26"}));
  f = {};
  f.min_age_s = 0; // the young file too
  EXPECT_EQ(plan_reap(engine, kNow, f).targets.size(), 5u);
  f = {};
  f.all_mounts = true;
  f.mount = "/run";
  EXPECT_EQ(paths(plan_reap(engine, kNow, f)), std::vector<std::string>{"/run/pidfile@27"});
  f = {};
  f.container = ""; // the host: every segment here has no container
  EXPECT_EQ(plan_reap(engine, kNow, f).targets.size(), 4u);
  f.container = "abc";
  EXPECT_TRUE(plan_reap(engine, kNow, f).targets.empty());
}

TEST(Reap, PathBelowMountRefusesWhatLeavesIt) {
  EXPECT_EQ(path_below_mount("/dev/shm/a", "/dev/shm"), "a");
  EXPECT_EQ(path_below_mount("/dev/shm/a/b", "/dev/shm"), "a/b");
  EXPECT_EQ(path_below_mount("/x", "/"), "x");
  EXPECT_EQ(path_below_mount("/dev/shmx/a", "/dev/shm"), "");
  EXPECT_EQ(path_below_mount("/dev/shm", "/dev/shm"), "");
  EXPECT_EQ(path_below_mount("/dev/shm/../etc/passwd", "/dev/shm"), "");
  EXPECT_EQ(path_below_mount("/dev/shm/./a", "/dev/shm"), "");
  EXPECT_EQ(path_below_mount("/dev/shm//a", "/dev/shm"), "");
  EXPECT_EQ(path_below_mount("/dev/shm/a/", "/dev/shm"), "");
  EXPECT_EQ(path_below_mount("memfd:x", ""), "");
}

ReapTarget file_target() {
  ReapTarget t;
  t.segment.kind = Kind::tmpfs;
  t.segment.key = SegmentKey::file(kHostDev, 42);
  t.segment.path = "/dev/shm/x";
  return t;
}

TEST(Reap, FileMustStillBeTheOneJudged) {
  const ReapTarget t = file_target();
  FileLook look{true, S_IFREG | 0600, kHostDev, 42, 0x01021994};
  EXPECT_EQ(judge_file(t, look), ReapSkip::none);
  FileLook hugetlb = look;
  hugetlb.fs_magic = 0x958458f6;
  EXPECT_EQ(judge_file(t, hugetlb), ReapSkip::none);
  EXPECT_EQ(judge_file(t, FileLook{}), ReapSkip::vanished);
  FileLook link = look;
  link.mode = S_IFLNK | 0777;
  EXPECT_EQ(judge_file(t, link), ReapSkip::not_regular);
  FileLook dir = look;
  dir.mode = S_IFDIR | 0755;
  EXPECT_EQ(judge_file(t, dir), ReapSkip::not_regular);
  FileLook ext4 = look;
  ext4.fs_magic = 0xef53;
  EXPECT_EQ(judge_file(t, ext4), ReapSkip::not_shm_filesystem);
  FileLook other = look;
  other.ino = 43;
  EXPECT_EQ(judge_file(t, other), ReapSkip::replaced);
  other = look;
  other.dev = kBoxDev;
  EXPECT_EQ(judge_file(t, other), ReapSkip::replaced);
  FileLook linked = look;
  linked.links = 2;
  EXPECT_EQ(judge_file(t, linked), ReapSkip::other_names);
  EXPECT_EQ(to_string(ReapSkip::other_names), "other-names");
}

TEST(Reap, SysvSegmentMustBeDetachedAndItsProcessesGone) {
  ReapTarget t;
  t.segment.kind = Kind::sysv;
  t.segment.key = SegmentKey::sysv(kIpcns, 11);
  t.segment.sysv_key = 0x1234;
  t.segment.size = 4096;
  t.creator_pid = 600;
  SysvLook look;
  look.exists = true;
  look.key = 0x1234;
  look.size = 4096;
  look.cpid = 600;
  look.lpid = 601;
  EXPECT_EQ(judge_sysv(t, look), ReapSkip::none);
  EXPECT_EQ(judge_sysv(t, SysvLook{}), ReapSkip::vanished);
  SysvLook l = look;
  l.removed = true;
  EXPECT_EQ(judge_sysv(t, l), ReapSkip::vanished);
  l = look;
  l.key = 0x9999;
  EXPECT_EQ(judge_sysv(t, l), ReapSkip::replaced);
  l = look;
  l.cpid = 700; // the id was reused by another creator's segment
  EXPECT_EQ(judge_sysv(t, l), ReapSkip::replaced);
  l = look;
  l.nattch = 1;
  EXPECT_EQ(judge_sysv(t, l), ReapSkip::attached);
  l = look;
  l.cpid_alive = true;
  EXPECT_EQ(judge_sysv(t, l), ReapSkip::creator_alive);
  l = look;
  l.lpid_alive = true;
  EXPECT_EQ(judge_sysv(t, l), ReapSkip::last_attacher_alive);
}

TEST(Reap, ReportSaysWhatWasFreedAndWhy) {
  const Engine engine = engine_with_leftovers();
  ReapFilter f;
  f.kind = Kind::tmpfs;
  const ReapPlan plan = plan_reap(engine, kNow, f);
  ASSERT_EQ(plan.targets.size(), 3u);
  std::vector<ReapOutcome> out;
  for (const ReapTarget &t : plan.targets)
    out.push_back(ReapOutcome{t, ReapStatus::freed, ReapSkip::none, "", {}, t.segment.bytes});
  out[1].status = ReapStatus::skipped;
  out[1].reason = ReapSkip::held;
  out[1].detail = describe_skip(ReapSkip::held, out[1].target);
  out[1].holders = {321};
  out[1].bytes = 0;

  const ReapTotals totals = reap_totals(out);
  EXPECT_EQ(totals.selected, 3u);
  EXPECT_EQ(totals.freed, 2u);
  EXPECT_EQ(totals.skipped, 1u);
  EXPECT_EQ(totals.bytes_freed, out[0].bytes + out[2].bytes);

  const std::string text = reap_text(out, plan, true, kNow);
  EXPECT_NE(text.find("freed 2 of 3 segments"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped 1"), std::string::npos) << text;
  EXPECT_NE(text.find("a process holds it open or mapped (pid 321)"), std::string::npos) << text;
  EXPECT_NE(text.find("/dev/shm/unlinked"), std::string::npos) << text; // held, not freed
  EXPECT_EQ(text.find("dry run"), std::string::npos) << text;

  const auto doc = nlohmann::json::parse(reap_json(out, plan, true, kNow));
  EXPECT_EQ(doc["dry_run"], false);
  EXPECT_EQ(doc["freed"], 2);
  EXPECT_EQ(doc["skipped"], 1);
  ASSERT_EQ(doc["segments"].size(), 3u);
  EXPECT_EQ(doc["segments"][1]["status"], "skipped");
  EXPECT_EQ(doc["segments"][1]["reason"], "held");
  EXPECT_EQ(doc["segments"][1]["holders"], nlohmann::json::array({321}));
  EXPECT_EQ(doc["segments"][0]["reason"], nullptr);
  EXPECT_EQ(doc["segments"][0]["segment"]["path"], out[0].target.segment.path);
  EXPECT_EQ(doc["segments"][0]["segment"]["ino"], out[0].target.segment.key.ino_or_shmid);
  ASSERT_EQ(doc["held"].size(), 1u);
  EXPECT_EQ(doc["held"][0]["path"], "/dev/shm/unlinked");

  for (ReapOutcome &o : out)
    o.status = ReapStatus::would_free;
  const std::string dry = reap_text(out, plan, false, kNow);
  EXPECT_NE(dry.find("would free 3 of 3 segments"), std::string::npos) << dry;
  EXPECT_NE(dry.find("--yes"), std::string::npos) << dry;
  EXPECT_EQ(reap_text({}, ReapPlan{}, true, kNow), "nothing to reap: no orphan matches\n");
}

} // namespace
} // namespace shmbpf
