#include "live/monitor.hpp"

#include "facts/dev.hpp"
#include "live/clock.hpp"
#include "live/container_names.hpp"
#include "live/memory.hpp"
#include "model/apply_scan.hpp"
#include "sources/clock.hpp"
#include "sources/namespaces.hpp"
#include "sources/proc_scan.hpp"
#include "sources/superblocks.hpp"
#include "sources/system_scan.hpp"
#include "sources/tmpfs_scan.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
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
int64_t realtime_s() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}

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
    g.cgroup_ids = cgroups_.worth_resolving(cgroups_.take());
    if (!g.cgroup_ids.empty()) {
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
    g.rescan = true;
    start_gather(std::move(g));
    break;
  }
  case RescanSchedule::Next::unlinked: {
    Gather g;
    g.holders = watch_.unlinked_holder_jobs();
    start_gather(std::move(g));
    break;
  }
  case RescanSchedule::Next::sample: {
    Gather g = sample_request();
    // Ids new in events are resolved as they come (above); this catches the
    // rest (ids from scans, retries), and walks every segment to find them.
    if (schedule_.resolve_all_cgroups(now))
      g.cgroup_ids = cgroups_.worth_resolving(engine_.unknown_cgroups());
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
  g.rescan = true;
  g.started = std::chrono::steady_clock::now();
  g.now_ns = now_ns();
  g = run_gather(std::move(g));
  apply_rescan(g);
}

void Monitor::start_gather(Gather g) {
  g.started = std::chrono::steady_clock::now();
  g.now_ns = now_ns();
  g.before = opts_.before_gather;
  g.roots = opts_.runtime_roots;
  g.to_name = engine_.unnamed_containers();
  gather_done_.store(false, std::memory_order_relaxed);
  gather_ = std::async(std::launch::async, [done = &gather_done_, g = std::move(g)]() mutable {
    Gather r = run_gather(std::move(g));
    done->store(true, std::memory_order_release);
    return r;
  });
}

// On the worker thread: reads only, into g.
Monitor::Gather Monitor::run_gather(Gather g) {
  const auto cpu0 = thread_cpu() + scan_helper_cpu();
  if (g.before)
    g.before();
  if (g.rescan) {
    g.scan_start_s = realtime_s();
    g.scan = scan_system();
  }
  for (StatJob &j : g.stats) {
    // The path is the one its process saw: a container's /dev/shm is
    // reached through that process's root while it lives.
    struct stat st {};
    auto same = [&](const std::string &p) {
      return ::stat(p.c_str(), &st) == 0 && st.st_ino == j.key.ino_or_shmid &&
             kernel_dev(st.st_dev) == j.key.dev_or_ipcns;
    };
    if (same(j.path) || same("/proc/" + std::to_string(j.pid) + "/root" + j.path) ||
        (j.other_pid != 0 && j.other_pid != j.pid &&
         same("/proc/" + std::to_string(j.other_pid) + "/root" + j.path))) {
      j.found = true;
      j.size = static_cast<uint64_t>(st.st_size);
      j.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  for (HolderJob &j : g.holders) {
    if (::kill(static_cast<pid_t>(j.pid), 0) != 0 && errno == ESRCH) {
      j.alive = false; // its exit event is on the way
      continue;
    }
    for (const HeldFile &h : scan_holdings(j.pid))
      if (h.kind != HeldKind::sysv)
        j.files.push_back(SegmentKey::file(h.dev, h.ino));
  }
  if (g.rescan) {
    g.walk_namespaces = true; // the scan's walk; kept from g.scan
  } else if (g.mounts) {
    if (!g.walk_namespaces) {
      auto again = refresh_mount_namespaces(std::move(g.namespaces));
      g.walk_namespaces = !again;
      if (again)
        g.namespaces = std::move(*again);
    }
    if (g.walk_namespaces)
      g.namespaces = scan_mount_namespaces();
    g.mount_usage = scan_mount_usage(g.namespaces);
    std::vector<uint32_t> mounted;
    for (const MountNamespace &ns : g.namespaces)
      for (const MountInfo &m : ns.mounts)
        if (m.is_tmpfs())
          mounted.push_back(m.dev);
    g.ended_devs = ended_filesystems(g.file_devs, mounted, g.walk_namespaces);
  }
  if (!g.cgroup_ids.empty())
    g.cgroup_paths = find_cgroup_paths(g.cgroup_ids);
  for (const auto &[id, path] : g.cgroup_paths)
    if (auto c = container_from_cgroup_path(path))
      g.to_name.push_back(std::move(*c));
  g.names = read_container_names(g.roots, g.to_name);
  g.cpu = thread_cpu() + scan_helper_cpu() - cpu0;
  return g;
}

void Monitor::finish_gather() {
  Gather g = gather_.get(); // waits when called before the worker is done
  const auto started = std::chrono::steady_clock::now();
  if (g.rescan || g.mounts)
    keep_namespaces(g);
  if (g.rescan)
    apply_rescan(g);
  else
    apply_sample(g);
  for (auto &[id, path] : g.cgroup_paths)
    engine_.set_cgroup_path(id, std::move(path));
  for (const auto &[id, name] : g.names)
    engine_.set_container_name(id, name);
  note_stall(started);
}

void Monitor::keep_namespaces(Gather &g) {
  // A rescan's seeding still reads the scan's own.
  namespaces_.replace(g.rescan ? g.scan.namespaces : std::move(g.namespaces), g.walk_namespaces,
                      g.started);
}

void Monitor::apply_rescan(Gather &g) {
  const auto apply_cpu0 = thread_cpu();
  SystemScan &scan = g.scan;
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
  last_scan_start_s_ = g.scan_start_s;
  shmbpf::reconcile(engine_, scan, now_ns());
  stats_.reconciles++;
  schedule_.rescanned(g.started, std::chrono::steady_clock::now(),
                      g.cpu + (thread_cpu() - apply_cpu0));
  // The scan's copy of every file is garbage now, freed partly in the
  // worker's arena, which may not allocate again for minutes.
  g.scan = SystemScan{};
  release_free_memory();
}

Monitor::Gather Monitor::sample_request() {
  Gather g;
  g.stats = watch_.stat_jobs(engine_, now_ns(), namespaces_.list());
  // close(2) and munmap(2) are not traced: the processes that touched
  // files lately are rescanned.
  g.holders = watch_.sample_holder_jobs();
  g.mounts = true;
  g.file_devs = engine_.file_devs();
  g.namespaces = namespaces_.list();
  g.walk_namespaces = namespaces_.walk_due(std::chrono::steady_clock::now());
  return g;
}

void Monitor::apply_sample(Gather &g) {
  for (const StatJob &j : g.stats) {
    if (j.found)
      engine_.set_file_usage(j.key, j.size, j.bytes, g.now_ns);
    else
      watch_.missed(j.key, engine_);
  }
  for (HolderJob &j : g.holders) {
    watch_.rescanned(j);
    if (j.alive)
      engine_.reconcile_process_files(j.pid, std::move(j.files));
  }
  watch_.expire(g.now_ns);
  if (g.mounts) {
    for (uint32_t dev : g.ended_devs)
      stats_.ended_files += engine_.forget_filesystem(dev, g.now_ns);
    stats_.ended_files += engine_.reconcile_mounts(std::move(g.mount_usage), g.now_ns);
    engine_.sample_mounts(now_ns());
    stats_.samples++;
  }
}

MonitorStats Monitor::stats() const {
  MonitorStats s = stats_;
  s.lost = session_.lost();
  s.decode_errors = session_.stats().decode_errors;
  s.held_peak = held_.peak();
  return s;
}

} // namespace shmbpf
