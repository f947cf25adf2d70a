// The text of one value in a table cell, a header or a report, shared by
// every view so that a size, an age or a container id reads the same in
// `ls`, `leaks` and `top`. Cells that carry names from the kernel or a file
// system come back escaped.
#pragma once

#include "model/engine.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

inline constexpr uint64_t ns_per_sec = 1'000'000'000;

// 1024-based sizes: "512B", "64K", "1.0M", "12G" (one decimal below 10).
std::string human_bytes(uint64_t bytes);
// "5s", "3m", "2h", "4d"; "?" when unknown.
std::string human_age(std::optional<uint64_t> seconds);
// v with a fixed number of decimals; "-" when not finite.
std::string fixed(double v, int decimals);
// The shortest decimal text that reads back as v ("0.1", "86400").
std::string shortest_decimal(double v);
// A percentage with one decimal, "12.5%"; "-" when unknown or not finite.
std::string percent_text(std::optional<double> percent);
// Events per second: one decimal below 10, "0" below 0.05.
std::string rate_text(double per_s);
// Bytes per second, "1.0M/s", or with a sign ("+1.0M/s", "-4.0K/s") for
// growth that may shrink; "0/s" below a byte a second.
std::string bytes_rate_text(double bytes_per_s, bool sign);
// A mount's size limit, "unlimited" for none.
std::string size_limit_text(uint64_t size_limit);

// Escaped s, "-" when empty.
std::string or_dash(std::string_view s);
// A container id cut to the 12 characters docker shows; "-" for the host.
std::string short_id(std::string_view id);
// "host", or the short id.
std::string container_label(std::string_view id);

// Age of a segment, nullopt when its creation was not seen.
std::optional<uint64_t> segment_age_ns(const SegmentInfo &s, uint64_t now_ns);
std::optional<uint64_t> segment_age_s(const SegmentInfo &s, uint64_t now_ns);

// "pid/comm", "(exited)" after a creator that is gone; "?" when unknown.
std::string creator_cell(const CreatorInfo &c);
// The first holders' pids, "+N" for the rest; a SysV segment nobody known
// holds shows its attach count; "-" for none.
std::string holders_cell(const SegmentInfo &s);
// "linked", "unlinked", with " orphan" when nobody holds it.
std::string state_cell(const SegmentInfo &s);
std::string age_cell(const SegmentInfo &s, uint64_t now_ns);

// Seconds until a mount is full at its present growth, when it is growing
// towards a limit.
std::optional<uint64_t> seconds_to_full(const MountUsage &m);
// A SIGBUS fault in a line: when, who, what it hit and why, e.g. "12s ago,
// pid 2690 (python3): /dev/shm/x at 1.0M of 4.0M, mount-full (64.0M of
// 64.0M used)". Escaped for a terminal.
std::string bus_error_text(const BusError &b, uint64_t now_ns);
// An OOM kill in a line: when, who, what its memory cgroup held and the
// largest shared memory file charged to it, e.g. "12s ago, pid 2690
// (python3): shmem 26.0M of limit 32.0M (81%), largest /dev/shm/x
// (25.0M)". Escaped for a terminal.
std::string oom_kill_text(const OomKill &k, uint64_t now_ns);

// The mounts worth attention: a SIGBUS on a file of theirs or a write that
// found no space, over 90% full, or full or at their owner's memory limit
// within an hour. One rule for top's header, its rows and its
// JSON.
bool mount_alert(const MountUsage &m);

// Which limit a container's mount hits first: its owner's memory limit
// (an OOM kill) before the filesystem is full. Both fill at the mount's
// growth, so the smaller room comes first; an unlimited mount always
// meets the memory limit first.
bool oom_before_full(const MountUsage &m);

// What a container's /dev/shm or a pod's emptyDir needs: its peak plus a
// quarter, in whole MiB (at least one); nullopt for the host's mounts and
// a container's other tmpfs mounts. As the option that sets it:
// "--shm-size=48m", or "sizeLimit=48Mi" in a pod (an emptyDir, also the
// way to give a pod's container a /dev/shm of a size).
std::optional<uint64_t> right_size(const MountUsage &m);
std::string right_size_text(const MountUsage &m);

} // namespace shmbpf
