#include "live/new_cgroups.hpp"

#include <utility>

namespace shmbpf {

std::vector<uint64_t> NewCgroups::take() { return std::exchange(new_, {}); }

std::vector<uint64_t> NewCgroups::worth_resolving(const std::vector<uint64_t> &candidates) {
  std::vector<uint64_t> ids;
  for (uint64_t id : candidates)
    if (tries_[id]++ < kTries)
      ids.push_back(id);
  return ids;
}

} // namespace shmbpf
