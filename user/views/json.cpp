#include "views/json.hpp"

#include "views/escape.hpp"

#include <charconv>
#include <cmath>

namespace shmbpf {

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back())
      out_ += compact_ ? "," : ", ";
    first_.back() = false;
  }
}

JsonWriter &JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  first_.push_back(true);
  return *this;
}

JsonWriter &JsonWriter::end_object() {
  first_.pop_back();
  out_ += '}';
  return *this;
}

JsonWriter &JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  first_.push_back(true);
  return *this;
}

JsonWriter &JsonWriter::end_array() {
  first_.pop_back();
  out_ += ']';
  return *this;
}

JsonWriter &JsonWriter::key(std::string_view k) {
  before_value();
  append_json_string(out_, k);
  out_ += compact_ ? ":" : ": ";
  after_key_ = true;
  return *this;
}

JsonWriter &JsonWriter::str(std::string_view v) {
  before_value();
  append_json_string(out_, v);
  return *this;
}

JsonWriter &JsonWriter::num_unsigned(uint64_t v) {
  before_value();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

JsonWriter &JsonWriter::num_signed(int64_t v) {
  before_value();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

JsonWriter &JsonWriter::real(double v) {
  if (!std::isfinite(v))
    return null();
  before_value();
  char buf[64];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

JsonWriter &JsonWriter::boolean(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter &JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

} // namespace shmbpf
