// The running process's own use of the machine (process_* metrics), from
// /proc/self and its resource limits.
#pragma once

#include "facts/self_stats.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace shmbpf {

// nullopt when /proc/self/stat cannot be read or parsed.
std::optional<SelfStats> read_self_stats();

// The fields of a /proc/<pid>/stat line that SelfStats takes; ticks and
// page size as the system gives them, boot_to_realtime_ns the offset of
// CLOCK_REALTIME to CLOCK_BOOTTIME (the clock of the start time).
std::optional<SelfStats> parse_self_stat(std::string_view stat, long ticks_per_s, long page_size,
                                         int64_t boot_to_realtime_ns);

} // namespace shmbpf
