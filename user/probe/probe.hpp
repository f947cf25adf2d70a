// The kernel side, from userspace: checks what the machine offers, opens,
// loads and attaches the BPF skeleton, and polls its ring buffer.
#pragma once

#include "sources/tmpfs_scan.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct shmbpf_bpf; // the generated skeleton
struct ring_buffer;

namespace shmbpf {

struct ProbeOptions {
  size_t ring_buffer_bytes = 8u << 20;
  bool verbose = false; // forward libbpf's messages to stderr
};

// Throws FatalError (exit status 2) unless the process may load tracing BPF.
void require_bpf_privileges(const std::string &command);

// Mounts tracefs at /sys/kernel/tracing when it is not there; returns the
// tracefs directory libbpf will use. Throws FatalError when impossible.
std::string ensure_tracefs();

// Throws FatalError with a clear message for a bad --ring-buffer-size.
void validate_ring_buffer_size(size_t bytes);

class Probe {
public:
  using RecordFn = std::function<void(const void *data, size_t len)>;

  // Checks privileges, BTF and tracefs, then loads and attaches everything.
  explicit Probe(const ProbeOptions &opts);
  ~Probe();
  Probe(const Probe &) = delete;
  Probe &operator=(const Probe &) = delete;

  // Delivers records to fn; returns the number consumed (-errno on error,
  // -EINTR when interrupted by a signal).
  int poll(int timeout_ms, const RecordFn &fn);
  // Emits per-CPU free aggregates that no later event would push out.
  void flush_frees();
  // Records the kernel could not deliver (ring buffer full).
  uint64_t lost() const;
  // Inserts into the tracked maps that failed (maps full).
  uint64_t track_full() const;
  // Follow files that existed before start: opens and unlinks of them.
  void seed(const std::vector<TmpfsFile> &files);
  // Entries in the kernel's tracked-inode map (walks it: for stats and tests).
  size_t tracked_count() const;
  // Stops following a destroyed file: its tracked-inode entry would
  // otherwise stay (a file that never had pages sends no final free).
  void forget(uint32_t dev, uint64_t ino);
  // The same for many files (dev, ino), in as few syscalls as the kernel allows.
  void forget(const std::vector<std::pair<uint32_t, uint64_t>> &inodes);
  // Gives a tracked file its leaf name back after the kernel dropped it for
  // an unlink/rename that turned out not to be on tmpfs. Never overwrites.
  void restore_name(std::string_view leaf, uint32_t dev, uint64_t ino);
  // Hooks this kernel lacks, each "name: reason".
  const std::vector<std::string> &missing_hooks() const { return missing_; }

private:
  uint64_t counter(uint32_t which) const;

  struct SkelDeleter {
    void operator()(struct ::shmbpf_bpf *s) const;
  };
  struct RingDeleter {
    void operator()(ring_buffer *r) const;
  };
  std::unique_ptr<struct ::shmbpf_bpf, SkelDeleter> skel_;
  std::unique_ptr<ring_buffer, RingDeleter> ring_;
  const RecordFn *current_ = nullptr;
  std::vector<std::string> missing_;
  int ncpus_ = 0;
};

} // namespace shmbpf
