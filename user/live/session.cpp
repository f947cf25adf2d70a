#include "live/session.hpp"

#include "decode/decode.hpp"
#include "sources/mountinfo.hpp"
#include "sources/namespaces.hpp"
#include "sources/system_scan.hpp"

#include <algorithm>

namespace shmbpf {

namespace {

// The kernel's name table sized for the files on tmpfs now, unless the
// caller chose a size.
ProbeOptions sized(ProbeOptions opts) {
  if (opts.name_capacity == 0)
    opts.name_capacity = name_map_capacity(tmpfs_files_in_use());
  return opts;
}

} // namespace

// The listing runs on its own thread while the probe loads (the verifier
// and the BTF parsing take a few hundred milliseconds).
Session::Session(const ProbeOptions &opts)
    : Session(opts, /*scan_now=*/true, std::async(std::launch::async, [] {
                return list_filesystems(scan_mount_namespaces());
              })) {}

Session::Session(const ProbeOptions &opts, std::future<std::vector<SeedKey>> listing)
    : Session(opts, /*scan_now=*/false, std::move(listing)) {}

Session::Session(const ProbeOptions &opts, bool scan_now, std::future<std::vector<SeedKey>> listing)
    : probe_(sized(opts), /*attach_now=*/false) {
  {
    std::vector<SeedKey> pre = listing.get();
    probe_.seed(pre);
    seeded_ += pre.size();
    // Each name went in with its first file (see Probe::seed).
    std::stable_sort(pre.begin(), pre.end(),
                     [](const SeedKey &a, const SeedKey &b) { return a.hash < b.hash; });
    for (size_t i = 0; i < pre.size(); ++i)
      if (i == 0 || pre[i].hash != pre[i - 1].hash)
        pre_names_.push_back(pre[i]);
    std::sort(pre.begin(), pre.end());
    pre_files_ = std::move(pre);
    pre_listed_ = true;
  }
  if (opts.before_attach)
    opts.before_attach();
  // Whatever is created from here on arrives as events; the listing below
  // finds what changed between the first one and now.
  probe_.attach();
  if (scan_now) {
    auto namespaces = scan_mount_namespaces();
    seed(namespaces, list_filesystems(namespaces));
  }
}

void Session::seed_keys_of(std::vector<SeedKey> files) {
  if (!pre_listed_) {
    probe_.seed(files);
    seeded_ += files.size();
    return;
  }
  // The maps hold the listing's files, and since attach whatever the
  // kernel wrote: files are only added one by one with BPF_NOEXIST, so the
  // kernel's entries stay. A name the listing gave to a file that is gone
  // now (replaced before attach) is handed over only while it still holds
  // what the listing wrote.
  std::vector<SeedKey> fresh;
  for (const SeedKey &k : files)
    // A listed name of a listed file: seeded, or its name went to another file first.
    if (!std::binary_search(pre_files_.begin(), pre_files_.end(), k))
      fresh.push_back(k);
  probe_.seed(fresh);
  seeded_ += fresh.size();
  std::sort(files.begin(), files.end());
  for (const SeedKey &k : fresh) {
    auto it = std::lower_bound(pre_names_.begin(), pre_names_.end(), SeedKey{k.hash, 0, 0});
    if (it != pre_names_.end() && it->hash == k.hash &&
        !std::binary_search(files.begin(), files.end(), *it))
      probe_.reseed_name(*it, k);
  }
}

void Session::seed(const std::vector<MountNamespace> &namespaces, std::vector<SeedKey> listing) {
  seed_keys_of(std::move(listing));
  finish_seed(namespaces);
}

void Session::finish_seed(const std::vector<MountNamespace> &namespaces) {
  pre_listed_ = false;
  pre_files_ = {};
  pre_names_ = {};
  for (const auto &ns : namespaces)
    resolver_.set_namespace(ns.mntns, ns.mounts);
  last_refresh_ = std::chrono::steady_clock::now();
}

void Session::refresh_mounts(const Event &missed) {
  // Mounts appear all the time (a container starts): rescan on a miss. The
  // first miss of a mount rescans at once, since an event on a new mount
  // often comes right after another rescan; later misses of a mount that
  // stays unknown (gone already) rescan at most a few times a second.
  const bool by_name = is_by_path(missed);
  // A path event's start directory is the mount that was missed.
  bool relative = by_name && (missed.new_start || (!missed.absolute && !missed.path.empty()));
  // Mount ids are reused after an unmount: the device tells a new mount
  // under an old id apart. A collision only means a rate-limited rescan.
  uint64_t id = relative ? missed.start_mnt_id : missed.mnt_id;
  uint64_t dev = relative ? missed.start_dev : missed.dev;
  uint64_t key = (id << 32 | dev) ^ (static_cast<uint64_t>(missed.mntns) * 0x9e3779b97f4a7c15ULL);
  if (rescanned_for_.size() >= 4096)
    rescanned_for_.clear();
  bool first_miss = rescanned_for_.insert(key).second;
  auto now = std::chrono::steady_clock::now();
  if (!first_miss && now - last_refresh_ < std::chrono::milliseconds(250))
    return;
  last_refresh_ = now;
  read_every_namespace(0);
}

bool Session::read_caller_namespace(const Event &e) {
  auto mounts = read_mountinfo(static_cast<int>(e.pid));
  if (mounts.empty())
    return false;
  resolver_.set_namespace(e.mntns, std::move(mounts));
  return true;
}

bool Session::read_every_namespace(uint32_t mntns) {
  bool found = false;
  for (auto &ns : scan_mount_namespaces()) {
    found = found || ns.mntns == mntns;
    resolver_.set_namespace(ns.mntns, std::move(ns.mounts));
  }
  return found;
}

bool Session::reread_namespace(const Event &e, uint32_t dev) {
  // At most every 250 ms for one filesystem in one namespace: a path that
  // never leads to it there (through a symlink) costs no more than that,
  // and a runtime's own files elsewhere use no turn of the container's.
  const auto now = std::chrono::steady_clock::now();
  const uint64_t key = static_cast<uint64_t>(e.mntns) << 32 | dev;
  auto [it, first] = reread_.try_emplace(key, now);
  if (!first && now - it->second < std::chrono::milliseconds(250))
    return false;
  it->second = now;
  if (reread_.size() > 4096) // namespaces that ended: start again
    reread_ = {{key, now}};
  if (mount_namespace_of(static_cast<int>(e.pid)) == e.mntns)
    return read_caller_namespace(e);
  // The caller is gone already (a container's first process that wrote its
  // file and exited): the table of any process still in the namespace. A
  // scan of every namespace, so at most every 250 ms whatever the key.
  if (now - last_refresh_ < std::chrono::milliseconds(250))
    return false;
  last_refresh_ = now;
  return read_every_namespace(e.mntns);
}

void Session::handle(const void *data, size_t len, const EventFn &fn) {
  // One Event, reused: its strings keep their buffers from record to record.
  Event &e = event_;
  if (!decode_event_into(data, len, e)) {
    stats_.decode_errors++;
    return;
  }
  if (e.type == EventType::oom) {
    oom_memory_.fill(e);
    stats_.delivered++;
    fn(e);
    return;
  }
  // An unlink/rename reaches us because its leaf name hashed to a tracked
  // file's (the hint), and the kernel has forgotten that name already (a
  // link keeps it).
  const bool by_name = e.type == EventType::unlink || e.type == EventType::rename;
  const uint32_t hint_dev = e.dev;
  const uint64_t hint_ino = e.ino;
  auto outcome = resolver_.resolve(e);
  if (outcome == PathResolver::Outcome::unknown_mount) {
    // The process may still be alive: its own mount table is the best source.
    if (mount_namespace_of(static_cast<int>(e.pid)) == e.mntns)
      read_caller_namespace(e);
    else
      refresh_mounts(e);
    outcome = resolver_.resolve(e);
  }
  // A light hook's record names its very inode (exact_hint), which is on
  // tmpfs: a path that led elsewhere was looked up in a mount table read
  // too early, before a container's runtime mounted its /dev/shm in the
  // namespace it had just made (runc's own events there come first). Read
  // it again and look once more.
  if (outcome == PathResolver::Outcome::not_shared_mem && e.exact_hint && hint_ino != 0 &&
      reread_namespace(e, hint_dev)) {
    e.dev = hint_dev;
    e.ino = hint_ino;
    outcome = resolver_.resolve(e);
  }
  // When the path was not on tmpfs, or named another file than the hint,
  // the hinted file still has that name: give it back, or unlinking
  // /var/tmp/x would hide a later unlink of /dev/shm/x.
  if (by_name && !e.exact_hint && hint_ino != 0 && !e.truncated && !e.path.empty() &&
      outcome != PathResolver::Outcome::unknown_mount &&
      (outcome == PathResolver::Outcome::not_shared_mem || e.dev != hint_dev ||
       e.ino != hint_ino)) {
    auto slash = e.path.rfind('/');
    probe_.restore_name(slash == std::string::npos ? e.path : e.path.substr(slash + 1), hint_dev,
                        hint_ino);
  }
  if (outcome == PathResolver::Outcome::not_shared_mem) {
    stats_.dropped++;
    return;
  }
  stats_.delivered++;
  fn(e);
}

int Session::poll(int timeout_ms, const EventFn &fn) {
  auto now = std::chrono::steady_clock::now();
  if (now - last_flush_ >= std::chrono::milliseconds(200)) {
    probe_.flush_frees();
    last_flush_ = now;
  }
  return probe_.poll(timeout_ms, [&](const void *d, size_t n) { handle(d, n, fn); });
}

void Session::drain(const EventFn &fn) {
  auto handler = [&](const void *d, size_t n) { handle(d, n, fn); };
  probe_.poll(0, handler);
  probe_.flush_frees();
  probe_.poll(0, handler);
}

} // namespace shmbpf
