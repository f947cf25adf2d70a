// What one `shmbpf serve` request costs with N live segments, without BPF or
// HTTP: the longest hold of the live loop's lock (what stalls the consumer;
// a query in parts takes it once per part), the whole copy (every part and
// the sort after), and the formatting done after it, for a /metrics scrape
// (as Endpoints::metrics: take_metrics_snapshot, then metrics_text), for
// each of the local API's lists, as JSON and as text (as LocalApi::list:
// take_listing through the lock, then listing_output) and for /v1/leaks (as
// LocalApi::leaks: take_orphans, then summarize_orphans and leaks_json).
// Segments spread over 50 containers, the host and 4 tmpfs mounts; half the
// creators exit, leaving half the segments orphaned. Prints the median of
// several requests of each.
//
//   serve_render 100000
#include "engine/synthetic.hpp"
#include "model/engine.hpp"
#include "model/engine_parts.hpp"
#include "model/leaks.hpp"
#include "views/leaks_view.hpp"
#include "views/listing.hpp"
#include "views/ls_view.hpp"
#include "views/metrics.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace shmbpf;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kContainers = 50;
constexpr uint32_t kProcs = 200;
constexpr uint64_t kHostCgroup = 1;
constexpr uint64_t kFirstContainerCgroup = 100;

// Four tmpfs filesystems: /dev/shm and three others.
struct Fs {
  uint32_t mnt_id;
  uint32_t dev;
  const char *mountpoint;
};
constexpr Fs kMounts[] = {{bench::kShmMntId, bench::kShmDev, "/dev/shm"},
                          {40, 40, "/run/user/1000"},
                          {41, 41, "/run/workers"},
                          {42, 42, "/tmp/ramdisk"}};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The engine read as the daemon reads it, each call timed as a hold of
// the lock: longest_ms is the longest since the last reset.
struct TimedVisit {
  const Engine &engine;
  double longest_ms = 0;
  EngineVisit visit() {
    return [this](const std::function<void(const Engine &)> &read) {
      const auto t0 = Clock::now();
      read(engine);
      longest_ms = std::max(longest_ms, ms_since(t0));
      return true;
    };
  }
};

// One process in seven runs on the host (no container); the others go
// round the 50 containers.
uint64_t cgroup_of(uint32_t pid) {
  return pid % 7 == 0 ? kHostCgroup : kFirstContainerCgroup + pid % kContainers;
}

void fill(Engine &engine, uint64_t n, uint64_t &ts) {
  for (uint32_t c = 0; c < kContainers; c++) {
    char id[65];
    std::snprintf(id, sizeof id, "%064x", c + 1);
    engine.set_cgroup_path(kFirstContainerCgroup + c,
                           std::string("/system.slice/docker-") + id + ".scope");
  }
  engine.set_cgroup_path(kHostCgroup, "/user.slice/user-1000.slice/session-2.scope");
  for (const Fs &m : kMounts) {
    MountState s;
    s.mnt_id = m.mnt_id;
    s.mntns = 1;
    s.mountpoint = m.mountpoint;
    s.dev = m.dev;
    s.size_limit = 1ull << 34;
    s.used_bytes = 1ull << 30;
    engine.set_mount(std::move(s));
  }
  for (uint64_t i = 0; i < n; i++) {
    const uint32_t pid = 20000 + static_cast<uint32_t>(i % kProcs);
    const Fs &m = kMounts[i % 4];
    const std::string path =
        std::string(m.mountpoint) + "/torch_" + std::to_string(pid) + "_" + std::to_string(i);
    Event c = bench::create_event(pid, 1000 + i, path, ts++);
    c.cgroup_id = cgroup_of(pid);
    c.dev = m.dev;
    c.mnt_id = m.mnt_id;
    c.name = path.substr(std::string(m.mountpoint).size());
    engine.apply(c);
    Event r = bench::resize_event(pid, 1000 + i, 4096 * (1 + i % 16), ts++);
    r.cgroup_id = c.cgroup_id;
    r.dev = m.dev;
    r.mnt_id = m.mnt_id;
    engine.apply(r);
  }
  for (uint32_t p = 0; p < kProcs; p += 2) {
    Event e = bench::process_event(EventType::exit, 20000 + p, ts++);
    e.cgroup_id = cgroup_of(20000 + p);
    engine.apply(e);
  }
}

} // namespace

int main(int argc, char **argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const int requests = argc > 2 ? std::atoi(argv[2]) : 9;
  if (n == 0 || requests <= 0) {
    std::fprintf(stderr, "usage: serve_render SEGMENTS [REQUESTS]\n");
    return 2;
  }
  Engine engine;
  uint64_t ts = 1'000'000'000;
  fill(engine, n, ts);
  const uint64_t now = ts + 1'000'000'000;
  std::printf("segments=%zu containers=%zu mounts=%zu requests=%d\n", engine.segment_count(),
              engine.containers(now).size(), engine.mounts().size(), requests);

  std::vector<double> lock_ms, copy_ms, format_ms;
  size_t bytes = 0, groups = 0;
  for (int r = 0; r < requests; r++) {
    MetricsCounters c;
    c.now_ns = now;
    c.agent.version = "bench";
    auto t0 = Clock::now();
    MetricsSnapshot snap = take_metrics_snapshot(engine, std::move(c));
    lock_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    bytes = metrics_text(snap).size();
    format_ms.push_back(ms_since(t0));
    groups = snap.segments.size();
  }
  std::printf("request=metrics lock_ms=%.3f copy_ms=%.3f format_ms=%.3f total_ms=%.3f bytes=%zu "
              "groups=%zu\n",
              median(lock_ms), median(lock_ms), median(format_ms),
              median(lock_ms) + median(format_ms), bytes, groups);

  // Each list, as /v1/segments, /v1/processes, /v1/containers and
  // /v1/mounts answer it, as JSON and as text (which also copies what the
  // table's columns relate rows to).
  for (const char *path : {"/v1/segments", "/v1/processes", "/v1/containers", "/v1/mounts"}) {
    for (const bool json : {true, false}) {
      const LsQuery q =
          *LsQuery::from_request(path, json ? QueryFields{} : QueryFields{{"format", "text"}});
      lock_ms.clear();
      copy_ms.clear();
      format_ms.clear();
      size_t rows = 0;
      for (int r = 0; r < requests; r++) {
        TimedVisit timed{engine};
        auto t0 = Clock::now();
        const Listing l = *take_listing(timed.visit(), q, now, 1);
        copy_ms.push_back(ms_since(t0));
        lock_ms.push_back(timed.longest_ms);
        t0 = Clock::now();
        bytes = listing_output(l, q, {}).size();
        format_ms.push_back(ms_since(t0));
        rows = l.segments.size() + l.containers.size() +
               (q.by == ListBy::processes ? l.processes.size() : 0) +
               (q.by == ListBy::mounts ? l.mounts.size() : 0);
      }
      const std::string name = std::string("v1_") + (path + 4) + (json ? "" : "_text");
      std::printf(
          "request=%s lock_ms=%.3f copy_ms=%.3f format_ms=%.3f total_ms=%.3f bytes=%zu rows=%zu\n",
          name.c_str(), median(lock_ms), median(copy_ms), median(format_ms),
          median(copy_ms) + median(format_ms), bytes, rows);
    }
  }

  lock_ms.clear();
  copy_ms.clear();
  format_ms.clear();
  size_t orphans = 0;
  for (int r = 0; r < requests; r++) {
    LeaksQuery q;
    q.min_age_s = 0; // every orphan: the most a leaks request copies
    TimedVisit timed{engine};
    auto t0 = Clock::now();
    const std::vector<Orphan> copy = *take_orphans(timed.visit(), now, q.min_age_ns(), q.scope());
    copy_ms.push_back(ms_since(t0));
    lock_ms.push_back(timed.longest_ms);
    t0 = Clock::now();
    const LeakReport report = summarize_orphans(copy, "");
    bytes = leaks_json(report, now).size();
    format_ms.push_back(ms_since(t0));
    orphans = copy.size();
  }
  std::printf("request=v1_leaks lock_ms=%.3f copy_ms=%.3f format_ms=%.3f total_ms=%.3f bytes=%zu "
              "rows=%zu\n",
              median(lock_ms), median(copy_ms), median(format_ms),
              median(copy_ms) + median(format_ms), bytes, orphans);
  return engine.segment_count() == n ? 0 : 1;
}
