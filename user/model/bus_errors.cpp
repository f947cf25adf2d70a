#include "model/bus_errors.hpp"

namespace shmbpf {

std::string_view to_string(BusCause c) {
  switch (c) {
  case BusCause::beyond_eof:
    return "beyond-eof";
  case BusCause::mount_full:
    return "mount-full";
  case BusCause::no_huge_pages:
    return "no-huge-pages";
  case BusCause::unknown:
    break;
  }
  return "unknown";
}

BusCause bus_cause(const Event &e) {
  if (e.fault != FaultLookup::file)
    return BusCause::unknown;
  if (e.beyond_eof)
    return BusCause::beyond_eof;
  if (e.fs == kFsHugetlbfs)
    return BusCause::no_huge_pages;
  // Inside the file on a tmpfs with a size: the page could not be
  // allocated there. The kernel's usage count is batched per CPU, so it
  // can read a little below the size at the moment it was full.
  if (e.fs == kFsTmpfs && e.mount_size != 0)
    return BusCause::mount_full;
  return BusCause::unknown;
}

void BusErrorLog::record(BusError e) {
  ++total_;
  ++counts_[{e.mountpoint, e.cgroup_id}];
  if (e.fault == FaultLookup::file) {
    BusSummary &d = by_dev_[e.dev];
    ++d.count;
    d.last = e;
  }
  BusSummary &c = by_cgroup_[e.cgroup_id];
  ++c.count;
  c.last = e;
  if (recent_.size() == kRecent)
    recent_.pop_front();
  recent_.push_back(std::move(e));
}

} // namespace shmbpf
