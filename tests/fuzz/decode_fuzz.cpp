// The ring-buffer decoder over any bytes: never a crash or a read past the
// record (the fuzzer's buffer is exactly `size` long, so ASan sees one),
// strings bounded by the fields they came from, the same event whether
// decoded fresh or into a reused one; and the same bytes made into a
// well-formed record of any type always decode.
#include "decode/decode.hpp"

#include <linux/types.h>

#include "shmbpf_events.h"

#include "fuzz_check.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

// An event whose every field differs from a fresh one, as the reused event
// of a consumer is after some other record.
Event used_event() {
  Event e;
  e.type = EventType::exec;
  e.kind = Kind::sysv;
  e.origin = Origin::rename;
  e.pid = e.tid = e.ppid = e.uid = 7;
  e.ret = e.err = 9;
  e.dev = e.mnt_id = 3;
  e.ino = e.size = e.bytes = e.arg_size = 11;
  e.fd = e.dirfd = e.newdirfd = e.shmid = 5;
  e.is_new = e.truncated = e.unlinked = e.absolute = true;
  const std::string long_text(300, 'q');
  e.comm = e.path = e.name = e.newpath = e.full_path = e.start_dir = e.target_comm = e.filename =
      long_text;
  return e;
}

void check_event(const Event &e) {
  const auto type = static_cast<unsigned>(e.type);
  FUZZ_CHECK(type >= SHMBPF_EV_CREATE && type < SHMBPF_EV_MAX);
  FUZZ_CHECK(e.comm.size() <= SHMBPF_COMM_LEN && e.target_comm.size() <= SHMBPF_COMM_LEN);
  FUZZ_CHECK(e.path.size() <= SHMBPF_PATH_LEN && e.newpath.size() <= SHMBPF_PATH_LEN &&
             e.filename.size() <= SHMBPF_PATH_LEN);
  // "..." when the walk stopped short, a '/' per component.
  FUZZ_CHECK(e.name.size() <= SHMBPF_PATH_LEN + 4 && e.start_dir.size() <= SHMBPF_PATH_LEN + 4);
  FUZZ_CHECK(e.err >= 0 && (e.err == 0 || e.ret == -e.err));
  FUZZ_CHECK(e.full_path.empty());
}

} // namespace
} // namespace shmbpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace shmbpf;

  Event fresh;
  std::string why;
  const bool ok = decode_event_into(data, size, fresh, &why);
  FUZZ_CHECK(ok || !why.empty());
  const Result<Event> result = decode_event(data, size);
  FUZZ_CHECK(result.ok() == ok);
  if (ok) {
    check_event(fresh);
    FUZZ_CHECK(result.value() == fresh);
    Event reused = used_event();
    FUZZ_CHECK(decode_event_into(data, size, reused));
    FUZZ_CHECK(reused == fresh);
  }

  // The bytes after the first as the body of a record of the type the
  // first chooses, with a correct header: whatever the body holds, it is
  // an event.
  if (size == 0)
    return 0;
  const auto type = static_cast<uint8_t>(SHMBPF_EV_CREATE + data[0] % (SHMBPF_EV_MAX - 1));
  const size_t want = record_size(type);
  FUZZ_CHECK(want != 0); // every type below SHMBPF_EV_MAX has records
  std::vector<unsigned char> record(want);
  std::memcpy(record.data(), data + 1, std::min(size - 1, want));
  shmbpf_hdr hdr;
  std::memcpy(&hdr, record.data(), sizeof hdr);
  hdr.type = type;
  hdr.abi = SHMBPF_ABI_VERSION;
  hdr.size = static_cast<__u16>(want);
  std::memcpy(record.data(), &hdr, sizeof hdr);
  Event e;
  FUZZ_CHECK(decode_event_into(record.data(), record.size(), e));
  check_event(e);
  // The kernel's two no-space records are one event type, and the light
  // hooks' create by path is a create.
  const auto decoded_as = type == SHMBPF_EV_NOSPACE_CREATE   ? SHMBPF_EV_NOSPACE_WRITE
                          : type == SHMBPF_EV_CREATE_BY_PATH ? SHMBPF_EV_CREATE
                                                             : type;
  FUZZ_CHECK(static_cast<uint8_t>(e.type) == decoded_as);
  // One byte short is refused.
  FUZZ_CHECK(!decode_event_into(record.data(), record.size() - 1, e));
  // A record that ends early, as the light hooks send them, is the same
  // event as long as it keeps its fixed fields, and refused when shorter.
  const size_t least = record_min_size(type);
  const size_t cut = least + (size - 1) % (want - least + 1);
  hdr.size = static_cast<__u16>(cut);
  std::memcpy(record.data(), &hdr, sizeof hdr);
  FUZZ_CHECK(decode_event_into(record.data(), cut, e));
  check_event(e);
  FUZZ_CHECK(static_cast<uint8_t>(e.type) == decoded_as);
  if (least > sizeof hdr) {
    hdr.size = static_cast<__u16>(least - 1);
    std::memcpy(record.data(), &hdr, sizeof hdr);
    FUZZ_CHECK(!decode_event_into(record.data(), record.size(), e));
  }
  return 0;
}
