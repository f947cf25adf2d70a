#include "views/prometheus.hpp"

#include "views/escape.hpp"

#include <charconv>
#include <cmath>

namespace shmbpf {

void append_prometheus_label_value(std::string &out, std::string_view value) {
  for (char c : value) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '"':
      out += "\\\"";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      out += c;
    }
  }
}

void append_prometheus_help(std::string &out, std::string_view help) {
  for (char c : help) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
}

void append_prometheus_value(std::string &out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[32];
  // Whole numbers as integers up to 2^53, where a double still holds every one.
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(value));
    out.append(buf, end);
    return;
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

void PrometheusWriter::family(std::string_view name, Type type, std::string_view help) {
  name_ = name;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  append_prometheus_help(out_, help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += type == Type::counter ? " counter\n" : " gauge\n";
}

void PrometheusWriter::set_common_label(std::string_view key, std::string_view value) {
  common_ = key;
  common_ += "=\"";
  append_prometheus_label_value(common_, escape_text(value));
  common_ += '"';
}

void PrometheusWriter::sample_prefix(Labels labels) {
  out_ += name_;
  if (labels.size() == 0 && common_.empty()) {
    out_ += ' ';
    return;
  }
  char sep = '{';
  if (!common_.empty()) {
    out_ += sep;
    out_ += common_;
    sep = ',';
  }
  for (const auto &[key, value] : labels) {
    out_ += sep;
    out_ += key;
    out_ += "=\"";
    append_prometheus_label_value(out_, escape_text(value));
    out_ += '"';
    sep = ',';
  }
  out_ += "} ";
}

void PrometheusWriter::sample(Labels labels, double value) {
  sample_prefix(labels);
  append_prometheus_value(out_, value);
  out_ += '\n';
}

void PrometheusWriter::sample(Labels labels, uint64_t value) {
  sample_prefix(labels);
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, end);
  out_ += '\n';
}

} // namespace shmbpf
