#include "live/known_namespaces.hpp"

namespace shmbpf {

bool KnownNamespaces::walk_due(Clock::time_point now) const {
  return walk_ || list_.empty() || now - last_walk_ >= kWalkEvery;
}

void KnownNamespaces::replace(std::vector<MountNamespace> list, bool walked,
                              Clock::time_point when) {
  if (walked) {
    walk_ = false;
    last_walk_ = when;
  }
  list_ = std::move(list);
  known_.clear();
  for (const MountNamespace &m : list_)
    known_.insert(m.mntns);
  last_ = 0;
}

} // namespace shmbpf
