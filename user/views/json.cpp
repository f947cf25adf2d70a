#include "views/json.hpp"

#include "views/escape.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace shmbpf {

JsonWriter &JsonWriter::open(char c) {
  before_value();
  if (depth_ == kMaxDepth)
    throw std::length_error("JSON nested too deeply");
  ++depth_;
  has_value_ = false;
  out_ += c;
  return *this;
}

JsonWriter &JsonWriter::close(char c) {
  if (depth_ > 0)
    --depth_;
  has_value_ = true; // the enclosing container holds this one
  out_ += c;
  return *this;
}

void JsonWriter::key_slow(std::string_view k) {
  before_value();
  append_json_text(out_, k);
  out_ += compact_ ? ":" : ": ";
  after_key_ = true;
}

JsonWriter &JsonWriter::key(JsonKey k) {
  Field f(*this, k);
  if (f.fits()) {
    out_.append(f.buf, f.n);
    after_key_ = true;
  }
  return *this;
}

JsonWriter &JsonWriter::str_value(std::string_view v) {
  append_json_text(out_, v);
  return *this;
}

JsonWriter &JsonWriter::str(std::string_view v) {
  before_value();
  append_json_text(out_, v);
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

JsonWriter &JsonWriter::literal(std::string_view v) {
  before_value();
  out_ += v;
  return *this;
}

} // namespace shmbpf
