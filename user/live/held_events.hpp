// The events read while a gather runs on the worker, held back in order
// until its result is applied. Slots are reused: assigning an Event keeps
// its strings' buffers. Pure.
#pragma once

#include "decode/event.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shmbpf {

class HeldEvents {
public:
  void push(const Event &e);
  bool empty() const { return head_ == count_; }
  size_t size() const { return count_ - head_; }
  // The most held at once since construction.
  uint64_t peak() const { return peak_; }

  // Hands up to n held events to fn, oldest first. Once none is left the
  // slots are given back, down to a few thousand.
  template <class Fn> void take(size_t n, Fn &&fn) {
    for (; n > 0 && head_ < count_; --n)
      fn(slots_[head_++]);
    if (head_ == count_)
      reset();
  }

  // Slots kept once everything held is taken: about 1.5 MiB of Events and
  // their strings.
  static constexpr size_t kKeptSlots = 4096;
  size_t capacity() const { return slots_.size(); }

private:
  void reset();

  std::vector<Event> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
  uint64_t peak_ = 0;
};

} // namespace shmbpf
