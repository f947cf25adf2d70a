// `shmbpf doctor`'s findings: what this machine gives shmbpf, checked the
// way the other commands would use it (the real programs are loaded and
// attached, then let go).
#pragma once

#include "facts/doctor.hpp"

#include <cstddef>

namespace shmbpf {

struct DoctorOptions {
  size_t ring_buffer_bytes = 0; // the size to try; 0: the default
  std::string hooks = "auto";   // the hook set to try (--hooks)
  bool verbose = false;         // libbpf's messages to stderr
};

DoctorReport examine_machine(const DoctorOptions &opts);

} // namespace shmbpf
