#include "facts/hooks.hpp"

namespace shmbpf {

std::string_view build_name(Build b) {
  switch (b) {
  case Build::fast:
    return "fast";
  case Build::compat:
    return "compat";
  case Build::compat_noatomic:
    return "compat_noatomic";
  }
  return "?";
}

std::string_view hook_set_name(HookSet s) { return s == HookSet::light ? "light" : "full"; }

std::optional<HookSet> hook_set_named(std::string_view name) {
  for (HookSet s : {HookSet::full, HookSet::light})
    if (name == hook_set_name(s))
      return s;
  return std::nullopt;
}

std::string off_text(const HookStatus &h) {
  return h.hook + ": " + h.off + (h.lost.empty() ? "" : " (" + h.lost + ")");
}

} // namespace shmbpf
