// The event rules: how each decoded event changes the engine's state.
#include "model/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>

namespace shmbpf {
namespace {

constexpr uint32_t kMfdCloexec = 0x1;     // MFD_CLOEXEC
constexpr uint32_t kRenameExchange = 0x2; // RENAME_EXCHANGE
constexpr uint8_t kShmgetCreated = 1;     // Event::created

// The path to show for a file event: resolved, else in-mount, else as passed.
std::pair<std::string_view, bool> event_path(const Event &e) {
  if (!e.full_path.empty())
    return {e.full_path, e.full_path.starts_with('/')};
  if (!e.name.empty())
    return {e.name, false};
  return {e.path, false};
}

} // namespace

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
  case EventType::link:
    on_link(e);
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
  case EventType::nospace:
    on_nospace(e);
    break;
  case EventType::oom:
    on_oom(e);
    break;
  }
}

// The segment a create or an open names. A creation replaces whatever had
// its key (an inode number or shmid reused after a destruction we missed)
// and makes the caller its creator; an open of a segment we did not know
// adds it as one that existed before.
Engine::SegIt Engine::created_or_known(const SegmentKey &key, Kind kind, bool created,
                                       const Event &e, Process &p) {
  auto it = segs_.find(key);
  if (it != segs_.end() && created) {
    erase_segment(it);
    it = segs_.end();
  }
  if (it != segs_.end())
    return it;
  it = insert_segment(key, kind);
  if (created) {
    set_creator(it->second, e.pid, p);
    it->second.born = static_cast<int64_t>(e.ts_ns);
    p.creates.hit(e.ts_ns);
    creates_.hit(e.ts_ns);
  } else {
    it->second.flags |= kExistedBefore;
  }
  return it;
}

void Engine::on_open(const Event &e) {
  if (e.ret < 0 || e.ino == 0 || e.kind == Kind::sysv) {
    ++stats_.ignored;
    return;
  }
  Process &p = touch_process(e);
  const SegmentKey key = SegmentKey::file(e.dev, e.ino);
  const bool fresh = e.type == EventType::create && e.is_new;
  auto it = created_or_known(key, e.kind == Kind::memfd ? Kind::memfd : Kind::tmpfs, fresh, e, p);
  Segment &s = it->second;
  if (e.kind == Kind::memfd)
    s.kind = Kind::memfd;
  if (fresh || !(s.flags & kPathFull)) {
    auto [path, full] = event_path(e);
    if (!path.empty())
      segs_.set_path(it, path, full);
  }
  if (e.mnt_id)
    s.mnt_id = e.mnt_id;
  s.size = e.size;
  set_bytes(it, e.bytes);
  segs_.set_state(it, s.kind == Kind::memfd || e.unlinked ? SegmentState::unlinked
                                                          : SegmentState::linked);
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
  segs_.set_path(it, !e.name.empty() ? e.name : "memfd:" + e.path, false);
  if (e.mnt_id)
    s.mnt_id = e.mnt_id;
  s.size = e.size;
  set_bytes(it, e.bytes);
  segs_.set_state(it, SegmentState::unlinked); // a memfd never has a name
  hold(it, e.pid, p, (e.flags & kMfdCloexec) ? ExecHint::cloexec : ExecHint::survives);
  s.changed_ns = e.ts_ns;
}

void Engine::on_resize(const Event &e) {
  if (e.ret < 0 && (e.err == ENOSPC || e.err == EDQUOT) && e.dev != 0)
    count_nospace(e);
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
    segs_.set_path(it, path, full);
  }
  Segment &s = it->second;
  if (e.mnt_id)
    s.mnt_id = e.mnt_id;
  // size and bytes are observed after the call, failed or not.
  s.size = e.size;
  set_bytes(it, e.bytes);
  segs_.set_state(it, s.kind == Kind::memfd || e.unlinked ? SegmentState::unlinked
                                                          : SegmentState::linked);
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
  it->second.changed_ns = e.ts_ns;
  drop_name(it, e.full_path);
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
  const std::string &to = e.full_newpath;
  // The name that changed: the one the event resolved, else the one shown.
  const std::string from = e.full_path.empty() ? std::string(it->second.path.view()) : e.full_path;
  if (to.empty()) {
    // Unknown target directory: show the name as passed until a reconcile.
    segs_.set_path(it, e.newpath, false);
  } else if (!segs_.has_name(it, to)) { // two names of one file: rename(2) does nothing
    auto target = segs_.find_by_name(to, it->first.dev_or_ipcns);
    if (target != segs_.end() && target != it) {
      target->second.changed_ns = e.ts_ns;
      if (e.flags & kRenameExchange)
        segs_.rename_name(target, to, from);
      else
        drop_name(target, to); // replaced: the old target lost this name
    }
    segs_.rename_name(it, from, to);
  }
  it->second.changed_ns = e.ts_ns;
}

void Engine::on_link(const Event &e) {
  if (e.ret != 0) {
    ++stats_.ignored;
    return;
  }
  touch_process(e);
  // linkat(fd, "", ..., AT_EMPTY_PATH) names its file exactly (an
  // O_TMPFILE file, say, unlinked until now); link(2) by its old name.
  auto it = e.path.empty() && e.ino != 0 ? segs_.find(SegmentKey::file(e.dev, e.ino))
                                         : find_linked_by_name(e);
  if (it == segs_.end() || it->first.is_sysv()) {
    ++stats_.ignored;
    return;
  }
  Segment &s = it->second;
  const bool named = s.state == SegmentState::linked;
  if (named)
    ++s.nlink;
  else
    segs_.set_state(it, SegmentState::linked); // its first name
  const std::string &to = e.full_newpath;
  if (to.empty()) {
    if (!named) // a name in a directory the event does not say: as passed
      segs_.set_path(it, e.newpath, false);
  } else if (!named || !(s.flags & kPathFull)) {
    segs_.set_path(it, to, true);
  } else {
    segs_.add_other_name(it, to);
  }
  s.changed_ns = e.ts_ns;
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
    segs_.set_state(it, SegmentState::unlinked);
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
  auto it = created_or_known(key, Kind::sysv, created, e, p);
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
  segs_.set_state(it, SegmentState::unlinked); // destroyed at the last detach
  it->second.changed_ns = e.ts_ns;
  collect_if_unused(it);
}

void Engine::on_exit(const Event &e) {
  failures_.saw_exit(e);
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
  if (e.si_code <= 0) {
    ++stats_.ignored;
    return;
  }
  ++touch_process(e).sigbus;
  BusError b;
  b.ts_ns = e.ts_ns;
  b.pid = e.pid;
  b.tid = e.tid;
  b.ns_pid = e.target_ns_pid;
  b.comm = e.comm;
  b.cgroup_id = e.cgroup_id;
  b.fault = e.fault;
  b.addr = e.addr;
  if (e.fault == FaultLookup::file) {
    b.kind = e.kind;
    b.dev = e.dev;
    b.ino = e.ino;
    b.shmid = e.shmid;
    b.offset = e.offset;
    b.file_size = e.size;
    b.file_bytes = e.bytes;
    b.mount_size = e.mount_size;
    b.mount_used = e.mount_used;
    b.unlinked = e.unlinked;
    b.cause = bus_cause(e);
    if (e.kind == Kind::memfd || e.kind == Kind::sysv) {
      b.path = e.name;
    } else {
      b.mountpoint = failure_mountpoint(e);
      if (!e.full_path.empty())
        b.path = e.full_path; // the resolver's
      else
        b.path = b.mountpoint.empty() || b.mountpoint == "/" ? e.name : b.mountpoint + e.name;
    }
  }
  failures_.record_sigbus(std::move(b));
}

} // namespace shmbpf
