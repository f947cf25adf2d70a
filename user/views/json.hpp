// The one JSON writer, behind every command's JSON (trace's NDJSON lines,
// ls, leaks, top): commas and nesting are tracked for the caller, every
// string goes through the one escaping rule (views/escape.hpp), and
// non-finite numbers become null. Fields are composed in a stage inside
// the writer and appended a block at a time, so a steady stream of trace
// events costs no more than hand-written output would.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "views/escape.hpp"

namespace shmbpf {

// v in decimal at p; returns the end. Inline, and written in place two
// digits a step once the length is known: the library's to_chars is not
// inlined into a long formatter, and trace writes a dozen numbers per event.
[[gnu::always_inline]] inline char *write_decimal(char *p, uint64_t v) {
  static constexpr char kPairs[] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
  std::size_t n = 1;
  for (uint64_t x = v;; x /= 10000, n += 4) {
    if (x < 10)
      break;
    if (x < 100) {
      n += 1;
      break;
    }
    if (x < 1000) {
      n += 2;
      break;
    }
    if (x < 10000) {
      n += 3;
      break;
    }
  }
  char *end = p + n;
  char *t = end;
  while (v >= 100) {
    const auto pair = static_cast<std::size_t>(v % 100) * 2;
    v /= 100;
    *--t = kPairs[pair + 1];
    *--t = kPairs[pair];
  }
  if (v >= 10) {
    *--t = kPairs[v * 2 + 1];
    *--t = kPairs[v * 2];
  } else {
    *--t = static_cast<char>('0' + v);
  }
  return end;
}

[[gnu::always_inline]] inline char *write_decimal(char *p, int64_t v) {
  if (v >= 0)
    return write_decimal(p, static_cast<uint64_t>(v));
  *p++ = '-';
  return write_decimal(p, uint64_t{0} - static_cast<uint64_t>(v));
}

// A key: a literal is checked when compiling (it must need no escaping and
// be short, so a field is composed on the stack with no work at run time);
// any other text is checked, and escaped if need be, as it is written.
class JsonKey {
public:
  static constexpr std::size_t kShort = 32;

  template <std::size_t N>
  consteval JsonKey(const char (&literal)[N]) : text_(literal, N - 1), fast_(true) {
    if (N - 1 > kShort || !plain(text_))
      throw "a literal JSON key must be short and need no escaping";
  }
  JsonKey(std::string_view text) : text_(text), fast_(text.size() <= kShort && plain(text)) {}
  JsonKey(const std::string &text) : JsonKey(std::string_view(text)) {}

  std::string_view text() const { return text_; }
  // Written as it is, without escaping.
  bool fast() const { return fast_; }

private:
  static constexpr bool plain(std::string_view k) {
    for (char c : k)
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
        return false;
    return true;
  }
  std::string_view text_;
  bool fast_;
};

// Output is staged in the writer and appended to the string a block at a
// time: whenever a value at the top level is complete (so `out` holds the
// whole document after the last end_object()), at raw_value(), and when
// the writer goes. Between those, write to `out` only through raw_value().
class JsonWriter {
public:
  // compact: "a":1,"b":2 (NDJSON lines); otherwise "a": 1, "b": 2.
  explicit JsonWriter(std::string &out, bool compact = false) : out_(out), compact_(compact) {}
  ~JsonWriter() { flush(); }
  JsonWriter(const JsonWriter &) = delete;
  JsonWriter &operator=(const JsonWriter &) = delete;

  JsonWriter &begin_object() { return open('{'); }
  JsonWriter &end_object() { return close('}'); }
  JsonWriter &begin_array() { return open('['); }
  JsonWriter &end_array() { return close(']'); }
  // Inside an object: the next value's name.
  JsonWriter &key(JsonKey k);

  JsonWriter &str(std::string_view v);
  // Any integer type, signed or not (bool is boolean()).
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter &num(T v) {
    before_value();
    char *p = room(kNumberRoom);
    set_end(write_number(p, v));
    return value_done();
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
    flush();
    return out_;
  }

  // key + value in one call. The keyed writers are forced inline: at a
  // literal key the compiler then knows the key's length, and a field
  // costs a few stores into the stage (trace formats hundreds of
  // thousands of events a second with these).
  [[gnu::always_inline]] JsonWriter &str(JsonKey k, std::string_view v) {
    char *p = field(k, 0);
    if (!p)
      return str(v);
    set_end(p);
    return str_value(v);
  }
  template <std::integral T>
  requires(!std::same_as<T, bool>) [[gnu::always_inline]] JsonWriter &num(JsonKey k, T v) {
    char *p = field(k, kNumberRoom);
    if (!p)
      return num(v);
    set_end(write_number(p, v));
    return value_done();
  }
  JsonWriter &real(JsonKey k, double v) { return key(k).real(v); }
  [[gnu::always_inline]] JsonWriter &boolean(JsonKey k, bool v) {
    return v ? field_literal(k, "true") : field_literal(k, "false");
  }
  [[gnu::always_inline]] JsonWriter &null(JsonKey k) { return field_literal(k, "null"); }

private:
  static constexpr std::size_t kMaxDepth = 64;
  static constexpr std::size_t kStage = 1024;
  // A sign and 20 digits, or a literal (true, false, null).
  static constexpr std::size_t kNumberRoom = 24;
  // A separator, a short plain key, its quotes and the colon.
  static constexpr std::size_t kFieldRoom = JsonKey::kShort + 6;
  // Longer strings are escaped straight into the output.
  static constexpr std::size_t kMaxStagedString = (kStage - 2) / kJsonEscapeGrowth;

  template <std::integral T> [[gnu::always_inline]] static char *write_number(char *p, T v) {
    if constexpr (std::is_signed_v<T>)
      return write_decimal(p, static_cast<int64_t>(v));
    else
      return write_decimal(p, static_cast<uint64_t>(v));
  }

  // Room for n more bytes at the end of the stage (n <= kStage).
  [[gnu::always_inline]] char *room(std::size_t n) {
    if (kStage - staged_ < n)
      flush();
    return stage_ + staged_;
  }
  [[gnu::always_inline]] void set_end(char *p) { staged_ = static_cast<std::size_t>(p - stage_); }
  void flush(); // the stage appended to the output
  // A value at the top level is the whole document: the output holds it.
  [[gnu::always_inline]] JsonWriter &value_done() {
    if (depth_ == 0)
      flush();
    return *this;
  }

  // A separator and a short, plain key written into the stage, with room
  // for `value` bytes after it; the end. For any other key, the key is
  // written at once and nullptr returned: the caller writes the value as
  // an unkeyed one.
  [[gnu::always_inline]] char *field(JsonKey key, std::size_t value) {
    if (after_key_ || !key.fast()) {
      key_slow(key.text());
      return nullptr;
    }
    const std::string_view k = key.text();
    char *p = room(kFieldRoom + value);
    if (has_value_) {
      *p++ = ',';
      if (!compact_)
        *p++ = ' ';
    }
    has_value_ = true;
    *p++ = '"';
    std::memcpy(p, k.data(), k.size());
    p += k.size();
    *p++ = '"';
    *p++ = ':';
    if (!compact_)
      *p++ = ' ';
    return p;
  }
  [[gnu::always_inline]] JsonWriter &field_literal(JsonKey k, std::string_view v) {
    char *p = field(k, kNumberRoom);
    if (!p)
      return literal(v);
    std::memcpy(p, v.data(), v.size());
    set_end(p + v.size());
    return value_done();
  }

  [[gnu::always_inline]] void before_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (has_value_) {
      char *p = room(2);
      *p++ = ',';
      if (!compact_)
        *p++ = ' ';
      set_end(p);
    }
    has_value_ = true;
  }
  JsonWriter &open(char c);
  JsonWriter &close(char c);
  JsonWriter &literal(std::string_view v);
  void literal_bytes(std::string_view v); // no separator, at most kStage bytes
  void key_slow(std::string_view k);
  JsonWriter &str_value(std::string_view v); // the string, no separator

  std::string &out_;
  char stage_[kStage];
  std::size_t staged_ = 0;
  // The innermost open container holds a value already. Only it needs
  // knowing: an enclosing one always does, the container itself.
  bool has_value_ = false;
  std::size_t depth_ = 0;
  bool compact_ = false;
  bool after_key_ = false;
};

} // namespace shmbpf
