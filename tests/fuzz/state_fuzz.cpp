// parse_state over any text (the file serve --state-dir reads at start):
// never a crash; what it accepts formats to text that parses to the same
// state; and given back to an engine whose scan holds every saved segment,
// it is applied without a crash and saved again to a readable file.
#include "model/apply_scan.hpp"
#include "model/state.hpp"

#include "fuzz_check.hpp"

#include <limits>
#include <string>

namespace shmbpf {
namespace {

bool same(const SavedSegment &a, const SavedSegment &b) {
  const Engine::Creation &x = a.creation;
  const Engine::Creation &y = b.creation;
  return a.key == b.key && a.birth == b.birth && a.sysv_key == b.sysv_key && x.pid == y.pid &&
         x.uid == y.uid && x.comm == y.comm && x.cgroup_id == y.cgroup_id &&
         x.cgroup_path == y.cgroup_path && x.created_ns == y.created_ns;
}

// A scan in which every saved segment still exists, as it was saved.
SystemScan scan_holding(const SavedState &st) {
  SystemScan scan;
  ScannedIpc ipc;
  for (const SavedSegment &s : st.segments) {
    if (s.key.is_sysv()) {
      if (s.birth.value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        continue;
      ipc.ipcns = s.key.dev_or_ipcns;
      SysvEntry e;
      e.shmid = static_cast<int32_t>(s.key.ino_or_shmid);
      e.key = s.sysv_key;
      e.ctime_s = static_cast<int64_t>(s.birth.value);
      ipc.segments.push_back(e);
      continue;
    }
    ScannedFs fs;
    fs.dev = s.key.dev_or_ipcns;
    fs.mountpoint = "/dev/shm";
    TmpfsFile f;
    f.dev = fs.dev;
    f.ino = s.key.ino_or_shmid;
    f.path = "/dev/shm/f" + std::to_string(f.ino);
    f.leaf = f.path.substr(9);
    f.nlink = 1;
    (s.birth.kind == Engine::Birth::Kind::time ? f.btime_ns : f.handle_id) = s.birth.value;
    fs.files.push_back(f);
    scan.filesystems.push_back(std::move(fs));
  }
  if (!ipc.segments.empty())
    scan.ipc.push_back(std::move(ipc));
  return scan;
}

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;
  const std::string_view text = fuzz::as_text(data, size);
  Result<SavedState> st = parse_state(text);
  if (!st)
    return 0;
  FUZZ_CHECK(!text.empty() && text.back() == '\n');
  FUZZ_CHECK(st->segments.size() <= kStateMaxSegments);

  const std::string again_text = format_state(*st);
  Result<SavedState> again = parse_state(again_text);
  FUZZ_CHECK(again);
  FUZZ_CHECK(again->boot_id == st->boot_id);
  FUZZ_CHECK(again->segments.size() == st->segments.size());
  for (size_t i = 0; i < again->segments.size(); ++i)
    FUZZ_CHECK(same(again->segments[i], st->segments[i]));
  FUZZ_CHECK(format_state(*again) == again_text);

  Engine engine;
  const SystemScan scan = scan_holding(*st);
  bootstrap(engine, scan);
  const RestoreStats stats = restore_state(engine, scan, *st, st->boot_id);
  FUZZ_CHECK(stats.applied + stats.unmatched == st->segments.size());
  const SavedState saved = collect_state(engine, st->boot_id);
  FUZZ_CHECK(saved.segments.size() <= stats.applied);
  Result<SavedState> reread = parse_state(format_state(saved));
  FUZZ_CHECK(reread);
  FUZZ_CHECK(reread->segments.size() == saved.segments.size());
  return 0;
}
