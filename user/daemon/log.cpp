#include "daemon/log.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace shmbpf {

std::string log_line(int64_t realtime_ns, std::string_view text) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1'000'000'000);
  const int ms = static_cast<int>(realtime_ns / 1'000'000 % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  const size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03dZ", ms);
  std::string out(stamp, n);
  out += frac;
  out += " shmbpf: ";
  out += text;
  out += '\n';
  return out;
}

void Log::line(std::string_view text) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::string l =
      log_line(static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, text);
  std::lock_guard lock(mu_);
  // A log that cannot be written (stderr closed) is not a reason to stop.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, l.data(), l.size());
}

} // namespace shmbpf
