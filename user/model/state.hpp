// What `serve` keeps across a restart: the creations it observed (creator,
// time, cgroup) of segments that still exist, each with the identity that
// lasts only as long as the segment does, so that a later segment at the
// same inode number or shmid is never given them. Pure: the daemon reads
// and writes the file (daemon/state_file).
#pragma once

#include "facts/result.hpp"
#include "facts/scan.hpp"
#include "model/engine.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// Version 2 added "file-handle" records, version 3 "mount-peak" ones;
// files of earlier versions read as well.
inline constexpr int kStateVersion = 3;
// At most this many segments are saved (the most recent creations first);
// a file is read only up to the size they take.
inline constexpr size_t kStateMaxSegments = 200'000;
inline constexpr size_t kStateMaxBytes = 64u << 20;
// At most this many mounts' peaks are saved.
inline constexpr size_t kStateMaxMounts = 20'000;

struct SavedSegment {
  SegmentKey key;        // kind tmpfs for files (memfds are not saved), sysv
  Engine::Birth birth;   // a file's btime or handle, a SysV segment's ctime
  uint32_t sysv_key = 0; // SysV only, checked as well
  Engine::Creation creation;
};

// The most a mount held, with what tells it is the same filesystem: its
// id, device, fsid (never 0) and mountpoint.
struct SavedMountPeak {
  MountState mount; // mnt_id, dev, fsid and mountpoint only
  uint64_t peak = 0;
};

struct SavedState {
  std::string boot_id; // a state from another boot names other segments
  std::vector<SavedSegment> segments;
  std::vector<SavedMountPeak> mount_peaks;
};

// What tells a scanned file from a later one at its inode number: its
// btime, or where the kernel gives none (tmpfs before 5.18) its handle;
// neither (value 0) on a filesystem without handles (hugetlbfs), whose
// files are then never saved nor restored.
Engine::Birth file_birth(const TmpfsFile &f);

// Every segment with an observed creation and a known birth, files and
// SysV segments; memfds die with their holders and are left out. The
// newest kStateMaxSegments creations when there are more. And the peak of
// every mount whose fsid is known.
SavedState collect_state(const Engine &engine, std::string boot_id);

// Text, one record a line: a header "shmbpf-state <version> <boot id>",
// then "file DEV INO BTIME ...", "file-handle DEV INO HANDLE ...",
// "sysv IPCNS SHMID KEY CTIME ..." and "mount-peak MNTID DEV FSID PEAK
// MOUNTPOINT" lines; comm, cgroup path and mountpoint percent-encoded.
std::string format_state(const SavedState &state);
// Fails (a reason) on another version, a missing header or a malformed
// line; the caller logs it and starts without.
Result<SavedState> parse_state(std::string_view text);

struct RestoreStats {
  size_t applied = 0;
  size_t unmatched = 0;   // gone, reused (another birth), or seen created by this run
  size_t mount_peaks = 0; // mounts that keep the peak an earlier run measured
};
// Gives each saved creation back to the segment of the scan that is still
// the same one: same key and same birth of the same kind (a file's btime
// or handle, a SysV segment's key and ctime); and each saved peak to the
// mount that is still the same filesystem (MountTable::restore_peak).
// A state of another boot is ignored whole (returns all unmatched).
RestoreStats restore_state(Engine &engine, const SystemScan &scan, const SavedState &state,
                           std::string_view boot_id);

} // namespace shmbpf
