#include "views/json.hpp"

#include "views/escape.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace shmbpf {

namespace {

// A key that needs no escaping: what every key shmbpf writes is.
bool plain_key(std::string_view k) {
  for (char c : k)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
      return false;
  return true;
}

} // namespace

void JsonWriter::separate() {
  if (depth_ == 0)
    return;
  const uint64_t bit = uint64_t{1} << (depth_ - 1);
  if (has_value_ & bit)
    out_ += compact_ ? "," : ", ";
  has_value_ |= bit;
}

JsonWriter &JsonWriter::open(char c) {
  before_value();
  if (depth_ == kMaxDepth)
    throw std::length_error("JSON nested too deeply");
  ++depth_;
  has_value_ &= ~(uint64_t{1} << (depth_ - 1));
  out_ += c;
  return *this;
}

JsonWriter &JsonWriter::close(char c) {
  if (depth_ > 0)
    --depth_;
  out_ += c;
  return *this;
}

JsonWriter::Field::Field(JsonWriter &w, std::string_view k) {
  if (w.after_key_ || k.size() > kShortKey || !plain_key(k)) {
    w.key_slow(k);
    return;
  }
  if (w.depth_ > 0) {
    const uint64_t bit = uint64_t{1} << (w.depth_ - 1);
    if (w.has_value_ & bit) {
      buf[n++] = ',';
      if (!w.compact_)
        buf[n++] = ' ';
    }
    w.has_value_ |= bit;
  }
  buf[n++] = '"';
  std::memcpy(buf + n, k.data(), k.size());
  n += k.size();
  buf[n++] = '"';
  buf[n++] = ':';
  if (!w.compact_)
    buf[n++] = ' ';
}

void JsonWriter::key_slow(std::string_view k) {
  before_value();
  append_json_text(out_, k);
  out_ += compact_ ? ":" : ": ";
  after_key_ = true;
}

JsonWriter &JsonWriter::key(std::string_view k) {
  Field f(*this, k);
  if (f.fits()) {
    out_.append(f.buf, f.n);
    after_key_ = true;
  }
  return *this;
}

JsonWriter &JsonWriter::str(std::string_view k, std::string_view v) {
  Field f(*this, k);
  if (!f.fits())
    return str(v);
  out_.append(f.buf, f.n);
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

JsonWriter &JsonWriter::field(std::string_view k, std::string_view literal_value) {
  Field f(*this, k);
  if (!f.fits())
    return literal(literal_value);
  std::memcpy(f.buf + f.n, literal_value.data(), literal_value.size());
  out_.append(f.buf, f.n + literal_value.size());
  return *this;
}

} // namespace shmbpf
