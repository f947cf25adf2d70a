// parse_sysvipc_shm over any text: never a crash, at most one segment per
// line after the header, and the segments written back as the kernel
// prints them read the same.
#include "sources/proc_scan.hpp"

#include "fuzz_check.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

namespace shmbpf {
namespace {

std::string format_entry(const SysvEntry &e) {
  char line[256];
  // key (an int: keys >= 2^31 print negative) shmid perms (octal) size cpid
  // lpid nattch uid gid cuid cgid atime dtime ctime rss swap
  std::snprintf(line, sizeof line,
                "%10d %10d %4o %21" PRIu64 " %5u %5u %5u %5u %5u %5u %5u %10d %10d %10d %21" PRIu64
                " %21d\n",
                static_cast<int32_t>(e.key), e.shmid, (e.removed ? 01000u : 0u) | e.mode, e.size,
                e.cpid, e.lpid, e.nattch, e.uid, 0u, e.cuid, 0u, 0, 0, 0, e.rss_bytes, 0);
  return line;
}

bool same(const SysvEntry &a, const SysvEntry &b) {
  return a.shmid == b.shmid && a.key == b.key && a.size == b.size && a.rss_bytes == b.rss_bytes &&
         a.cpid == b.cpid && a.lpid == b.lpid && a.nattch == b.nattch && a.removed == b.removed &&
         a.mode == b.mode && a.uid == b.uid && a.cuid == b.cuid;
}

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  const auto entries = parse_sysvipc_shm(text);
  size_t lines = 1;
  for (char c : text)
    lines += c == '\n';
  FUZZ_CHECK(entries.size() < lines);
  std::string again_text = "key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime "
                           "ctime rss swap\n";
  for (const SysvEntry &e : entries)
    again_text += format_entry(e);
  const auto again = parse_sysvipc_shm(again_text);
  FUZZ_CHECK(again.size() == entries.size());
  for (size_t i = 0; i < again.size(); ++i)
    FUZZ_CHECK(same(again[i], entries[i]));
  return 0;
}
