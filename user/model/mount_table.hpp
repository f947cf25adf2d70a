// The engine's mounts and filesystems: each tmpfs mount's state and its
// usage over time (how fast it fills), each filesystem's (device's) share of
// the segments shmbpf knows, which filesystem a device number is, and the
// names a mount or device is shown under. Pure: the Engine feeds it from
// scans and from its segments' changes.
#pragma once

#include "facts/mounts.hpp"
#include "facts/scan.hpp"
#include "model/types.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shmbpf {

class MountTable {
public:
  // growth_window_ns and max_samples bound each mount's usage samples.
  MountTable(uint64_t growth_window_ns, size_t max_samples)
      : growth_window_ns_(growth_window_ns), max_samples_(max_samples) {}

  // --- a filesystem's segments (the Engine calls these as they change) ----
  void add_segment(uint32_t dev) { ++devs_[dev].segments; }
  // A segment of dev with bytes resident is gone.
  void remove_segment(uint32_t dev, uint64_t bytes) {
    Device &d = devs_[dev];
    d.bytes = sat_sub(d.bytes, bytes);
    d.segments = sat_sub(d.segments, 1);
  }
  // A segment of dev went from old_bytes to new_bytes resident (inline:
  // every resize, free and write sample comes through here).
  void change_bytes(uint32_t dev, uint64_t old_bytes, uint64_t new_bytes) {
    Device &d = devs_[dev];
    d.bytes = sat_sub(d.bytes, old_bytes) + new_bytes;
  }
  // Resident bytes and segments shmbpf knows on dev.
  uint64_t tracked_bytes(uint32_t dev) const;
  uint64_t segments(uint32_t dev) const;
  // The devices that hold at least one known segment, ascending.
  std::vector<uint32_t> file_devs() const;

  // --- names ----------------------------------------------------------------
  // A mountpoint a scan found files of dev under (mnt_id 0: not known);
  // a name already given stays.
  void name(uint32_t mnt_id_or_0, uint32_t dev, std::string mountpoint);
  // Where a file of dev on mount mnt_id (0: unknown) is shown: its mount's
  // mountpoint, else one of its filesystem's, else "". Valid until the
  // table next changes.
  std::string_view mountpoint(uint32_t mnt_id, uint32_t dev) const;
  // Whether a filesystem has been mounted where shared memory is (a
  // container's /dev/shm) while it lived: a pod's memory-backed emptyDir its
  // containers mount at /dev/shm stays shared memory after they end.
  bool served_shared_memory(uint32_t dev) const { return shm_devs_.contains(dev); }

  // --- mounts -----------------------------------------------------------------
  // A mount that exists, as a scan measured it. Without used_known the last
  // measurement, moved by the segments' changes since, stays the estimate
  // (a mount never measured waits for its first measurement).
  void set(MountState m);
  // Drops the mounts whose ids are not in present (unmounted, a container
  // that stopped).
  void keep_only(const std::vector<MountState> &present);
  const MountState *mount(uint32_t mnt_id) const;
  // Each mount's usage now, in the order of mnt_id: the measurement moved
  // by the segments' changes since, what shmbpf tracks on its filesystem,
  // the slope of the samples (how fast it fills, and when it is full), and
  // the most it held since it was first measured.
  // Container, failure counts and the last SIGBUS are the caller's to fill.
  std::vector<MountUsage> usage() const;
  // Takes a sample of every mount's usage, kept for the growth window.
  void sample(uint64_t now_ns);
  // A peak an earlier run measured, for the mount that is still the same
  // filesystem (same id, device and fsid, which must be known): kept if
  // higher. False when no mount is that one.
  bool restore_peak(const MountState &same, uint64_t peak);

  // --- which filesystem a device is -------------------------------------------
  // True when m's device was known as another filesystem (its fsid changed:
  // the old one ended, a live one keeps its number). The device's name is
  // dropped then, and the caller forgets the old filesystem's files before
  // it calls refile.
  bool changed_filesystem(const MountState &m);
  // The device is filesystem fsid from now on.
  void refile(uint32_t dev, uint64_t fsid) { dev_fsid_[dev] = fsid; }
  // A device with no segment left is forgotten with its name and fsid: a
  // later filesystem given the same number must not inherit them.
  void forget_if_empty(uint32_t dev);

  // --- what the last full scan could not cover (files missing from the tables
  // until a scan reaches them) -------------------------------------------------
  void set_scan_gaps(std::vector<ScanGap> gaps) { scan_gaps_ = std::move(gaps); }
  const std::vector<ScanGap> &scan_gaps() const { return scan_gaps_; }

private:
  struct Device {
    uint64_t bytes = 0;
    uint64_t segments = 0;
  };
  struct Entry {
    MountState state;
    int64_t baseline = 0; // tracked bytes of the dev when used_bytes was measured
    uint64_t peak = 0;    // the most a measurement or sample found used
    std::deque<std::pair<uint64_t, uint64_t>> samples; // (now_ns, used bytes)
  };

  uint64_t used_now(const Entry &m) const;
  static double growth(const std::deque<std::pair<uint64_t, uint64_t>> &samples);

  uint64_t growth_window_ns_;
  size_t max_samples_;
  std::unordered_map<uint32_t, Device> devs_;
  std::unordered_map<uint32_t, uint64_t> dev_fsid_;     // the filesystem a device is, where known
  std::map<uint32_t, Entry> mounts_;                    // by mnt_id
  std::unordered_map<uint32_t, std::string> mnt_names_; // mnt_id -> mountpoint
  std::unordered_map<uint32_t, std::string> dev_names_; // dev -> a mountpoint
  std::unordered_set<uint32_t> shm_devs_;               // served_shared_memory
  std::vector<ScanGap> scan_gaps_;
};

} // namespace shmbpf
