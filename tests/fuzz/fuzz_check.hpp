// What the fuzz targets share. A failed check aborts: libFuzzer then keeps
// the input that caused it (crash-<sha1>), so a broken property is reported
// exactly like a crash, with its reproducer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

namespace shmbpf::fuzz {

inline std::string_view as_text(const uint8_t *data, size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

} // namespace shmbpf::fuzz
