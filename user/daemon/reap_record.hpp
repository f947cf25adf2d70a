// The records `shmbpf reap` posts to serve's /v1/reaped (docs/API.md), read
// back into the values they were written from, so that serve exports its
// own rendering of them and never a line as it came. A line is taken only
// when rendering what it says gives that line again (its time excepted,
// which each process writes with its own clock): the members reap writes,
// in its order, each of its type, a status and reason reap knows.
#pragma once

#include "facts/result.hpp"
#include "model/reap.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace shmbpf {

class ExportFormatter;
struct MountUsage;

struct ReapRecord {
  uint64_t ts_ns = 0;
  ReapOutcome outcome;
  std::string by;
  uint32_t by_pid = 0;
};

// The record line holds (without its newline), or why it is not one reap
// writes; fmt renders it again to compare.
Result<ReapRecord> read_reap_record(std::string_view line, ExportFormatter &fmt);

// Why a record's segment is not one that reap could have removed on this
// host ("" when it could be): a file's device and mountpoint must be those
// of a tmpfs or hugetlbfs mount among mounts, its path below that
// mountpoint; a System V segment's path is its SYSV name.
std::string reap_record_place_problem(const ReapRecord &r, const std::vector<MountUsage> &mounts);

} // namespace shmbpf
