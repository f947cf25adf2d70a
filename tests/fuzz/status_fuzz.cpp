// parse_real_uid over any /proc/<pid>/status text: never a crash; a uid is
// only ever read from a "Uid:" line, and a written line reads back.
#include "sources/proc_scan.hpp"

#include "fuzz_check.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  const auto uid = parse_real_uid(text);
  if (!uid)
    return 0;
  FUZZ_CHECK(text.starts_with("Uid:") || text.find("\nUid:") != std::string_view::npos);
  const std::string line = "Uid:\t" + std::to_string(*uid) + "\t0\t0\t0\n";
  FUZZ_CHECK(parse_real_uid("Name:\tx\n" + line + "Gid:\t0\t0\t0\t0\n") == uid);
  return 0;
}
