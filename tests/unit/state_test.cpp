// What serve keeps across a restart (model/state): the file's text, and
// which segments of a new run's first scan get a saved creation back.
#include "model/state.hpp"

#include "model/apply_scan.hpp"
#include "synthetic_events.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

using test::created_file;
using test::created_sysv;
using test::FileAt;

constexpr uint32_t kDev = 0x2a;
constexpr uint32_t kMnt = 40;
constexpr uint32_t kIpcns = 0xf0000001;
constexpr uint64_t kCgroup = 777;
const std::string kId(64, 'c');
const std::string kCgroupPath = "/system.slice/docker-" + kId + ".scope";
constexpr uint64_t kBtime = 1'790'000'000'123'456'789;
constexpr int64_t kCtime = 1'790'000'100;

TmpfsFile file(uint64_t ino, const std::string &path, uint64_t btime) {
  TmpfsFile f;
  f.dev = kDev;
  f.ino = ino;
  f.path = path;
  f.leaf = path.substr(path.rfind('/') + 1);
  f.size = 4096;
  f.bytes = 4096;
  f.nlink = 1;
  f.btime_ns = btime;
  return f;
}

SysvEntry sysv(int32_t shmid, uint32_t key, int64_t ctime) {
  SysvEntry e;
  e.shmid = shmid;
  e.key = key;
  e.size = 8192;
  e.cpid = 4242;
  e.ctime_s = ctime;
  return e;
}

// The machine as a scan sees it: one /dev/shm file and one SysV segment.
SystemScan scan_of(std::vector<TmpfsFile> files, std::vector<SysvEntry> segments) {
  SystemScan scan;
  ScannedFs fs;
  fs.dev = kDev;
  fs.mnt_id = kMnt;
  fs.mountpoint = "/dev/shm";
  fs.files = std::move(files);
  scan.filesystems.push_back(std::move(fs));
  scan.ipc.push_back({kIpcns, std::move(segments)});
  return scan;
}

// A first run: pid 4242 in a docker container creates both segments and
// exits; a rescan gives them their births. Its saved state.
SavedState first_run() {
  Engine engine;
  engine.set_cgroup_path(kCgroup, kCgroupPath);
  Event f = created_file({kDev, kMnt}, 4242, 11, "/dev/shm/a b%", 4096, 5'000);
  f.cgroup_id = kCgroup;
  engine.apply(f);
  Event s = created_sysv(4242, kIpcns, 3, 0x1234, 8192, 6'000);
  s.cgroup_id = kCgroup;
  engine.apply(s);
  engine.apply(test::process_event(EventType::exit, 4242, 7'000));
  reconcile(engine, scan_of({file(11, "/dev/shm/a b%", kBtime)}, {sysv(3, 0x1234, kCtime)}), 8'000);
  return collect_state(engine, "boot-1");
}

TEST(State, CollectsObservedCreationsWithTheirBirths) {
  const SavedState st = first_run();
  EXPECT_EQ(st.boot_id, "boot-1");
  ASSERT_EQ(st.segments.size(), 2u);
  const SavedSegment &sv = st.segments[0]; // newest first
  EXPECT_TRUE(sv.key.is_sysv());
  EXPECT_EQ(sv.birth, (Engine::Birth{Engine::Birth::Kind::time, static_cast<uint64_t>(kCtime)}));
  EXPECT_EQ(sv.sysv_key, 0x1234u);
  EXPECT_EQ(sv.creation.created_ns, 6'000u);
  const SavedSegment &f = st.segments[1];
  EXPECT_EQ(f.key, SegmentKey::file(kDev, 11));
  EXPECT_EQ(f.birth, (Engine::Birth{Engine::Birth::Kind::time, kBtime}));
  EXPECT_EQ(f.creation.pid, 4242u);
  EXPECT_EQ(f.creation.comm, "p4242");
  EXPECT_EQ(f.creation.uid, 1000u);
  EXPECT_EQ(f.creation.cgroup_id, kCgroup);
  EXPECT_EQ(f.creation.cgroup_path, kCgroupPath);
  EXPECT_EQ(f.creation.created_ns, 5'000u);
}

TEST(State, LeavesOutPreExistingFilesMemfdsAndUnknownBirths) {
  Engine engine;
  engine.apply(created_file({kDev, kMnt}, 10, 12, "/dev/shm/nobirth", 1, 1'000));
  engine.apply(test::created_memfd(10, 13, "m", 1'100));
  bootstrap(engine, scan_of({file(14, "/dev/shm/old", kBtime)}, {}));
  // The rescan knows no btime for 12, and 14's creation was never seen.
  reconcile(engine,
            scan_of({file(12, "/dev/shm/nobirth", 0), file(14, "/dev/shm/old", kBtime)}, {}),
            2'000);
  EXPECT_TRUE(collect_state(engine, "b").segments.empty());
}

TEST(State, TextRoundTrips) {
  const SavedState st = first_run();
  const std::string text = format_state(st);
  EXPECT_EQ(text.rfind("shmbpf-state 3 =boot-1\n", 0), 0u);
  Result<SavedState> back = parse_state(text);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(format_state(*back), text);
  ASSERT_EQ(back->segments.size(), 2u);
  EXPECT_EQ(back->segments[1].creation.comm, "p4242");
  EXPECT_EQ(back->segments[1].creation.cgroup_path, kCgroupPath);
  EXPECT_EQ(back->segments[0].key, SegmentKey::sysv(kIpcns, 3));
}

TEST(State, NamesWithSpacesAndControlsStayOneWord) {
  SavedState st;
  st.boot_id = "b";
  SavedSegment s;
  s.key = SegmentKey::file(1, 2);
  s.birth.value = 3;
  s.creation.pid = 4;
  s.creation.comm = "a b\n%\x01\xff";
  s.creation.cgroup_path = "";
  st.segments.push_back(s);
  const std::string text = format_state(st);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  Result<SavedState> back = parse_state(text);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->segments.at(0).creation.comm, s.creation.comm);
  EXPECT_EQ(back->segments.at(0).creation.cgroup_path, "");
}

TEST(State, RejectsOtherVersionsAndBrokenFiles) {
  const std::string good = format_state(first_run());
  EXPECT_FALSE(parse_state(""));
  EXPECT_FALSE(parse_state("hello\n"));
  Result<SavedState> v4 = parse_state("shmbpf-state 4 =b\n");
  ASSERT_FALSE(v4);
  EXPECT_NE(v4.error().find("version 4"), std::string::npos);
  EXPECT_FALSE(parse_state("shmbpf-state 0 =b\n"));
  EXPECT_FALSE(parse_state(good.substr(0, good.size() - 1))); // cut short
  EXPECT_FALSE(parse_state(good + "file 1 2\n"));
  EXPECT_FALSE(parse_state(good + "pipe 1 2 3 4 5 6 7 =a =b\n"));
  EXPECT_FALSE(parse_state(good + "file 1 x 3 4 5 6 7 =a =b\n"));
  EXPECT_FALSE(parse_state(good + "file 1 2 3 4 5 6 7 =%4 =b\n"));
  EXPECT_FALSE(parse_state(std::string(kStateMaxBytes + 1, 'x')));
}

// The next run's engine, bootstrapped from its first scan, and what the
// saved state gave back.
struct Restarted {
  Engine engine;
  RestoreStats stats;
  Restarted(const SystemScan &scan, const SavedState &st, std::string_view boot = "boot-1") {
    bootstrap(engine, scan);
    stats = restore_state(engine, scan, st, boot);
  }
};

TEST(State, TheSameSegmentsGetTheirCreationBack) {
  Restarted r(scan_of({file(11, "/dev/shm/a b%", kBtime)}, {sysv(3, 0x1234, kCtime)}), first_run());
  EXPECT_EQ(r.stats.applied, 2u);
  EXPECT_EQ(r.stats.unmatched, 0u);
  auto f = r.engine.segment(SegmentKey::file(kDev, 11));
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->existed_before);
  EXPECT_TRUE(f->creator.known);
  EXPECT_TRUE(f->creator.exited);
  EXPECT_EQ(f->creator.pid, 4242u);
  EXPECT_EQ(f->creator.comm, "p4242");
  EXPECT_EQ(f->created_ns, 5'000u);
  EXPECT_EQ(f->creator.container_id, kId); // the cgroup is gone: its saved path names it
  EXPECT_EQ(f->container.id, kId);
  auto s = r.engine.segment(SegmentKey::sysv(kIpcns, 3));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->creator.comm, "p4242");
  EXPECT_EQ(s->created_ns, 6'000u);
  // And the next save keeps them.
  EXPECT_EQ(collect_state(r.engine, "boot-1").segments.size(), 2u);
}

TEST(State, AReusedInodeOrShmidIsNotTheSameSegment) {
  // Inode 11 and shmid 3 now belong to segments born later.
  Restarted r(scan_of({file(11, "/dev/shm/new", kBtime + 1)}, {sysv(3, 0x1234, kCtime + 5)}),
              first_run());
  EXPECT_EQ(r.stats.applied, 0u);
  EXPECT_EQ(r.stats.unmatched, 2u);
  auto f = r.engine.segment(SegmentKey::file(kDev, 11));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->existed_before);
  EXPECT_FALSE(f->creator.known);
  auto s = r.engine.segment(SegmentKey::sysv(kIpcns, 3));
  ASSERT_TRUE(s);
  EXPECT_NE(s->creator.comm, "p4242");
  EXPECT_EQ(s->created_ns, 0u);
}

TEST(State, ASysvSegmentWithAnotherKeyIsNotTheSame) {
  Restarted r(scan_of({}, {sysv(3, 0x9999, kCtime)}), first_run());
  EXPECT_EQ(r.stats.applied, 0u);
  EXPECT_EQ(r.engine.segment(SegmentKey::sysv(kIpcns, 3))->created_ns, 0u);
}

TEST(State, AFileWithoutABirthNeverMatches) {
  SavedState st = first_run();
  Restarted r(scan_of({file(11, "/dev/shm/a b%", 0)}, {}), st);
  EXPECT_EQ(r.stats.applied, 0u);
  EXPECT_FALSE(r.engine.segment(SegmentKey::file(kDev, 11))->creator.known);
}

// A kernel that gives tmpfs no btime (before 5.18): the file's handle
// (which holds the inode's generation) tells it from a later file instead.
constexpr uint64_t kHandle = 0x1234'5678'9abc'def0;

TmpfsFile handled(uint64_t ino, const std::string &path, uint64_t handle) {
  TmpfsFile f = file(ino, path, 0);
  f.handle_id = handle;
  return f;
}

SavedState first_run_without_btime() {
  Engine engine;
  engine.set_cgroup_path(kCgroup, kCgroupPath);
  Event f = created_file({kDev, kMnt}, 4242, 11, "/dev/shm/h", 4096, 5'000);
  f.cgroup_id = kCgroup;
  engine.apply(f);
  engine.apply(test::process_event(EventType::exit, 4242, 7'000));
  reconcile(engine, scan_of({handled(11, "/dev/shm/h", kHandle)}, {}), 8'000);
  return collect_state(engine, "boot-1");
}

TEST(State, WithoutABtimeAFileIsSavedByItsHandle) {
  const SavedState st = first_run_without_btime();
  ASSERT_EQ(st.segments.size(), 1u);
  EXPECT_EQ(st.segments[0].birth, (Engine::Birth{Engine::Birth::Kind::handle, kHandle}));
  const std::string text = format_state(st);
  EXPECT_NE(text.find("\nfile-handle 42 11 " + std::to_string(kHandle) + " 5000 4242 "),
            std::string::npos)
      << text;
  Result<SavedState> back = parse_state(text);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->segments.at(0).birth, st.segments[0].birth);
  EXPECT_EQ(format_state(*back), text);
}

TEST(State, WithoutABtimeTheSameHandleGetsTheCreationBack) {
  Restarted r(scan_of({handled(11, "/dev/shm/h", kHandle)}, {}), first_run_without_btime());
  EXPECT_EQ(r.stats.applied, 1u);
  auto f = r.engine.segment(SegmentKey::file(kDev, 11));
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->existed_before);
  EXPECT_EQ(f->creator.pid, 4242u);
  EXPECT_EQ(f->creator.comm, "p4242");
  EXPECT_EQ(f->container.id, kId);
  // Kept for the next save, by the same handle.
  const SavedState again = collect_state(r.engine, "boot-1");
  ASSERT_EQ(again.segments.size(), 1u);
  EXPECT_EQ(again.segments[0].birth, (Engine::Birth{Engine::Birth::Kind::handle, kHandle}));
}

TEST(State, WithoutABtimeAReusedInodeHasAnotherHandle) {
  // Inode 11 is a later file: another generation, so another handle.
  Restarted r(scan_of({handled(11, "/dev/shm/h", kHandle + 1)}, {}), first_run_without_btime());
  EXPECT_EQ(r.stats.applied, 0u);
  EXPECT_EQ(r.stats.unmatched, 1u);
  auto f = r.engine.segment(SegmentKey::file(kDev, 11));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->existed_before);
  EXPECT_FALSE(f->creator.known);
}

TEST(State, WithNeitherBtimeNorHandleAFileIsNeitherSavedNorRestored) {
  // A filesystem without handles (hugetlbfs): nothing could tell the file
  // from a later one, so its creation is not kept.
  Engine engine;
  engine.apply(created_file({kDev, kMnt}, 4242, 11, "/dev/shm/h", 4096, 5'000));
  reconcile(engine, scan_of({handled(11, "/dev/shm/h", 0)}, {}), 8'000);
  EXPECT_TRUE(collect_state(engine, "boot-1").segments.empty());
  // Nor does a saved handle match a file that now has none.
  Restarted r(scan_of({handled(11, "/dev/shm/h", 0)}, {}), first_run_without_btime());
  EXPECT_EQ(r.stats.applied, 0u);
  EXPECT_FALSE(r.engine.segment(SegmentKey::file(kDev, 11))->creator.known);
}

TEST(State, ABirthOfOneKindNeverMatchesTheOther) {
  // The same number as a btime and as a handle is not the same file.
  Restarted by_time(scan_of({file(11, "/dev/shm/h", kHandle)}, {}), first_run_without_btime());
  EXPECT_EQ(by_time.stats.applied, 0u);
  Restarted by_handle(scan_of({handled(11, "/dev/shm/a b%", kBtime)}, {}), first_run());
  EXPECT_EQ(by_handle.stats.applied, 0u);
  EXPECT_FALSE(by_handle.engine.segment(SegmentKey::file(kDev, 11))->creator.known);
}

TEST(State, VersionOneFilesAreReadWithoutHandleRecords) {
  const std::string tail = " 11 " + std::to_string(kBtime) + " 5000 4242 1000 777 =p =\n";
  Result<SavedState> v1 = parse_state("shmbpf-state 1 =boot-1\nfile 42" + tail);
  ASSERT_TRUE(v1) << v1.error();
  ASSERT_EQ(v1->segments.size(), 1u);
  EXPECT_EQ(v1->segments[0].birth, (Engine::Birth{Engine::Birth::Kind::time, kBtime}));
  EXPECT_FALSE(parse_state("shmbpf-state 1 =boot-1\nfile-handle 42" + tail));
  EXPECT_TRUE(parse_state("shmbpf-state 2 =boot-1\nfile-handle 42" + tail));
}

MountState shm_mount(uint64_t used, uint64_t fsid) {
  MountState m;
  m.mnt_id = kMnt;
  m.mntns = 4026531840u;
  m.mountpoint = "/dev/shm";
  m.dev = kDev;
  m.size_limit = 64u << 20;
  m.used_bytes = used;
  m.fsid = fsid;
  return m;
}

// A mount's peak outlives a restart while the mount is the same filesystem
// (its id, device, fsid and mountpoint); one whose fsid is unknown is not
// saved.
TEST(State, AMountKeepsItsPeakWhileItIsTheSameFilesystem) {
  Engine first;
  first.set_mount(shm_mount(30u << 20, 0xabc));
  first.set_mount(shm_mount(10u << 20, 0xabc));
  MountState unknown = shm_mount(1u << 20, 0);
  unknown.mnt_id = kMnt + 1;
  unknown.dev = kDev + 1;
  unknown.mountpoint = "/run/x";
  first.set_mount(unknown);
  const SavedState st = collect_state(first, "boot-1");
  ASSERT_EQ(st.mount_peaks.size(), 1u);
  EXPECT_EQ(st.mount_peaks[0].peak, 30u << 20);
  Result<SavedState> back = parse_state(format_state(st));
  ASSERT_TRUE(back) << back.error();
  ASSERT_EQ(back->mount_peaks.size(), 1u);
  EXPECT_EQ(back->mount_peaks[0].mount.fsid, 0xabcu);
  EXPECT_EQ(back->mount_peaks[0].mount.mountpoint, "/dev/shm");

  auto peak_after_restart = [&](uint64_t fsid, std::string_view boot, size_t *restored) {
    Engine next;
    next.set_mount(shm_mount(5u << 20, fsid));
    *restored = restore_state(next, scan_of({}, {}), *back, boot).mount_peaks;
    return next.mounts().at(0).peak_used_bytes;
  };
  size_t restored = 0;
  EXPECT_EQ(peak_after_restart(0xabc, "boot-1", &restored), 30u << 20);
  EXPECT_EQ(restored, 1u);
  // Another filesystem at the same id and device, or another boot.
  EXPECT_EQ(peak_after_restart(0xdef, "boot-1", &restored), 5u << 20);
  EXPECT_EQ(restored, 0u);
  EXPECT_EQ(peak_after_restart(0xabc, "boot-2", &restored), 5u << 20);
  // Malformed records, and records a version 2 file cannot have.
  EXPECT_FALSE(parse_state("shmbpf-state 3 =b\nmount-peak 1 2 0 4 =/dev/shm\n"));
  EXPECT_FALSE(parse_state("shmbpf-state 3 =b\nmount-peak 1 2 3 =/dev/shm\n"));
  EXPECT_FALSE(parse_state("shmbpf-state 2 =b\nmount-peak 1 2 3 4 =/dev/shm\n"));
  EXPECT_TRUE(parse_state("shmbpf-state 3 =b\nmount-peak 1 2 3 4 =/dev/shm\n"));
}

TEST(State, GoneSegmentsAndAnotherBootAreIgnored) {
  Restarted gone(scan_of({}, {}), first_run());
  EXPECT_EQ(gone.stats.applied, 0u);
  EXPECT_EQ(gone.stats.unmatched, 2u);
  Restarted reboot(scan_of({file(11, "/dev/shm/a b%", kBtime)}, {sysv(3, 0x1234, kCtime)}),
                   first_run(), "boot-2");
  EXPECT_EQ(reboot.stats.applied, 0u);
  EXPECT_FALSE(reboot.engine.segment(SegmentKey::file(kDev, 11))->creator.known);
}

TEST(State, ACreatorPidNowUsedByAnotherProcessIsNotAlive) {
  SystemScan scan = scan_of({file(11, "/dev/shm/a b%", kBtime)}, {});
  ScannedProcess other;
  other.id.pid = 4242;
  other.id.comm = "someone-else";
  scan.processes.push_back(other);
  Restarted r(scan, first_run());
  auto f = r.engine.segment(SegmentKey::file(kDev, 11));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->creator.comm, "p4242");
  EXPECT_TRUE(f->creator.exited);

  // The same pid, comm and cgroup: taken for the creator, still running.
  SystemScan same = scan_of({file(11, "/dev/shm/a b%", kBtime)}, {});
  ScannedProcess creator;
  creator.id.pid = 4242;
  creator.id.comm = "p4242";
  creator.cgroup_id = kCgroup;
  same.processes.push_back(creator);
  Restarted alive(same, first_run());
  EXPECT_FALSE(alive.engine.segment(SegmentKey::file(kDev, 11))->creator.exited);
}

} // namespace
} // namespace shmbpf
