// The floor under any tracer on the shm cycle's hooks (docs/BENCHMARKS.md,
// section "floor"): loads bench/floor/bpf/floor.bpf.c, attaches it and drains
// its ring buffer until SIGINT/SIGTERM.
//
//   floor_host [--duration SECONDS] [--hooks syscalls|ctime] [--pid PID] MODE
//
//   floor_host empty    programs that return at once
//   floor_host count    programs that add one to a per-CPU counter
//   floor_host record   programs that emit one 32-byte timestamped record
//   floor_host record_ctime
//                       the same, timed by the file's new ctime instead of
//                       a clock read (--hooks ctime only)
//
// --hooks picks the programs: on the shm cycle's sys_exit tracepoints
// (syscalls, the default), or on the inode timestamp tracepoints that fire
// when tmpfs changes a file's ctime (ctime; finding 24). With ctime, --pid
// has the programs look at that process alone (bench.py, section "paired").
//
// It runs until SIGINT/SIGTERM, or for SECONDS. On exit it prints "floor: N records, L lost" on
// stderr (N counts the events in mode count).
#include "floor_bpf.skel.h"
#include "probe/tracefs.hpp"
#include "sources/clock.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

int count_record(void *ctx, void *, size_t) {
  ++*static_cast<unsigned long long *>(ctx);
  return 0;
}

// The counters of mode count, summed over hooks and CPUs.
unsigned long long sum_counts(int fd) {
  const int ncpu = libbpf_num_possible_cpus();
  std::vector<unsigned long long> per_cpu(ncpu > 0 ? ncpu : 1);
  unsigned long long total = 0;
  for (unsigned int hook = 0; hook < 8; hook++)
    if (bpf_map_lookup_elem(fd, &hook, per_cpu.data()) == 0)
      for (unsigned long long v : per_cpu)
        total += v;
  return total;
}

struct SkelDeleter {
  void operator()(floor_bpf *s) const { floor_bpf::destroy(s); }
};
struct RingDeleter {
  void operator()(ring_buffer *r) const { ring_buffer__free(r); }
};

} // namespace

int main(int argc, char **argv) {
  // floor.bpf.c's enum floor_mode
  const char *const modes[] = {"empty", "count", "record", "record_ctime"};
  int mode = -1;
  double duration = 0;
  unsigned long pid = 0;
  bool ok = true;
  std::string hooks = "syscalls";
  for (int i = 1; i < argc && ok; i++) {
    const std::string arg = argv[i];
    if (arg == "--hooks" && i + 1 < argc) {
      hooks = argv[++i];
      ok = hooks == "syscalls" || hooks == "ctime";
      continue;
    }
    if (arg == "--pid" && i + 1 < argc) {
      char *end = nullptr;
      pid = std::strtoul(argv[++i], &end, 10);
      ok = *end == '\0' && pid > 0 && pid <= UINT32_MAX;
      continue;
    }
    if (arg == "--duration" && i + 1 < argc) {
      char *end = nullptr;
      duration = std::strtod(argv[++i], &end);
      ok = *end == '\0' && duration > 0;
      continue;
    }
    const auto *m = std::find(std::begin(modes), std::end(modes), arg);
    ok = m != std::end(modes) && mode == -1;
    mode = static_cast<int>(m - std::begin(modes));
  }
  if (!ok || mode < 0 || ((pid || mode == 3) && hooks != "ctime")) {
    std::fprintf(stderr, "usage: floor_host [--duration SECONDS] [--hooks syscalls|ctime] [--pid "
                         "PID] empty|count|record|record_ctime (--pid and record_ctime with "
                         "--hooks ctime)\n");
    return 2;
  }
  std::unique_ptr<shmbpf::Tracefs> tracefs;
  try {
    tracefs = std::make_unique<shmbpf::Tracefs>();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "floor_host: %s\n", e.what());
    return 1;
  }
  std::unique_ptr<floor_bpf, SkelDeleter> skel(floor_bpf::open());
  if (!skel) {
    std::fprintf(stderr, "floor_host: open: %s\n", std::strerror(errno));
    return 1;
  }
  skel->rodata->mode = mode;
  skel->rodata->only_tgid = static_cast<__u32>(pid);
  bpf_program *prog;
  bpf_object__for_each_program(prog, skel->obj) {
    const bool ctime = std::string_view(bpf_program__section_name(prog)).starts_with("tp_btf/");
    bpf_program__set_autoload(prog, ctime == (hooks == "ctime"));
  }
  if (int err = floor_bpf::load(skel.get()); err) {
    std::fprintf(stderr, "floor_host: load: %s\n", std::strerror(-err));
    return 1;
  }
  skel->bss->realtime_minus_boot_ns = static_cast<__u64>(shmbpf::boot_to_realtime_ns());
  int err = 0;
  tracefs->run([&] { err = floor_bpf::attach(skel.get()); });
  if (err) {
    std::fprintf(stderr, "floor_host: attach: %s\n", std::strerror(-err));
    return 1;
  }
  tracefs.reset();
  unsigned long long records = 0;
  std::unique_ptr<ring_buffer, RingDeleter> ring(
      ring_buffer__new(bpf_map__fd(skel->maps.records), count_record, &records, nullptr));
  if (!ring) {
    std::fprintf(stderr, "floor_host: ring buffer: %s\n", std::strerror(errno));
    return 1;
  }
  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
  std::printf("ready\n");
  std::fflush(stdout);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(duration);
  while (!g_stop && (duration == 0 || std::chrono::steady_clock::now() < until)) {
    int n = ring_buffer__poll(ring.get(), 100);
    if (n < 0 && n != -EINTR) {
      std::fprintf(stderr, "floor_host: poll: %s\n", std::strerror(-n));
      return 1;
    }
  }
  ring_buffer__consume(ring.get());
  if (mode == 1)
    records = sum_counts(bpf_map__fd(skel->maps.counts));
  std::fprintf(stderr, "floor: %llu records, %llu lost\n", records,
               static_cast<unsigned long long>(skel->bss->lost));
  return 0;
}
