// What this binary is: its version, the commit it was built from and that
// commit's date (cmake/Revision.cmake), for --version and the metrics'
// shmbpf_build_info.
#pragma once

#include <string>

namespace shmbpf {

const char *shmbpf_version();    // "0.2.0"
const char *shmbpf_revision();   // "edef590a1b2c", "…-dirty", or "unknown"
const char *shmbpf_build_date(); // "2026-12-07", or "unknown"

// --version's line: "shmbpf 0.2.0 (revision edef590a1b2c, built 2026-12-07)".
std::string version_line();

} // namespace shmbpf
