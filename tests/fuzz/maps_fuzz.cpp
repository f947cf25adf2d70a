// parse_maps_line over any line: never a crash; a parsed entry holds a
// device the kernel can encode and, written back as the kernel writes
// /proc/<pid>/maps, reads the same.
#include "facts/dev.hpp"
#include "sources/proc_scan.hpp"

#include "fuzz_check.hpp"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <string>

namespace shmbpf {
namespace {

// The kernel's form of one line: the name's newlines as \012, the mark of
// an unlinked file after it.
std::string format_line(const MapsEntry &m) {
  char head[128];
  std::snprintf(head, sizeof head, "%" PRIx64 "-%" PRIx64 " rw-s 00000000 %02x:%02x %" PRIu64 " ",
                m.start, m.end, dev_major(m.dev), dev_minor(m.dev), m.ino);
  std::string line = head;
  for (char c : m.path) {
    if (c == '\n')
      line += "\\012";
    else
      line += c;
  }
  if (m.deleted)
    line += " (deleted)";
  return line;
}

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const auto m = parse_maps_line(fuzz::as_text(data, size));
  if (!m)
    return 0;
  // dev is major << 20 | minor: the numbers of the line's fourth field,
  // read apart here, must come out of it unchanged, or the entry would
  // name another device.
  std::string_view rest = fuzz::as_text(data, size);
  std::string_view field;
  for (int i = 0; i < 4; ++i) {
    rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
    field = rest.substr(0, rest.find_first_of(" \t"));
    rest.remove_prefix(field.size());
  }
  const size_t colon = field.find(':');
  uint64_t major = 0, minor = 0;
  std::from_chars(field.data(), field.data() + colon, major, 16);
  std::from_chars(field.data() + colon + 1, field.data() + field.size(), minor, 16);
  FUZZ_CHECK(dev_major(m->dev) == major && dev_minor(m->dev) == minor);
  // The parser takes off the padding before a name; a name starting with a
  // blank cannot come back through it.
  if (!m->path.empty() && (m->path.front() == ' ' || m->path.front() == '\t'))
    return 0;
  const auto again = parse_maps_line(format_line(*m));
  FUZZ_CHECK(again);
  FUZZ_CHECK(again->start == m->start && again->end == m->end && again->dev == m->dev &&
             again->ino == m->ino && again->path == m->path && again->deleted == m->deleted);
  return 0;
}
