#include "daemon/log.hpp"

#include "views/escape.hpp"
#include "views/json.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace shmbpf {

namespace {

constexpr std::string_view kLevels[] = {"debug", "info", "warn", "error"};
constexpr std::string_view kFormats[] = {"text", "logfmt", "json"};

std::string timestamp(int64_t realtime_ns) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1'000'000'000);
  const int ms = static_cast<int>(realtime_ns / 1'000'000 % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  const size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03dZ", ms);
  return std::string(stamp, n) + frac;
}

// logfmt's value: quoted, through the one escaping rule (backslashes
// doubled, control characters and invalid UTF-8 as \n, \x1b, \xff), then
// its quotes escaped: nothing in it can end the value or the line.
void append_logfmt_value(std::string &out, std::string_view v) {
  out += '"';
  for (char c : escape_text(v)) {
    if (c == '"')
      out += '\\';
    out += c;
  }
  out += '"';
}

} // namespace

std::optional<LogLevel> parse_log_level(std::string_view name) {
  for (size_t i = 0; i < std::size(kLevels); ++i)
    if (kLevels[i] == name)
      return static_cast<LogLevel>(i);
  return std::nullopt;
}

std::optional<LogFormat> parse_log_format(std::string_view name) {
  for (size_t i = 0; i < std::size(kFormats); ++i)
    if (kFormats[i] == name)
      return static_cast<LogFormat>(i);
  return std::nullopt;
}

std::string_view to_string(LogLevel level) { return kLevels[static_cast<size_t>(level)]; }

std::string log_line(int64_t realtime_ns, LogLevel level, LogFormat format, std::string_view text) {
  std::string out;
  switch (format) {
  case LogFormat::text:
    out = timestamp(realtime_ns) + " shmbpf: ";
    if (level == LogLevel::warn)
      out += "warning: ";
    else if (level != LogLevel::info)
      out += std::string(to_string(level)) + ": ";
    out += text;
    break;
  case LogFormat::logfmt:
    out = "time=" + timestamp(realtime_ns) + " level=" + std::string(to_string(level)) + " msg=";
    append_logfmt_value(out, text);
    break;
  case LogFormat::json: {
    JsonWriter w(out, true);
    w.begin_object();
    w.key("time").str(timestamp(realtime_ns));
    w.key("level").str(to_string(level));
    w.key("msg").str(text);
    w.end_object();
    break;
  }
  }
  out += '\n';
  return out;
}

void Log::write(LogLevel level, std::string_view text) {
  if (level < least_)
    return;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::string l =
      log_line(static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec, level, format_, text);
  std::lock_guard lock(mu_);
  // A log that cannot be written (stderr closed) is not a reason to stop.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, l.data(), l.size());
}

} // namespace shmbpf
