#include "live/monitor.hpp"

#include "live/clock.hpp"
#include "live/container_names.hpp"
#include "live/memory.hpp"
#include "model/apply_scan.hpp"
#include "sources/clock.hpp"
#include "sources/namespaces.hpp"
#include "sources/system_scan.hpp"
#include "sources/tmpfs_scan.hpp"

#include <algorithm>
#include <map>
#include <memory>

namespace shmbpf {

namespace {

// While a gather runs, the ring buffer is read in slices this long, so
// that its end is noticed soon.
constexpr int kGatherPollMs = 5;
// Events held back during one gather, at most (a few hundred bytes each).
// Past it the ring buffer keeps the rest, and counts what does not fit.
constexpr size_t kMaxHeld = size_t{1} << 19;

// The light hook set sees no open of an existing file, no close and no
// System V call: only rescans find them, so they come more often.
RescanPeriods periods(const MonitorOptions &opts, const Session &session) {
  RescanPeriods p;
  p.rescan_every = session.probe().hook_set() == HookSet::light
                       ? std::min(opts.reconcile_every, opts.light_reconcile_every)
                       : opts.reconcile_every;
  p.loss_gap = opts.loss_reconcile_gap;
  p.sample_every = opts.sample_every;
  return p;
}

} // namespace

uint64_t Monitor::now_ns() { return boottime_ns(); }

// The first full scan (a stat per file, /proc) runs while the probe loads,
// and the kernel's name map is seeded from it before attach; that overlap
// is most of the start-up time saved with many files.
Monitor::Monitor(const MonitorOptions &opts)
    : Monitor(opts, std::make_shared<TimedScan>(), std::async(std::launch::async, [] {
                TimedScan t;
                const auto cpu0 = thread_cpu() + scan_helper_cpu();
                t.started_s = realtime_s();
                t.scan = scan_system();
                t.cpu = thread_cpu() + scan_helper_cpu() - cpu0;
                return t;
              })) {}

Monitor::Monitor(const MonitorOptions &opts, std::shared_ptr<TimedScan> first,
                 std::future<TimedScan> scanning)
    : session_(opts.probe, std::async(std::launch::deferred,
                                      [first, f = std::move(scanning)]() mutable {
                                        *first = f.get();
                                        return seed_keys(first->scan.filesystems);
                                      })),
      engine_(engine_config_now()), opts_(opts), schedule_(periods(opts, session_)) {
  // Attached now: whatever is created from here on arrives as events. The
  // scan was made before, so the directories are listed again (entries
  // only, no stat): the kernel gets the names of files made in between,
  // and a filesystem where a file came or went is scanned again. An event
  // about something the scan also saw is applied on top of it harmlessly.
  // What the listing cannot tell (a file resized or opened in those few
  // hundred milliseconds, a process that exited) is set right by the
  // periodic rescans, like anything else no event shows.
  const auto cpu0 = thread_cpu();
  auto namespaces = scan_mount_namespaces();
  std::vector<SeedKey> listed = list_filesystems(namespaces);
  last_scan_start_s_ = first->started_s;
  if (!catch_up(first->scan, listed)) {
    // A tmpfs mounted meanwhile (a container started): scan it all again.
    last_scan_start_s_ = realtime_s();
    first->scan = scan_system(namespaces);
    stats_.start_rescans = first->scan.filesystems.size();
  }
  session_.seed(namespaces, std::move(listed));
  // Known from the start, not from the first sample's walk: a file made
  // before it by a process that exited is re-stat'ed through another
  // process of its namespace.
  namespaces_.replace(std::move(namespaces), false, {});
  bootstrap(engine_, first->scan);
  if (opts.after_bootstrap)
    opts.after_bootstrap(engine_, first->scan);
  name_containers(engine_, opts_.runtime_roots);
  engine_.sample_mounts(now_ns());
  stats_.reconciles = 1;
  schedule_.began(std::chrono::steady_clock::now(), first->cpu + (thread_cpu() - cpu0));
  first->scan = SystemScan{};
  release_free_memory();
}

bool Monitor::catch_up(SystemScan &scan, const std::vector<SeedKey> &listed) {
  // The listing's files by device, each sorted as the scan's will be.
  std::map<uint32_t, std::vector<SeedKey>> now;
  for (const SeedKey &k : listed)
    now[k.dev].push_back(k);
  for (auto &[dev, keys] : now)
    std::sort(keys.begin(), keys.end());
  for (ScannedFs &fs : scan.filesystems) {
    std::vector<SeedKey> had;
    had.reserve(fs.files.size());
    for (const TmpfsFile &f : fs.files)
      had.push_back(seed_key(f));
    std::sort(had.begin(), had.end());
    auto it = now.find(fs.dev);
    const std::vector<SeedKey> none;
    if (had == (it == now.end() ? none : it->second))
      continue;
    // Unreachable now (its namespace's process exited): the scan's files
    // stand until the next rescan.
    if (auto files = scan_tmpfs_dir(fs.scanned_from, fs.mountpoint, fs.dev)) {
      fs.files = std::move(*files);
      stats_.start_rescans++;
    }
  }
  // A filesystem the scan did not have.
  // A plain name for the key: clang 14 cannot capture a structured binding.
  for (const auto &entry : now) {
    const auto &dev = entry.first;
    if (std::none_of(scan.filesystems.begin(), scan.filesystems.end(),
                     [&](const ScannedFs &fs) { return fs.dev == dev; }))
      return false;
  }
  return true;
}

void Monitor::apply(Event &e) {
  engine_.apply(e);
  watch_.saw(e, engine_);
  // A new container's cgroup is resolved soon; a new mount namespace may
  // have new tmpfs mounts: walked at the next sample.
  cgroups_.saw(e.cgroup_id);
  namespaces_.saw(e.mntns);
  stats_.events++;
  if (const auto t = static_cast<size_t>(e.type); t < stats_.by_type.size())
    stats_.by_type[t]++;
  if (observer_)
    observer_(e);
}

void Monitor::on_event(Event &e) {
  // Now, held back or not: the victim's files may go with its container.
  if (e.type == EventType::oom)
    oom_files_.recount(e, engine_);
  if (gather_.valid()) {
    if (!gather_done_.load(std::memory_order_acquire) && held_.size() < kMaxHeld) {
      held_.push(e);
      return;
    }
    // Done (or too much held: the ring buffer keeps the rest meanwhile).
    finish_gather();
  }
  if (!held_.empty()) {
    // Catching up: two held events for each new one, so the backlog goes
    // at the rate events come, and the ring buffer is never left unread for
    // as long as applying all of it would take.
    held_.push(e);
    apply_held(2);
    return;
  }
  apply(e);
}

void Monitor::note_stall(std::chrono::steady_clock::time_point since) {
  const auto d = std::chrono::steady_clock::now() - since;
  stats_.longest_stall_ns = std::max<uint64_t>(
      stats_.longest_stall_ns,
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
}

int Monitor::poll(int timeout_ms) {
  // Only this thread changes what busy reads: no lock needed to wait.
  const bool busy = gather_.valid() || !held_.empty();
  if (const int w = session_.wait(busy ? std::min(timeout_ms, kGatherPollMs) : timeout_ms); w < 0)
    return w;
  std::lock_guard lock(mu_);
  const uint64_t before = stats_.events;
  const auto cb = [this](Event &e) { on_event(e); };
  int n = session_.poll(0, cb);
  if (n < 0)
    return n;
  const auto now = std::chrono::steady_clock::now();
  if (gather_.valid() && gather_done_.load(std::memory_order_acquire))
    finish_gather();
  if (!gather_.valid() && !held_.empty()) {
    // The ring buffer is empty now: catch up for a while, then read again.
    constexpr auto kBudget = std::chrono::milliseconds(10);
    do
      apply_held(256);
    while (!held_.empty() && std::chrono::steady_clock::now() - now < kBudget);
  }
  if (gather_.valid() || !held_.empty()) {
    note_stall(now);
    return static_cast<int>(stats_.events - before);
  }
  if (cgroups_.pending() && schedule_.resolve_new_cgroups(now)) {
    // Resolve these soon, not at the next sample; only these: asking the
    // engine for every unknown cgroup walks all segments. Finding them
    // walks the cgroup2 tree, thousands of directories on a busy node: on
    // the worker, like the other reads.
    Gather g;
    g.cgroups.ids = cgroups_.worth_resolving(cgroups_.take());
    if (!g.cgroups.ids.empty()) {
      start_gather(std::move(g));
      note_stall(now);
      return static_cast<int>(stats_.events - before);
    }
  }
  switch (schedule_.next(now, session_.lost(), watch_.unlinked_due())) {
  case RescanSchedule::Next::loss_rescan:
    stats_.loss_reconciles++;
    [[fallthrough]];
  case RescanSchedule::Next::rescan: {
    // What is pending goes in first, as the scan will see it.
    session_.drain(cb);
    Gather g;
    g.request = RescanGather{};
    start_gather(std::move(g));
    break;
  }
  case RescanSchedule::Next::unlinked: {
    Gather g;
    g.request = HoldersGather{watch_.unlinked_holder_jobs()};
    start_gather(std::move(g));
    break;
  }
  case RescanSchedule::Next::sample: {
    Gather g;
    g.request = sample_request();
    // Ids new in events are resolved as they come (above); this catches the
    // rest (ids from scans, retries), and walks every segment to find them.
    if (schedule_.resolve_all_cgroups(now))
      g.cgroups.ids = cgroups_.worth_resolving(engine_.unknown_cgroups());
    start_gather(std::move(g));
    break;
  }
  case RescanSchedule::Next::nothing:
    break;
  }
  note_stall(now);
  return static_cast<int>(stats_.events - before);
}

void Monitor::drain() {
  std::lock_guard lock(mu_);
  drain_locked();
}

void Monitor::drain_locked() {
  const auto cb = [this](Event &e) { on_event(e); };
  // Keep reading while the gather runs; on_event applies its result.
  while (gather_.valid() && !gather_done_.load(std::memory_order_acquire) &&
         held_.size() < kMaxHeld)
    session_.poll(kGatherPollMs, cb);
  if (gather_.valid())
    finish_gather();
  apply_held(held_.size());
  session_.drain(cb);
  apply_held(held_.size());
}

void Monitor::reconcile() {
  std::lock_guard lock(mu_);
  drain_locked();
  Gather g;
  g.request = RescanGather{};
  g.started = std::chrono::steady_clock::now();
  g.now_ns = now_ns();
  run_gather(g);
  apply_result(std::get<RescanGather>(g.request), g);
}

void Monitor::start_gather(Gather g) {
  g.started = std::chrono::steady_clock::now();
  g.now_ns = now_ns();
  g.before = opts_.before_gather;
  g.cgroups.roots = opts_.runtime_roots;
  g.cgroups.to_name = engine_.unnamed_containers();
  gather_done_.store(false, std::memory_order_relaxed);
  gather_ = std::async(std::launch::async, [done = &gather_done_, g = std::move(g)]() mutable {
    run_gather(g);
    done->store(true, std::memory_order_release);
    return std::move(g);
  });
}

void Monitor::finish_gather() {
  Gather g = gather_.get(); // waits when called before the worker is done
  const auto started = std::chrono::steady_clock::now();
  std::visit([&](auto &request) { apply_result(request, g); }, g.request);
  for (auto &[id, path] : g.cgroups.paths)
    engine_.set_cgroup_path(id, std::move(path));
  for (const auto &[id, name] : g.cgroups.names)
    engine_.set_container_name(id, name);
  note_stall(started);
}

void Monitor::apply_result(RescanGather &r, const Gather &g) {
  const auto apply_cpu0 = thread_cpu();
  SystemScan &scan = r.scan;
  // The scan walked every mount namespace; seeding still reads them.
  namespaces_.replace(scan.namespaces, true, g.started);
  // Files whose name the kernel does not know must be seeded, or their
  // unlinks would go unseen: made without an open (mknod, link), created
  // while the name map was full, or named like another file since (a
  // create whose record was lost still has its name). Seeding every file
  // costs a map update each, which with many files made the rescan after a
  // loss long enough to cause the next one. Those the kernel may not know
  // are new to the model, or were created (so modified) since the last
  // scan began: a file the last scan saw was seeded by it, if it needed to be.
  const int64_t since = last_scan_start_s_ - 2; // coarse file times
  std::vector<SeedKey> unseeded;
  for (const ScannedFs &fs : scan.filesystems)
    for (const TmpfsFile &f : fs.files)
      if (f.mtime_s >= since || !engine_.contains(SegmentKey::file(f.dev, f.ino)))
        unseeded.push_back(seed_key(f));
  session_.seed(scan.namespaces, std::move(unseeded));
  last_scan_start_s_ = r.scan_start_s;
  shmbpf::reconcile(engine_, scan, now_ns());
  stats_.reconciles++;
  schedule_.rescanned(g.started, std::chrono::steady_clock::now(),
                      g.cpu + (thread_cpu() - apply_cpu0));
  // The scan's copy of every file is garbage now, freed partly in the
  // worker's arena, which may not allocate again for minutes.
  r.scan = SystemScan{};
  release_free_memory();
}

SampleGather Monitor::sample_request() {
  SampleGather s;
  s.stats = watch_.stat_jobs(engine_, now_ns(), namespaces_.list());
  // close(2) and munmap(2) are not traced: the processes that touched
  // files lately are rescanned.
  s.holders.holders = watch_.sample_holder_jobs();
  s.file_devs = engine_.file_devs();
  s.namespaces = namespaces_.list();
  s.walk_namespaces = namespaces_.walk_due(std::chrono::steady_clock::now());
  s.memory = memory_.jobs(engine_);
  return s;
}

void Monitor::apply_result(HoldersGather &h, const Gather &g) {
  for (HolderJob &j : h.holders) {
    watch_.rescanned(j);
    if (j.alive)
      engine_.reconcile_process_files(j.pid, std::move(j.files));
  }
  watch_.expire(g.now_ns);
}

void Monitor::apply_result(SampleGather &s, const Gather &g) {
  namespaces_.replace(std::move(s.namespaces), s.walk_namespaces, g.started);
  memory_.apply(s.memory, engine_);
  for (const StatJob &j : s.stats) {
    if (j.found)
      engine_.set_file_usage(j.key, j.size, j.bytes, g.now_ns);
    else
      watch_.missed(j.key, engine_);
  }
  apply_result(s.holders, g);
  for (uint32_t dev : s.ended_devs)
    stats_.ended_files += engine_.forget_filesystem(dev, g.now_ns);
  stats_.ended_files += engine_.reconcile_mounts(std::move(s.mount_usage), g.now_ns);
  engine_.sample_mounts(now_ns());
  stats_.samples++;
}

MonitorStats Monitor::stats() const {
  MonitorStats s = stats_;
  s.lost = session_.lost();
  s.decode_errors = session_.stats().decode_errors;
  s.held_peak = held_.peak();
  return s;
}

} // namespace shmbpf
