#include "model/failure_log.hpp"

#include <utility>

namespace shmbpf {

void FailureLog::record_nospace(uint32_t dev, std::string mountpoint, uint64_t cgroup_id) {
  ++nospace_by_dev_[dev];
  ++nospace_counts_[{std::move(mountpoint), cgroup_id}];
}

uint64_t FailureLog::nospace_on(uint32_t dev) const {
  auto it = nospace_by_dev_.find(dev);
  return it == nospace_by_dev_.end() ? 0 : it->second;
}

} // namespace shmbpf
