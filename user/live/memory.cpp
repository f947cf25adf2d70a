#include "live/memory.hpp"

#include <sys/prctl.h>

#include <cstddef>

// jemalloc's control interface. Weak: it is there when the program links
// jemalloc (CMake option SHMBPF_JEMALLOC, user/alloc), and null in the
// test binaries and builds that use the C library's malloc.
extern "C" int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

namespace shmbpf {

bool disable_huge_pages() { return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0; }

void release_free_memory() {
  if (mallctl == nullptr)
    return;
  // 4096 is MALLCTL_ARENAS_ALL: every arena.
  mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
}

} // namespace shmbpf
