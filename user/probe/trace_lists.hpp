// What tracefs lists of the kernel's hooks: its tracepoints and the
// functions it can trace. Each list is read once, when first asked.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace shmbpf {

// The tracepoints in available_events ("category:name" lines).
class TracepointList {
public:
  explicit TracepointList(std::string tracefs) : tracefs_(std::move(tracefs)) {}
  bool has(std::string_view name);

private:
  std::string tracefs_;
  std::string text_;
  bool read_ = false;
};

// The functions fentry and fexit can attach to, in
// available_filter_functions ("name" or "name [module]" lines). A kernel
// without function tracing, or one that does not let the list be read,
// has none.
class FunctionList {
public:
  explicit FunctionList(std::string tracefs) : tracefs_(std::move(tracefs)) {}
  // "" when the kernel can trace the function, else why not.
  std::string missing(std::string_view name);

private:
  std::string tracefs_;
  std::string text_;
  std::string why_;
  bool read_ = false;
};

} // namespace shmbpf
