// A small streaming JSON writer shared by every view: commas and nesting
// are tracked for the caller, strings are escaped (untrusted names
// included), non-finite numbers become null.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

class JsonWriter {
public:
  // compact: "a":1,"b":2 (NDJSON lines); otherwise "a": 1, "b": 2.
  explicit JsonWriter(std::string &out, bool compact = false) : out_(out), compact_(compact) {}

  JsonWriter &begin_object();
  JsonWriter &end_object();
  JsonWriter &begin_array();
  JsonWriter &end_array();
  // Inside an object: the next value's name.
  JsonWriter &key(std::string_view k);

  JsonWriter &str(std::string_view v);
  // Any integer type, signed or not (bool is boolean()).
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter &num(T v) {
    if constexpr (std::is_signed_v<T>)
      return num_signed(static_cast<int64_t>(v));
    else
      return num_unsigned(static_cast<uint64_t>(v));
  }
  JsonWriter &real(double v);
  JsonWriter &boolean(bool v);
  JsonWriter &null();
  // A string, or null when empty.
  JsonWriter &str_or_null(std::string_view v) { return v.empty() ? null() : str(v); }

  // key + value in one call.
  JsonWriter &str(std::string_view k, std::string_view v) { return key(k).str(v); }
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter &num(std::string_view k, T v) {
    return key(k).num(v);
  }
  JsonWriter &real(std::string_view k, double v) { return key(k).real(v); }
  JsonWriter &boolean(std::string_view k, bool v) { return key(k).boolean(v); }
  JsonWriter &null(std::string_view k) { return key(k).null(); }

private:
  void before_value();
  JsonWriter &num_unsigned(uint64_t v);
  JsonWriter &num_signed(int64_t v);

  std::string &out_;
  std::vector<bool> first_; // per open container: nothing written yet
  bool compact_ = false;
  bool after_key_ = false;
};

} // namespace shmbpf
