// parse_stat over any text (a process names itself: comm may hold spaces,
// parentheses and anything else): never a crash, and a parsed stat written
// back reads the same.
#include "sources/proc_scan.hpp"

#include "fuzz_check.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  const auto f = parse_stat(text);
  if (!f)
    return 0;
  FUZZ_CHECK(f->comm.size() + 2 <= text.size());
  FUZZ_CHECK(f->state != ' ' && f->state != '\t' && f->state != ')');
  const std::string again_text =
      "1 (" + f->comm + ") " + f->state + ' ' + std::to_string(f->ppid) + " 1 1 0 -1 4194560\n";
  const auto again = parse_stat(again_text);
  FUZZ_CHECK(again && again->comm == f->comm && again->state == f->state && again->ppid == f->ppid);
  return 0;
}
