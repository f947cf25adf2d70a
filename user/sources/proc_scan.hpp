// Bootstrap/reconcile scanners over /proc: process identities, the shared
// memory each process holds (open fds and mappings), and SysV segments.
// Parsers take text and are pure; the read_* / scan_* / list_* functions are
// thin readers of /proc around them.
#pragma once

#include "facts/scan.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmbpf {

// What /proc/<pid>/stat tells about a process. comm is taken between the
// first '(' and the last ')', since it may itself contain spaces and
// parentheses.
struct StatFields {
  uint32_t ppid = 0;
  std::string comm;
  char state = '?';        // R, S, D, Z (zombie), X (dead), ...
  uint64_t start_time = 0; // clock ticks after boot; with the pid, names one process
  // A zombie has exited: it holds no file, no mapping, no attachment, and
  // its namespaces are gone; only its parent's wait is left.
  bool exited() const { return state == 'Z' || state == 'X'; }
};
std::optional<StatFields> parse_stat(std::string_view stat);

// The path of the "0::" line of /proc/<pid>/cgroup (unified or hybrid hosts);
// nullopt on pure cgroup v1 hosts.
std::optional<std::string> parse_cgroup_v2_path(std::string_view cgroup);

// The real uid: the first number of the "Uid:" line of /proc/<pid>/status
// (real, effective, saved, filesystem). nullopt without such a line or
// without a number on it.
std::optional<uint32_t> parse_real_uid(std::string_view status);

// nullopt when the process is gone (a zombie too) or its stat is unreadable.
// Every field comes from the same process, even if its pid is reused while
// they are read. Fields that need more privilege (ns links of other users'
// processes) are left 0. cgroup_v2_path, when given, gets the "0::" line's
// path ("" without one): the cgroup whose id BPF sees, which cgroup_path
// is not on hosts where only a v1 line tells the container.
std::optional<ProcIdentity> read_process(uint32_t pid, std::string *cgroup_v2_path = nullptr);

// Numeric entries of /proc, ascending.
std::vector<uint32_t> list_pids();

// A process with this pid exists now and has not exited (a zombie has).
bool process_alive(uint32_t pid);

// One line of /proc/<pid>/maps.
struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t dev = 0; // kernel encoding: major << 20 | minor
  uint64_t ino = 0;
  std::string path; // without the " (deleted)" suffix; "" for anonymous
  bool deleted = false;
};

std::optional<MapsEntry> parse_maps_line(std::string_view line);

// Empty when the process is gone or its fds/maps are not readable; never
// another process's, should the pid be reused meanwhile. With start_time
// (stat field 22, as read_process gave it), empty too when the pid now
// names a process started at another time: the one read_process described
// is gone.
std::vector<HeldFile> scan_holdings(uint32_t pid, std::optional<uint64_t> start_time = {});

// Which processes hold each of these files (kernel dev, ino) right now, as
// an open fd or a mapping, read afresh from every /proc/<pid>/fd and maps;
// pids ascending, skip_pid left out (the caller's own handles). Files
// nobody holds are absent.
std::map<std::pair<uint32_t, uint64_t>, std::vector<uint32_t>>
find_holders(const std::set<std::pair<uint32_t, uint64_t>> &files, uint32_t skip_pid);

// /proc/sysvipc/shm text (header line first). Malformed lines are skipped.
std::vector<SysvEntry> parse_sysvipc_shm(std::string_view text);

// The reader's own IPC namespace only: /proc/sysvipc/shm shows the namespace
// of the process reading it, not of the /proc it was reached through, so
// going through /proc/<pid>/root of another namespace's process is not
// enough. Callers wanting other namespaces setns(CLONE_NEWIPC) first.
std::vector<SysvEntry> read_sysvipc_shm();
// The same for the IPC namespace of pid, read from a thread that joins it
// (setns needs CAP_SYS_ADMIN). nullopt when that is impossible.
std::optional<std::vector<SysvEntry>> read_sysvipc_shm_of(uint32_t pid);

} // namespace shmbpf
