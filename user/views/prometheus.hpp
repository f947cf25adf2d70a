// Prometheus' text exposition format, version 0.0.4: metric families with
// their HELP and TYPE lines, samples with labels. Every label value goes
// through the one escaping rule (escape_text) before the format's own
// escaping, so a mountpoint reads in Prometheus as `shmbpf ls` prints it
// and can never break a line of the exposition.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace shmbpf {

// What /metrics answers with.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// The format's escaping of a label value, appended to out: backslash,
// double quote and newline become \\, \" and \n; nothing else changes.
void append_prometheus_label_value(std::string &out, std::string_view value);
// The format's escaping of HELP text: backslash and newline.
void append_prometheus_help(std::string &out, std::string_view help);
// A sample value: integers as such, +Inf, -Inf and NaN by those names,
// other numbers in the shortest form that reads back the same.
void append_prometheus_value(std::string &out, double value);

// Writes families one after the other; each family's samples follow its
// HELP and TYPE lines, as the format requires.
class PrometheusWriter {
public:
  enum class Type { gauge, counter };
  using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

  // A label every sample carries, before its own (key must not be one of
  // theirs).
  void set_common_label(std::string_view key, std::string_view value);
  // Starts a family. Counters' names end in _total.
  void family(std::string_view name, Type type, std::string_view help);
  // A sample of the current family. Label values are raw: escaped here.
  void sample(Labels labels, double value);
  void sample(Labels labels, uint64_t value);

  const std::string &text() const { return out_; }
  std::string take() { return std::move(out_); }

private:
  void sample_prefix(Labels labels);

  std::string out_;
  std::string name_;   // of the current family
  std::string common_; // the common label, written: key="value"
};

} // namespace shmbpf
