// The one escaping rule over any bytes: the escaped text is printable UTF-8
// that unescapes to the very bytes, and its JSON form is one valid JSON
// string whose value is that same escaped text.
#include "views/escape.hpp"

#include "fuzz_check.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace shmbpf {
namespace {

// Strict UTF-8 (RFC 3629), written apart from the escaper's own decoder.
// Every code point is checked by visit(cp); false on any malformed sequence.
template <class Visit> bool each_code_point(std::string_view s, Visit visit) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n;
    char32_t cp;
    if (b < 0x80) {
      n = 1;
      cp = b;
    } else if ((b & 0xe0) == 0xc0) {
      n = 2;
      cp = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
      n = 3;
      cp = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0) {
      n = 4;
      cp = b & 0x07;
    } else {
      return false;
    }
    if (s.size() - i < n)
      return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80)
        return false;
      cp = cp << 6 | (c & 0x3f);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    visit(cp);
    i += n;
  }
  return true;
}

// What must never reach a terminal raw: C0 and C1 controls, DEL, the
// bidi controls and the line and paragraph separators.
bool is_control(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view s = fuzz::as_text(data, size);
  const std::string escaped = escape_text(s);

  FUZZ_CHECK(unescape_text(escaped) == std::string(s));
  bool control = false;
  FUZZ_CHECK(each_code_point(escaped, [&](char32_t cp) { control |= is_control(cp); }));
  FUZZ_CHECK(!control);

  std::string appended = "x";
  append_escaped_text(appended, s);
  FUZZ_CHECK(appended == "x" + escaped);

  std::string json;
  append_json_text(json, s);
  FUZZ_CHECK(json.find('\n') == std::string::npos);
  const auto parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(parsed.is_string());
  FUZZ_CHECK(parsed.get<std::string>() == escaped);
  return 0;
}
