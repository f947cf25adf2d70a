#include "live/kernel_notes.hpp"

#include <cstdio>

namespace shmbpf {

std::vector<std::string> kernel_notes(const Probe &probe, bool verbose) {
  std::vector<std::string> out;
  if (!probe.hook_set_note().empty())
    out.push_back("note: " + probe.hook_set_note());
  // "hook not available: " is what scripts (tests/vm) look for.
  for (const auto &m : probe.missing_hooks())
    out.push_back("warning: hook not available: " + m);
  const std::string kernel =
      probe.features().release.empty() ? "this kernel" : "kernel " + probe.features().release;
  for (const Fallback &f : probe.fallbacks())
    if (f.lossy || verbose)
      out.push_back(std::string(f.lossy ? "note" : "info") + ": " + kernel + " has no " +
                    f.feature + ": " + f.instead);
  if (!verbose)
    return out;
  out.push_back("info: hook set " + std::string(hook_set_name(probe.hook_set())));
  for (const HookStatus &h : probe.hooks())
    if (!h.program.empty())
      out.push_back("info: hook " + h.hook + ": program " + h.program + " (" +
                    std::string(build_name(h.build)) + " build)");
  return out;
}

void tell_kernel_notes(const Probe &probe, bool verbose) {
  for (const std::string &line : kernel_notes(probe, verbose))
    std::fprintf(stderr, "shmbpf: %s\n", line.c_str());
}

} // namespace shmbpf
