// unescape_text over any text: never a crash; what it accepts is exactly
// what escape_text writes, and text that escaping leaves alone unescapes
// to itself.
#include "views/escape.hpp"

#include "fuzz_check.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view x = fuzz::as_text(data, size);
  const auto bytes = unescape_text(x);
  if (bytes)
    FUZZ_CHECK(escape_text(*bytes) == x);
  if (x.find('\\') == std::string_view::npos && escape_text(x) == x)
    FUZZ_CHECK(bytes && *bytes == x);
  return 0;
}
