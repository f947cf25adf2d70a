// What the kernel counts for one of shmbpf's BPF programs while its
// run-time statistics are on (Probe::program_stats, `trace --stats`).
#pragma once

#include <cstdint>
#include <string>

namespace shmbpf {

struct ProgramStats {
  std::string hook; // its attach point: "syscalls/sys_exit_openat", ...
  uint64_t runs = 0;
  uint64_t run_time_ns = 0;
};

} // namespace shmbpf
