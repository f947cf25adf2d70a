// The reader of reap's records (POST /v1/reaped) over any line: it never
// fails but by refusing, and what it takes renders to a line it takes again
// with the same values.
#include "daemon/reap_record.hpp"
#include "fuzz_check.hpp"
#include "model/types.hpp"
#include "views/export_view.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view line = fuzz::as_text(data, size);
  ExportFormatter fmt(TraceClock{0});
  auto r = read_reap_record(line, fmt);
  if (!r)
    return 0;
  MountUsage shm;
  shm.mount.mountpoint = "/dev/shm";
  shm.mount.dev = 23u << 20;
  (void)reap_record_place_problem(*r, {shm});
  std::string again;
  fmt.append_reap(again, r->ts_ns, r->outcome, r->by, r->by_pid);
  again.pop_back();
  auto back = read_reap_record(again, fmt);
  FUZZ_CHECK(back);
  std::string third;
  fmt.append_reap(third, back->ts_ns, back->outcome, back->by, back->by_pid);
  third.pop_back();
  FUZZ_CHECK(third == again);
  return 0;
}
