// The rules that turn a scan of the machine (facts/scan.hpp) into engine
// state: as the state to start from (bootstrap), or as the truth the engine
// must converge to (reconcile). Pure, like the engine.
#pragma once

#include "facts/scan.hpp"
#include "model/engine.hpp"

#include <cstddef>
#include <cstdint>

namespace shmbpf {

struct BootstrapStats {
  size_t files = 0;
  size_t processes = 0;
  size_t holdings = 0;
  size_t sysv = 0;
};

// The filesystems whose scan left something out.
std::vector<ScanGap> scan_gaps(const std::vector<ScannedFs> &filesystems);

// Adds what the scan found to an engine (normally an empty one).
BootstrapStats bootstrap(Engine &engine, const SystemScan &scan);

// Makes the engine agree with the scan: files, SysV segments, processes and
// holders that vanished are dropped, new ones added, sizes refreshed.
void reconcile(Engine &engine, const SystemScan &scan, uint64_t now_ns);

} // namespace shmbpf
