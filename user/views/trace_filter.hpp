// trace's -p, --comm, --kind and --event: which events are printed. Pure.
#pragma once

#include "decode/event.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace shmbpf {

struct TraceFilter {
  std::vector<uint32_t> pids;
  std::vector<std::string> comms;
  std::vector<std::string> kinds;  // tmpfs, memfd, sysv
  std::vector<std::string> events; // create, open, ...

  // Every list that is not empty names the event's; a SIGBUS matches -p by
  // the process it was sent to as well as by the one that raised it.
  bool matches(const Event &e) const;
};

} // namespace shmbpf
