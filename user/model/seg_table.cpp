#include "model/seg_table.hpp"

#include <cstring>
#include <functional>

namespace shmbpf {

// --- PidList -----------------------------------------------------------------

PidList &PidList::operator=(const PidList &o) {
  if (this != &o) {
    release();
    copy_from(o);
  }
  return *this;
}

PidList &PidList::operator=(PidList &&o) noexcept {
  if (this != &o) {
    release();
    steal(o);
  }
  return *this;
}

void PidList::copy_from(const PidList &o) {
  if (o.size_ > kInline) {
    heap_ = new uint32_t[o.size_];
    cap_ = o.size_;
  }
  std::copy(o.begin(), o.end(), data());
  size_ = o.size_;
}

void PidList::steal(PidList &o) noexcept {
  size_ = o.size_;
  cap_ = o.cap_;
  if (o.cap_ > kInline)
    heap_ = o.heap_;
  else
    std::copy(o.inline_, o.inline_ + o.size_, inline_);
  o.size_ = 0;
  o.cap_ = kInline;
}

void PidList::release() noexcept {
  if (cap_ > kInline)
    delete[] heap_;
  size_ = 0;
  cap_ = kInline;
}

bool PidList::insert(uint32_t pid) {
  if (contains(pid))
    return false;
  if (size_ == cap_) {
    uint32_t grown = cap_ * 2;
    auto *p = new uint32_t[grown];
    std::copy(begin(), end(), p);
    if (cap_ > kInline)
      delete[] heap_;
    heap_ = p;
    cap_ = grown;
  }
  data()[size_++] = pid;
  return true;
}

bool PidList::erase(uint32_t pid) {
  uint32_t *d = data();
  uint32_t *it = std::find(d, d + size_, pid);
  if (it == d + size_)
    return false;
  *it = d[--size_];
  return true;
}

// --- PathStr -----------------------------------------------------------------

PathStr &PathStr::operator=(PathStr &&o) noexcept {
  if (this != &o) {
    delete[] p_;
    p_ = std::exchange(o.p_, nullptr);
    len_ = std::exchange(o.len_, 0);
    hash_ = std::exchange(o.hash_, 0);
  }
  return *this;
}

void PathStr::assign(std::string_view s) {
  hash_ = hash_of(s);
  if (s.size() == len_) {
    if (!s.empty())
      std::memmove(p_, s.data(), s.size()); // s may be part of this path
    return;
  }
  // Copied before the old block goes: s may point into it.
  char *p = s.empty() ? nullptr : new char[s.size()];
  if (!s.empty())
    std::memcpy(p, s.data(), s.size());
  delete[] p_;
  p_ = p;
  len_ = static_cast<uint32_t>(s.size());
}

uint32_t PathStr::hash_of(std::string_view s) {
  const uint64_t h = std::hash<std::string_view>{}(s);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

} // namespace shmbpf
