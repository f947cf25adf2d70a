// SIGBUS faults: what each one hit (the file, its mount, the cause), kept
// per mount, per cgroup and as a short history. Pure: filled from sigbus
// events by the Engine, read by every view through it.
#pragma once

#include "decode/event.hpp"
#include "model/containers.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmbpf {

// Why touching the page failed, from what the kernel saw at the fault.
enum class BusCause : uint8_t {
  beyond_eof,    // the page is past the file's end (a file shrunk under a mapping)
  mount_full,    // a tmpfs with a size: no space left for the page
  no_huge_pages, // hugetlbfs: no huge page left in the pool
  unknown,       // no file found, or nothing that explains it
};
std::string_view to_string(BusCause c);

// The cause of a sigbus event's fault.
BusCause bus_cause(const Event &e);

struct BusError {
  uint64_t ts_ns = 0; // CLOCK_BOOTTIME
  uint32_t pid = 0;
  uint32_t tid = 0;    // the thread that faulted
  uint32_t ns_pid = 0; // pid as its own pid namespace (its container) numbers it; 0 unknown
  std::string comm;
  uint64_t cgroup_id = 0; // the faulting process's
  ContainerRef container; // its container (id "" = host), set by the Engine when read
  FaultLookup fault = FaultLookup::unknown;
  Kind kind = Kind::none; // none: no file, or a file that is not shared memory
  uint32_t dev = 0;
  uint64_t ino = 0;
  int32_t shmid = -1;
  std::string path;       // absolute when the mount is known; "memfd:<name>"; "SYSV<key>"
  std::string mountpoint; // "" when unknown, for memfds and SysV
  uint64_t addr = 0;
  uint64_t offset = 0;     // of the faulting address in the file
  uint64_t file_size = 0;  // the file's size then
  uint64_t file_bytes = 0; // its resident bytes then
  uint64_t mount_size = 0; // tmpfs: the mount's size then, 0 unlimited or unknown
  uint64_t mount_used = 0;
  BusCause cause = BusCause::unknown;
  bool unlinked = false;
};

// Failures (SIGBUS faults, writes without space) counted by what an
// exporter labels them with: the container of the failing process and the
// mountpoint of the file ("" when none is known, a memfd's, a SysV
// segment's).
struct FailureGroup {
  ContainerRef container; // id "" = host
  std::string mountpoint;
  uint64_t count = 0;
};

// A count and the latest fault.
struct BusSummary {
  uint64_t count = 0;
  BusError last;
};

// Counts by (mountpoint, cgroup id): an exporter's labels once the cgroup's
// container is known. Bounded by mounts times cgroups.
using FailureCounts = std::map<std::pair<std::string, uint64_t>, uint64_t>;

class BusErrorLog {
public:
  static constexpr size_t kRecent = 64;

  void record(BusError e);
  // The last kRecent faults, oldest first.
  const std::deque<BusError> &recent() const { return recent_; }
  // By the filesystem's device (every mount of one tmpfs shares it).
  const std::map<uint32_t, BusSummary> &by_dev() const { return by_dev_; }
  const std::map<uint64_t, BusSummary> &by_cgroup() const { return by_cgroup_; }
  const FailureCounts &counts() const { return counts_; }
  uint64_t total() const { return total_; }

private:
  std::deque<BusError> recent_;
  std::map<uint32_t, BusSummary> by_dev_;
  std::map<uint64_t, BusSummary> by_cgroup_;
  FailureCounts counts_;
  uint64_t total_ = 0;
};

} // namespace shmbpf
