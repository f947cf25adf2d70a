// The kernel side, from userspace: checks what the machine offers, opens,
// loads and attaches the BPF skeleton, and polls its ring buffer.
#pragma once

#include "facts/names.hpp"
#include "facts/program_stats.hpp"
#include "probe/program_choice.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct shmbpf_bpf; // the generated skeleton
struct shmbpf_name_bucket;

namespace shmbpf {

class RingReader;
class Tracefs;

// --ring-buffer-size: the BPF ring buffer the kernel hands records through.
// Its default, help and validation, for every command that loads BPF.
struct RingBufferSetting {
  static constexpr size_t kDefault = size_t{8} << 20;
  static constexpr size_t kMax = size_t{1} << 30;
  static constexpr const char *kFlag = "--ring-buffer-size";
  static constexpr const char *kHelp =
      "BPF ring buffer size in bytes: a power of two from the page size (4096) to 1 GiB";
  // Why the kernel would refuse bytes as the ring's size; "" when it would not.
  static std::string problem(size_t bytes);
};

// --hooks: which hook set a command loads. "auto" is full for the commands
// a person runs for a while (trace, top) and light for the daemon.
struct HookSetting {
  static constexpr const char *kFlag = "--hooks";
  static constexpr const char *kHelp =
      "hooks to load: full (every syscall's result; costs every syscall a little), light (no "
      "syscall hook; opens of existing files, System V and errors from rescans) or auto";
  // Sets opts' hook set from the flag's value (full, light, auto); auto is
  // auto_set, and light by auto falls back to full.
  static void apply(struct ProbeOptions &opts, std::string_view value, HookSet auto_set);
};

struct ProbeOptions {
  // The subcommand that loads the probe, named in what a failed check
  // tells the user to run ("sudo shmbpf <command>").
  std::string command = "trace";
  size_t ring_buffer_bytes = RingBufferSetting::kDefault;
  // Names the kernel's leaf-name table (unlink/rename/link matching) holds: a
  // power of two, at least SHMBPF_NAME_WAYS (rounded up); 0: the least
  // name_map_capacity gives. The live session sizes it from the files on
  // tmpfs (name_map_capacity of tmpfs_files_in_use()).
  size_t name_capacity = 0;
  bool verbose = false; // forward libbpf's messages to stderr
  // The hook set to load. With light_or_full, the full set where this
  // kernel has nothing the light one needs (what --hooks auto means for
  // the daemon); without, that is an error.
  HookSet hooks = HookSet::full;
  bool light_or_full = false;
  // Have the kernel count each program's runs and run time from load on
  // (BPF_ENABLE_STATS, for as long as the probe lives; it adds two clock
  // reads to every run). program_stats() reads them.
  bool run_stats = false;
  // For benchmarks only (bench.py, section "paired"): the light hooks on a
  // file's changes look at this process alone and return at once for any
  // other; 0, every process. Exits, execs, frees and SIGBUS, and the full
  // set, are not filtered.
  uint32_t only_tgid = 0;
  // Called by Session after the kernel maps were seeded and before the
  // programs are attached (tests change files in that window).
  std::function<void()> before_attach;
};

// The name table's size for a machine with this many files on tmpfs: four
// times as many, as a power of two, at least 65,536 and at most 2^20 (20
// bytes each). A quarter full, about one name in 3 million finds its
// bucket full (bpf/shmbpf_names.h); names that do not fit are still
// reported when created, but their unlinks are found only by
// reconciliation, and Probe::track_full() counts them.
size_t name_map_capacity(uint64_t tmpfs_files);

// What this process may do, from its effective capabilities.
struct Privileges {
  bool root = false; // effective uid 0
  bool sys_admin = false;
  bool bpf = false;             // CAP_BPF (v5.8)
  bool perfmon = false;         // CAP_PERFMON (v5.8)
  bool sys_ptrace = false;      // other users' fds and maps under /proc
  bool dac_read_search = false; // other users' files and directories
  bool sys_resource = false;    // raising the open-files limit
  // Tracing programs load with CAP_SYS_ADMIN, or CAP_BPF and CAP_PERFMON.
  bool can_load_bpf() const { return sys_admin || (bpf && perfmon); }
};
// Throws FatalError (exit status 2) when capget(2) fails.
Privileges read_privileges();

// Throws FatalError (exit status 2) unless the process may load tracing BPF.
void require_bpf_privileges(const std::string &command);

// Raises the soft limit of open files towards what loading needs (the hard
// limit permitting); throws FatalError (exit status 2) when it stays too low.
void ensure_fd_room();

class Probe {
public:
  using RecordFn = std::function<void(const void *data, size_t len)>;

  // Checks privileges, BTF and tracefs, then loads everything and, with
  // attach_now, attaches it. Where the machine has no tracefs mounted, it
  // uses one of its own that no other process sees (Tracefs), until the
  // programs are attached.
  explicit Probe(const ProbeOptions &opts, bool attach_now = true);
  ~Probe();
  Probe(const Probe &) = delete;
  Probe &operator=(const Probe &) = delete;

  // Delivers records to fn; returns the number consumed (-errno on error,
  // -EINTR when interrupted by a signal).
  int poll(int timeout_ms, const RecordFn &fn);
  // Waits up to timeout_ms for records without reading them: > 0 when some
  // are ready, 0 on timeout, -errno on error (-EINTR on a signal). A caller
  // that must not hold a lock while it waits calls this, then poll(0, ...).
  int wait(int timeout_ms);
  // Emits per-CPU free aggregates that no later event would push out.
  void flush_frees();
  // Records the kernel could not deliver (ring buffer full).
  uint64_t lost() const;
  // Names that did not fit in the tracked-name table (bucket full), in the
  // kernel and while seeding (or the table could not be mapped to seed them).
  uint64_t track_full() const;
  // Attaches the programs (once): from here on the kernel fills its maps.
  void attach();
  bool attached() const { return attached_; }
  // The calls below read or write the kernel's name table in place, through
  // a mapping made for the call and gone when it returns: the whole table
  // for many names, only the pages of one bucket otherwise. The kernel holds
  // the table either way; mapped, its pages would count in this process's
  // RSS for the process's life (docs/BENCHMARKS.md, finding 28).
  //
  // Follow unlinks, renames and links of files that existed before start: their
  // leaf names go into the kernel's name table. A name already known is
  // kept (the first file wins). Written straight into the table, without a
  // syscall per name, before attach() or after.
  void seed(const std::vector<SeedKey> &files);
  // After attach(): gives the name that seed() gave to `stale` (a file gone
  // before attach()) to `file` instead, unless the kernel changed it since.
  void reseed_name(const SeedKey &stale, const SeedKey &file);
  // Names in the kernel's name table (walks it: for stats and tests).
  size_t name_count() const;
  // Whether a leaf name is in the kernel's name table (for tests).
  bool tracks_name(std::string_view leaf) const;
  // What the name table can hold.
  size_t name_capacity() const { return name_capacity_; }
  // The bytes a mapping of the whole table takes (whole pages).
  size_t name_table_bytes() const { return name_table_bytes_; }
  // How many times the table, or pages of it, was mapped so far (for tests).
  uint64_t name_table_maps() const { return name_table_maps_.load(std::memory_order_relaxed); }
  // Gives a tracked file its leaf name back after the kernel dropped it for
  // an unlink/rename that turned out not to be on tmpfs. Never overwrites.
  void restore_name(std::string_view leaf, uint32_t dev, uint64_t ino);
  // Hooks that are off on this kernel, each "name: reason (what is lost)".
  const std::vector<std::string> &missing_hooks() const { return chosen_.missing; }
  // Every hook: the program (and build) loaded for it, or why it is off.
  const std::vector<HookStatus> &hooks() const { return chosen_.hooks; }
  // What the kernel was found to offer before load.
  const KernelFeatures &features() const { return features_; }
  // The kernel features the loaded programs do without, and how.
  const std::vector<Fallback> &fallbacks() const { return chosen_.fallbacks; }
  // The hook set loaded, and why it is not the one asked for ("" when it is).
  HookSet hook_set() const { return chosen_.set; }
  const std::string &hook_set_note() const { return chosen_.set_note; }
  // Why the light set cannot load on this kernel; "" when it can.
  const std::string &light_missing() const { return chosen_.light_missing; }
  // Programs on functions (fentry, fexit) are loaded: they claim their
  // CPU's buffers while they build a record (bpf/shmbpf.bpf.h).
  bool on_functions() const { return chosen_.on_functions; }
  // Runs and run time of every attached program so far, by hook. Zeros
  // unless statistics are on (ProbeOptions::run_stats, or the sysctl
  // kernel.bpf_stats_enabled).
  std::vector<ProgramStats> program_stats() const;

private:
  uint64_t counter(uint32_t which) const;
  // The constructor's steps: the skeleton opened and sized (returns the
  // name table's buckets), a program chosen per hook, the programs loaded.
  size_t open_skeleton(const ProbeOptions &opts);
  void choose_hooks(const ProbeOptions &opts, const std::string &tracefs);
  void load();
  class NameWindow;
  // Pages of the table holding buckets [first, first + count), mapped for as
  // long as the window lives.
  NameWindow map_names(size_t first, size_t count) const;
  NameWindow map_bucket_of(uint64_t key) const;

  struct SkelDeleter {
    void operator()(struct ::shmbpf_bpf *s) const;
  };
  std::unique_ptr<struct ::shmbpf_bpf, SkelDeleter> skel_;
  std::unique_ptr<RingReader> ring_;
  // The kernel's tracked_names array: mask + 1 buckets.
  int names_fd_ = -1;
  uint32_t name_mask_ = 0;
  size_t name_table_bytes_ = 0;
  mutable std::atomic<uint64_t> name_table_maps_{0};
  uint64_t seed_full_ = 0;
  // Which program serves each hook, as the constructor chose them.
  struct Chosen {
    HookSet set = HookSet::full;
    std::vector<HookStatus> hooks;
    std::vector<Fallback> fallbacks;
    std::vector<std::string> missing; // each hook that is off, and why
    std::string set_note;             // why the set asked for is not the one loaded
    std::string light_missing;        // what the light set lacks here
    bool on_functions = false;        // a program on a kernel function is loaded
  };
  Chosen chosen_;
  KernelFeatures features_;
  int ncpus_ = 0;
  int stats_fd_ = -1; // BPF_ENABLE_STATS: statistics are on while it is open
  size_t name_capacity_ = 0;
  std::unique_ptr<Tracefs> tracefs_; // until attached
  bool attached_ = false;

  // Tells the kernel CLOCK_REALTIME minus CLOCK_BOOTTIME as it is now: the
  // light hooks' records are timed by a file's ctime, a realtime stamp,
  // less this (realtime_minus_boot_ns, bpf/shmbpf.bpf.h). Done before
  // attach and at every poll or wait, so that an NTP adjustment or a step
  // of the clock is followed within one poll.
  void sync_clocks();
};

} // namespace shmbpf
