// `trace --stats`' report (program_stats_text).
#include "views/trace_view.hpp"

#include <gtest/gtest.h>

#include <string>

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

} // namespace
} // namespace shmbpf
