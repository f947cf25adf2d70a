// For kernel tests of the live model: a Monitor on the real BPF programs
// (SHMBPF_MONITOR fails under CI=true when they cannot load), pumped until
// its engine shows what the test waits for.
#pragma once

#include "harness.hpp"
#include "live/monitor.hpp"

#include <chrono>
#include <functional>

namespace shmbpf::test {

#define SHMBPF_MONITOR(var, ...) SHMBPF_LOADED(var, ::shmbpf::Monitor, __VA_ARGS__)

// Polls the monitor until pred holds on its engine or the timeout passes.
inline bool pump_until(Monitor &m, const std::function<bool(const Engine &)> &pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  for (auto end = std::chrono::steady_clock::now() + timeout;
       std::chrono::steady_clock::now() < end;) {
    m.poll(20);
    m.drain();
    if (pred(m.engine()))
      return true;
  }
  return pred(m.engine());
}

} // namespace shmbpf::test
