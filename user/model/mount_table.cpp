#include "model/mount_table.hpp"

#include <algorithm>
#include <unordered_set>

namespace shmbpf {

uint64_t MountTable::tracked_bytes(uint32_t dev) const {
  auto it = devs_.find(dev);
  return it == devs_.end() ? 0 : it->second.bytes;
}

uint64_t MountTable::segments(uint32_t dev) const {
  auto it = devs_.find(dev);
  return it == devs_.end() ? 0 : it->second.segments;
}

std::vector<uint32_t> MountTable::file_devs() const {
  std::vector<uint32_t> out;
  for (const auto &[dev, d] : devs_)
    if (d.segments > 0)
      out.push_back(dev);
  std::sort(out.begin(), out.end());
  return out;
}

void MountTable::name(uint32_t mnt_id_or_0, uint32_t dev, std::string mountpoint) {
  if (mountpoint.empty())
    return;
  if (mnt_id_or_0)
    mnt_names_.try_emplace(mnt_id_or_0, mountpoint);
  dev_names_.try_emplace(dev, std::move(mountpoint));
}

std::string_view MountTable::mountpoint(uint32_t mnt_id, uint32_t dev) const {
  if (mnt_id)
    if (auto it = mnt_names_.find(mnt_id); it != mnt_names_.end())
      return it->second;
  if (auto it = dev_names_.find(dev); it != dev_names_.end())
    return it->second;
  return {};
}

void MountTable::set(MountState m) {
  mnt_names_[m.mnt_id] = m.mountpoint;
  dev_names_.try_emplace(m.dev, m.mountpoint);
  if (is_shared_memory_mountpoint(m.mountpoint))
    shm_devs_.insert(m.dev);
  if (m.fsid != 0)
    dev_fsid_.try_emplace(m.dev, m.fsid); // changed_filesystem tells a change
  auto it = mounts_.find(m.mnt_id);
  if (!m.used_known) {
    if (it != mounts_.end()) {
      m.used_bytes = it->second.state.used_bytes;
      m.used_known = true;
      it->second.state = std::move(m);
    }
    return;
  }
  Entry &entry = mounts_[m.mnt_id];
  if (entry.state.dev != m.dev) {
    // A reused mount id, of another filesystem: nothing of the old one's.
    entry.peak = 0;
    entry.samples.clear();
  }
  entry.baseline = static_cast<int64_t>(tracked_bytes(m.dev));
  entry.peak = std::max(entry.peak, m.used_bytes);
  entry.state = std::move(m);
}

bool MountTable::restore_peak(const MountState &same, uint64_t peak) {
  auto it = mounts_.find(same.mnt_id);
  if (same.fsid == 0 || it == mounts_.end())
    return false;
  const MountState &now = it->second.state;
  if (now.dev != same.dev || now.fsid != same.fsid || now.mountpoint != same.mountpoint)
    return false;
  it->second.peak = std::max(it->second.peak, peak);
  return true;
}

void MountTable::keep_only(const std::vector<MountState> &present) {
  std::unordered_set<uint32_t> ids;
  for (const MountState &m : present)
    ids.insert(m.mnt_id);
  for (auto it = mounts_.begin(); it != mounts_.end();) {
    if (ids.count(it->first)) {
      ++it;
      continue;
    }
    mnt_names_.erase(it->first);
    it = mounts_.erase(it);
  }
}

const MountState *MountTable::mount(uint32_t mnt_id) const {
  auto it = mounts_.find(mnt_id);
  return it == mounts_.end() ? nullptr : &it->second.state;
}

bool MountTable::changed_filesystem(const MountState &m) {
  if (m.fsid == 0)
    return false;
  auto [it, fresh] = dev_fsid_.try_emplace(m.dev, m.fsid);
  if (fresh || it->second == m.fsid)
    return false;
  dev_names_.erase(m.dev);
  shm_devs_.erase(m.dev);
  return true;
}

void MountTable::forget_if_empty(uint32_t dev) {
  if (auto d = devs_.find(dev); d != devs_.end() && d->second.segments == 0) {
    dev_names_.erase(dev);
    dev_fsid_.erase(dev);
    shm_devs_.erase(dev);
  }
}

uint64_t MountTable::used_now(const Entry &m) const {
  const int64_t tracked = static_cast<int64_t>(tracked_bytes(m.state.dev));
  const int64_t used = static_cast<int64_t>(m.state.used_bytes) + (tracked - m.baseline);
  return used > 0 ? static_cast<uint64_t>(used) : 0;
}

void MountTable::sample(uint64_t now_ns) {
  for (auto &[id, m] : mounts_) {
    m.samples.emplace_back(now_ns, used_now(m));
    m.peak = std::max(m.peak, m.samples.back().second);
    while (m.samples.size() > std::max<size_t>(max_samples_, 2) ||
           (m.samples.size() > 1 && sat_sub(now_ns, m.samples.front().first) > growth_window_ns_))
      m.samples.pop_front();
  }
}

// Least-squares slope in bytes per second, times relative to the first
// sample; 0 with fewer than two.
double MountTable::growth(const std::deque<std::pair<uint64_t, uint64_t>> &samples) {
  if (samples.size() < 2)
    return 0;
  double n = 0, st = 0, sy = 0, stt = 0, sty = 0;
  const auto [t0, y0] = samples.front();
  for (const auto &[t, y] : samples) {
    const double x = static_cast<double>(t - t0) / 1e9;
    const double v = static_cast<double>(y) - static_cast<double>(y0);
    n += 1;
    st += x;
    sy += v;
    stt += x * x;
    sty += x * v;
  }
  const double denom = n * stt - st * st;
  return denom > 0 ? (n * sty - st * sy) / denom : 0;
}

std::vector<MountUsage> MountTable::usage() const {
  std::vector<MountUsage> out;
  out.reserve(mounts_.size());
  for (const auto &[id, m] : mounts_) {
    MountUsage u;
    u.mount = m.state;
    u.mount.used_bytes = used_now(m);
    if (auto d = devs_.find(m.state.dev); d != devs_.end()) {
      u.tracked_bytes = d->second.bytes;
      u.segments = d->second.segments;
    }
    const double limit = static_cast<double>(m.state.size_limit);
    const double used = static_cast<double>(u.mount.used_bytes);
    if (m.state.size_limit)
      u.percent = 100.0 * used / limit;
    u.growth_bytes_per_s = growth(m.samples);
    u.peak_used_bytes = std::max(m.peak, u.mount.used_bytes);
    if (m.state.size_limit && u.growth_bytes_per_s > 0)
      u.seconds_to_full = std::max(0.0, limit - used) / u.growth_bytes_per_s;
    out.push_back(std::move(u));
  }
  return out;
}

} // namespace shmbpf
