// parse_memory_stat_shmem over any memory.stat text (the kernel's, read
// at an OOM kill): never a crash; a value is only read from a "shmem" or
// "total_shmem" line, and a written line reads back.
#include "sources/cgroup.hpp"

#include "fuzz_check.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  const auto shmem = parse_memory_stat_shmem(text);
  if (!shmem)
    return 0;
  FUZZ_CHECK(text.starts_with("shmem ") || text.find("\nshmem ") != std::string_view::npos ||
             text.starts_with("total_shmem ") ||
             text.find("\ntotal_shmem ") != std::string_view::npos);
  const std::string line = "total_shmem " + std::to_string(*shmem) + "\n";
  FUZZ_CHECK(parse_memory_stat_shmem("shmem 1\n" + line + "anon 2\n") == shmem);
  return 0;
}
