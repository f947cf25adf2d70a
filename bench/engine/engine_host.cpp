// The long-running engine without a screen: a Monitor (probe, decoder,
// resolver, engine, reconciliation) polled in a loop, which is what `top`
// and `leaks` run underneath. The benchmark's "engine" condition.
//
//   engine_host [--ring-buffer-size BYTES] [--hooks full|light] [--match GLOB]
//               [--loss-reconcile-gap-ms MS] [--count-only] [--pid PID]
//
// (a long --loss-reconcile-gap-ms keeps rescans out of a profile).
// --count-only reads the ring and only counts its records (no decoder, no
// engine, no rescans): the programs' cost with the least a reader can do,
// to tell the reader's share of a workload's overhead from theirs.
// --pid has the light hooks on a file's changes look at that process alone
// (ProbeOptions::only_tgid), so that another probe can time another workload
// beside it.
// Prints "ready" on stdout once attached and bootstrapped. SIGUSR1 prints a
// stats line (JSON) and keeps going; SIGINT/SIGTERM drains, prints it, exits.
// "matching" counts live segments whose path matches GLOB, so a caller can
// check the tables against what it created.
#include "facts/hooks.hpp"
#include "facts/result.hpp"
#include "live/monitor.hpp"
#include "probe/probe.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_report = 0;

void on_stop(int) { g_stop = 1; }
void on_report(int) { g_report = 1; }

long long cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

void report(const shmbpf::Monitor &mon, const std::string &match, long long start_cpu) {
  const shmbpf::MonitorStats st = mon.stats();
  size_t matching = 0;
  if (!match.empty()) {
    shmbpf::SegmentFilter f;
    f.path_glob = match;
    matching = mon.engine().segments(f).size();
  }
  std::printf("{\"events\":%llu,\"lost\":%llu,\"decode_errors\":%llu,\"reconciles\":%llu,"
              "\"loss_reconciles\":%llu,\"segments\":%zu,\"matching\":%zu,\"cpu_ns\":%lld,"
              "\"longest_stall_ns\":%llu,\"held_peak\":%llu}\n",
              static_cast<unsigned long long>(st.events), static_cast<unsigned long long>(st.lost),
              static_cast<unsigned long long>(st.decode_errors),
              static_cast<unsigned long long>(st.reconciles),
              static_cast<unsigned long long>(st.loss_reconciles), mon.engine().segment_count(),
              matching, cpu_ns() - start_cpu, static_cast<unsigned long long>(st.longest_stall_ns),
              static_cast<unsigned long long>(st.held_peak));
  std::fflush(stdout);
}

// --count-only: the probe alone, its records counted, not read.
int count_records(const shmbpf::ProbeOptions &opts) {
  shmbpf::Probe probe(opts);
  unsigned long long records = 0;
  const shmbpf::Probe::RecordFn count = [&](const void *, size_t) { ++records; };
  std::printf("ready\n");
  std::fflush(stdout);
  while (!g_stop) {
    const int n = probe.poll(100, count);
    if (n < 0 && n != -EINTR)
      throw shmbpf::FatalError("reading the ring buffer", std::strerror(-n));
  }
  probe.poll(0, count);
  std::printf("{\"events\":%llu,\"lost\":%llu}\n", records,
              static_cast<unsigned long long>(probe.lost()));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  shmbpf::MonitorOptions opts;
  std::string match;
  bool count_only = false;
  auto usage = [] {
    std::fprintf(stderr,
                 "usage: engine_host [--ring-buffer-size BYTES] [--hooks full|light] "
                 "[--match GLOB] [--loss-reconcile-gap-ms MS] [--count-only] [--pid PID]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const char *flag = argv[i];
    if (std::strcmp(flag, "--count-only") == 0) {
      count_only = true;
      continue;
    }
    if (i + 1 == argc)
      return usage();
    const char *value = argv[++i];
    if (std::strcmp(flag, "--ring-buffer-size") == 0) {
      opts.probe.ring_buffer_bytes = std::strtoull(value, nullptr, 0);
    } else if (std::strcmp(flag, "--hooks") == 0) {
      const auto set = shmbpf::hook_set_named(value);
      if (!set)
        return usage();
      opts.probe.hooks = *set;
    } else if (std::strcmp(flag, "--pid") == 0) {
      char *end = nullptr;
      const unsigned long pid = std::strtoul(value, &end, 10);
      if (*end != '\0' || pid == 0 || pid > UINT32_MAX)
        return usage();
      opts.probe.only_tgid = static_cast<uint32_t>(pid);
    } else if (std::strcmp(flag, "--match") == 0) {
      match = value;
    } else if (std::strcmp(flag, "--loss-reconcile-gap-ms") == 0) {
      opts.loss_reconcile_gap = std::chrono::milliseconds(std::strtoll(value, nullptr, 0));
    } else {
      return usage();
    }
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_report;
  sigaction(SIGUSR1, &sa, nullptr);

  try {
    if (count_only)
      return count_records(opts.probe);
    shmbpf::Monitor mon(opts);
    const long long start_cpu = cpu_ns();
    std::printf("ready\n");
    std::fflush(stdout);
    while (!g_stop) {
      int n = mon.poll(100);
      if (n < 0 && n != -EINTR)
        throw shmbpf::FatalError("reading the ring buffer", std::strerror(-n));
      if (g_report) {
        g_report = 0;
        report(mon, match, start_cpu);
      }
    }
    mon.drain();
    report(mon, match, start_cpu);
  } catch (const shmbpf::FatalError &e) {
    std::fprintf(stderr, "engine_host: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
