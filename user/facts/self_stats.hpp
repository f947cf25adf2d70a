// What the running process uses of the machine, as the kernel counts it:
// plain data a source reads from /proc/self and the metrics show.
#pragma once

#include <cstdint>

namespace shmbpf {

struct SelfStats {
  double cpu_seconds = 0;        // user + system time
  uint64_t resident_bytes = 0;   // resident set
  uint64_t virtual_bytes = 0;    // address space
  uint64_t open_fds = 0;         // entries of /proc/self/fd
  uint64_t max_fds = 0;          // RLIMIT_NOFILE's soft limit
  double start_time_seconds = 0; // since the epoch
};

} // namespace shmbpf
