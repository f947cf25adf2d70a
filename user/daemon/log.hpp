// The daemon's log: one line per notable thing on standard error, each
// stamped with the time (systemd's journal and kubectl logs keep stderr),
// in the format a log pipeline asks for and at the level it wants.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

enum class LogLevel { debug, info, warn, error };
// text: "<time> shmbpf: [warning: |error: |debug: ]<text>", for people;
// logfmt: time=… level=… msg="…"; json: {"time":…,"level":…,"msg":…}.
enum class LogFormat { text, logfmt, json };

// --log-level and --log-format: the names, one constant each.
struct LogSetting {
  static constexpr const char *kLevelFlag = "--log-level";
  static constexpr const char *kLevelHelp =
      "Least severe log line written: debug, info, warn or error";
  static constexpr const char *kFormatFlag = "--log-format";
  static constexpr const char *kFormatHelp =
      "Log lines as text (for people), logfmt or json (one object a line)";
};
std::optional<LogLevel> parse_log_level(std::string_view name);
std::optional<LogFormat> parse_log_format(std::string_view name);
std::string_view to_string(LogLevel level);

// One line of the log, with its newline; time as UTC to the millisecond
// (2025-01-31T09:51:04.341Z).
std::string log_line(int64_t realtime_ns, LogLevel level, LogFormat format, std::string_view text);

class Log {
public:
  explicit Log(LogFormat format = LogFormat::text, LogLevel least = LogLevel::info)
      : format_(format), least_(least) {}

  // Each writes its line with one write(2), when its level is written;
  // safe from any thread.
  void debug(std::string_view text) { write(LogLevel::debug, text); }
  void info(std::string_view text) { write(LogLevel::info, text); }
  void warn(std::string_view text) { write(LogLevel::warn, text); }
  void error(std::string_view text) { write(LogLevel::error, text); }

private:
  void write(LogLevel level, std::string_view text);

  const LogFormat format_;
  const LogLevel least_;
  std::mutex mu_;
};

} // namespace shmbpf
