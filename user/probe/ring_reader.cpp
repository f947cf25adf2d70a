#include "probe/ring_reader.hpp"

#include "facts/result.hpp"

#include <linux/bpf.h>

#include <bpf/bpf.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace shmbpf {

namespace {

uint64_t load_acquire(const void *p) {
  return __atomic_load_n(static_cast<const uint64_t *>(p), __ATOMIC_ACQUIRE);
}

} // namespace

size_t RingReader::batch_bytes(size_t ring_bytes) {
  return std::min<size_t>(ring_bytes / 16, 64 * 1024);
}

RingReader::RingReader(int map_fd) {
  bpf_map_info info{};
  __u32 len = sizeof(info);
  if (bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0)
    throw FatalError("ring buffer", std::strerror(errno));
  if (info.type != BPF_MAP_TYPE_RINGBUF)
    throw FatalError("ring buffer", "the map is not a ring buffer");
  data_bytes_ = info.max_entries;
  page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  batch_ = batch_bytes(data_bytes_);
  consumer_ = mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
  if (consumer_ == MAP_FAILED) {
    consumer_ = nullptr;
    throw FatalError("ring buffer",
                     std::string("mapping its consumer page: ") + std::strerror(errno));
  }
  // The data follows the producer's page twice over, so that a record that
  // wraps around the end reads as one.
  producer_ = mmap(nullptr, page_ + 2 * data_bytes_, PROT_READ, MAP_SHARED, map_fd,
                   static_cast<off_t>(page_));
  if (producer_ == MAP_FAILED) {
    const int err = errno;
    producer_ = nullptr;
    munmap(consumer_, page_);
    throw FatalError("ring buffer", std::string("mapping its data: ") + std::strerror(err));
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (epoll_fd_ < 0 || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, map_fd, &ev) != 0) {
    const int err = errno;
    if (epoll_fd_ >= 0)
      ::close(epoll_fd_);
    munmap(producer_, page_ + 2 * data_bytes_);
    munmap(consumer_, page_);
    throw FatalError("ring buffer", std::string("waiting on it: ") + std::strerror(err));
  }
}

RingReader::~RingReader() {
  ::close(epoll_fd_);
  munmap(producer_, page_ + 2 * data_bytes_);
  munmap(consumer_, page_);
}

int RingReader::consume(const RecordFn &fn) {
  auto *cons_pos = static_cast<uint64_t *>(consumer_);
  const auto *data = static_cast<const unsigned char *>(producer_) + page_;
  const uint64_t mask = data_bytes_ - 1;
  uint64_t cons = load_acquire(cons_pos);
  uint64_t stored = cons;
  auto publish = [&] {
    if (cons != stored)
      __atomic_store_n(cons_pos, cons, __ATOMIC_RELEASE);
    stored = cons;
  };
  int n = 0;
  try {
    for (uint64_t prod = load_acquire(producer_); cons < prod; prod = load_acquire(producer_)) {
      while (cons < prod) {
        const unsigned char *hdr = data + (cons & mask);
        const uint32_t len =
            __atomic_load_n(reinterpret_cast<const uint32_t *>(hdr), __ATOMIC_ACQUIRE);
        if (len & BPF_RINGBUF_BUSY_BIT) { // still being written: the rest waits
          publish();
          return n;
        }
        const uint32_t size = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
        cons += (size + BPF_RINGBUF_HDR_SZ + 7) & ~uint64_t{7};
        if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
          fn(hdr + BPF_RINGBUF_HDR_SZ, size);
          n++;
        }
        if (cons - stored >= batch_)
          publish();
      }
    }
  } catch (...) {
    publish(); // what was handed over is not handed over again
    throw;
  }
  publish();
  return n;
}

int RingReader::wait(int timeout_ms) {
  epoll_event ev{};
  const int n = epoll_wait(epoll_fd_, &ev, 1, timeout_ms);
  return n < 0 ? -errno : n;
}

int RingReader::poll(int timeout_ms, const RecordFn &fn) {
  if (const int n = wait(timeout_ms); n < 0)
    return n;
  return consume(fn);
}

} // namespace shmbpf
