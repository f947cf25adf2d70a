// What trace says of its programs as it stops: `trace --stats`' report
// (program_stats_text) and the hooks it used (hooks_in_use_text).
#include "views/program_stats.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace shmbpf {
namespace {

TEST(ProgramStatsText, CostliestFirstWithTotalsAndShareOfACpu) {
  const std::string text = program_stats_text(
      {
          {"syscalls/sys_exit_ftruncate", 1000, 500'000},
          {"sched/sched_process_exec", 0, 0}, // never ran: left out
          {"syscalls/sys_exit_openat", 4000, 3'000'000},
          {"syscalls/sys_exit_unlink", 1000, 500'000}, // a tie: by name
      },
      2.0);
  EXPECT_EQ(text,
            "shmbpf: 4.0 ms in BPF programs over 2.0 s (0.20% of one CPU), 6000 runs\n"
            "  HOOK                                                 RUNS   NS/RUN   TOTAL MS\n"
            "  syscalls/sys_exit_openat                             4000      750        3.0\n"
            "  syscalls/sys_exit_ftruncate                          1000      500        0.5\n"
            "  syscalls/sys_exit_unlink                             1000      500        0.5\n");
}

TEST(ProgramStatsText, NothingRanOrNoTimeAtAll) {
  EXPECT_EQ(program_stats_text({{"syscalls/sys_exit_openat", 0, 0}}, 1.5),
            "shmbpf: 0.0 ms in BPF programs over 1.5 s (0.00% of one CPU), 0 runs\n");
  EXPECT_EQ(program_stats_text({}, 0),
            "shmbpf: 0.0 ms in BPF programs over 0.0 s (0.00% of one CPU), 0 runs\n");
}

HookStatus hook(std::string name, std::string program) {
  HookStatus h;
  h.hook = std::move(name);
  h.program = std::move(program);
  return h;
}

TEST(HooksInUseText, TheSetAndTheHooksThatHaveAProgram) {
  EXPECT_EQ(hooks_in_use_text(HookSet::light,
                              {hook("sched_process_exit", "prog_a"), hook("oom/mark_victim", ""),
                               hook("signal/signal_generate", "prog_b")}),
            "shmbpf: light hooks: sched_process_exit, signal/signal_generate\n");
}

} // namespace
} // namespace shmbpf
