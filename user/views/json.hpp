// The one JSON writer, behind every command's JSON (trace's NDJSON lines,
// ls, leaks, top): commas and nesting are tracked for the caller, every
// string goes through the one escaping rule (views/escape.hpp), and
// non-finite numbers become null. A field is composed on the stack and
// appended at once, so a steady stream of trace events costs no more than
// hand-written output would.
#pragma once

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shmbpf {

class JsonWriter {
public:
  // compact: "a":1,"b":2 (NDJSON lines); otherwise "a": 1, "b": 2.
  explicit JsonWriter(std::string &out, bool compact = false) : out_(out), compact_(compact) {}

  JsonWriter &begin_object() { return open('{'); }
  JsonWriter &end_object() { return close('}'); }
  JsonWriter &begin_array() { return open('['); }
  JsonWriter &end_array() { return close(']'); }
  // Inside an object: the next value's name.
  JsonWriter &key(std::string_view k);

  JsonWriter &str(std::string_view v);
  // Any integer type, signed or not (bool is boolean()).
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter &num(T v) {
    before_value();
    append_int(out_, v);
    return *this;
  }
  JsonWriter &real(double v);
  JsonWriter &boolean(bool v) { return literal(v ? "true" : "false"); }
  JsonWriter &null() { return literal("null"); }
  // A string, or null when empty.
  JsonWriter &str_or_null(std::string_view v) { return v.empty() ? null() : str(v); }
  // The output, to append one value that is valid JSON as it stands (a
  // quoted timestamp, say) without a copy.
  std::string &raw_value() {
    before_value();
    return out_;
  }

  // key + value in one call.
  JsonWriter &str(std::string_view k, std::string_view v);
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter &num(std::string_view k, T v) {
    Field f(*this, k);
    if (!f.fits())
      return num(v);
    char *end = f.buf + sizeof f.buf;
    if constexpr (std::is_signed_v<T>)
      end = std::to_chars(f.buf + f.n, end, static_cast<int64_t>(v)).ptr;
    else
      end = std::to_chars(f.buf + f.n, end, static_cast<uint64_t>(v)).ptr;
    out_.append(f.buf, end);
    return *this;
  }
  JsonWriter &real(std::string_view k, double v) { return key(k).real(v); }
  JsonWriter &boolean(std::string_view k, bool v) { return field(k, v ? "true" : "false"); }
  JsonWriter &null(std::string_view k) { return field(k, "null"); }

private:
  static constexpr std::size_t kMaxDepth = 64;
  static constexpr std::size_t kShortKey = 32;

  template <std::integral T> static void append_int(std::string &out, T v) {
    char buf[24];
    if constexpr (std::is_signed_v<T>)
      out.append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v)).ptr);
    else
      out.append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<uint64_t>(v)).ptr);
  }

  // A separator and a short, plain key composed on the stack; for any
  // other key, written out at once (fits() false) and the value follows.
  struct Field {
    Field(JsonWriter &w, std::string_view k);
    bool fits() const { return n != 0; }
    char buf[kShortKey + 8 + 24];
    std::size_t n = 0;
  };

  void before_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    separate();
  }
  void separate();
  JsonWriter &open(char c);
  JsonWriter &close(char c);
  JsonWriter &literal(std::string_view v);
  JsonWriter &field(std::string_view k, std::string_view literal_value);
  void key_slow(std::string_view k);

  std::string &out_;
  uint64_t has_value_ = 0; // bit d: the container at depth d holds a value
  std::size_t depth_ = 0;
  bool compact_ = false;
  bool after_key_ = false;
};

} // namespace shmbpf
