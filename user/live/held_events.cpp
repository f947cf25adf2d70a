#include "live/held_events.hpp"

#include <algorithm>

namespace shmbpf {

void HeldEvents::push(const Event &e) {
  if (count_ < slots_.size())
    slots_[count_] = e;
  else
    slots_.push_back(e);
  ++count_;
  peak_ = std::max<uint64_t>(peak_, size());
}

void HeldEvents::reset() {
  head_ = count_ = 0;
  if (slots_.size() > kKeptSlots) {
    slots_.resize(kKeptSlots);
    slots_.shrink_to_fit();
  }
}

} // namespace shmbpf
