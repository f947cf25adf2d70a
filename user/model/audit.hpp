// The audit's rules: where a container host's shared memory breaks the
// isolation between containers, or between a container and the host. Pure:
// an AuditScan in (what sources and live read), findings out. The rules are
// documented one by one in docs/AUDIT.md.
#pragma once

#include "decode/event.hpp"
#include "facts/audit.hpp"
#include "model/containers.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

enum class Severity : uint8_t { low, medium, high };
// At most this many paths or shmids in one finding's evidence.
constexpr size_t kEvidenceItems = 32;
std::string_view severity_name(Severity s);
std::optional<Severity> parse_severity(std::string_view s);

// A process named in a finding's evidence.
struct AuditProcess {
  uint32_t pid = 0;
  std::string comm;
  std::optional<ContainerRef> container; // nullopt: the host
  bool operator==(const AuditProcess &) const = default;
};

// What a finding rests on; a rule fills what applies to it.
struct Evidence {
  std::vector<AuditProcess> processes;
  std::vector<std::string> paths; // files, programs, as the processes see them
  std::vector<int32_t> shmids;    // SysV segments
  std::string mountpoint;         // a mount, as its namespace sees it
  std::string mount_options;      // that mount's per-mount options
  uint32_t dev = 0;               // kernel encoding: a mount's or a file's device
  uint64_t ino = 0;               // a file's inode
  uint32_t mode = 0;              // permission bits
  uint32_t mntns = 0;             // namespace inodes
  uint32_t ipcns = 0;
  std::optional<uint64_t> size_limit;   // a tmpfs's size=, nullopt: none
  std::optional<uint64_t> memory_limit; // the container's, nullopt: none
  // Other containers the finding involves (besides Finding::container).
  std::vector<ContainerRef> others;
  // How many files or segments the finding covers; paths and shmids list
  // at most kEvidenceItems of them.
  uint64_t segments = 0;
  bool operator==(const Evidence &) const = default;
};

struct Finding {
  std::string rule; // "host-ipc-namespace", ...
  Severity severity = Severity::medium;
  std::optional<ContainerRef> container; // nullopt: the host
  std::string summary;
  bool watched = false; // an exec seen while watching, not the snapshot                   // one
                        // line, plain words
  Evidence evidence;
};

// Every rule's id and severity, in the order findings are reported.
struct RuleInfo {
  std::string_view id;
  Severity severity;
  std::string_view title;
};
const std::vector<RuleInfo> &audit_rules();

// The findings of a snapshot, ordered by severity (highest first), then
// rule, then container id.
std::vector<Finding> audit_snapshot(const AuditScan &scan);

// An exec seen while watching (BPF's exec event).
struct ExecSeen {
  AuditProcess process;
  ExeFile exe;
};

class AuditContext;

// Judges execs against one snapshot's mounts: exec-from-shm or
// fileless-exec. Built once per snapshot, then cheap per exec.
class ExecJudge {
public:
  explicit ExecJudge(const AuditScan &scan);
  ~ExecJudge();
  ExecJudge(const ExecJudge &) = delete;
  ExecJudge &operator=(const ExecJudge &) = delete;

  // The program of an exec event: the kernel's device, inode and file
  // system; as path, a memfd's "/memfd:<name>" (a name on a superblock no
  // mount table shows), else what /proc/PID/exe said (live, when it is the
  // same inode), else the path the exec was given.
  ExeFile exe_of(const Event &exec, const std::optional<ExeFile> &live) const;
  std::optional<Finding> judge(const ExecSeen &exec) const;

  // Whether the snapshot's mount tables (or those learnt since) show this
  // superblock in that mount namespace; a program on one that is not known
  // may be on a mount made since (a container started during the watch),
  // perhaps under the number of one that ended.
  bool knows_mount(uint32_t mntns, uint32_t dev) const;
  void learn_mounts(const std::vector<MountNamespace> &namespaces);

private:
  std::unique_ptr<AuditContext> ctx_;
};

// --container's selector: "host" (findings about the host), or a container
// id, an id prefix of at least 4 characters, or the runtime's name.
bool finding_is_about(const Finding &f, std::string_view selector);

// audit's --rule and --container: which findings are reported.
struct AuditSelection {
  std::vector<std::string> rules;       // only these rule ids; empty: every rule
  std::optional<std::string> container; // finding_is_about's selector

  bool selects(const Finding &f) const;
  // The findings of one snapshot this selection reports.
  std::vector<Finding> of(std::vector<Finding> findings) const;
};

} // namespace shmbpf
