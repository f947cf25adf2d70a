#include "model/types.hpp"

#include <cstdio>

namespace shmbpf {
namespace {

std::string_view leaf_of(std::string_view path) { return path.substr(path.rfind('/') + 1); }

} // namespace

std::string sysv_name(uint32_t key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "SYSV%08x", key);
  return buf;
}

std::string_view to_string(SegmentState s) {
  switch (s) {
  case SegmentState::linked:
    return "linked";
  case SegmentState::unlinked:
    return "unlinked";
  case SegmentState::gone:
    return "gone";
  }
  return "?";
}

std::string_view to_string(NamePattern p) {
  switch (p) {
  case NamePattern::none:
    return "";
  case NamePattern::torch:
    return "torch";
  case NamePattern::psm:
    return "psm";
  case NamePattern::sem:
    return "sem";
  }
  return "?";
}

bool is_shared_memory(Kind kind, NamePattern pattern, SegmentState state,
                      std::string_view mountpoint) {
  if (kind != Kind::tmpfs || pattern != NamePattern::none)
    return true;
  if (is_shared_memory_mountpoint(mountpoint))
    return true;
  // Unlinked files without a mount were found through their holders' fds
  // and maps: they are mapped or held memory.
  return mountpoint.empty() && state == SegmentState::unlinked;
}

NameClass classify_shm_name(std::string_view path) {
  std::string_view leaf = leaf_of(path);
  if (leaf.starts_with("torch_")) {
    // torch_<pid>_<random>_<counter>: only the pid part is relied on.
    std::string_view rest = leaf.substr(6);
    uint64_t pid = 0;
    size_t i = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9' && pid <= 0xffffffffu)
      pid = pid * 10 + static_cast<uint64_t>(rest[i++] - '0');
    if (i > 0 && i + 1 < rest.size() && rest[i] == '_' && pid > 0 && pid <= 0xffffffffu)
      return {NamePattern::torch, static_cast<uint32_t>(pid)};
    return {};
  }
  if (leaf.starts_with("psm_") && leaf.size() > 4)
    return {NamePattern::psm, 0};
  if (leaf.starts_with("sem.") && leaf.size() > 4)
    return {NamePattern::sem, 0};
  return {};
}

size_t SegmentKeyHash::operator()(const SegmentKey &k) const noexcept {
  // splitmix64 finaliser over (ino, dev, space): inode numbers are dense.
  uint64_t x = k.ino_or_shmid * 0x9e3779b97f4a7c15ull;
  x ^= (static_cast<uint64_t>(k.dev_or_ipcns) << 1) | (k.is_sysv() ? 1 : 0);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<size_t>(x);
}

} // namespace shmbpf
