#include "views/json.hpp"

#include "views/escape.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace shmbpf {

void JsonWriter::flush() {
  if (staged_ != 0) {
    out_.append(stage_, staged_);
    staged_ = 0;
  }
}

JsonWriter &JsonWriter::open(char c) {
  before_value();
  if (depth_ == kMaxDepth)
    throw std::length_error("JSON nested too deeply");
  ++depth_;
  has_value_ = false;
  literal_bytes({&c, 1});
  return *this;
}

JsonWriter &JsonWriter::close(char c) {
  if (depth_ > 0)
    --depth_;
  has_value_ = true; // the enclosing container holds this one
  literal_bytes({&c, 1});
  return value_done();
}

void JsonWriter::key_slow(std::string_view k) {
  before_value();
  str_value(k);
  literal_bytes(compact_ ? ":" : ": ");
  after_key_ = true;
}

JsonWriter &JsonWriter::key(JsonKey k) {
  if (char *p = field(k, 0)) {
    set_end(p);
    after_key_ = true;
  }
  return *this;
}

JsonWriter &JsonWriter::str_value(std::string_view v) {
  if (v.size() <= kMaxStagedString) {
    set_end(write_json_text(room(kJsonEscapeGrowth * v.size() + 2), v));
  } else {
    flush();
    append_json_text(out_, v);
  }
  return value_done();
}

JsonWriter &JsonWriter::str(std::string_view v) {
  before_value();
  return str_value(v);
}

JsonWriter &JsonWriter::real(double v) {
  if (!std::isfinite(v))
    return null();
  before_value();
  char buf[64];
  literal_bytes({buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf)});
  return value_done();
}

JsonWriter &JsonWriter::literal(std::string_view v) {
  before_value();
  literal_bytes(v);
  return value_done();
}

void JsonWriter::literal_bytes(std::string_view v) {
  char *p = room(v.size());
  std::memcpy(p, v.data(), v.size());
  set_end(p + v.size());
}

} // namespace shmbpf
