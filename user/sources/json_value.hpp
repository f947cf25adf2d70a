// A small JSON reader for runtime state files (Docker's config.v2.json, OCI
// config.json, containers/storage's containers.json). Those files are
// written by container runtimes but hold what a container's owner chose
// (names, labels, annotations), so the reader is strict and bounded: a
// document deeper than kJsonMaxDepth or larger than kJsonMaxBytes is refused.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shmbpf {

constexpr size_t kJsonMaxDepth = 64;
constexpr size_t kJsonMaxBytes = 1 << 20;

struct JsonMember;

struct JsonValue {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  std::string text;                // a string's value (UTF-8), a number's or a boolean's spelling
  std::vector<JsonValue> items;    // array
  std::vector<JsonMember> members; // object, in document order

  // The member named key of an object (the last one if repeated), else nullptr.
  const JsonValue *get(std::string_view key) const;
  // The string member named key, "" when absent or not a string.
  std::string_view str(std::string_view key) const;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

// The document, or nullopt if it is not exactly one valid JSON value
// (surrounding whitespace allowed), too deep or too large.
std::optional<JsonValue> parse_json(std::string_view text);

} // namespace shmbpf
