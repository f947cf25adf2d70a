// The one escaping rule for everything that came from the kernel, a file
// system or another process (file names, comm, container ids): how it is
// written on a terminal, in a table, and inside every JSON string, by every
// command. docs/EVENTS.md states the rule for users.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

// Text safe to print on a terminal, as printable UTF-8 only:
//   backslash          -> "\\"
//   \n \t \r           -> "\n" "\t" "\r"
//   other C0, DEL      -> "\xNN"
//   invalid UTF-8      -> "\xNN" for every byte that is not part of a valid
//                         sequence (bad lead, truncated, overlong, surrogate,
//                         above U+10FFFF)
//   C1 controls, bidi controls, line/paragraph separators and invisible
//   format characters (zero-width space and joiners, word joiner, BOM,
//   soft hyphen) -> "\u{XXXX}"
// Everything else (valid, printable UTF-8) passes through unchanged. The
// mapping is injective, and unescape_text reverses it: every escape starts
// with a backslash and a literal backslash is always doubled.
std::string escape_text(std::string_view s);
// escape_text(s) appended to out.
void append_escaped_text(std::string &out, std::string_view s);

// escape_text(s) as one quoted JSON string, appended to out: the JSON value
// is exactly the text a terminal shows (so "\x1b" in a name reads "\\x1b"
// in JSON source), a single line of valid UTF-8.
void append_json_text(std::string &out, std::string_view s);

// The most bytes append_json_text writes per byte of s (a control byte,
// "\\x1b"), besides the two quotes.
inline constexpr std::size_t kJsonEscapeGrowth = 5;
// append_json_text's bytes written at p, which has room for
// kJsonEscapeGrowth * s.size() + 2 of them; returns the end.
char *write_json_text(char *p, std::string_view s);

// The bytes escape_text(original) came from; nullopt when s is not
// something escape_text produces (a lone backslash, an unknown escape, a
// raw control character, invalid UTF-8, or a "\u{...}" or "\xNN" that
// escape_text would not have written for that input).
std::optional<std::string> unescape_text(std::string_view s);

} // namespace shmbpf
