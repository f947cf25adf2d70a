#include "cli/kernel_notes.hpp"

#include <cstdio>
#include <string>

namespace shmbpf {

void tell_kernel_notes(const Probe &probe, bool verbose) {
  // "hook not available: " is what scripts (tests/vm) look for.
  for (const auto &m : probe.missing_hooks())
    std::fprintf(stderr, "shmbpf: warning: hook not available: %s\n", m.c_str());
  const std::string kernel =
      probe.features().release.empty() ? "this kernel" : "kernel " + probe.features().release;
  for (const Fallback &f : probe.fallbacks())
    if (f.lossy || verbose)
      std::fprintf(stderr, "shmbpf: %s: %s has no %s: %s\n", f.lossy ? "note" : "info",
                   kernel.c_str(), f.feature.c_str(), f.instead.c_str());
  if (!verbose)
    return;
  for (const HookStatus &h : probe.hooks())
    if (!h.program.empty())
      std::fprintf(stderr, "shmbpf: info: hook %s: program %s (%s build)\n", h.hook.c_str(),
                   h.program.c_str(), std::string(build_name(h.build)).c_str());
}

} // namespace shmbpf
