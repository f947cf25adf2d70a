// Escaping of untrusted text (file names, comm, anything from the kernel)
// before it reaches a terminal or a JSON line.
#pragma once

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
//   C1 controls, bidi controls, U+2028/U+2029 -> "\u{XXXX}"
// Everything else (valid, printable UTF-8) passes through unchanged. The
// mapping is unambiguous because a literal backslash is always doubled.
std::string escape_text(std::string_view s);
// escape_text(s) appended to out.
void append_escaped_text(std::string &out, std::string_view s);

// Appends s as one complete, quoted JSON string that is a single line of
// valid UTF-8. Control characters become \uXXXX (or \n \t \r \b \f), the
// dangerous code points listed above become \uXXXX, and bytes that are not
// valid UTF-8 become the literal text \xNN (JSON source "\\xNN").
void append_json_string(std::string &out, std::string_view s);

// append_json_string into a new string.
std::string json_string(std::string_view s);

// append_json_string(out, escape_text(s)) in one pass, without the
// intermediate string: how the trace prints names in JSON.
void append_json_text(std::string &out, std::string_view s);

} // namespace shmbpf
