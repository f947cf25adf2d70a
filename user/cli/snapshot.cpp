#include "cli/snapshot.hpp"

#include "live/container_memory.hpp"
#include "live/container_names.hpp"
#include "model/apply_scan.hpp"
#include "sources/system_scan.hpp"
#include "views/scan_notes.hpp"

#include <cstdio>

namespace shmbpf {

void fill_from_scan(Engine &engine, const RuntimeRoots &roots) {
  const SystemScan scan = scan_system();
  for (const std::string &line : scan_shortfall_lines(scan.filesystems))
    std::fprintf(stderr, "shmbpf: warning: %s\n", line.c_str());
  bootstrap(engine, scan);
  name_containers(engine, roots);
  measure_containers(engine);
}

} // namespace shmbpf
