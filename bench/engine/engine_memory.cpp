// Resident memory of the engine per live tracked segment: feeds an Engine N
// synthetic creates (PyTorch-style names, 100 creator processes), then the
// creators' exits (the leak shmbpf exists for: linked files nobody holds),
// and prints the RSS growth per segment at both points.
//
//   engine_memory 1000000
#include "engine/synthetic.hpp"
#include "model/engine.hpp"

#include <malloc.h>
#ifdef SHMBPF_WITH_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

// VmRSS of this process in bytes.
long long rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atoll(line.c_str() + 6) * 1024;
  return -1;
}

// Hands memory the allocator keeps but no longer uses back to the system,
// so that RSS counts what is in use. glibc keeps little (large blocks are
// unmapped at free); jemalloc keeps freed pages for dirty_decay_ms (10 s),
// after which a long-running engine's RSS is what this measures.
void release_free_memory() {
#ifdef SHMBPF_WITH_JEMALLOC
  // MALLCTL_ARENAS_ALL: every arena.
  mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
#else
  malloc_trim(0);
#endif
}

} // namespace

int main(int argc, char **argv) {
  using namespace shmbpf;
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const uint32_t procs = 100;
  if (n == 0) {
    std::fprintf(stderr, "usage: engine_memory SEGMENTS\n");
    return 2;
  }

  Engine engine;
  uint64_t ts = 1'000'000'000;
  // Make the processes exist before the baseline: only segments are measured.
  for (uint32_t p = 0; p < procs; p++)
    engine.apply(bench::process_event(EventType::exec, 10000 + p, ts++));
  release_free_memory();
  long long before = rss_bytes();

  for (uint64_t i = 0; i < n; i++) {
    uint32_t pid = 10000 + static_cast<uint32_t>(i % procs);
    engine.apply(bench::create_event(pid, 1000 + i, bench::torch_path(pid, i), ts++));
  }
  release_free_memory();
  long long held = rss_bytes();
  for (uint32_t p = 0; p < procs; p++)
    engine.apply(bench::process_event(EventType::exit, 10000 + p, ts++));
  release_free_memory();
  long long orphaned = rss_bytes();

  std::printf("segments=%llu live=%zu rss_before=%lld rss_held=%lld rss_orphaned=%lld "
              "bytes_per_segment_held=%.1f bytes_per_segment_orphaned=%.1f\n",
              static_cast<unsigned long long>(n), engine.segment_count(), before, held, orphaned,
              static_cast<double>(held - before) / static_cast<double>(n),
              static_cast<double>(orphaned - before) / static_cast<double>(n));
  return engine.segment_count() == n ? 0 : 1;
}
