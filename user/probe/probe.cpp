#include "probe/probe.hpp"

#include "facts/result.hpp"
#include "probe/kernel_features.hpp"
#include "probe/load_log.hpp"
#include "probe/ring_reader.hpp"
#include "probe/trace_lists.hpp"
#include "probe/tracefs.hpp"
#include "sources/clock.hpp"

#include <linux/types.h>

#include "shmbpf_events.h"
#include "shmbpf_names.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "shmbpf_bpf.skel.h"

#include <linux/capability.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>

namespace shmbpf {

namespace {

// libbpf talks through a global callback: keep the last lines for error
// messages and each program's load log (LoadLog), and forward everything
// with -v.
std::mutex g_log_mu;
std::deque<std::string> g_log;
LoadLog g_load_log;
bool g_verbose = false;

int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap) {
  if (level == LIBBPF_DEBUG && !g_verbose)
    return 0;
  // Whole: a verifier log is one message of many lines.
  va_list copy;
  va_copy(copy, ap);
  const int n = vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string msg(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0)
    vsnprintf(msg.data(), msg.size() + 1, fmt, ap);
  if (g_verbose)
    std::fputs(msg.c_str(), stderr);
  std::lock_guard lk(g_log_mu);
  g_load_log.add(msg);
  if (msg.size() > 1024)
    msg.resize(1024);
  g_log.push_back(std::move(msg));
  while (g_log.size() > 8)
    g_log.pop_front();
  return 0;
}

std::string last_libbpf_line() {
  std::lock_guard lk(g_log_mu);
  for (auto it = g_log.rbegin(); it != g_log.rend(); ++it) {
    std::string s = *it;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
      s.pop_back();
    if (!s.empty())
      return s;
  }
  return {};
}

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

bool exists(const std::string &p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

bool has_cap(const __user_cap_data_struct data[2], int cap) {
  return data[cap / 32].effective & (1u << (cap % 32));
}

} // namespace

Privileges read_privileges() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0)
    throw FatalError("capabilities", errno_text(errno), Exit::refused);
  Privileges p;
  p.root = geteuid() == 0;
  p.sys_admin = has_cap(data, CAP_SYS_ADMIN);
  p.bpf = has_cap(data, CAP_BPF);
  p.perfmon = has_cap(data, CAP_PERFMON);
  p.sys_ptrace = has_cap(data, CAP_SYS_PTRACE);
  p.dac_read_search = has_cap(data, CAP_DAC_READ_SEARCH);
  p.sys_resource = has_cap(data, CAP_SYS_RESOURCE);
  return p;
}

void require_bpf_privileges(const std::string &command) {
  if (!read_privileges().can_load_bpf())
    throw FatalError("permission denied",
                     "loading BPF programs needs root (or CAP_BPF and CAP_PERFMON); run: sudo "
                     "shmbpf " +
                         command,
                     Exit::refused);
}

void ensure_fd_room() {
  // A program, its link and a map each hold a descriptor, libbpf opens more
  // while loading, and a scan opens directories: with too few, a map is not
  // created and the load fails later as if the programs were invalid.
  constexpr rlim_t kNeeded = 256;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= 4 * kNeeded)
    return;
  const rlim_t want =
      lim.rlim_max == RLIM_INFINITY ? 4 * kNeeded : std::min(lim.rlim_max, 4 * kNeeded);
  if (want > lim.rlim_cur) {
    lim.rlim_cur = want;
    setrlimit(RLIMIT_NOFILE, &lim);
    getrlimit(RLIMIT_NOFILE, &lim);
  }
  if (lim.rlim_cur < kNeeded)
    throw FatalError("too few file descriptors",
                     "the limit is " + std::to_string(lim.rlim_cur) +
                         " (ulimit -n) and shmbpf needs " + std::to_string(kNeeded) +
                         "; raise it, e.g. ulimit -n 1024",
                     Exit::refused);
}

std::string RingBufferSetting::problem(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes < page || (bytes & (bytes - 1)) != 0 || bytes > kMax)
    return std::to_string(bytes) + " is not a power of two between " + std::to_string(page) +
           " and " + std::to_string(kMax) + " bytes";
  return {};
}

size_t name_map_capacity(uint64_t tmpfs_files) {
  constexpr uint64_t kMin = 1u << 16, kMax = 1u << 20;
  uint64_t want = tmpfs_files > kMax ? kMax : 4 * tmpfs_files;
  return static_cast<size_t>(std::clamp(std::bit_ceil(want), kMin, kMax));
}

void Probe::SkelDeleter::operator()(struct ::shmbpf_bpf *s) const {
  // Detaching a syscall tracepoint waits for RCU grace periods (30-40 ms
  // each in the guest measured): one link after the other, an exit took
  // half a second. Detached on several threads at once they share grace
  // periods. Each thread owns distinct links; the rest of the skeleton is
  // freed after they are done.
  if (s && s->skeleton) {
    std::vector<bpf_link **> links;
    for (int i = 0; i < s->skeleton->prog_cnt; ++i)
      if (bpf_link **l = s->skeleton->progs[i].link; l && *l)
        links.push_back(l);
    std::vector<std::thread> threads;
    constexpr size_t kThreads = 8;
    for (size_t t = 0; t < kThreads && t < links.size(); ++t)
      threads.emplace_back([&links, t] {
        for (size_t i = t; i < links.size(); i += kThreads) {
          bpf_link__destroy(*links[i]);
          *links[i] = nullptr;
        }
      });
    for (std::thread &t : threads)
      t.join();
  }
  shmbpf_bpf__destroy(s);
}

// A BPF array maps its values from offset 0; a window of whole pages starts
// at the page that holds its first bucket.
class Probe::NameWindow {
public:
  NameWindow(int fd, size_t first, size_t count) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t begin = first * sizeof(shmbpf_name_bucket);
    const size_t end = (first + count) * sizeof(shmbpf_name_bucket);
    offset_ = begin / page * page;
    bytes_ = (end + page - 1) / page * page - offset_;
    void *p =
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset_));
    base_ = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
  }
  ~NameWindow() {
    if (base_)
      munmap(base_, bytes_);
  }
  NameWindow(const NameWindow &) = delete;
  NameWindow &operator=(const NameWindow &) = delete;
  explicit operator bool() const { return base_ != nullptr; }
  // A bucket inside the window, by its index in the whole table.
  shmbpf_name_bucket *bucket(size_t i) const {
    return reinterpret_cast<shmbpf_name_bucket *>(base_ + i * sizeof(shmbpf_name_bucket) - offset_);
  }

private:
  char *base_ = nullptr;
  size_t offset_ = 0;
  size_t bytes_ = 0;
};

void HookSetting::apply(ProbeOptions &opts, std::string_view value, HookSet auto_set) {
  const std::optional<HookSet> named = hook_set_named(value);
  opts.hooks = named.value_or(auto_set);
  opts.light_or_full = !named && auto_set == HookSet::light;
}

size_t Probe::open_skeleton(const ProbeOptions &opts) {
  skel_.reset(shmbpf_bpf__open());
  if (!skel_)
    throw FatalError("opening BPF object", errno_text(errno));
  skel_->rodata->page_size = static_cast<__u32>(sysconf(_SC_PAGESIZE));
  // Records are submitted without waking us unless 10 ms have passed or a
  // quarter of the ring is waiting (submit() in bpf/shmbpf.bpf.h); poll()
  // collects the rest when its timeout expires.
  skel_->rodata->wakeup_bytes = opts.ring_buffer_bytes / 4;
  if (int err =
          bpf_map__set_max_entries(skel_->maps.events, static_cast<__u32>(opts.ring_buffer_bytes)))
    throw FatalError("ring buffer size", errno_text(err));
  name_capacity_ = opts.name_capacity
                       ? std::bit_ceil(std::max<size_t>(opts.name_capacity, SHMBPF_NAME_WAYS))
                       : name_map_capacity(0);
  const size_t buckets = name_capacity_ / SHMBPF_NAME_WAYS;
  name_mask_ = static_cast<uint32_t>(buckets - 1);
  skel_->rodata->name_bucket_mask = name_mask_;
  if (int err = bpf_map__set_max_entries(skel_->maps.tracked_names, static_cast<__u32>(buckets)))
    throw FatalError("name table size", errno_text(err));
  return buckets;
}

void Probe::choose_hooks(const ProbeOptions &opts, const std::string &tracefs) {
  // One program per hook, from the build that suits this kernel, and none
  // for a hook it lacks: a missing tracepoint or feature turns off what
  // needs it and is reported, instead of failing the whole load.
  features_ = probe_kernel_features();
  if (const char *b = std::getenv("SHMBPF_BUILD"); b && *b) {
    if (!lower_features(features_, b))
      throw FatalError("SHMBPF_BUILD",
                       std::string(b) + " is not a build (fast, compat or compat_noatomic)",
                       Exit::refused);
    // What is told about this kernel then says why it lacks so much.
    features_.release += std::string(" as SHMBPF_BUILD=") + b;
  }
  skel_->rodata->have_task_pt_regs = features_.task_pt_regs ? 1 : 0;
  skel_->rodata->have_find_vma = features_.find_vma ? 1 : 0;
  skel_->rodata->only_tgid = opts.only_tgid;
  TracepointList tracepoints(tracefs);
  FunctionList functions(tracefs);
  std::optional<std::string> function_attach; // asked once, when first needed
  auto missing = [&](const std::string &sec) -> std::string {
    const SectionTarget t = target_of(sec);
    switch (t.kind) {
    case SectionTarget::Kind::tracepoint:
      return exists(tracefs + "/events/" + std::string(t.name)) ? "" : "no such tracepoint";
    case SectionTarget::Kind::tp_btf:
      // A tracepoint's BTF type (btf_trace_<name>) comes with it; tracefs
      // settles it without parsing the kernel's BTF once more.
      return tracepoints.has(t.name) ? "" : "no such tracepoint";
    case SectionTarget::Kind::function:
      if (std::string why = functions.missing(t.name); !why.empty())
        return why;
      if (!function_attach)
        function_attach = function_attach_missing(features_);
      return *function_attach;
    case SectionTarget::Kind::none:
      break;
    }
    return "";
  };
  std::vector<ProgramRef> programs;
  bpf_program *prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    programs.push_back({bpf_program__name(prog), bpf_program__section_name(prog)});
  }
  chosen_.set = opts.hooks;
  bool light_or_full = opts.light_or_full;
  // SHMBPF_HOOKS: the set every command loads, whatever it asked for (the
  // tests of the model run in both sets with it).
  if (const char *h = std::getenv("SHMBPF_HOOKS"); h && *h) {
    const std::optional<HookSet> set = hook_set_named(h);
    if (!set)
      throw FatalError("SHMBPF_HOOKS", std::string(h) + " is not a hook set (full or light)",
                       Exit::refused);
    chosen_.set = *set;
    light_or_full = false;
  }
  // The light set's choice says what it lacks; it is also the one to load
  // when light it stays.
  ProgramChoice choice = choose_programs(programs, features_, missing, HookSet::light);
  chosen_.light_missing = choice.light_missing;
  if (chosen_.set == HookSet::light && !chosen_.light_missing.empty()) {
    if (!light_or_full)
      throw FatalError(std::string(HookSetting::kFlag) + " light",
                       chosen_.light_missing + "; use --hooks full", Exit::refused);
    chosen_.set_note =
        "light hooks cannot load (" + chosen_.light_missing + "): the full set instead";
    chosen_.set = HookSet::full;
  }
  if (chosen_.set != HookSet::light)
    choice = choose_programs(programs, features_, missing, chosen_.set);
  bpf_object__for_each_program(prog, skel_->obj) {
    const std::string_view name = bpf_program__name(prog);
    bpf_program__set_autoload(prog, std::find(choice.load.begin(), choice.load.end(), name) !=
                                        choice.load.end());
  }
  chosen_.hooks = std::move(choice.hooks);
  chosen_.fallbacks = std::move(choice.fallbacks);
  // Programs on functions can be preempted where the kernel allows it:
  // they then claim their CPU's buffers (cpu_claimed, bpf/shmbpf.bpf.h).
  chosen_.on_functions =
      std::any_of(chosen_.hooks.begin(), chosen_.hooks.end(), [](const HookStatus &h) {
        return !h.program.empty() && target_of(h.hook).kind == SectionTarget::Kind::function;
      });
  skel_->rodata->function_hooks = chosen_.on_functions;
  for (const HookStatus &h : chosen_.hooks)
    if (!h.off.empty())
      chosen_.missing.push_back(off_text(h));
  bpf_program__set_autoattach(skel_->progs.flush_free, false);
  // Nothing to watch with: a tracer that attaches no hook would run, see
  // nothing and exit as if all were well.
  if (std::none_of(chosen_.hooks.begin(), chosen_.hooks.end(),
                   [](const HookStatus &h) { return !h.program.empty(); }))
    throw FatalError("no hook of shmbpf's exists on this kernel",
                     chosen_.missing.empty() ? std::string("none to load")
                                             : chosen_.missing.front() + ", ...",
                     Exit::refused);
}

void Probe::load() {
  if (int err = shmbpf_bpf__load(skel_.get())) {
    // The program that failed and the verifier's reason, when libbpf named
    // one; its last line otherwise.
    std::string why;
    {
      std::lock_guard lk(g_log_mu);
      why = g_load_log.failure();
    }
    if (why.empty()) {
      std::string detail = last_libbpf_line();
      why = errno_text(err) + (detail.empty() ? "" : " (" + detail + ")");
    }
    throw FatalError("loading BPF programs", why + "; run with -v for libbpf's detail");
  }
}

Probe::Probe(const ProbeOptions &opts, bool attach_now) {
  g_verbose = opts.verbose;
  {
    std::lock_guard lk(g_log_mu);
    g_load_log = LoadLog{};
  }
  libbpf_set_print(libbpf_log);
  require_bpf_privileges(opts.command);
  ensure_fd_room();
  if (auto why = RingBufferSetting::problem(opts.ring_buffer_bytes); !why.empty())
    throw FatalError(RingBufferSetting::kFlag, why, Exit::refused);
  if (!exists("/sys/kernel/btf/vmlinux"))
    throw FatalError("kernel BTF",
                     "/sys/kernel/btf/vmlinux is missing; shmbpf needs a kernel built with "
                     "CONFIG_DEBUG_INFO_BTF=y",
                     Exit::refused);
  tracefs_ = std::make_unique<Tracefs>();
  const std::string &tracefs = tracefs_->dir();
  ncpus_ = libbpf_num_possible_cpus();

  const size_t buckets = open_skeleton(opts);
  choose_hooks(opts, tracefs);
  if (opts.run_stats) {
    stats_fd_ = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (stats_fd_ < 0)
      throw FatalError("turning on BPF run-time statistics", errno_text(-stats_fd_));
  }
  load();

  // Userspace seeds the name table in place (see bpf/shmbpf_names.h),
  // through mappings made call by call: a kernel that cannot map it is
  // told now, not as names silently left out later.
  names_fd_ = bpf_map__fd(skel_->maps.tracked_names);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  name_table_bytes_ = (buckets * sizeof(shmbpf_name_bucket) + page - 1) / page * page;
  if (!map_names(0, 1))
    throw FatalError("mapping the name table", errno_text(errno));

  ring_ = std::make_unique<RingReader>(bpf_map__fd(skel_->maps.events));
  sync_clocks();
  if (attach_now)
    attach();
}

void Probe::attach() {
  if (attached_)
    return;
  // libbpf reads each tracepoint's id from tracefs at its usual path: on
  // the thread that sees a private mount, when it is one.
  int err = 0;
  tracefs_->run([&] { err = shmbpf_bpf__attach(skel_.get()); });
  if (err) {
    std::string detail = last_libbpf_line();
    throw FatalError("attaching BPF programs", errno_text(err) +
                                                   (detail.empty() ? "" : " (" + detail + ")") +
                                                   "; run with -v for libbpf's detail");
  }
  attached_ = true;
  // Attached tracepoints need no file of it: a private mount goes now.
  tracefs_.reset();
}

Probe::~Probe() {
  if (stats_fd_ >= 0)
    ::close(stats_fd_);
}

std::vector<ProgramStats> Probe::program_stats() const {
  std::vector<ProgramStats> out;
  bpf_program *prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    const int fd = bpf_program__fd(prog);
    if (fd < 0 || !bpf_program__autoattach(prog))
      continue;
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
      continue;
    std::string_view sec = bpf_program__section_name(prog);
    for (std::string_view prefix : {"tracepoint/", "tp_btf/", "raw_tp/"})
      if (sec.starts_with(prefix))
        sec.remove_prefix(prefix.size());
    out.push_back({std::string(sec), info.run_cnt, info.run_time_ns});
  }
  return out;
}

void Probe::sync_clocks() {
  // NTP's slew moves the offset by at most 0.5 ms a second and a step of
  // the clock at once: hence at every poll.
  const int64_t off = boot_to_realtime_ns();
  // The programs read it as they run; 0 (a realtime clock set before the
  // boot) turns the ctime timing off and they read their own clock.
  std::atomic_ref<__u64>(skel_->bss->realtime_minus_boot_ns)
      .store(off > 0 ? static_cast<__u64>(off) : 0, std::memory_order_relaxed);
}

int Probe::poll(int timeout_ms, const RecordFn &fn) {
  sync_clocks();
  return ring_->poll(timeout_ms, fn);
}

int Probe::wait(int timeout_ms) {
  sync_clocks();
  return ring_->wait(timeout_ms);
}

void Probe::flush_frees() {
  int fd = bpf_map__fd(skel_->maps.free_acc);
  __u32 zero = 0;
  std::vector<shmbpf_free_event> acc(static_cast<size_t>(ncpus_));
  if (bpf_map_lookup_elem(fd, &zero, acc.data()) != 0)
    return;
  cpu_set_t saved;
  if (sched_getaffinity(0, sizeof(saved), &saved) != 0)
    return;
  int prog_fd = bpf_program__fd(skel_->progs.flush_free);
  for (int cpu = 0; cpu < ncpus_; cpu++) {
    if (acc[static_cast<size_t>(cpu)].folios == 0 || !CPU_ISSET(cpu, &saved))
      continue;
    // Run on that CPU from process context (not through an IPI), so the
    // flush cannot interleave with a BPF program already using the slot.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0)
      continue;
    LIBBPF_OPTS(bpf_test_run_opts, run);
    bpf_prog_test_run_opts(prog_fd, &run);
  }
  sched_setaffinity(0, sizeof(saved), &saved);
}

uint64_t Probe::counter(uint32_t which) const {
  std::vector<__u64> v(static_cast<size_t>(ncpus_));
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.counters), &which, v.data()) != 0)
    return 0;
  uint64_t sum = 0;
  for (auto x : v)
    sum += x;
  return sum;
}

uint64_t Probe::lost() const { return counter(SHMBPF_CNT_LOST); }

Probe::NameWindow Probe::map_names(size_t first, size_t count) const {
  name_table_maps_.fetch_add(1, std::memory_order_relaxed);
  return NameWindow(names_fd_, first, count);
}

Probe::NameWindow Probe::map_bucket_of(uint64_t key) const {
  return map_names(shmbpf_name_bucket_of(key, name_mask_), 1);
}

uint64_t Probe::track_full() const { return counter(SHMBPF_CNT_TRACK_FULL) + seed_full_; }

void Probe::seed(const std::vector<SeedKey> &files) {
  if (files.empty())
    return;
  auto put = [this](const NameWindow &w, const SeedKey &f) {
    const uint64_t key = shmbpf_name_key(f.hash);
    if (shmbpf_name_put(w.bucket(shmbpf_name_bucket_of(key, name_mask_)), key, f.dev, f.ino,
                        /*replace=*/0) == SHMBPF_NAME_FULL)
      ++seed_full_;
  };
  // Mapping the whole table costs a few microseconds per page of it
  // (docs/BENCHMARKS.md, finding 28), a window of one bucket about as much
  // as eight pages: many names go in through one mapping of everything.
  const size_t pages = name_table_bytes_ / static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (files.size() * 8 >= pages) {
    if (const NameWindow all = map_names(0, size_t{name_mask_} + 1)) {
      for (const SeedKey &f : files)
        put(all, f);
    } else {
      seed_full_ += files.size();
    }
    return;
  }
  for (const SeedKey &f : files) {
    if (const NameWindow w = map_bucket_of(shmbpf_name_key(f.hash)))
      put(w, f);
    else
      ++seed_full_;
  }
}

size_t Probe::name_count() const {
  const NameWindow all = map_names(0, size_t{name_mask_} + 1);
  if (!all)
    return 0;
  size_t n = 0;
  for (size_t b = 0; b <= name_mask_; ++b)
    for (const __u64 &key : all.bucket(b)->key)
      if (__atomic_load_n(&key, __ATOMIC_RELAXED) > SHMBPF_NAME_BUSY)
        ++n;
  return n;
}

bool Probe::tracks_name(std::string_view leaf) const {
  const uint64_t key = shmbpf_name_key(shm_name_hash(leaf));
  const NameWindow w = map_bucket_of(key);
  __u32 dev = 0;
  __u64 ino = 0;
  return w &&
         shmbpf_name_get(w.bucket(shmbpf_name_bucket_of(key, name_mask_)), key, &dev, &ino) != 0;
}

void Probe::reseed_name(const SeedKey &stale, const SeedKey &file) {
  // Both carry the same name (Session::seed_keys_of).
  const uint64_t key = shmbpf_name_key(file.hash);
  if (stale.hash != file.hash)
    return;
  if (const NameWindow w = map_bucket_of(key))
    shmbpf_name_swap(w.bucket(shmbpf_name_bucket_of(key, name_mask_)), key, stale.dev, stale.ino,
                     file.dev, file.ino);
}

void Probe::restore_name(std::string_view leaf, uint32_t dev, uint64_t ino) {
  const uint64_t key = shmbpf_name_key(shm_name_hash(leaf));
  if (const NameWindow w = map_bucket_of(key))
    shmbpf_name_put(w.bucket(shmbpf_name_bucket_of(key, name_mask_)), key, dev, ino,
                    /*replace=*/0);
}

} // namespace shmbpf
