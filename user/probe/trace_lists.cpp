#include "probe/trace_lists.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shmbpf {

namespace {

// The whole of a tracefs file, after a newline; false when it cannot be read.
bool read_all(const std::string &path, std::string &text) {
  FILE *f = std::fopen(path.c_str(), "re");
  if (!f)
    return false;
  text = "\n";
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    text.append(buf, n);
  std::fclose(f);
  return true;
}

} // namespace

bool TracepointList::has(std::string_view name) {
  if (!read_) {
    read_ = true;
    read_all(tracefs_ + "/available_events", text_);
  }
  const std::string needle = ":" + std::string(name) + "\n";
  return text_.find(needle) != std::string::npos;
}

std::string FunctionList::missing(std::string_view name) {
  if (!read_) {
    read_ = true;
    const std::string path = tracefs_ + "/available_filter_functions";
    if (!read_all(path, text_))
      why_ = "no function tracing here (" + path + ": " + std::strerror(errno) + ")";
  }
  if (!why_.empty())
    return why_;
  const std::string line = "\n" + std::string(name);
  for (size_t at = text_.find(line); at != std::string::npos; at = text_.find(line, at + 1)) {
    const char next = text_[at + line.size()];
    if (next == '\n' || next == ' ')
      return "";
  }
  return "not a function this kernel can trace";
}

} // namespace shmbpf
