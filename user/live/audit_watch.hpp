// `audit --watch S`: the execs of the next seconds (BPF), judged against a
// snapshot's mounts as they come, until S seconds pass or a stop signal.
#pragma once

#include "facts/audit.hpp"
#include "model/audit.hpp"
#include "sources/runtime_names.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace shmbpf {

struct ExecWatchOptions {
  double seconds = 0;
  size_t ring_buffer_bytes = 0;
  std::string hooks = "auto";
  bool verbose = false;
  RuntimeRoots runtime_roots; // names of containers started since the snapshot
};

// Adds the selected findings of the execs to findings: each program once
// per container (later runs of it add their processes to its evidence);
// found is told each new one as it is found. Throws FatalError when BPF
// cannot load or the ring buffer fails.
void watch_execs(const ExecWatchOptions &opts, const AuditScan &scan,
                 const AuditSelection &selection, std::vector<Finding> &findings,
                 const std::function<void(const Finding &)> &found);

} // namespace shmbpf
