// `shmbpf reap`'s removal against a system that changed between the scan
// that chose the targets and the removal: each test scans and plans as the
// CLI does (scan_system, bootstrap, plan_reap), then changes the system the
// way a race or an attacker would, then reaps for real. Every plan is
// restricted to a tmpfs of the test's own (or to its own System V keys), and
// every test keeps one control orphan that must be freed, so that none can
// pass by freeing nothing.
#include "actions/reaper.hpp"
#include "e2e/reap_support.hpp"
#include "e2e/run_cli.hpp"
#include "live/clock.hpp"
#include "model/apply_scan.hpp"
#include "model/reap.hpp"
#include "sources/system_scan.hpp"

#include <gtest/gtest.h>

#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/shm.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

// What `shmbpf reap` would choose now.
ReapPlan plan_now(const ReapFilter &filter) {
  const EngineConfig cfg = engine_config_now();
  Engine engine(cfg);
  bootstrap(engine, scan_system());
  return plan_reap(engine, cfg.start_ns, filter);
}

ReapFilter mount_filter(const ReapMount &m) {
  ReapFilter f;
  f.min_age_s = 0;
  f.mount = m.dir();
  return f;
}

std::set<std::string> target_paths(const ReapPlan &plan) {
  std::set<std::string> out;
  for (const ReapTarget &t : plan.targets)
    out.insert(t.segment.path);
  return out;
}

const ReapOutcome *outcome_of(const std::vector<ReapOutcome> &outcomes, const std::string &path) {
  for (const ReapOutcome &o : outcomes)
    if (o.target.segment.path == path)
      return &o;
  return nullptr;
}

std::string describe(const std::vector<ReapOutcome> &outcomes) {
  std::string out;
  for (const ReapOutcome &o : outcomes)
    out += std::string(to_string(o.status)) + " " + std::string(to_string(o.reason)) + " " +
           o.target.segment.path + " (" + o.detail + ")\n";
  return out;
}

#define REAP_MOUNT(m)                                                                              \
  SHMBPF_REQUIRE_ROOT();                                                                           \
  ReapMount m;                                                                                     \
  ASSERT_EQ(m.error(), "")

// The victim skipped for `reason`, the control freed and gone from the
// filesystem.
void expect_skipped_and_control_freed(const std::vector<ReapOutcome> &outcomes,
                                      const std::string &victim, ReapSkip reason,
                                      const std::string &control) {
  const ReapOutcome *v = outcome_of(outcomes, victim);
  const ReapOutcome *c = outcome_of(outcomes, control);
  ASSERT_TRUE(v && c) << describe(outcomes);
  EXPECT_EQ(v->status, ReapStatus::skipped) << describe(outcomes);
  EXPECT_EQ(to_string(v->reason), to_string(reason)) << v->detail;
  EXPECT_FALSE(v->detail.empty());
  EXPECT_EQ(c->status, ReapStatus::freed) << describe(outcomes);
  EXPECT_EQ(c->reason, ReapSkip::none);
  EXPECT_FALSE(exists(control)) << "the control orphan was not removed";
}

TEST(ReapRace, OrphanReplacedBySymlinkToAFileOutsideIsNotRegular) {
  REAP_MOUNT(m);
  const std::string victim = m.path("victim"), control = m.path("control");
  ASSERT_TRUE(make_orphan(victim, 64 << 10));
  ASSERT_TRUE(make_orphan(control, 64 << 10));
  // Outside the tmpfs: what a symlink must not lead reap to.
  const std::string outside = "/tmp/shmbpf-e2e-reap-outside-" + std::to_string(getpid());
  {
    std::FILE *f = std::fopen(outside.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not shared memory\n", f);
    std::fclose(f);
  }
  struct Cleanup {
    std::string path;
    ~Cleanup() { unlink(path.c_str()); }
  } cleanup{outside};
  const FileSnap outside_before = snap(outside);

  const ReapPlan plan = plan_now(mount_filter(m));
  ASSERT_EQ(target_paths(plan), (std::set<std::string>{victim, control}));

  ASSERT_EQ(unlink(victim.c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), victim.c_str()), 0);
  const FileSnap link_before = snap(victim);

  const auto outcomes = reap(plan, true);
  expect_skipped_and_control_freed(outcomes, victim, ReapSkip::not_regular, control);
  EXPECT_EQ(snap(victim), link_before) << "the symlink is still there";
  char target[4096] = {};
  EXPECT_EQ(readlink(victim.c_str(), target, sizeof target - 1),
            static_cast<ssize_t>(outside.size()));
  EXPECT_EQ(std::string(target), outside);
  EXPECT_EQ(snap(outside), outside_before) << "the file outside changed";
}

// A new process opens (or maps) the victim between the scan and the removal.
void held_by_a_new_process(bool map) {
  ReapMount m;
  ASSERT_EQ(m.error(), "");
  const std::string victim = m.path("victim"), control = m.path("control");
  ASSERT_TRUE(make_orphan(victim, 256 << 10));
  ASSERT_TRUE(make_orphan(control, 64 << 10));
  const ReapPlan plan = plan_now(mount_filter(m));
  ASSERT_EQ(target_paths(plan), (std::set<std::string>{victim, control}));
  const FileSnap before = snap(victim);

  Holder holder([&] {
    const int fd = open(victim.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 || !map)
      return fd >= 0;
    void *p = mmap(nullptr, 256 << 10, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd); // held through the mapping alone
    return p != MAP_FAILED;
  });
  ASSERT_TRUE(holder.ok());

  const auto outcomes = reap(plan, true);
  expect_skipped_and_control_freed(outcomes, victim, ReapSkip::held, control);
  const ReapOutcome *v = outcome_of(outcomes, victim);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->holders, std::vector<uint32_t>{static_cast<uint32_t>(holder.pid())});
  EXPECT_EQ(snap(victim), before) << "the held file changed";
}

TEST(ReapRace, OrphanOpenedByANewProcessIsHeld) {
  SHMBPF_REQUIRE_ROOT();
  held_by_a_new_process(false);
}

TEST(ReapRace, OrphanMappedByANewProcessIsHeld) {
  SHMBPF_REQUIRE_ROOT();
  held_by_a_new_process(true);
}

TEST(ReapRace, DirectorySwappedForASymlinkIsUnsafePath) {
  REAP_MOUNT(m);
  ASSERT_EQ(mkdir(m.path("dir").c_str(), 0755), 0);
  const std::string victim = m.path("dir/victim"), control = m.path("control");
  ASSERT_TRUE(make_orphan(victim, 64 << 10));
  ASSERT_TRUE(make_orphan(control, 64 << 10));
  // Outside: a directory with a file of the victim's name.
  const std::string outside = "/tmp/shmbpf-e2e-reap-outdir-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(outside.c_str(), 0700), 0);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      unlink((dir + "/victim").c_str());
      rmdir(dir.c_str());
    }
  } cleanup{outside};
  ASSERT_TRUE(make_orphan(outside + "/victim", 4096));
  const FileSnap outside_before = snap(outside + "/victim");

  const ReapPlan plan = plan_now(mount_filter(m));
  ASSERT_EQ(target_paths(plan), (std::set<std::string>{victim, control}));
  const FileSnap victim_before = snap(victim);

  ASSERT_EQ(rename(m.path("dir").c_str(), m.path("moved").c_str()), 0);
  ASSERT_EQ(symlink(outside.c_str(), m.path("dir").c_str()), 0);

  const auto outcomes = reap(plan, true);
  expect_skipped_and_control_freed(outcomes, victim, ReapSkip::unsafe_path, control);
  EXPECT_EQ(snap(outside + "/victim"), outside_before) << "the file outside changed";
  EXPECT_EQ(snap(m.path("moved/victim")), victim_before);
  struct stat st {};
  ASSERT_EQ(lstat(m.path("dir").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink is still there";
}

TEST(ReapRace, BindMountOfANonTmpfsDirectoryIsUnsafePath) {
  REAP_MOUNT(m);
  const std::string other = non_tmpfs_dir("shmbpf-e2e-reap-bind-" + std::to_string(getpid()));
  if (other.empty()) {
    if (in_ci())
      FAIL() << "no writable directory off tmpfs (/var/tmp, /root, the build directory)";
    GTEST_SKIP() << "no writable directory off tmpfs";
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      unlink((dir + "/victim").c_str());
      rmdir(dir.c_str());
    }
  } cleanup{other};
  ASSERT_EQ(mkdir(m.path("sub").c_str(), 0755), 0);
  const std::string victim = m.path("sub/victim"), control = m.path("control");
  ASSERT_TRUE(make_orphan(victim, 64 << 10));
  ASSERT_TRUE(make_orphan(control, 64 << 10));
  // The same name on the other filesystem, which the bind mount will show
  // at the victim's path.
  ASSERT_TRUE(make_orphan(other + "/victim", 8192));
  const FileSnap other_before = snap(other + "/victim");

  const ReapPlan plan = plan_now(mount_filter(m));
  ASSERT_EQ(target_paths(plan), (std::set<std::string>{victim, control}));

  ASSERT_EQ(mount(other.c_str(), m.path("sub").c_str(), nullptr, MS_BIND, nullptr), 0)
      << std::strerror(errno);
  struct Unbind {
    std::string dir;
    ~Unbind() { umount2(dir.c_str(), MNT_DETACH); }
  } unbind{m.path("sub")};

  const auto outcomes = reap(plan, true);
  const ReapOutcome *v = outcome_of(outcomes, victim);
  ASSERT_NE(v, nullptr);
  // A bind mount on the way: another mount, or the mount table no longer
  // what the plan saw.
  EXPECT_TRUE(v->reason == ReapSkip::unsafe_path || v->reason == ReapSkip::mount_changed)
      << describe(outcomes);
  expect_skipped_and_control_freed(outcomes, victim, v->reason, control);
  EXPECT_EQ(snap(victim), other_before) << "the bind-mounted file changed";
  EXPECT_EQ(snap(other + "/victim"), other_before);
}

TEST(ReapRace, ReusedPidThatLooksLikeTheCreatorIsCreatorAlive) {
  REAP_MOUNT(m);
  // A pid nothing has now: a child's, once it was reaped. PyTorch names
  // its files torch_<pid of the creator>_...
  const pid_t free_pid = run_child([] { return true; });
  ASSERT_GT(free_pid, 0);
  const std::string victim = m.path("torch_" + std::to_string(free_pid) + "_1_0");
  const std::string control = m.path("control");
  ASSERT_TRUE(make_orphan(victim, 64 << 10));
  ASSERT_TRUE(make_orphan(control, 64 << 10));
  const ReapPlan plan = plan_now(mount_filter(m));
  ASSERT_EQ(target_paths(plan), (std::set<std::string>{victim, control}));
  for (const ReapTarget &t : plan.targets) {
    if (t.segment.path == victim) {
      EXPECT_EQ(t.creator_pid, static_cast<uint32_t>(free_pid)) << "the pid the name carries";
    }
  }
  const FileSnap before = snap(victim);

  // Pids are handed out in turn, so no other process takes this one before
  // the counter wraps around.
  PidReuser reuser(free_pid);
  ASSERT_EQ(reuser.pid(), free_pid)
      << "clone3 with set_tid " << free_pid << ": " << std::strerror(reuser.error());

  const auto outcomes = reap(plan, true);
  expect_skipped_and_control_freed(outcomes, victim, ReapSkip::creator_alive, control);
  EXPECT_EQ(snap(victim), before);
}

TEST(ReapRace, FileReplacedByAnotherOfTheSameNameIsReplaced) {
  REAP_MOUNT(m);
  const std::string victim = m.path("victim"), control = m.path("control");
  ASSERT_TRUE(make_orphan(victim, 64 << 10));
  ASSERT_TRUE(make_orphan(control, 64 << 10));
  const ReapPlan plan = plan_now(mount_filter(m));
  ASSERT_EQ(target_paths(plan), (std::set<std::string>{victim, control}));

  // Made while the old one still exists, so its inode cannot be the old's.
  ASSERT_TRUE(make_orphan(m.path("newer"), 8192));
  ASSERT_EQ(rename(m.path("newer").c_str(), victim.c_str()), 0);
  const FileSnap newer = snap(victim);

  const auto outcomes = reap(plan, true);
  expect_skipped_and_control_freed(outcomes, victim, ReapSkip::replaced, control);
  EXPECT_EQ(snap(victim), newer) << "the file that took its place changed";
}

TEST(ReapRace, OrphanRemovedBySomeoneElseIsGone) {
  REAP_MOUNT(m);
  const std::string victim = m.path("victim"), control = m.path("control");
  ASSERT_TRUE(make_orphan(victim, 64 << 10));
  ASSERT_TRUE(make_orphan(control, 64 << 10));
  const ReapPlan plan = plan_now(mount_filter(m));
  ASSERT_EQ(target_paths(plan), (std::set<std::string>{victim, control}));

  ASSERT_EQ(unlink(victim.c_str()), 0);
  const auto outcomes = reap(plan, true);
  const ReapOutcome *v = outcome_of(outcomes, victim);
  const ReapOutcome *c = outcome_of(outcomes, control);
  ASSERT_TRUE(v && c) << describe(outcomes);
  EXPECT_EQ(v->status, ReapStatus::gone) << describe(outcomes);
  EXPECT_EQ(v->reason, ReapSkip::vanished);
  EXPECT_EQ(c->status, ReapStatus::freed);
  EXPECT_FALSE(exists(control));
  // Not a failure: the CLI's exit status comes from the skipped count.
  const ReapTotals t = reap_totals(outcomes);
  EXPECT_EQ(t.skipped, 0u);
  EXPECT_EQ(t.gone, 1u);
  EXPECT_EQ(t.freed, 1u);
}

// --- System V, in the host's IPC namespace, with keys of the test's own ----

// The plan for System V segments, kept to the given shmids (other tests'
// segments are never touched).
ReapPlan sysv_plan(const std::set<int> &mine) {
  ReapFilter f;
  f.min_age_s = 0;
  f.kind = Kind::sysv;
  ReapPlan plan = plan_now(f);
  std::erase_if(plan.targets, [&](const ReapTarget &t) {
    return !mine.count(static_cast<int>(t.segment.key.ino_or_shmid));
  });
  return plan;
}

const ReapOutcome *outcome_of_shmid(const std::vector<ReapOutcome> &outcomes, int shmid) {
  for (const ReapOutcome &o : outcomes)
    if (static_cast<int>(o.target.segment.key.ino_or_shmid) == shmid)
      return &o;
  return nullptr;
}

TEST(ReapSysv, SegmentAttachedAfterThePlanIsSkippedAttached) {
  SHMBPF_REQUIRE_ROOT();
  SegmentGuard guard;
  const key_t victim_key = unique_key(0), control_key = unique_key(1);
  ASSERT_NE(victim_key, IPC_PRIVATE);
  ASSERT_NE(control_key, IPC_PRIVATE);
  const int victim = orphan_segment(victim_key, 1 << 20);
  ASSERT_GE(victim, 0);
  guard.ids.push_back(victim);
  const int control = orphan_segment(control_key, 256 << 10);
  ASSERT_GE(control, 0);
  guard.ids.push_back(control);

  const ReapPlan plan = sysv_plan({victim, control});
  ASSERT_EQ(plan.targets.size(), 2u) << "both are orphans";

  Holder attacher(
      [&] { return shmat(victim, nullptr, SHM_RDONLY) != reinterpret_cast<void *>(-1); });
  ASSERT_TRUE(attacher.ok());

  const auto outcomes = reap(plan, true);
  const ReapOutcome *v = outcome_of_shmid(outcomes, victim);
  const ReapOutcome *c = outcome_of_shmid(outcomes, control);
  ASSERT_TRUE(v && c) << describe(outcomes);
  EXPECT_EQ(v->status, ReapStatus::skipped);
  EXPECT_EQ(to_string(v->reason), "attached") << v->detail;
  EXPECT_TRUE(segment_exists(victim)) << "the attached segment was removed";
  EXPECT_EQ(c->status, ReapStatus::freed) << describe(outcomes);
  EXPECT_EQ(c->bytes, uint64_t{256} << 10);
  EXPECT_FALSE(segment_exists(control)) << "the detached orphan is still there";
  EXPECT_EQ(shmget(control_key, 0, 0), -1);
}

TEST(ReapSysv, CreatorPidReusedIsCreatorAlive) {
  SHMBPF_REQUIRE_ROOT();
  SegmentGuard guard;
  const key_t victim_key = unique_key(2), control_key = unique_key(3);
  ASSERT_NE(victim_key, IPC_PRIVATE);
  ASSERT_NE(control_key, IPC_PRIVATE);
  pid_t creator = -1;
  const int victim = orphan_segment(victim_key, 64 << 10, &creator);
  ASSERT_GE(victim, 0);
  guard.ids.push_back(victim);
  const int control = orphan_segment(control_key, 64 << 10);
  ASSERT_GE(control, 0);
  guard.ids.push_back(control);

  const ReapPlan plan = sysv_plan({victim, control});
  ASSERT_EQ(plan.targets.size(), 2u) << "both are orphans";

  PidReuser reuser(creator);
  ASSERT_EQ(reuser.pid(), creator)
      << "clone3 with set_tid " << creator << ": " << std::strerror(reuser.error());

  const auto outcomes = reap(plan, true);
  const ReapOutcome *v = outcome_of_shmid(outcomes, victim);
  const ReapOutcome *c = outcome_of_shmid(outcomes, control);
  ASSERT_TRUE(v && c) << describe(outcomes);
  EXPECT_EQ(v->status, ReapStatus::skipped);
  EXPECT_EQ(to_string(v->reason), "creator-alive") << v->detail;
  EXPECT_TRUE(segment_exists(victim));
  EXPECT_EQ(c->status, ReapStatus::freed) << describe(outcomes);
  EXPECT_FALSE(segment_exists(control));
}

} // namespace
} // namespace shmbpf::test
