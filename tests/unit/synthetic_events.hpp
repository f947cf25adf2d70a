// Events as the decoder hands them to the engine, built by hand for the
// unit tests of the engine and of the views over it.
#pragma once

#include "decode/event.hpp"

#include <cstdint>
#include <string>

namespace shmbpf::test {

// The header every event has: a process (pid = tid, parent 1, uid 1000,
// comm "p<pid>") at time ts.
inline Event process_event(EventType type, uint32_t pid, uint64_t ts) {
  Event e;
  e.type = type;
  e.pid = pid;
  e.tid = pid;
  e.ppid = 1;
  e.uid = 1000;
  e.ts_ns = ts;
  e.comm = "p" + std::to_string(pid);
  return e;
}

} // namespace shmbpf::test
