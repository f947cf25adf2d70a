// `shmbpf doctor` underneath: what examine_machine reports, checked against
// what the test finds out on its own (uname, tracefs, the kernel's version,
// a tmpfs it mounts, the cgroup2 filesystem's magic).
#include "kernel/harness.hpp"

#include "live/doctor.hpp"
#include "probe/probe.hpp"
#include "probe/tracefs.hpp"

#include <gtest/gtest.h>

#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace shmbpf {
namespace {

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The best build this kernel can run, from its version and SHMBPF_BUILD
// alone: bpf_rdonly_cast came in 6.2, BPF atomics in 5.12 (docs/KERNELS.md).
Build best_build(const std::string &release) {
  int major = 0, minor = 0;
  EXPECT_EQ(std::sscanf(release.c_str(), "%d.%d", &major, &minor), 2) << release;
  const int v = major * 100 + minor;
  Build b = v >= 602 ? Build::fast : v >= 512 ? Build::compat : Build::compat_noatomic;
  if (const char *env = std::getenv("SHMBPF_BUILD"); env && *env) {
    const std::string forced = env;
    if (forced == "compat" && b == Build::fast)
      b = Build::compat;
    if (forced == "compat_noatomic")
      b = Build::compat_noatomic;
  }
  return b;
}

// A program's build, as its name says.
Build build_of_name(const std::string &program) {
  if (program.ends_with("_compat_noatomic"))
    return Build::compat_noatomic;
  if (program.ends_with("_compat"))
    return Build::compat;
  return Build::fast;
}

TEST(Doctor, TellsTheTruthAboutThisKernel) {
  // A small tmpfs of the test's own, which the report must list with its size.
  test::TmpfsMount tmpfs;
  ASSERT_TRUE(tmpfs.mount("size=1m"));
  const DoctorReport r = examine_machine({});

  if (const DoctorCheck *f = r.failure()) {
    if (test::in_ci())
      FAIL() << "doctor says shmbpf cannot run under CI=true: " << f->name << ": " << f->detail;
    GTEST_SKIP() << f->name << ": " << f->detail;
  }
  utsname u{};
  ASSERT_EQ(uname(&u), 0);
  EXPECT_EQ(r.release, u.release);
  EXPECT_EQ(r.machine, u.machine);

  // Each hook is on exactly when the kernel has its tracepoint.
  const Tracefs tracefs; // the machine's, or one of this process's own
  const std::string available = read_text(tracefs.dir() + "/available_events");
  ASSERT_FALSE(r.hooks.empty());
  const Build best = best_build(u.release);
  for (const HookStatus &h : r.hooks) {
    SCOPED_TRACE(h.hook);
    const bool has = h.hook.find('/') != std::string::npos
                         ? std::filesystem::exists(tracefs.dir() + "/events/" + h.hook)
                         : available.find(":" + h.hook + "\n") != std::string::npos;
    EXPECT_EQ(!h.program.empty(), has) << h.off;
    EXPECT_EQ(h.off.empty(), has);
    EXPECT_FALSE(h.events.empty());
    if (h.program.empty())
      continue;
    EXPECT_EQ(build_of_name(h.program), h.build) << h.program;
    // The kernel's best build; without atomics, the compat build of the
    // programs that have no atomic instruction (no variant of their own).
    if (best == Build::compat_noatomic)
      EXPECT_NE(h.build, Build::fast);
    else
      EXPECT_EQ(h.build, best) << build_name(h.build);
  }
  // The name table's writers have a variant without atomics.
  if (best == Build::compat_noatomic) {
    auto unlink = std::find_if(r.hooks.begin(), r.hooks.end(), [](const HookStatus &h) {
      return h.hook == "syscalls/sys_exit_unlink";
    });
    ASSERT_NE(unlink, r.hooks.end());
    EXPECT_EQ(unlink->build, Build::compat_noatomic);
  }
  // A fallback is told exactly when the best build is not the fast one.
  EXPECT_EQ(r.fallbacks.empty(), best == Build::fast);

  EXPECT_EQ(r.ring_buffer_bytes, RingBufferSetting::kDefault);
  EXPECT_GE(r.name_capacity, name_map_capacity(0));

  // The test's tmpfs, 1 MiB, in this process's mount namespace.
  const uint32_t mntns = test::ns_inode("/proc/self/ns/mnt");
  auto mine = std::find_if(r.mounts.begin(), r.mounts.end(), [&](const MountState &m) {
    return m.mountpoint == tmpfs.dir() && m.mntns == mntns;
  });
  ASSERT_NE(mine, r.mounts.end());
  EXPECT_EQ(mine->size_limit, uint64_t{1} << 20);
  EXPECT_GE(r.mount_namespaces, 1u);

  ASSERT_TRUE(r.cgroup2.has_value());
  struct statfs sf {};
  ASSERT_EQ(statfs(r.cgroup2->c_str(), &sf), 0);
  EXPECT_EQ(static_cast<unsigned long>(sf.f_type), static_cast<unsigned long>(CGROUP2_SUPER_MAGIC));
}

} // namespace
} // namespace shmbpf
