// The one JSON writer, behind every command's JSON (trace's NDJSON lines,
// ls, leaks, top): commas and nesting are tracked for the caller, every
// string goes through the one escaping rule (views/escape.hpp), and
// non-finite numbers become null. A field is composed on the stack and
// appended at once, so a steady stream of trace events costs no more than
// hand-written output would.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

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

class JsonWriter {
public:
  // compact: "a":1,"b":2 (NDJSON lines); otherwise "a": 1, "b": 2.
  explicit JsonWriter(std::string &out, bool compact = false) : out_(out), compact_(compact) {}

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
  [[gnu::always_inline]] JsonWriter &str(JsonKey k, std::string_view v) {
    Field f(*this, k);
    if (!f.fits())
      return str(v);
    out_.append(f.buf, f.n);
    return str_value(v);
  }
  // The keyed writers are forced inline: at a literal key the compiler then
  // knows the key's length, and a field costs a few stores and one append
  // (trace formats hundreds of thousands of events a second with these).
  template <std::integral T>
  requires(!std::same_as<T, bool>) [[gnu::always_inline]] JsonWriter &num(JsonKey k, T v) {
    Field f(*this, k);
    if (!f.fits())
      return num(v);
    char *end;
    if constexpr (std::is_signed_v<T>)
      end = write_decimal(f.buf + f.n, static_cast<int64_t>(v));
    else
      end = write_decimal(f.buf + f.n, static_cast<uint64_t>(v));
    out_.append(f.buf, end);
    return *this;
  }
  JsonWriter &real(JsonKey k, double v) { return key(k).real(v); }
  [[gnu::always_inline]] JsonWriter &boolean(JsonKey k, bool v) {
    return field(k, v ? "true" : "false");
  }
  [[gnu::always_inline]] JsonWriter &null(JsonKey k) { return field(k, "null"); }

private:
  static constexpr std::size_t kMaxDepth = 64;

  template <std::integral T> static void append_int(std::string &out, T v) {
    char buf[24]; // a sign and 20 digits
    if constexpr (std::is_signed_v<T>)
      out.append(buf, write_decimal(buf, static_cast<int64_t>(v)));
    else
      out.append(buf, write_decimal(buf, static_cast<uint64_t>(v)));
  }

  // A separator and a short, plain key composed on the stack; for any
  // other key, written out at once (fits() false) and the value follows.
  struct Field {
    [[gnu::always_inline]] Field(JsonWriter &w, JsonKey key) {
      if (w.after_key_ || !key.fast()) {
        w.key_slow(key.text());
        return;
      }
      const std::string_view k = key.text();
      if (w.has_value_) {
        buf[n++] = ',';
        if (!w.compact_)
          buf[n++] = ' ';
      }
      w.has_value_ = true;
      buf[n++] = '"';
      std::memcpy(buf + n, k.data(), k.size());
      n += k.size();
      buf[n++] = '"';
      buf[n++] = ':';
      if (!w.compact_)
        buf[n++] = ' ';
    }
    bool fits() const { return n != 0; }
    char buf[JsonKey::kShort + 8 + 24];
    std::size_t n = 0;
  };

  void before_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    separate();
  }
  void separate() {
    if (has_value_)
      out_ += compact_ ? "," : ", ";
    has_value_ = true;
  }
  JsonWriter &open(char c);
  JsonWriter &close(char c);
  JsonWriter &literal(std::string_view v);
  [[gnu::always_inline]] JsonWriter &field(JsonKey k, std::string_view literal_value) {
    Field f(*this, k);
    if (!f.fits())
      return literal(literal_value);
    std::memcpy(f.buf + f.n, literal_value.data(), literal_value.size());
    out_.append(f.buf, f.n + literal_value.size());
    return *this;
  }
  void key_slow(std::string_view k);
  JsonWriter &str_value(std::string_view v); // the string, no separator

  std::string &out_;
  // The innermost open container holds a value already. Only it needs
  // knowing: an enclosing one always does, the container itself.
  bool has_value_ = false;
  std::size_t depth_ = 0;
  bool compact_ = false;
  bool after_key_ = false;
};

} // namespace shmbpf
