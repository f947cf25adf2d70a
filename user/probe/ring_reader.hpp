// The consumer side of a BPF ring buffer map, read through its mappings.
//
// libbpf's reader (1.1) moves the consumer position after every record. The
// producer reads that position on every reserve, so while a drain runs each
// record the kernel writes on another CPU starts with a cache miss on a line
// this CPU just wrote (docs/BENCHMARKS.md, finding 32). This reader moves it
// once per batch (a sixteenth of the ring, 64 KiB at most) and at the end of
// each drain: the producer sees the space freed a little later, never the
// order of records changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace shmbpf {

class RingReader {
public:
  using RecordFn = std::function<void(const void *data, size_t len)>;

  // map_fd: a BPF_MAP_TYPE_RINGBUF map. Throws FatalError when it cannot be
  // mapped.
  explicit RingReader(int map_fd);
  ~RingReader();
  RingReader(const RingReader &) = delete;
  RingReader &operator=(const RingReader &) = delete;

  // Hands every record submitted so far to fn, in order; returns how many
  // (discarded records are skipped and not counted). Stops at a record
  // still being written.
  int consume(const RecordFn &fn);
  // Waits up to timeout_ms for a wakeup: 1 when woken, 0 on a timeout,
  // -errno on failure.
  int wait(int timeout_ms);
  // wait(), then consumes (after a timeout too: records are submitted
  // without a wakeup). -errno when the wait failed.
  int poll(int timeout_ms, const RecordFn &fn);

  // How far the consumer position may lag behind what was read, for a
  // ring of this many bytes.
  static size_t batch_bytes(size_t ring_bytes);

private:
  size_t data_bytes_ = 0;
  size_t page_ = 0;
  size_t batch_ = 0;
  void *consumer_ = nullptr; // the consumer position's page, writable
  void *producer_ = nullptr; // the producer position's page, then the data twice
  int epoll_fd_ = -1;
};

} // namespace shmbpf
