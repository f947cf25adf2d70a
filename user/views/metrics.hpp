// `shmbpf serve`'s /metrics: the engine's segments, orphans and mounts, the
// live loop's counters and the probe's programs in Prometheus' text format
// (docs/METRICS.md). Labels are containers, mounts, kinds and states,
// never a pid, a path or a segment name: the number of series is bounded by
// containers and mounts, whatever the number of segments.
#pragma once

#include "decode/event.hpp"
#include "facts/hooks.hpp"
#include "facts/self_stats.hpp"
#include "model/engine.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

// serve --export-file's writer, since start.
struct ExportCounters {
  uint64_t records = 0;   // records written to the file
  uint64_t dropped = 0;   // records never written: the writer fell behind, or a write failed
  uint64_t errors = 0;    // failed writes, rotations and reopens
  uint64_t rotations = 0; // size rotations
};

// serve --reap's runs, since start.
struct ReapCounters {
  uint64_t runs = 0;                       // runs that had targets
  uint64_t freed = 0;                      // segments removed
  uint64_t bytes_freed = 0;                // their bytes, as the last check measured them
  std::map<std::string, uint64_t> skipped; // by reason (docs/REAP.md)
};

// Who answers: the same for every scrape of one run.
struct AgentIdentity {
  std::string version;  // shmbpf's
  std::string revision; // the commit it was built from
  std::string node;     // the node label on every series; "" for none
};

// What the live loop knows that the engine does not.
struct MetricsCounters {
  uint64_t now_ns = 0;             // CLOCK_BOOTTIME
  int64_t boot_to_realtime_ns = 0; // CLOCK_REALTIME - CLOCK_BOOTTIME, for timestamps
  uint32_t host_mntns = 0;         // the host's mount namespace (host_mount_namespace())
  std::array<uint64_t, kEventTypeSlots> events{}; // applied, by EventType value
  uint64_t lost = 0;                              // records the kernel could not deliver
  std::vector<HookStatus> hooks;                  // every hook and its program, or why it is off
  bool attached = false;                          // the programs are attached
  AgentIdentity agent;
  std::string kernel;                        // the running kernel's release
  std::optional<ExportCounters> export_file; // with --export-file only
  std::optional<ReapCounters> reap;          // with --reap only
  std::optional<SelfStats> process;          // shmbpf's own process, when read
};

// Filesystems mounted only in foreign mount namespaces (MountState::foreign:
// any user may make them, `unshare -Urm` then `mount -t tmpfs`) that get
// series of their own: the ones using the most bytes. The rest are folded:
// counted in shmbpf_mounts_folded, their segments and failures labelled
// mountpoint="(folded)" (docs/METRICS.md, docs/SECURITY.md).
inline constexpr size_t kForeignMountSeries = 32;
inline constexpr const char *kFoldedMountpoint = "(folded)";

// Everything one scrape shows, taken from the engine under the live loop's
// lock; formatting it needs no engine.
struct MetricsSnapshot {
  MetricsCounters counters;
  std::vector<SegmentGroup> segments; // every orphan counts, whatever its age
  std::vector<MountUsage> mounts;
  std::vector<FailureGroup> sigbus;    // kernel-generated SIGBUS since start
  std::vector<FailureGroup> nospace;   // writes, resizes and creates without space since start
  std::vector<FailureGroup> oom_kills; // by container (mountpoint "") since start
  std::vector<OomKill> last_oom_kills; // each container's latest remembered kill, by id
  // Each container's memory cgroup as last read (the host's: the machine's).
  std::vector<std::pair<ContainerRef, CgroupMemory>> container_memory;
  std::vector<NamedCgroupMemory> host_cgroups; // the host's top-level cgroups
};

MetricsSnapshot take_metrics_snapshot(const Engine &engine, MetricsCounters counters);

// The exposition text (PrometheusWriter's format, kPrometheusContentType).
std::string metrics_text(const MetricsSnapshot &snapshot);

} // namespace shmbpf
