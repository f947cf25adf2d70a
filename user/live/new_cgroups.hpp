// The cgroup ids events carry (live/monitor): one no event carried before
// may be a new container's, to be resolved to its path within 100 ms. Pure.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace shmbpf {

class NewCgroups {
public:
  // Each applied event's id (0: none). Most events come from the cgroup of
  // the event before.
  void saw(uint64_t id) {
    if (id == last_ || id == 0)
      return;
    last_ = id;
    if (seen_.insert(id).second)
      new_.push_back(id);
  }
  bool pending() const { return !new_.empty(); }
  // The ids seen for the first time since the last take.
  std::vector<uint64_t> take();
  // Those of candidates worth looking up: each id gets a few tries (a
  // cgroup may be gone before it is found).
  std::vector<uint64_t> worth_resolving(const std::vector<uint64_t> &candidates);

  static constexpr int kTries = 3;

private:
  std::unordered_set<uint64_t> seen_;
  std::vector<uint64_t> new_;
  uint64_t last_ = 0;
  std::unordered_map<uint64_t, int> tries_;
};

} // namespace shmbpf
