#include "model/engine.hpp"

#include "model/resolver.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fnmatch.h>
#include <unordered_set>

namespace shmbpf {
namespace {

constexpr uint32_t kMfdCloexec = 0x1;     // MFD_CLOEXEC
constexpr uint32_t kRenameExchange = 0x2; // RENAME_EXCHANGE
constexpr double kRateTauS = 10.0;        // decay time constant of the rates
constexpr uint8_t kShmgetCreated = 1;     // Event::created

uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

std::string sysv_name(uint32_t key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "SYSV%08x", key);
  return buf;
}

// The path a rename gives its file, or "" when the event does not say it:
// an absolute target, or a relative one from the same start directory as a
// relative source (recovered by stripping the source from its resolved path).
std::string renamed_path(const Event &e) {
  if (e.newpath.starts_with('/'))
    return PathResolver::normalize(e.newpath);
  if (e.newpath.empty() || e.full_path.empty() || e.path.starts_with('/') || e.absolute ||
      e.dirfd != e.newdirfd)
    return {};
  std::string_view p = e.path;
  for (size_t i = 0; i <= p.size();) {
    size_t j = std::min(p.find('/', i), p.size());
    if (p.substr(i, j - i) == "..")
      return {}; // normalisation may have eaten the start directory
    i = j + 1;
  }
  std::string rel = PathResolver::normalize("/" + e.path);
  if (rel == "/" || !std::string_view(e.full_path).ends_with(rel))
    return {};
  std::string start = e.full_path.substr(0, e.full_path.size() - rel.size());
  return PathResolver::normalize(start + "/" + e.newpath);
}

bool container_matches(const ContainerRef *c, const std::string &want) {
  if (want.empty())
    return c == nullptr;
  return c != nullptr && c->id.starts_with(want);
}

} // namespace

// --- RateCounter -------------------------------------------------------------

void Engine::RateCounter::hit(uint64_t ts_ns) {
  if (count > 0 && ts_ns > last_ns)
    ewma *= std::exp(-static_cast<double>(ts_ns - last_ns) / 1e9 / kRateTauS);
  ewma += 1.0 / kRateTauS;
  last_ns = std::max(last_ns, ts_ns);
  ++count;
}

double Engine::RateCounter::rate(uint64_t now_ns) const {
  if (count == 0)
    return 0;
  uint64_t dt = sat_sub(now_ns, last_ns);
  return ewma * std::exp(-static_cast<double>(dt) / 1e9 / kRateTauS);
}

// --- setup -------------------------------------------------------------------

Engine::Engine(EngineConfig config) : config_(std::move(config)) {
  last_ts_ = config_.start_ns;
  if (config_.expected_segments) {
    segs_.reserve(config_.expected_segments);
    by_path_.reserve(config_.expected_segments,
                     [this](auto &&file) { for_each_indexed_path(file); });
  }
}

void Engine::apply(const Event &e) {
  ++stats_.events;
  last_ts_ = std::max(last_ts_, e.ts_ns);
  switch (e.type) {
  case EventType::create:
  case EventType::open:
    on_open(e);
    break;
  case EventType::memfd_create:
    on_memfd_create(e);
    break;
  case EventType::resize:
    on_resize(e);
    break;
  case EventType::unlink:
    on_unlink(e);
    break;
  case EventType::rename:
    on_rename(e);
    break;
  case EventType::free:
    on_free(e);
    break;
  case EventType::shmget:
    on_shmget(e);
    break;
  case EventType::shmat:
    on_shmat(e);
    break;
  case EventType::shmdt:
    on_shmdt(e);
    break;
  case EventType::shm_rmid:
    on_shm_rmid(e);
    break;
  case EventType::exit:
    on_exit(e);
    break;
  case EventType::exec:
    on_exec(e);
    break;
  case EventType::sigbus:
    on_sigbus(e);
    break;
  }
}

// --- internal bookkeeping ----------------------------------------------------

Engine::Process &Engine::process_entry(uint32_t pid) {
  auto [it, inserted] = procs_.try_emplace(pid);
  if (inserted) {
    if (++next_serial_ == 0)
      ++next_serial_; // 0 means "any incarnation"
    it->second.serial = next_serial_;
  }
  return it->second;
}

Engine::Process &Engine::touch_process(const Event &e) {
  Process &p = process_entry(e.pid);
  if (!e.comm.empty())
    p.comm = e.comm;
  p.uid = e.uid;
  p.ppid = e.ppid;
  if (e.cgroup_id)
    p.cgroup_id = e.cgroup_id;
  if (e.mntns)
    p.mntns = e.mntns;
  if (e.ipcns)
    p.ipcns = e.ipcns;
  return p;
}

Engine::SegIt Engine::insert_segment(const SegmentKey &key, Kind kind) {
  auto it = segs_.try_emplace(key).first;
  it->second.kind = kind;
  if (!key.is_sysv())
    ++devs_[key.dev_or_ipcns].segments;
  return it;
}

void Engine::erase_segment(SegIt it) {
  const SegmentKey key = it->first;
  Segment &s = it->second;
  unindex_path(it);
  if (!key.is_sysv()) {
    DevStats &d = devs_[key.dev_or_ipcns];
    d.bytes = sat_sub(d.bytes, s.bytes);
    d.segments = sat_sub(d.segments, 1);
  }
  for (uint32_t pid : s.holders) {
    auto pit = procs_.find(pid);
    if (pit == procs_.end())
      continue;
    auto &held = pit->second.held;
    for (size_t i = held.size(); i-- > 0;) {
      if (held[i].key == key) {
        held[i] = held.back();
        held.pop_back();
        break;
      }
    }
    std::erase_if(pit->second.attachments, [&](const Attachment &a) { return a.key == key; });
  }
  segs_.erase(it);
  ++stats_.gone;
}

// Invariant: a segment is in by_path_ exactly when it is a linked tmpfs file
// with a resolved path. Every change of path, state or kind goes through
// set_path/set_state, which unindex before and index after.
bool Engine::path_indexed(const Slot &slot) {
  const Segment &s = slot.second;
  return !slot.first.is_sysv() && s.kind == Kind::tmpfs && s.state == SegmentState::linked &&
         (s.flags & kPathFull) && !s.path.empty();
}

template <class File> void Engine::for_each_indexed_path(File &&file) const {
  for (auto it = segs_.begin(); it != segs_.end(); ++it)
    if (path_indexed(*it))
      file(it.index(), path_key(it->second.path.hash()));
}

void Engine::index_path(SegIt it) {
  const Segment &s = it->second;
  if (!path_indexed(*it))
    return;
  by_path_.insert(it.index(), path_key(s.path.hash()),
                  [this](auto &&file) { for_each_indexed_path(file); });
}

void Engine::unindex_path(SegIt it) {
  if (it->first.is_sysv() || it->second.path.empty())
    return;
  by_path_.erase(it.index(), path_key(it->second.path.hash()),
                 [this](uint32_t i) { return path_key(segs_.slot(i).second.path.hash()); });
}

void Engine::set_path(SegIt it, std::string_view path, bool full) {
  unindex_path(it);
  Segment &s = it->second;
  s.path.assign(path);
  s.flags = static_cast<uint8_t>(full ? s.flags | kPathFull : s.flags & ~kPathFull);
  s.pattern = classify_shm_name(path).pattern;
  index_path(it);
}

void Engine::set_state(SegIt it, SegmentState state) {
  if (it->second.state == state)
    return;
  unindex_path(it);
  it->second.state = state;
  index_path(it);
}

void Engine::set_bytes(SegIt it, uint64_t bytes) {
  Segment &s = it->second;
  if (!it->first.is_sysv()) {
    DevStats &d = devs_[it->first.dev_or_ipcns];
    d.bytes = sat_sub(d.bytes, s.bytes) + bytes;
  }
  s.bytes = bytes;
}

void Engine::set_creator(Segment &s, uint32_t pid, const Process &p) {
  s.creator_pid = pid;
  s.creator_uid = p.uid;
  s.creator_cgroup = p.cgroup_id;
  s.creator_serial = p.serial;
  s.creator_comm.fill('\0');
  std::copy_n(p.comm.begin(), std::min(p.comm.size(), s.creator_comm.size() - 1),
              s.creator_comm.begin());
}

void Engine::hold(SegIt it, uint32_t pid, Process &p, ExecHint hint) {
  if (it->second.holders.insert(pid)) {
    p.held.push_back({it->first, hint != ExecHint::cloexec});
    return;
  }
  if (hint != ExecHint::survives)
    return;
  // Already a holder: a new fd without O_CLOEXEC keeps it past exec. Recent
  // holds are at the back.
  for (size_t i = p.held.size(); i-- > 0;) {
    if (p.held[i].key == it->first) {
      p.held[i].keep_on_exec = true;
      return;
    }
  }
}

void Engine::unhold(SegIt it, uint32_t pid) {
  if (!it->second.holders.erase(pid))
    return;
  auto pit = procs_.find(pid);
  if (pit == procs_.end())
    return;
  auto &held = pit->second.held;
  for (size_t i = held.size(); i-- > 0;) {
    if (held[i].key == it->first) {
      held[i] = held.back();
      held.pop_back();
      break;
    }
  }
  std::erase_if(pit->second.attachments, [&](const Attachment &a) { return a.key == it->first; });
}

void Engine::release(uint32_t pid, Process &p, bool exec_only, uint64_t ts) {
  std::vector<SegmentKey> touched;
  size_t kept = 0;
  for (const Held &h : p.held) {
    // Mappings, and so SysV attachments, never survive exec; fds do unless
    // they were opened close-on-exec.
    if (exec_only && h.keep_on_exec && !h.key.is_sysv()) {
      p.held[kept++] = h;
      continue;
    }
    auto it = segs_.find(h.key);
    if (it == segs_.end())
      continue;
    Segment &s = it->second;
    s.holders.erase(pid);
    if (h.key.is_sysv()) {
      // Attachments seen through shmat, or at least one if the hold came
      // from a maps scan.
      auto n = std::count_if(p.attachments.begin(), p.attachments.end(),
                             [&](const Attachment &a) { return a.key == h.key; });
      s.nattch = static_cast<uint32_t>(sat_sub(s.nattch, std::max<uint64_t>(n, 1)));
    }
    s.changed_ns = std::max(s.changed_ns, ts);
    touched.push_back(h.key);
  }
  p.held.resize(kept);
  p.attachments.clear();
  for (const SegmentKey &key : touched)
    if (auto it = segs_.find(key); it != segs_.end())
      collect_if_unused(it);
}

bool Engine::collect_if_unused(SegIt it) {
  const Segment &s = it->second;
  if (s.state != SegmentState::unlinked)
    return false;
  if (it->first.is_sysv() ? s.nattch != 0 : !s.holders.empty())
    return false;
  erase_segment(it);
  return true;
}

Engine::SegIt Engine::find_by_path(std::string_view path, uint32_t dev) {
  SegIt found = segs_.end();
  int matches = 0;
  const uint32_t h = PathStr::hash_of(path);
  by_path_.find(path_key(h), [&](uint32_t i) {
    const Slot &slot = segs_.slot(i);
    if (slot.second.path.hash() != h || (dev != 0 && slot.first.dev_or_ipcns != dev) ||
        !(slot.second.path == path))
      return false;
    found = SegIt(&segs_, i);
    ++matches;
    return false; // count them all
  });
  // The same path in two mount namespaces with no dev to tell them apart.
  return matches == 1 ? found : segs_.end();
}

Engine::SegIt Engine::find_linked_by_name(const Event &e) {
  if (e.ino != 0) {
    auto it = segs_.find(SegmentKey::file(e.dev, e.ino));
    // The (dev, ino) of an unlink is a hint: trust it only if the path agrees.
    if (it != segs_.end() && it->second.state == SegmentState::linked &&
        (e.full_path.empty() || !(it->second.flags & kPathFull) || it->second.path == e.full_path))
      return it;
  }
  if (e.full_path.empty())
    return segs_.end();
  return find_by_path(e.full_path, e.dev);
}

// --- events ------------------------------------------------------------------

namespace {

// The path to show for a file event: resolved, else in-mount, else as passed.
std::pair<std::string_view, bool> event_path(const Event &e) {
  if (!e.full_path.empty())
    return {e.full_path, e.full_path.starts_with('/')};
  if (!e.name.empty())
    return {e.name, false};
  return {e.path, false};
}

} // namespace

void Engine::on_open(const Event &e) {
  if (e.ret < 0 || e.ino == 0 || e.kind == Kind::sysv) {
    ++stats_.ignored;
    return;
  }
  Process &p = touch_process(e);
  const SegmentKey key = SegmentKey::file(e.dev, e.ino);
  const bool fresh = e.type == EventType::create && e.is_new;
  auto it = segs_.find(key);
  if (it != segs_.end() && fresh) {
    erase_segment(it); // the inode number was reused after a destruction we missed
    it = segs_.end();
  }
  if (it == segs_.end()) {
    it = insert_segment(key, e.kind == Kind::memfd ? Kind::memfd : Kind::tmpfs);
    if (fresh) {
      set_creator(it->second, e.pid, p);
      it->second.born = static_cast<int64_t>(e.ts_ns);
      p.creates.hit(e.ts_ns);
      creates_.hit(e.ts_ns);
    } else {
      it->second.flags |= kExistedBefore;
    }
  }
  Segment &s = it->second;
  if (e.kind == Kind::memfd)
    s.kind = Kind::memfd;
  if (fresh || !(s.flags & kPathFull)) {
    auto [path, full] = event_path(e);
    if (!path.empty())
      set_path(it, path, full);
  }
  if (e.mnt_id)
    s.mnt_id = e.mnt_id;
  s.size = e.size;
  set_bytes(it, e.bytes);
  set_state(it,
            s.kind == Kind::memfd || e.unlinked ? SegmentState::unlinked : SegmentState::linked);
  hold(it, e.pid, p, (e.flags & O_CLOEXEC) ? ExecHint::cloexec : ExecHint::survives);
  s.changed_ns = e.ts_ns;
}

void Engine::on_memfd_create(const Event &e) {
  if (e.ret < 0 || e.ino == 0) {
    ++stats_.ignored;
    return;
  }
  Process &p = touch_process(e);
  const SegmentKey key = SegmentKey::file(e.dev, e.ino);
  if (auto old = segs_.find(key); old != segs_.end())
    erase_segment(old);
  auto it = insert_segment(key, Kind::memfd);
  Segment &s = it->second;
  set_creator(s, e.pid, p);
  s.born = static_cast<int64_t>(e.ts_ns);
  p.creates.hit(e.ts_ns);
  creates_.hit(e.ts_ns);
  set_path(it, !e.name.empty() ? e.name : "memfd:" + e.path, false);
  if (e.mnt_id)
    s.mnt_id = e.mnt_id;
  s.size = e.size;
  set_bytes(it, e.bytes);
  set_state(it, SegmentState::unlinked); // a memfd never has a name
  hold(it, e.pid, p, (e.flags & kMfdCloexec) ? ExecHint::cloexec : ExecHint::survives);
  s.changed_ns = e.ts_ns;
}

void Engine::on_resize(const Event &e) {
  if (e.ret < 0 && (e.err == ENOSPC || e.ret == -ENOSPC) && e.dev != 0)
    ++devs_[e.dev].enospc;
  if (e.ino == 0 || e.kind == Kind::sysv) {
    ++stats_.ignored;
    return;
  }
  Process &p = touch_process(e);
  const SegmentKey key = SegmentKey::file(e.dev, e.ino);
  auto it = segs_.find(key);
  if (it == segs_.end()) {
    if (e.ret < 0) {
      ++stats_.ignored;
      return;
    }
    // A file created before tracking (or whose create was lost).
    it = insert_segment(key, e.kind == Kind::memfd ? Kind::memfd : Kind::tmpfs);
    it->second.flags |= kExistedBefore;
    auto [path, full] = event_path(e);
    set_path(it, path, full);
  }
  Segment &s = it->second;
  if (e.mnt_id)
    s.mnt_id = e.mnt_id;
  // size and bytes are observed after the call, failed or not.
  s.size = e.size;
  set_bytes(it, e.bytes);
  set_state(it,
            s.kind == Kind::memfd || e.unlinked ? SegmentState::unlinked : SegmentState::linked);
  hold(it, e.pid, p, ExecHint::unknown);
  s.changed_ns = e.ts_ns;
}

void Engine::on_unlink(const Event &e) {
  if (e.ret != 0) {
    ++stats_.ignored;
    return;
  }
  touch_process(e).unlinks.hit(e.ts_ns);
  unlinks_.hit(e.ts_ns);
  auto it = find_linked_by_name(e);
  if (it == segs_.end()) {
    ++stats_.ignored;
    return;
  }
  set_state(it, SegmentState::unlinked);
  it->second.changed_ns = e.ts_ns;
  // With bytes left, the kernel's frees (or a reconcile) finish the job.
  if (it->second.holders.empty() && it->second.bytes == 0)
    erase_segment(it);
}

void Engine::on_rename(const Event &e) {
  if (e.ret != 0) {
    ++stats_.ignored;
    return;
  }
  touch_process(e);
  auto it = find_linked_by_name(e);
  if (it == segs_.end()) {
    ++stats_.ignored;
    return;
  }
  std::string to = renamed_path(e);
  if (to.empty()) {
    // Unknown target directory: show the name as passed until a reconcile.
    set_path(it, e.newpath, false);
  } else {
    auto target = find_by_path(to, it->first.dev_or_ipcns);
    if (target != segs_.end() && target != it) {
      if (e.flags & kRenameExchange) {
        set_path(target, std::string(it->second.path.view()), true);
        target->second.changed_ns = e.ts_ns;
      } else {
        // Replaced: the old target lost its name.
        set_state(target, SegmentState::unlinked);
        target->second.changed_ns = e.ts_ns;
        if (target->second.holders.empty() && target->second.bytes == 0)
          erase_segment(target);
      }
    }
    set_path(it, to, true);
  }
  it->second.changed_ns = e.ts_ns;
}

void Engine::on_free(const Event &e) {
  // The header is whoever freed the pages (often a kernel thread): no
  // process bookkeeping.
  auto it = e.ino ? segs_.find(SegmentKey::file(e.dev, e.ino)) : segs_.end();
  if (it == segs_.end()) {
    ++stats_.ignored;
    return;
  }
  set_bytes(it, sat_sub(it->second.bytes, e.bytes));
  it->second.changed_ns = e.ts_ns;
  if (e.unlinked) {
    set_state(it, SegmentState::unlinked);
    if (it->second.holders.empty())
      erase_segment(it); // eviction: the last reference is gone
  }
}

void Engine::on_shmget(const Event &e) {
  if (e.ret < 0) {
    ++stats_.ignored;
    return;
  }
  Process &p = touch_process(e);
  const SegmentKey key = SegmentKey::sysv(e.ipcns, e.shmid >= 0 ? e.shmid : e.ret);
  const bool created = e.created == kShmgetCreated;
  auto it = segs_.find(key);
  if (it != segs_.end() && created) {
    erase_segment(it); // shmid reused after a removal we missed
    it = segs_.end();
  }
  if (it == segs_.end()) {
    it = insert_segment(key, Kind::sysv);
    if (created) {
      set_creator(it->second, e.pid, p);
      it->second.born = static_cast<int64_t>(e.ts_ns);
      p.creates.hit(e.ts_ns);
      creates_.hit(e.ts_ns);
    } else {
      it->second.flags |= kExistedBefore;
    }
  }
  Segment &s = it->second;
  s.sysv_key = e.key;
  if (created || s.size == 0)
    s.size = e.size;
  s.changed_ns = e.ts_ns;
}

void Engine::on_shmat(const Event &e) {
  if (e.ret < 0 || e.shmid < 0) {
    ++stats_.ignored;
    return;
  }
  Process &p = touch_process(e);
  const SegmentKey key = SegmentKey::sysv(e.ipcns, e.shmid);
  auto it = segs_.find(key);
  if (it == segs_.end()) {
    it = insert_segment(key, Kind::sysv);
    it->second.flags |= kExistedBefore;
  }
  ++it->second.nattch;
  hold(it, e.pid, p, ExecHint::cloexec);
  p.attachments.push_back({e.addr, key});
  it->second.changed_ns = e.ts_ns;
}

void Engine::on_shmdt(const Event &e) {
  if (e.ret < 0) {
    ++stats_.ignored;
    return;
  }
  Process &p = touch_process(e);
  // shmdt names an address only: map it back through the shmat we saw.
  auto a = std::find_if(p.attachments.rbegin(), p.attachments.rend(),
                        [&](const Attachment &x) { return x.addr == e.addr; });
  if (a == p.attachments.rend()) {
    ++stats_.ignored;
    return;
  }
  const SegmentKey key = a->key;
  p.attachments.erase(std::next(a).base());
  auto it = segs_.find(key);
  if (it == segs_.end())
    return;
  Segment &s = it->second;
  s.nattch = static_cast<uint32_t>(sat_sub(s.nattch, 1));
  s.changed_ns = e.ts_ns;
  if (std::none_of(p.attachments.begin(), p.attachments.end(),
                   [&](const Attachment &x) { return x.key == key; }))
    unhold(it, e.pid);
  collect_if_unused(it);
}

void Engine::on_shm_rmid(const Event &e) {
  if (e.ret < 0) {
    ++stats_.ignored;
    return;
  }
  touch_process(e).unlinks.hit(e.ts_ns);
  unlinks_.hit(e.ts_ns);
  auto it = segs_.find(SegmentKey::sysv(e.ipcns, e.shmid));
  if (it == segs_.end()) {
    ++stats_.ignored;
    return;
  }
  set_state(it, SegmentState::unlinked); // destroyed at the last detach
  it->second.changed_ns = e.ts_ns;
  collect_if_unused(it);
}

void Engine::on_exit(const Event &e) {
  auto pit = procs_.find(e.pid);
  if (pit == procs_.end())
    return; // exit may be reported twice
  release(e.pid, pit->second, false, e.ts_ns);
  procs_.erase(pit);
}

void Engine::on_exec(const Event &e) { release(e.pid, touch_process(e), true, e.ts_ns); }

void Engine::on_sigbus(const Event &e) {
  // Kernel-generated (a fault, the interesting case) has si_code > 0;
  // kill(2) and friends have si_code <= 0.
  if (e.si_code > 0) {
    ++touch_process(e).sigbus;
    ++sigbus_;
  } else
    ++stats_.ignored;
}

// --- bootstrap and reconcile -------------------------------------------------

bool Engine::set_file_usage(SegmentKey key, uint64_t size, uint64_t bytes, uint64_t now_ns) {
  auto it = segs_.find(key);
  if (it == segs_.end() || key.is_sysv())
    return false;
  if (it->second.size != size || it->second.bytes != bytes)
    it->second.changed_ns = now_ns;
  it->second.size = size;
  set_bytes(it, bytes);
  return true;
}

void Engine::add_existing_file(const TmpfsFile &f, uint32_t mnt_id_or_0, std::string mountpoint) {
  if (!mountpoint.empty()) {
    if (mnt_id_or_0)
      mnt_names_.try_emplace(mnt_id_or_0, mountpoint);
    dev_names_.try_emplace(f.dev, std::move(mountpoint));
  }
  const SegmentKey key = SegmentKey::file(f.dev, f.ino);
  auto it = segs_.find(key);
  if (it == segs_.end()) {
    it = insert_segment(key, f.leaf.starts_with("memfd:") ? Kind::memfd : Kind::tmpfs);
    Segment &s = it->second;
    s.flags |= kExistedBefore;
    s.creator_uid = f.uid; // the owner: the best guess at who created it
    s.born = f.mtime_s;
    s.changed_ns = last_ts_;
    set_path(it, f.path, f.path.starts_with('/'));
    set_state(it, f.nlink == 0 ? SegmentState::unlinked : SegmentState::linked);
  } else if (!(it->second.flags & kPathFull) && !f.path.empty()) {
    set_path(it, f.path, f.path.starts_with('/'));
  }
  Segment &s = it->second;
  if (!s.mnt_id)
    s.mnt_id = mnt_id_or_0;
  s.size = f.size;
  set_bytes(it, f.bytes);
}

bool Engine::add_holder(uint32_t pid, SegmentKey key) {
  auto it = segs_.find(key);
  if (it == segs_.end())
    return false;
  Process &p = process_entry(pid);
  hold(it, pid, p, ExecHint::unknown);
  if (key.is_sysv())
    it->second.nattch = std::max(it->second.nattch, it->second.holders.size());
  return true;
}

bool Engine::set_holders(SegmentKey key, std::vector<uint32_t> pids) {
  auto it = segs_.find(key);
  if (it == segs_.end())
    return false;
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  std::vector<uint32_t> gone_holders;
  for (uint32_t pid : it->second.holders)
    if (!std::binary_search(pids.begin(), pids.end(), pid))
      gone_holders.push_back(pid);
  for (uint32_t pid : gone_holders)
    unhold(it, pid);
  for (uint32_t pid : pids)
    hold(it, pid, process_entry(pid), ExecHint::unknown);
  if (key.is_sysv())
    it->second.nattch = std::max(it->second.nattch, it->second.holders.size());
  collect_if_unused(it);
  return true;
}

void Engine::add_process(uint32_t pid, uint32_t ppid, uint32_t uid, std::string comm,
                         uint64_t cgroup_id, uint32_t mntns, uint32_t ipcns) {
  Process &p = process_entry(pid);
  p.ppid = ppid;
  p.uid = uid;
  p.comm = std::move(comm);
  p.cgroup_id = cgroup_id;
  p.mntns = mntns;
  if (ipcns)
    p.ipcns = ipcns;
}

void Engine::add_sysv(uint32_t ipcns, int32_t shmid, uint32_t key, uint64_t size,
                      uint64_t rss_bytes, uint32_t cpid, uint32_t nattch) {
  upsert_sysv(ipcns, SysvEntry{shmid, key, size, rss_bytes, cpid, nattch, false}, last_ts_);
}

void Engine::upsert_sysv(uint32_t ipcns, const SysvEntry &t, uint64_t now_ns) {
  if (t.shmid < 0)
    return;
  const SegmentKey key = SegmentKey::sysv(ipcns, t.shmid);
  auto it = segs_.find(key);
  if (it == segs_.end()) {
    it = insert_segment(key, Kind::sysv);
    it->second.flags |= kExistedBefore;
  }
  Segment &s = it->second;
  if (s.creator_pid == 0 && t.cpid != 0) {
    // Scans may list segments before their creator's process: match any
    // incarnation of cpid (serial 0) rather than guess it exited.
    if (auto pit = procs_.find(t.cpid); pit != procs_.end())
      set_creator(s, t.cpid, pit->second);
    s.creator_pid = t.cpid;
    s.creator_serial = 0;
  }
  s.sysv_key = t.key;
  s.size = t.size;
  s.bytes = t.rss_bytes;
  s.nattch = t.nattch;
  s.changed_ns = now_ns;
  if (t.nattch == 0) {
    // Nobody is attached, whatever our shmat/exit bookkeeping says.
    std::vector<uint32_t> stale(s.holders.begin(), s.holders.end());
    for (uint32_t pid : stale)
      unhold(it, pid);
  }
  if (t.removed)
    set_state(it, SegmentState::unlinked);
  collect_if_unused(it);
}

void Engine::set_cgroup_path(uint64_t cgroup_id, std::string path) {
  auto container = container_from_cgroup_path(path);
  cgroups_[cgroup_id] = CgroupEntry{std::move(path), std::move(container)};
}

void Engine::set_mount(MountState m) {
  mnt_names_[m.mnt_id] = m.mountpoint;
  dev_names_.try_emplace(m.dev, m.mountpoint);
  auto it = mounts_.find(m.mnt_id);
  if (!m.used_known) {
    // The last measurement, moved by the events since, stays the estimate;
    // a mount never measured waits for its first measurement.
    if (it != mounts_.end()) {
      m.used_bytes = it->second.state.used_bytes;
      m.used_known = true;
      it->second.state = std::move(m);
    }
    return;
  }
  MountEntry &entry = mounts_[m.mnt_id];
  auto d = devs_.find(m.dev);
  entry.baseline = d == devs_.end() ? 0 : static_cast<int64_t>(d->second.bytes);
  entry.state = std::move(m);
}

void Engine::reconcile_mounts(std::vector<MountState> mounts) {
  std::unordered_set<uint32_t> present;
  for (const MountState &m : mounts)
    present.insert(m.mnt_id);
  for (auto it = mounts_.begin(); it != mounts_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    mnt_names_.erase(it->first);
    it = mounts_.erase(it);
  }
  for (MountState &m : mounts)
    set_mount(std::move(m));
}

uint64_t Engine::used_now(const MountEntry &m) const {
  auto d = devs_.find(m.state.dev);
  int64_t tracked = d == devs_.end() ? 0 : static_cast<int64_t>(d->second.bytes);
  int64_t used = static_cast<int64_t>(m.state.used_bytes) + (tracked - m.baseline);
  return used > 0 ? static_cast<uint64_t>(used) : 0;
}

void Engine::sample_mounts(uint64_t now_ns) {
  for (auto &[id, m] : mounts_) {
    m.samples.emplace_back(now_ns, used_now(m));
    while (m.samples.size() > std::max<size_t>(config_.max_samples, 2) ||
           (m.samples.size() > 1 &&
            sat_sub(now_ns, m.samples.front().first) > config_.growth_window_ns))
      m.samples.pop_front();
  }
}

void Engine::reconcile_tmpfs(uint32_t dev, const std::vector<TmpfsFile> &truth, uint64_t now_ns) {
  std::vector<uint64_t> present; // inodes, sorted below
  present.reserve(truth.size());
  for (const TmpfsFile &f : truth) {
    if (f.dev != dev)
      continue;
    present.push_back(f.ino);
    auto it = segs_.find(SegmentKey::file(f.dev, f.ino));
    if (it == segs_.end()) {
      add_existing_file(f, 0, {});
      segs_.find(SegmentKey::file(f.dev, f.ino))->second.changed_ns = now_ns;
      continue;
    }
    Segment &s = it->second;
    bool changed = false;
    if (!(s.path == f.path) || !(s.flags & kPathFull)) {
      set_path(it, f.path, f.path.starts_with('/')); // a rename we missed
      changed = true;
    }
    if (s.state != SegmentState::linked) {
      set_state(it, SegmentState::linked);
      changed = true;
    }
    if (s.size != f.size || s.bytes != f.bytes) {
      s.size = f.size;
      set_bytes(it, f.bytes);
      changed = true;
    }
    if (changed)
      s.changed_ns = now_ns;
  }

  std::sort(present.begin(), present.end());
  std::vector<SegmentKey> vanished;
  for (const auto &[key, s] : segs_)
    if (!key.is_sysv() && key.dev_or_ipcns == dev && s.kind == Kind::tmpfs &&
        !std::binary_search(present.begin(), present.end(), key.ino_or_shmid))
      vanished.push_back(key);
  for (const SegmentKey &key : vanished) {
    auto it = segs_.find(key);
    if (it->second.holders.empty()) {
      erase_segment(it); // an unlinked file nobody holds cannot exist either
    } else if (it->second.state == SegmentState::linked) {
      set_state(it, SegmentState::unlinked);
      it->second.changed_ns = now_ns;
    }
  }
}

void Engine::reconcile_sysv(uint32_t ipcns, const std::vector<SysvEntry> &truth, uint64_t now_ns) {
  now_ns = now_or_last(now_ns);
  std::unordered_set<uint64_t> present;
  present.reserve(truth.size());
  for (const SysvEntry &t : truth) {
    if (t.shmid < 0)
      continue;
    present.insert(SegmentKey::sysv(ipcns, t.shmid).ino_or_shmid);
    upsert_sysv(ipcns, t, now_ns);
  }
  std::vector<SegmentKey> vanished;
  for (const auto &[key, s] : segs_)
    if (key.is_sysv() && key.dev_or_ipcns == ipcns && !present.count(key.ino_or_shmid))
      vanished.push_back(key);
  for (const SegmentKey &key : vanished)
    erase_segment(segs_.find(key));
}

void Engine::reconcile_processes(const std::vector<uint32_t> &live_pids) {
  std::unordered_set<uint32_t> live(live_pids.begin(), live_pids.end());
  std::vector<uint32_t> dead;
  for (const auto &[pid, p] : procs_)
    if (!live.count(pid))
      dead.push_back(pid);
  for (uint32_t pid : dead) {
    auto pit = procs_.find(pid);
    release(pid, pit->second, false, last_ts_);
    procs_.erase(pit);
  }
}

void Engine::reconcile_holders(const std::vector<std::pair<uint32_t, SegmentKey>> &holdings) {
  // The truth by slot, sorted: segments are numbered densely, and a hash
  // map of a list per segment was most of a rescan's engine time.
  std::vector<std::pair<uint32_t, uint32_t>> truth; // (slot, pid)
  truth.reserve(holdings.size());
  for (const auto &[pid, key] : holdings)
    if (auto it = segs_.find(key); it != segs_.end())
      truth.emplace_back(it.index(), pid);
  std::sort(truth.begin(), truth.end());
  // One walk of the segments, in slot order as the truth is. set_holders
  // may destroy a segment (unlinked, last holder gone): the keys are taken
  // first.
  std::vector<std::pair<SegmentKey, std::vector<uint32_t>>> todo;
  size_t t = 0;
  for (auto it = segs_.begin(); it != segs_.end(); ++it) {
    const auto &[key, s] = *it;
    std::vector<uint32_t> pids;
    for (; t < truth.size() && truth[t].first == it.index(); ++t)
      pids.push_back(truth[t].second);
    if (!s.holders.empty() || !pids.empty())
      todo.emplace_back(key, std::move(pids));
  }
  for (auto &[key, pids] : todo)
    set_holders(key, std::move(pids));
}

bool Engine::reconcile_process_files(uint32_t pid, std::vector<SegmentKey> files) {
  auto pit = procs_.find(pid);
  if (pit == procs_.end())
    return false;
  Process &p = pit->second;
  std::unordered_set<SegmentKey, SegmentKeyHash> truth(files.begin(), files.end());
  // The held list is filtered in one pass: unholding the dropped files one
  // by one searches the list for each, quadratic in what a process that
  // creates files fast held since the last look (close(2) is not traced).
  std::vector<SegmentKey> dropped;
  size_t kept = 0;
  for (const Held &h : p.held) {
    if (!h.key.is_sysv() && !truth.count(h.key))
      dropped.push_back(h.key);
    else
      p.held[kept++] = h;
  }
  p.held.resize(kept);
  if (!dropped.empty() && !p.attachments.empty()) {
    std::unordered_set<SegmentKey, SegmentKeyHash> gone(dropped.begin(), dropped.end());
    std::erase_if(p.attachments, [&](const Attachment &a) { return gone.count(a.key) != 0; });
  }
  for (const SegmentKey &key : dropped)
    if (auto it = segs_.find(key); it != segs_.end()) {
      it->second.holders.erase(pid);
      collect_if_unused(it);
    }
  for (const SegmentKey &key : truth)
    if (auto it = segs_.find(key); it != segs_.end() && !key.is_sysv())
      hold(it, pid, p, ExecHint::unknown);
  return true;
}

// --- queries -----------------------------------------------------------------

bool Engine::creator_alive(const Segment &s) const {
  if (s.creator_pid == 0)
    return false;
  auto pit = procs_.find(s.creator_pid);
  return pit != procs_.end() && (s.creator_serial == 0 || pit->second.serial == s.creator_serial);
}

bool Engine::is_orphan(const Segment &s, bool sysv, uint64_t now_ns, uint64_t min_age_ns) const {
  // It must pin something: a name, or pages of an unlinked file.
  const bool pins =
      sysv ? s.state == SegmentState::linked : s.state == SegmentState::linked || s.bytes > 0;
  if (!pins || !s.holders.empty() || (sysv && s.nattch > 0))
    return false;
  if (creator_alive(s))
    return false;
  if (s.creator_pid == 0 && s.pattern == NamePattern::torch &&
      procs_.count(classify_shm_name(s.path).pid))
    return false; // the pid in the torch name is alive: assume it is the creator
  return age_ns(s, now_ns) >= min_age_ns;
}

Engine::NsContainers Engine::ns_containers() const {
  // A namespace belongs to a container when every process in it that we
  // know is in that container: the host's has host processes, and one
  // shared by two containers (a pod's IPC namespace) is ambiguous.
  NsContainers out;
  auto note = [](std::unordered_map<uint32_t, const ContainerRef *> &map,
                 std::unordered_set<uint32_t> &mixed, uint32_t ns, const ContainerRef *c) {
    if (!ns || mixed.count(ns))
      return;
    auto [it, fresh] = map.try_emplace(ns, c);
    if (!fresh && it->second != c && !(it->second && c && it->second->id == c->id)) {
      map.erase(it);
      mixed.insert(ns);
    }
  };
  std::unordered_set<uint32_t> mixed_mnt, mixed_ipc;
  for (const auto &[pid, p] : procs_) {
    const ContainerRef *c = container_of(p.cgroup_id);
    note(out.mnt, mixed_mnt, p.mntns, c);
    note(out.ipc, mixed_ipc, p.ipcns, c);
  }
  return out;
}

const ContainerRef *Engine::segment_container(const SegmentKey &key, const Segment &s,
                                              const NsContainers &ns) const {
  if (s.creator_pid != 0 && s.creator_cgroup != 0)
    return container_of(s.creator_cgroup);
  // Creator unknown: the namespace it lives in tells. A SysV segment
  // belongs to an IPC namespace; a file to the mount namespace of the mount
  // it was found on (a container's own /dev/shm).
  auto in = [](const std::unordered_map<uint32_t, const ContainerRef *> &map,
               uint32_t id) -> std::optional<const ContainerRef *> {
    if (auto it = map.find(id); it != map.end())
      return it->second;
    return std::nullopt;
  };
  if (key.is_sysv()) {
    if (auto c = in(ns.ipc, key.dev_or_ipcns))
      return *c;
  } else if (s.mnt_id) {
    if (auto m = mounts_.find(s.mnt_id); m != mounts_.end())
      if (auto c = in(ns.mnt, m->second.state.mntns))
        return *c;
  }
  // Otherwise the holders, when they agree.
  const ContainerRef *found = nullptr;
  bool first = true;
  for (uint32_t pid : s.holders) {
    auto pit = procs_.find(pid);
    if (pit == procs_.end())
      continue;
    const ContainerRef *c = container_of(pit->second.cgroup_id);
    if (!first && c != found)
      return nullptr;
    found = c;
    first = false;
  }
  return found;
}

uint64_t Engine::age_ns(const Segment &s, uint64_t now_ns) const {
  if (!(s.flags & kExistedBefore))
    return sat_sub(now_ns, static_cast<uint64_t>(s.born));
  if (s.born != 0 && config_.realtime_offset_ns) {
    int64_t real_now = static_cast<int64_t>(now_ns) + *config_.realtime_offset_ns;
    int64_t mtime_ns = s.born * 1'000'000'000;
    return real_now > mtime_ns ? static_cast<uint64_t>(real_now - mtime_ns) : 0;
  }
  return sat_sub(now_ns, config_.start_ns);
}

const ContainerRef *Engine::container_of(uint64_t cgroup_id) const {
  auto it = cgroups_.find(cgroup_id);
  if (it == cgroups_.end() || !it->second.container)
    return nullptr;
  return &*it->second.container;
}

std::string Engine::mountpoint_of(const SegmentKey &key, const Segment &s) const {
  if (key.is_sysv())
    return {};
  if (s.mnt_id)
    if (auto it = mnt_names_.find(s.mnt_id); it != mnt_names_.end())
      return it->second;
  if (auto it = dev_names_.find(key.dev_or_ipcns); it != dev_names_.end())
    return it->second;
  return {};
}

SegmentInfo Engine::info(const SegmentKey &key, const Segment &s, const NsContainers *ns) const {
  SegmentInfo i;
  i.key = key;
  i.key.kind = s.kind;
  i.kind = s.kind;
  i.path = key.is_sysv() ? sysv_name(s.sysv_key) : std::string(s.path.view());
  i.mnt_id = s.mnt_id;
  i.mountpoint = mountpoint_of(key, s);
  i.size = s.size;
  i.bytes = s.bytes;
  i.state = s.state;
  i.creator.pid = s.creator_pid;
  i.creator.uid = s.creator_uid;
  i.creator.comm.assign(s.creator_comm.data(), ::strnlen(s.creator_comm.data(), 16));
  i.creator.cgroup_id = s.creator_cgroup;
  if (const ContainerRef *c = container_of(s.creator_cgroup))
    i.creator.container_id = c->id;
  i.creator.known = s.creator_pid != 0;
  i.creator.exited = i.creator.known && !creator_alive(s);
  i.existed_before = s.flags & kExistedBefore;
  i.created_ns = i.existed_before ? 0 : static_cast<uint64_t>(s.born);
  i.mtime_s = i.existed_before ? s.born : 0;
  i.holders.assign(s.holders.begin(), s.holders.end());
  std::sort(i.holders.begin(), i.holders.end());
  i.nattch = s.nattch;
  i.sysv_key = s.sysv_key;
  i.changed_ns = s.changed_ns;
  i.pattern = s.pattern;
  if (!i.creator.known && s.pattern == NamePattern::torch)
    i.inferred_pid = classify_shm_name(s.path).pid;
  const ContainerRef *c = nullptr;
  if (ns) {
    c = segment_container(key, s, *ns);
  } else {
    const NsContainers own = ns_containers();
    c = segment_container(key, s, own);
  }
  if (c)
    i.container = *c;
  return i;
}

std::optional<SegmentInfo> Engine::segment(const SegmentKey &key) const {
  auto it = segs_.find(key);
  if (it == segs_.end())
    return std::nullopt;
  return info(it->first, it->second);
}

bool Engine::matches(const SegmentKey &key, const Segment &s, const SegmentFilter &f,
                     const NsContainers &ns) const {
  if (f.kind && s.kind != *f.kind)
    return false;
  if (f.state && s.state != *f.state)
    return false;
  if (f.pid && s.creator_pid != *f.pid && !s.holders.contains(*f.pid))
    return false;
  if (f.container) {
    bool any = container_matches(segment_container(key, s, ns), *f.container);
    for (uint32_t pid : s.holders) {
      if (any)
        break;
      auto pit = procs_.find(pid);
      any = pit != procs_.end() &&
            container_matches(container_of(pit->second.cgroup_id), *f.container);
    }
    if (!any)
      return false;
  }
  if (f.mount && mountpoint_of(key, s) != *f.mount)
    return false;
  if (f.path_glob) {
    std::string path = key.is_sysv() ? sysv_name(s.sysv_key) : std::string(s.path.view());
    if (::fnmatch(f.path_glob->c_str(), path.c_str(), 0) != 0)
      return false;
  }
  return true;
}

std::vector<SegmentInfo> Engine::segments(const SegmentFilter &filter) const {
  return segments(filter, 0, 0);
}

std::vector<SegmentInfo> Engine::segments(const SegmentFilter &filter, uint64_t now_ns,
                                          uint64_t orphan_min_age_ns) const {
  std::vector<SegmentInfo> out;
  for_each_segment(filter, now_ns, orphan_min_age_ns,
                   [&](SegmentInfo &&i) { out.push_back(std::move(i)); });
  return out;
}

void Engine::for_each_segment(const SegmentFilter &filter, uint64_t now_ns,
                              uint64_t orphan_min_age_ns,
                              const std::function<void(SegmentInfo &&)> &fn) const {
  // Sort light references, then build the (heavy) results in order: moving
  // SegmentInfo objects around in the sort cost more than everything else.
  struct Ref {
    std::string_view path;
    const SegmentKey *key;
    const Segment *seg;
  };
  const NsContainers ns = ns_containers();
  std::deque<std::string> sysv_names; // stable storage for the views
  std::vector<Ref> refs;
  refs.reserve(segs_.size());
  for (const auto &[key, s] : segs_) {
    if (!matches(key, s, filter, ns))
      continue;
    std::string_view path = s.path;
    if (key.is_sysv())
      path = sysv_names.emplace_back(sysv_name(s.sysv_key));
    refs.push_back({path, &key, &s});
  }
  std::sort(refs.begin(), refs.end(), [](const Ref &a, const Ref &b) {
    if (a.path != b.path)
      return a.path < b.path;
    return *a.key < *b.key;
  });
  for (const Ref &r : refs) {
    SegmentInfo i = info(*r.key, *r.seg, &ns);
    if (now_ns) {
      i.age_ns = age_ns(*r.seg, now_ns);
      i.orphan = is_orphan(*r.seg, r.key->is_sysv(), now_ns, orphan_min_age_ns);
    }
    fn(std::move(i));
  }
}

SegmentScan::SegmentScan(const Engine &engine, uint64_t now_ns, uint64_t orphan_min_age_ns)
    : engine_(engine), ns_(engine.ns_containers()), now_ns_(now_ns),
      orphan_min_age_ns_(orphan_min_age_ns) {}

void SegmentScan::for_each(const std::function<void(const Item &)> &f) const {
  for (auto it = engine_.segs_.begin(); it != engine_.segs_.end(); ++it) {
    const SegmentKey &key = it->first;
    const Engine::Segment &s = it->second;
    Item item;
    item.key = key;
    item.key.kind = s.kind;
    item.path = key.is_sysv() ? std::string_view(names_.emplace_back(sysv_name(s.sysv_key)))
                              : s.path.view();
    item.creator_comm =
        std::string_view(s.creator_comm.data(), ::strnlen(s.creator_comm.data(), 16));
    item.creator_pid = s.creator_pid;
    item.size = s.size;
    item.bytes = s.bytes;
    item.changed_ns = s.changed_ns;
    item.age_ns = engine_.age_ns(s, now_ns_);
    item.holders_begin = s.holders.begin();
    item.holders_end = s.holders.end();
    item.slot = it.index();
    f(item);
  }
}

std::string_view SegmentScan::container_id(const Item &item) const {
  const Engine::Slot &slot = engine_.segs_.slot(item.slot);
  const ContainerRef *c = engine_.segment_container(slot.first, slot.second, ns_);
  if (c && !c->id.empty())
    return c->id;
  const ContainerRef *creator = engine_.container_of(slot.second.creator_cgroup);
  return creator ? std::string_view(creator->id) : std::string_view();
}

SegmentInfo SegmentScan::info(const Item &item) const {
  const Engine::Slot &slot = engine_.segs_.slot(item.slot);
  SegmentInfo i = engine_.info(slot.first, slot.second, &ns_);
  if (now_ns_) {
    i.age_ns = engine_.age_ns(slot.second, now_ns_);
    i.orphan = engine_.is_orphan(slot.second, slot.first.is_sysv(), now_ns_, orphan_min_age_ns_);
  }
  return i;
}

ProcessInfo Engine::process_info(uint32_t pid, const Process &p, uint64_t now_ns,
                                 bool count_held) const {
  ProcessInfo i;
  i.pid = pid;
  i.ppid = p.ppid;
  i.uid = p.uid;
  i.mntns = p.mntns;
  i.comm = p.comm;
  i.cgroup_id = p.cgroup_id;
  if (const ContainerRef *c = container_of(p.cgroup_id)) {
    i.container_id = c->id;
    i.runtime = c->runtime;
    i.pod_uid = c->pod_uid;
  }
  for (const Held &h : p.held) {
    if (!count_held)
      break;
    if (auto it = segs_.find(h.key); it != segs_.end()) {
      ++i.segments_held;
      i.bytes_held += it->second.bytes;
    }
  }
  i.sysv_attachments = p.attachments.size();
  i.creates = p.creates.count;
  i.unlinks = p.unlinks.count;
  i.create_rate = p.creates.rate(now_ns);
  i.unlink_rate = p.unlinks.rate(now_ns);
  i.last_create_ns = p.creates.last_ns;
  i.last_unlink_ns = p.unlinks.last_ns;
  i.sigbus = p.sigbus;
  return i;
}

std::vector<ProcessInfo> Engine::processes(uint64_t now_ns) const {
  now_ns = now_or_last(now_ns);
  std::vector<ProcessInfo> out;
  out.reserve(procs_.size());
  for (const auto &[pid, p] : procs_)
    out.push_back(process_info(pid, p, now_ns, false));
  std::sort(out.begin(), out.end(),
            [](const ProcessInfo &a, const ProcessInfo &b) { return a.pid < b.pid; });
  // One pass over the segments fills what each process created and holds:
  // pid -> row through a small open-addressing table of this query's own
  // (a lookup per segment and per holder, in cache), not a find per hold.
  size_t cells = 16;
  while (cells < out.size() * 2)
    cells *= 2;
  std::vector<uint32_t> row_of(cells, 0); // row + 1
  std::vector<uint32_t> serial(out.size());
  auto home = [&](uint32_t pid) { return (pid * 0x9e3779b1u) & (cells - 1); };
  for (size_t r = 0; r < out.size(); ++r) {
    serial[r] = procs_.find(out[r].pid)->second.serial;
    size_t c = home(out[r].pid);
    while (row_of[c])
      c = (c + 1) & (cells - 1);
    row_of[c] = static_cast<uint32_t>(r + 1);
  }
  auto row = [&](uint32_t pid) -> ProcessInfo * {
    for (size_t c = home(pid); row_of[c]; c = (c + 1) & (cells - 1))
      if (out[row_of[c] - 1].pid == pid)
        return &out[row_of[c] - 1];
    return nullptr;
  };
  for (const auto &[key, s] : segs_) {
    if (s.creator_pid) {
      // creator_alive(), through the table.
      ProcessInfo *c = row(s.creator_pid);
      if (c && (s.creator_serial == 0 ||
                serial[static_cast<size_t>(c - out.data())] == s.creator_serial)) {
        ++c->segments_created;
        c->bytes_created += s.bytes;
        c->segments_unheld += s.holders.empty() && s.nattch == 0;
      }
    }
    for (uint32_t pid : s.holders) {
      if (ProcessInfo *h = row(pid)) {
        ++h->segments_held;
        h->bytes_held += s.bytes;
      }
    }
  }
  return out;
}

std::optional<ProcessInfo> Engine::process(uint32_t pid, uint64_t now_ns) const {
  auto pit = procs_.find(pid);
  if (pit == procs_.end())
    return std::nullopt;
  ProcessInfo i = process_info(pid, pit->second, now_or_last(now_ns));
  for (const auto &[key, s] : segs_) {
    if (s.creator_pid == pid && creator_alive(s)) {
      ++i.segments_created;
      i.bytes_created += s.bytes;
      i.segments_unheld += s.holders.empty() && s.nattch == 0;
    }
  }
  return i;
}

std::vector<ContainerInfo> Engine::containers(uint64_t now_ns) const {
  now_ns = now_or_last(now_ns);
  std::map<std::string, ContainerInfo> rows;
  auto row = [&](const ContainerRef *c) -> ContainerInfo & {
    ContainerInfo &r = rows[c ? c->id : std::string()];
    if (r.runtime.empty()) {
      r.id = c ? c->id : std::string();
      r.runtime = c ? c->runtime : "host";
      r.pod_uid = c ? c->pod_uid : std::string();
    }
    return r;
  };
  row(nullptr); // the host is always a row
  for (const auto &[pid, p] : procs_) {
    ContainerInfo &r = row(container_of(p.cgroup_id));
    ++r.processes;
    r.creates += p.creates.count;
    r.unlinks += p.unlinks.count;
    r.create_rate += p.creates.rate(now_ns);
  }
  const NsContainers ns = ns_containers();
  // Neighbouring segments mostly share a container: skip the map then.
  const ContainerRef *last = nullptr;
  ContainerInfo *last_row = &row(nullptr);
  for (const auto &[key, s] : segs_) {
    const ContainerRef *c = segment_container(key, s, ns);
    if (c != last) {
      last = c;
      last_row = &row(c);
    }
    ++last_row->segments;
    last_row->bytes += s.bytes;
  }
  std::vector<ContainerInfo> out;
  out.reserve(rows.size());
  for (auto &[id, r] : rows)
    out.push_back(std::move(r));
  return out;
}

std::vector<MountUsage> Engine::mounts() const {
  std::vector<MountUsage> out;
  for (const auto &[id, m] : mounts_) {
    MountUsage u;
    u.mount = m.state;
    u.mount.used_bytes = used_now(m);
    if (auto d = devs_.find(m.state.dev); d != devs_.end()) {
      u.tracked_bytes = d->second.bytes;
      u.segments = d->second.segments;
      u.enospc = d->second.enospc;
    }
    const double limit = static_cast<double>(m.state.size_limit);
    const double used = static_cast<double>(u.mount.used_bytes);
    if (m.state.size_limit)
      u.percent = 100.0 * used / limit;
    // Least-squares slope, times relative to the first sample.
    if (m.samples.size() >= 2) {
      double n = 0, st = 0, sy = 0, stt = 0, sty = 0;
      const auto [t0, y0] = m.samples.front();
      for (const auto &[t, y] : m.samples) {
        double x = static_cast<double>(t - t0) / 1e9;
        double v = static_cast<double>(y) - static_cast<double>(y0);
        n += 1;
        st += x;
        sy += v;
        stt += x * x;
        sty += x * v;
      }
      double denom = n * stt - st * st;
      if (denom > 0)
        u.growth_bytes_per_s = (n * sty - st * sy) / denom;
    }
    if (m.state.size_limit && u.growth_bytes_per_s > 0)
      u.seconds_to_full = std::max(0.0, limit - used) / u.growth_bytes_per_s;
    out.push_back(std::move(u));
  }
  std::sort(out.begin(), out.end(), [](const MountUsage &a, const MountUsage &b) {
    if (a.mount.mountpoint != b.mount.mountpoint)
      return a.mount.mountpoint < b.mount.mountpoint;
    if (a.mount.mntns != b.mount.mntns)
      return a.mount.mntns < b.mount.mntns;
    return a.mount.mnt_id < b.mount.mnt_id;
  });
  return out;
}

std::vector<Orphan> Engine::orphans(uint64_t now_ns, uint64_t min_age_ns) const {
  std::vector<Orphan> out;
  const NsContainers ns = ns_containers();
  for (const auto &[key, s] : segs_) {
    if (!is_orphan(s, key.is_sysv(), now_ns, min_age_ns))
      continue;
    uint64_t age = age_ns(s, now_ns);
    out.push_back({info(key, s, &ns), age});
    out.back().segment.age_ns = age;
    out.back().segment.orphan = true;
  }
  std::sort(out.begin(), out.end(), [](const Orphan &a, const Orphan &b) {
    if (a.segment.bytes != b.segment.bytes)
      return a.segment.bytes > b.segment.bytes;
    if (a.segment.path != b.segment.path)
      return a.segment.path < b.segment.path;
    return a.segment.key < b.segment.key;
  });
  return out;
}

EngineTotals Engine::totals(uint64_t now_ns, uint64_t orphan_min_age_ns) const {
  now_ns = now_or_last(now_ns);
  EngineTotals t;
  for (const auto &[key, s] : segs_) {
    KindTotals &k = s.kind == Kind::sysv ? t.sysv : s.kind == Kind::memfd ? t.memfd : t.tmpfs;
    ++k.segments;
    k.bytes += s.bytes;
    if (is_orphan(s, key.is_sysv(), now_ns, orphan_min_age_ns)) {
      ++t.orphans;
      t.orphan_bytes += s.bytes;
    }
  }
  t.creates = creates_.count;
  t.unlinks = unlinks_.count;
  t.create_rate = creates_.rate(now_ns);
  t.unlink_rate = unlinks_.rate(now_ns);
  t.sigbus = sigbus_;
  return t;
}

std::vector<uint64_t> Engine::unknown_cgroups() const {
  std::unordered_set<uint64_t> ids;
  for (const auto &[pid, p] : procs_)
    if (p.cgroup_id && !cgroups_.count(p.cgroup_id))
      ids.insert(p.cgroup_id);
  for (const auto &[key, s] : segs_)
    if (s.creator_cgroup && !cgroups_.count(s.creator_cgroup))
      ids.insert(s.creator_cgroup);
  std::vector<uint64_t> out(ids.begin(), ids.end());
  std::sort(out.begin(), out.end());
  return out;
}

EngineStats Engine::stats() const {
  EngineStats s = stats_;
  s.segments = segs_.size();
  s.processes = procs_.size();
  return s;
}

} // namespace shmbpf
