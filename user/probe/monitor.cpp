#include "probe/monitor.hpp"

#include "sources/bootstrap.hpp"
#include "sources/clock.hpp"
#include "sources/proc_scan.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>

namespace shmbpf {

namespace {

// A rescan after lost records may take at most this share of the time.
constexpr int kLossRescanShare = 10; // 1/10

int64_t realtime_s() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}

} // namespace

uint64_t Monitor::now_ns() { return boottime_ns(); }

// The first full scan (a stat per file, /proc) runs while the probe loads,
// and the kernel's name map is seeded from it before attach; that overlap
// is most of the start-up time saved with many files.
Monitor::Monitor(const MonitorOptions &opts)
    : Monitor(opts, std::make_shared<TimedScan>(), std::async(std::launch::async, [] {
                TimedScan t;
                t.started_s = realtime_s();
                t.scan = scan_system();
                return t;
              })) {}

Monitor::Monitor(const MonitorOptions &opts, std::shared_ptr<TimedScan> first,
                 std::future<TimedScan> scanning)
    : session_(opts.probe, std::async(std::launch::deferred,
                                      [first, f = std::move(scanning)]() mutable {
                                        *first = f.get();
                                        return seed_keys(first->scan.filesystems);
                                      })),
      engine_(engine_config_now()), opts_(opts) {
  // Attached now: whatever is created from here on arrives as events. The
  // scan was made before, so the directories are listed again (entries
  // only, no stat): the kernel gets the names of files made in between,
  // and a filesystem where a file came or went is scanned again. An event
  // about something the scan also saw is applied on top of it harmlessly.
  // What the listing cannot tell (a file resized or opened in those few
  // hundred milliseconds, a process that exited) is set right by the
  // periodic rescans, like anything else no event shows.
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
  bootstrap(engine_, first->scan);
  engine_.sample_mounts(now_ns());
  stats_.reconciles = 1;
  last_reconcile_ = last_sample_ = std::chrono::steady_clock::now();
}

bool Monitor::catch_up(SystemScan &scan, const std::vector<SeedKey> &listed) {
  // The listing's files by device, each sorted as the scan's will be.
  std::map<uint32_t, std::vector<SeedKey>> now;
  for (const SeedKey &k : listed)
    now[k.dev].push_back(k);
  for (auto &[dev, keys] : now)
    std::sort(keys.begin(), keys.end());
  for (ScannedFs &fs : scan.filesystems) {
    std::vector<SeedKey> had = seed_keys({fs});
    std::sort(had.begin(), had.end());
    auto it = now.find(fs.dev);
    const std::vector<SeedKey> none;
    if (had == (it == now.end() ? none : it->second))
      continue;
    fs.files = scan_tmpfs_dir(fs.scanned_from, fs.mountpoint);
    stats_.start_rescans++;
  }
  // A filesystem the scan did not have.
  for (const auto &[dev, keys] : now)
    if (std::none_of(scan.filesystems.begin(), scan.filesystems.end(),
                     [&](const ScannedFs &fs) { return fs.dev == dev; }))
      return false;
  return true;
}

void Monitor::apply(Event &e) {
  engine_.apply(e);
  watch(e);
  // A cgroup id no event carried before may be a new container's: resolve
  // it soon. (Most events come from the cgroup of the event before.)
  if (e.cgroup_id != last_cgroup_ && e.cgroup_id != 0) {
    last_cgroup_ = e.cgroup_id;
    if (seen_cgroups_.insert(e.cgroup_id).second)
      new_cgroups_.push_back(e.cgroup_id);
  }
  stats_.events++;
  if (observer_)
    observer_(e);
}

int Monitor::poll(int timeout_ms) {
  uint64_t before = stats_.events;
  int n = session_.poll(timeout_ms, [this](Event &e) { apply(e); });
  if (n < 0)
    return n;
  const auto now = std::chrono::steady_clock::now();
  if (!new_cgroups_.empty() && now - last_resolve_ >= std::chrono::milliseconds(100)) {
    // Resolve these soon, not at the next sample; only these: asking the
    // engine for every unknown cgroup walks all segments.
    last_resolve_ = now;
    resolve_cgroups(std::exchange(new_cgroups_, {}));
  }
  const uint64_t lost = session_.lost();
  const auto loss_gap = std::max<std::chrono::steady_clock::duration>(
      opts_.loss_reconcile_gap, last_rescan_cost_ * kLossRescanShare);
  if (lost != lost_seen_ && now - last_reconcile_ >= loss_gap) {
    // Lost records mean the tables may be wrong in any way: rescan now, but
    // not on every poll of a storm, or rescans would feed the loss.
    lost_seen_ = lost;
    stats_.loss_reconciles++;
    rescan();
  } else if (now - last_reconcile_ >= opts_.reconcile_every) {
    reconcile();
  }
  maybe_sample();
  return static_cast<int>(stats_.events - before);
}

void Monitor::drain() {
  session_.drain([this](Event &e) { apply(e); });
}

void Monitor::reconcile() { rescan(); }

void Monitor::rescan() {
  const auto started = std::chrono::steady_clock::now();
  drain();
  const int64_t scan_start_s = realtime_s();
  SystemScan scan = scan_system();
  // Files whose name the kernel does not know must be seeded, or their
  // unlinks would go unseen: made without an open (mknod, link), created
  // while the name map was full, or named like another file since (a
  // create whose record was lost still has its name). Seeding every file
  // costs a map update each, which with many files made the rescan after a
  // loss long enough to cause the next one. Those the kernel may not know
  // are new to the model, or were created (so modified) since the last
  // scan began: a file the last scan saw was seeded by it, if it needed to be.
  const int64_t since = last_scan_start_s_ - 2; // coarse file times
  std::vector<ScannedFs> unseeded;
  for (const ScannedFs &fs : scan.filesystems) {
    ScannedFs part{fs.dev, fs.mnt_id, fs.mountpoint, {}, fs.scanned_from};
    for (const TmpfsFile &f : fs.files)
      if (f.mtime_s >= since || !engine_.contains(SegmentKey::file(f.dev, f.ino)))
        part.files.push_back(f);
    if (!part.files.empty())
      unseeded.push_back(std::move(part));
  }
  session_.seed(scan.namespaces, unseeded);
  last_scan_start_s_ = scan_start_s;
  shmbpf::reconcile(engine_, scan, now_ns());
  stats_.reconciles++;
  last_reconcile_ = std::chrono::steady_clock::now();
  last_rescan_cost_ = last_reconcile_ - started;
}

void Monitor::maybe_sample() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_sample_ < opts_.sample_every)
    return;
  last_sample_ = now;
  refresh_usage();
  refresh_holders();
  engine_.reconcile_mounts(scan_mount_usage(scan_mount_namespaces()));
  engine_.sample_mounts(now_ns());
  // Ids new in events are resolved as they come (poll()); this catches the
  // rest (ids from scans, retries), and walks every segment to find them.
  if (now - last_full_resolve_ >= std::chrono::seconds(10)) {
    last_full_resolve_ = now;
    resolve_cgroups();
  }
}

void Monitor::watch(const Event &e) {
  if ((e.type == EventType::unlink || e.type == EventType::rename) && e.ino != 0) {
    // The path is gone: re-stat'ing it would only fail (twice) every
    // sample. The entry stays, so that its holders are still rescanned.
    auto it = watched_.find(SegmentKey::file(e.dev, e.ino));
    if (it == watched_.end() || e.ret < 0)
      return;
    Watched &w = it->second;
    w.has_path = e.type == EventType::rename && e.newpath.starts_with("/");
    if (w.has_path)
      w.path = PathResolver::normalize(e.newpath);
    return;
  }
  const bool file_event =
      e.type == EventType::create || e.type == EventType::open || e.type == EventType::resize;
  if (!file_event || e.kind == Kind::sysv || e.ret < 0 || e.full_path.empty())
    return;
  constexpr size_t kMaxWatched = 65536;
  if (watched_.size() >= kMaxWatched && !watched_.count(SegmentKey::file(e.dev, e.ino)))
    return; // a storm of new files: the periodic reconcile measures those
  Watched &w = watched_[SegmentKey::file(e.dev, e.ino)];
  w.path = e.full_path;
  w.has_path = true;
  w.pid = e.pid;
  w.last_event_ns = e.ts_ns;
}

void Monitor::refresh_usage() {
  // Kept while held (it may still grow), and for a minute after the last
  // event (a writer that closed it may have filled it just before).
  constexpr uint64_t kLinger = 60'000'000'000;
  const uint64_t now = now_ns();
  for (auto it = watched_.begin(); it != watched_.end();) {
    const auto held = engine_.is_held(it->first);
    const bool keep = held && (*held || now - std::min(now, it->second.last_event_ns) < kLinger);
    // The path is the one its process saw: a container's /dev/shm is
    // reached through that process's root while it lives.
    struct stat st {};
    auto same = [&](const std::string &p) {
      return ::stat(p.c_str(), &st) == 0 && st.st_ino == it->first.ino_or_shmid &&
             kernel_dev(st.st_dev) == it->first.dev_or_ipcns;
    };
    Watched &w = it->second;
    if (held && w.has_path) {
      if (same(w.path) || same("/proc/" + std::to_string(w.pid) + "/root" + w.path))
        engine_.set_file_usage(it->first, static_cast<uint64_t>(st.st_size),
                               static_cast<uint64_t>(st.st_blocks) * 512, now);
      else
        w.has_path = false; // unlinked or renamed unseen: stop failing stats
    }
    // Still kept while held: its holders are rescanned (refresh_holders).
    it = keep ? std::next(it) : watched_.erase(it);
  }
}

void Monitor::refresh_holders() {
  // close(2) and munmap(2) are not traced (hooking every close would tax
  // unrelated work): the holders of recently touched files are rescanned.
  constexpr size_t kMaxPids = 256; // per sample; the full reconcile covers the rest
  std::vector<SegmentKey> keys;
  keys.reserve(watched_.size());
  for (const auto &[key, w] : watched_)
    keys.push_back(key);
  std::vector<uint32_t> pids = engine_.holders_of(keys);
  if (pids.size() > kMaxPids) {
    std::rotate(pids.begin(), pids.begin() + static_cast<long>(holder_cursor_ % pids.size()),
                pids.end());
    pids.resize(kMaxPids);
    holder_cursor_ += kMaxPids;
  }
  for (uint32_t pid : pids) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      continue; // its exit event is on the way
    std::vector<SegmentKey> files;
    for (const HeldFile &h : scan_holdings(pid))
      if (!h.path.starts_with("/SYSV"))
        files.push_back(SegmentKey::file(h.dev, h.ino));
    engine_.reconcile_process_files(pid, std::move(files));
  }
}

void Monitor::resolve_cgroups() { resolve_cgroups(engine_.unknown_cgroups()); }

void Monitor::resolve_cgroups(const std::vector<uint64_t> &candidates) {
  // Events carry cgroup ids; a container started after us has an id no
  // scan described yet. Each id gets a few tries: a cgroup may be gone.
  std::vector<uint64_t> ids;
  for (uint64_t id : candidates)
    if (cgroup_tries_[id]++ < 3)
      ids.push_back(id);
  if (ids.empty())
    return;
  for (auto &[id, path] : find_cgroup_paths(ids))
    engine_.set_cgroup_path(id, std::move(path));
}

MonitorStats Monitor::stats() const {
  MonitorStats s = stats_;
  s.lost = session_.lost();
  s.decode_errors = session_.stats().decode_errors;
  return s;
}

} // namespace shmbpf
