#include "views/escape.hpp"

#include "facts/utf8.hpp"

#include <cstddef>
#include <cstdint>

namespace shmbpf {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

// One step of strict UTF-8 decoding (RFC 3629). len == 0 means the byte at
// the current position does not start a valid sequence; the caller escapes
// that single byte and resynchronises on the next one.
struct Utf8Step {
  char32_t cp = 0;
  std::size_t len = 0;
};

Utf8Step decode_utf8(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80)
    return {b0, 1};

  std::size_t len = 0;
  char32_t cp = 0;
  // Bounds for the second byte; they exclude overlong forms (E0, F0),
  // surrogates (ED) and code points above U+10FFFF (F4).
  uint8_t lo = 0x80, hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    len = 2;
    cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3;
    cp = b0 & 0x0f;
    if (b0 == 0xe0)
      lo = 0xa0;
    else if (b0 == 0xed)
      hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xf0)
      lo = 0x90;
    else if (b0 == 0xf4)
      hi = 0x8f;
  } else {
    return {};
  }
  if (s.size() - i < len)
    return {};
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if (b < lo || b > hi)
      return {};
    cp = (cp << 6) | (b & 0x3f);
    lo = 0x80;
    hi = 0xbf;
  }
  return {cp, len};
}

// Valid code points that a terminal may still act on, that reorder or
// break the displayed text (C1 controls, bidi controls, line/paragraph
// separators), or that take no cell at all and so hide in a name or shift
// a table's columns (zero-width space, joiners, word joiner, BOM, soft
// hyphen, invisible operators).
bool is_dangerous(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xad || cp == 0x61c || cp == 0x180e ||
         (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0xfeff;
}

void append_hex_byte(std::string &out, uint8_t b) {
  out += hex_digits[b >> 4];
  out += hex_digits[b & 0xf];
}

// Lowercase hex, at least four digits (all dangerous code points are < 0x10000).
void append_hex_cp(std::string &out, char32_t cp) {
  int shift = 12;
  while (shift < 28 && (cp >> (shift + 4)) != 0)
    shift += 4;
  for (; shift >= 0; shift -= 4)
    out += hex_digits[(cp >> shift) & 0xf];
}

bool is_plain_ascii(char c) { return c >= 0x20 && c < 0x7f && c != '\\' && c != '"'; }

// escape_text's mapping. With Json, its output is also JSON-escaped on the
// way: every backslash it writes is doubled and '"' becomes \", which is
// all that JSON needs of text escape_text produced (it holds no control
// character and is valid UTF-8).
template <bool Json> void escape_text_into(std::string &out, std::string_view s) {
  constexpr std::string_view bs = Json ? "\\\\" : "\\";
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_plain_ascii(c) || (!Json && c == '"')) {
      // Copy the whole run of plain characters at once: names are mostly that.
      std::size_t j = i + 1;
      while (j < s.size() && (is_plain_ascii(s[j]) || (!Json && s[j] == '"')))
        ++j;
      out.append(s.data() + i, j - i);
      i = j;
      continue;
    }
    const Utf8Step step = decode_utf8(s, i);
    if (step.len == 0) {
      out += bs;
      out += 'x';
      append_hex_byte(out, static_cast<uint8_t>(c));
      ++i;
      continue;
    }
    if (step.len == 1) {
      switch (c) {
      case '"': // only reached with Json
        out += "\\\"";
        break;
      case '\\':
        out += bs;
        out += bs;
        break;
      case '\n':
        out += bs;
        out += 'n';
        break;
      case '\t':
        out += bs;
        out += 't';
        break;
      case '\r':
        out += bs;
        out += 'r';
        break;
      default: // remaining C0 controls and DEL
        out += bs;
        out += 'x';
        append_hex_byte(out, static_cast<uint8_t>(c));
        break;
      }
    } else if (is_dangerous(step.cp)) {
      out += bs;
      out += "u{";
      append_hex_cp(out, step.cp);
      out += '}';
    } else {
      out.append(s, i, step.len);
    }
    i += step.len;
  }
}

} // namespace

std::string escape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  escape_text_into<false>(out, s);
  return out;
}

void append_escaped_text(std::string &out, std::string_view s) { escape_text_into<false>(out, s); }

void append_json_text(std::string &out, std::string_view s) {
  out += '"';
  escape_text_into<true>(out, s);
  out += '"';
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1; // escape_text writes lowercase only
}

} // namespace

std::optional<std::string> unescape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '\\') {
      // Only what escape_text lets through: valid, harmless UTF-8.
      const Utf8Step step = decode_utf8(s, i);
      if (step.len == 0 || (step.len == 1 && !is_plain_ascii(s[i]) && s[i] != '"') ||
          is_dangerous(step.cp))
        return std::nullopt;
      out.append(s, i, step.len);
      i += step.len;
      continue;
    }
    if (++i >= s.size())
      return std::nullopt;
    const char c = s[i++];
    switch (c) {
    case '\\':
      out += '\\';
      break;
    case 'n':
      out += '\n';
      break;
    case 't':
      out += '\t';
      break;
    case 'r':
      out += '\r';
      break;
    case 'x': {
      if (s.size() - i < 2 || hex_value(s[i]) < 0 || hex_value(s[i + 1]) < 0)
        return std::nullopt;
      const auto b = static_cast<uint8_t>(hex_value(s[i]) * 16 + hex_value(s[i + 1]));
      i += 2;
      // A byte escape stands for a control byte or a byte that is not part
      // of a valid sequence, never for a character escape_text keeps.
      if (b == '\n' || b == '\t' || b == '\r' || (b >= 0x20 && b < 0x7f))
        return std::nullopt;
      out += static_cast<char>(b);
      break;
    }
    case 'u': {
      if (i >= s.size() || s[i] != '{')
        return std::nullopt;
      const std::size_t close = s.find('}', i);
      if (close == std::string_view::npos || close - i - 1 < 4 || close - i - 1 > 6)
        return std::nullopt;
      char32_t cp = 0;
      for (std::size_t k = i + 1; k < close; ++k) {
        const int v = hex_value(s[k]);
        if (v < 0)
          return std::nullopt;
        cp = cp * 16 + static_cast<char32_t>(v);
      }
      if (!is_dangerous(cp))
        return std::nullopt;
      append_utf8(out, cp);
      i = close + 1;
      break;
    }
    default:
      return std::nullopt;
    }
  }
  // Byte escapes must not join into a sequence escape_text would have kept
  // whole: re-escaping must give back exactly s.
  if (escape_text(out) != s)
    return std::nullopt;
  return out;
}

} // namespace shmbpf
