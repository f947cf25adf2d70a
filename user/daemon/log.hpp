// The daemon's log: one line per notable thing on standard error, each
// stamped with the time (systemd's journal and kubectl logs keep stderr).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace shmbpf {

// "2025-01-31T09:51:04.341Z shmbpf: <text>\n": UTC to the millisecond.
std::string log_line(int64_t realtime_ns, std::string_view text);

class Log {
public:
  // Writes log_line(now, text) with one write(2); safe from any thread.
  void line(std::string_view text);

private:
  std::mutex mu_;
};

} // namespace shmbpf
