#include "views/escape.hpp"

#include "facts/utf8.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

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

bool is_plain_ascii(char c) { return c >= 0x20 && c < 0x7f && c != '\\' && c != '"'; }

// Some byte of the word is zero (exact as a yes/no, not as to which byte).
constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;
constexpr uint64_t has_zero_byte(uint64_t w) { return (w - kOnes) & ~w & kHighs; }
constexpr uint64_t has_byte(uint64_t w, uint8_t b) { return has_zero_byte(w ^ (kOnes * b)); }

// The bytes of the word that do not pass (a control below 0x20, DEL, a
// non-ASCII byte, a backslash, or in JSON a quote) as their high bits. The
// lowest bit set is exact; those above it may not be.
template <bool Json> uint64_t stops(uint64_t w) {
  uint64_t stop =
      (w & kHighs) | ((w - kOnes * 0x20) & ~w & kHighs) | has_byte(w, 0x7f) | has_byte(w, '\\');
  if constexpr (Json)
    stop |= has_byte(w, '"');
  return stop;
}

// A byte that passes through as it is: plain ASCII, and '"' outside JSON.
template <bool Json> bool passes(char c) { return is_plain_ascii(c) || (!Json && c == '"'); }

// How many bytes from i on pass through: file names are mostly such runs,
// so they are scanned eight bytes at a time (in byte order, as a
// little-endian word: the lowest stop is the first).
template <bool Json> std::size_t plain_run(std::string_view s, std::size_t i) {
  static_assert(std::endian::native == std::endian::little);
  const std::size_t n = s.size();
  std::size_t j = i;
  if (n < 8) { // shorter than a word: byte by byte
    while (j < n && passes<Json>(s[j]))
      ++j;
    return j - i;
  }
  uint64_t w;
  for (; n - j >= 8; j += 8) {
    std::memcpy(&w, s.data() + j, 8);
    if (const uint64_t stop = stops<Json>(w))
      return j + static_cast<std::size_t>(std::countr_zero(stop) / 8) - i;
  }
  if (j == n)
    return n - i;
  // The string's last word, shifted down past the bytes before j and
  // padded on top with bytes that pass.
  const int skip = static_cast<int>(j - (n - 8)) * 8; // 8 to 56
  std::memcpy(&w, s.data() + n - 8, 8);
  w = (w >> skip) | (kOnes * 'a' << (64 - skip));
  if (const uint64_t stop = stops<Json>(w))
    return j + static_cast<std::size_t>(std::countr_zero(stop) / 8) - i;
  return n - i;
}

// Where escaped text goes: a string, or a buffer the caller made room in.
struct ToString {
  std::string &out;
  void put(char c) { out += c; }
  void put(std::string_view v) { out += v; }
};

struct ToBuffer {
  char *p;
  void put(char c) { *p++ = c; }
  void put(std::string_view v) {
    std::memcpy(p, v.data(), v.size());
    p += v.size();
  }
};

template <class Out> void put_hex_byte(Out &out, uint8_t b) {
  out.put(hex_digits[b >> 4]);
  out.put(hex_digits[b & 0xf]);
}

// Lowercase hex, at least four digits (all dangerous code points are < 0x10000).
template <class Out> void put_hex_cp(Out &out, char32_t cp) {
  int shift = 12;
  while (shift < 28 && (cp >> (shift + 4)) != 0)
    shift += 4;
  for (; shift >= 0; shift -= 4)
    out.put(hex_digits[(cp >> shift) & 0xf]);
}

// escape_text's mapping. With Json, its output is also JSON-escaped on the
// way: every backslash it writes is doubled and '"' becomes \", which is
// all that JSON needs of text escape_text produced (it holds no control
// character and is valid UTF-8). With Json, at most kJsonEscapeGrowth
// bytes per byte of s.
template <bool Json, class Out> void escape_text_into(Out &out, std::string_view s) {
  constexpr std::string_view bs = Json ? "\\\\" : "\\";
  std::size_t i = 0;
  while (i < s.size()) {
    if (const std::size_t run = plain_run<Json>(s, i)) {
      out.put(s.substr(i, run));
      i += run;
      continue;
    }
    const char c = s[i];
    const Utf8Step step = decode_utf8(s, i);
    if (step.len == 0) {
      out.put(bs);
      out.put('x');
      put_hex_byte(out, static_cast<uint8_t>(c));
      ++i;
      continue;
    }
    if (step.len == 1) {
      switch (c) {
      case '"': // only reached with Json
        out.put("\\\"");
        break;
      case '\\':
        out.put(bs);
        out.put(bs);
        break;
      case '\n':
        out.put(bs);
        out.put('n');
        break;
      case '\t':
        out.put(bs);
        out.put('t');
        break;
      case '\r':
        out.put(bs);
        out.put('r');
        break;
      default: // remaining C0 controls and DEL
        out.put(bs);
        out.put('x');
        put_hex_byte(out, static_cast<uint8_t>(c));
        break;
      }
    } else if (is_dangerous(step.cp)) {
      out.put(bs);
      out.put("u{");
      put_hex_cp(out, step.cp);
      out.put('}');
    } else {
      out.put(s.substr(i, step.len));
    }
    i += step.len;
  }
}

} // namespace

std::string escape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_escaped_text(out, s);
  return out;
}

void append_escaped_text(std::string &out, std::string_view s) {
  ToString to{out};
  escape_text_into<false>(to, s);
}

void append_json_text(std::string &out, std::string_view s) {
  ToString to{out};
  to.put('"');
  escape_text_into<true>(to, s);
  to.put('"');
}

char *write_json_text(char *p, std::string_view s) {
  ToBuffer to{p};
  to.put('"');
  escape_text_into<true>(to, s);
  to.put('"');
  return to.p;
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
      if (step.len == 0 || (step.len == 1 && !passes<false>(s[i])) || is_dangerous(step.cp))
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
