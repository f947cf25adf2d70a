// `trace --stats` underneath: with run-time statistics on, the kernel counts
// every run of every attached program, and Probe::program_stats() names each
// by its hook.
#include "kernel/harness.hpp"

#include "probe/probe.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace shmbpf {
namespace {

const ProgramStats *find_hook(const std::vector<ProgramStats> &stats, const std::string &hook) {
  auto it = std::find_if(stats.begin(), stats.end(),
                         [&](const ProgramStats &p) { return p.hook == hook; });
  return it == stats.end() ? nullptr : &*it;
}

TEST(ProbeStats, CountsEveryRunOfEveryAttachedProgram) {
  ProbeOptions opts;
  opts.run_stats = true;
  SHMBPF_LOADED(probe, Probe, opts);

  const auto before = probe->program_stats();
  const std::string name = "/shmbpf-kt-stats-" + std::to_string(getpid());
  constexpr int kCycles = 50;
  for (int i = 0; i < kCycles; i++) {
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    close(fd);
    ASSERT_EQ(shm_unlink(name.c_str()), 0);
  }
  const auto after = probe->program_stats();

  // Every hook that was attached, named without its section's prefix; the
  // flush program, which only userspace runs, is not among them.
  EXPECT_EQ(after.size(), before.size());
  EXPECT_FALSE(find_hook(after, "flush_free"));
  EXPECT_FALSE(find_hook(after, "raw_tp"));
  ASSERT_TRUE(find_hook(after, "sched/sched_process_exit"));
  for (const char *hook :
       {"syscalls/sys_exit_openat", "syscalls/sys_exit_ftruncate", "syscalls/sys_exit_unlink"}) {
    SCOPED_TRACE(hook);
    const ProgramStats *b = find_hook(before, hook);
    const ProgramStats *a = find_hook(after, hook);
    ASSERT_TRUE(a && b);
    // At least our cycles (other processes may open and unlink meanwhile),
    // and time counted for them: statistics are on.
    EXPECT_GE(a->runs - b->runs, uint64_t{kCycles});
    EXPECT_GT(a->run_time_ns, b->run_time_ns);
  }
  // A tp_btf program is named by its tracepoint alone too.
  const auto &missing = probe->missing_hooks();
  const bool has_free_hook = std::none_of(missing.begin(), missing.end(), [](const std::string &m) {
    return m.starts_with("mm_filemap_delete_from_page_cache");
  });
  EXPECT_EQ(find_hook(after, "mm_filemap_delete_from_page_cache") != nullptr, has_free_hook);
}

} // namespace
} // namespace shmbpf
