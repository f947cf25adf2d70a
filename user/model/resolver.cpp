#include "model/resolver.hpp"

#include <charconv>
#include <vector>

namespace shmbpf {

namespace {
// O_TMPFILE without its O_DIRECTORY bit.
constexpr uint32_t kOTmpfileBit = 020000000;
} // namespace

void PathResolver::set_namespace(uint32_t mntns, std::vector<MountInfo> mounts) {
  // Mount ids are reused after an unmount: forget this namespace's old ones.
  if (auto old = by_ns_.find(mntns); old != by_ns_.end())
    for (const auto &m : old->second)
      by_id_.erase(m.mnt_id);
  for (const auto &m : mounts)
    by_id_[m.mnt_id] = m;
  by_ns_[mntns] = std::move(mounts);
  trusted_.clear();
}

bool PathResolver::agrees_with_path(const Event &e, const MountInfo &m) {
  if (e.truncated || e.path.empty() || e.path[0] != '/')
    return true; // relative, or cut: nothing to compare
  normalize_into(dir_, e.path);
  if (dir_ == joined_)
    return true;
  const uint64_t key = static_cast<uint64_t>(m.mnt_id) << 32 | m.dev;
  if (trusted_.count(key))
    return true;
  if (suspect_.size() >= 4096 || trusted_.size() >= 4096) {
    suspect_.clear();
    trusted_.clear();
  }
  // A mount that disagreed before the tables were read again, and still
  // does: the path went through a symlink, and the mount is right.
  if (suspect_.erase(key)) {
    trusted_.insert(key);
    return true;
  }
  suspect_.insert(key);
  return false;
}

void PathResolver::normalize_into(std::string &out, std::string_view p) {
  out.clear();
  if (p.empty() || p[0] != '/')
    return;
  // out holds the components kept so far, each as "/name".
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos)
      j = p.size();
    auto c = p.substr(i, j - i);
    if (c == "..") {
      if (!out.empty())
        out.resize(out.rfind('/'));
    } else if (!c.empty() && c != ".") {
      out += '/';
      out += c;
    }
    i = j + 1;
  }
  if (out.empty())
    out = '/';
}

std::string PathResolver::normalize(std::string_view p) {
  std::string out;
  normalize_into(out, p);
  return out;
}

const MountInfo *PathResolver::mount_for_path(uint32_t mntns, const std::string &abs) const {
  auto it = by_ns_.find(mntns);
  if (it == by_ns_.end())
    return nullptr;
  const MountInfo *best = nullptr;
  // Later lines in mountinfo are mounted on top of earlier ones: prefer them.
  for (const auto &m : it->second) {
    const auto &mp = m.mountpoint;
    bool under =
        mp == "/" || abs == mp ||
        (abs.size() > mp.size() && abs.compare(0, mp.size(), mp) == 0 && abs[mp.size()] == '/');
    if (under && (!best || mp.size() >= best->mountpoint.size()))
      best = &m;
  }
  return best;
}

const std::string &PathResolver::path_key(uint32_t mntns, std::string_view abs) {
  char buf[16];
  key_.assign(buf, std::to_chars(buf, buf + sizeof buf, mntns).ptr);
  key_ += ':';
  key_ += abs;
  return key_;
}

void PathResolver::remember(const Event &e, std::string_view path, Kind kind) {
  Known &k = inodes_[{e.dev, e.ino}];
  k.path.assign(path);
  k.kind = kind;
  k.mnt_id = e.mnt_id;
  k.unlinked_seq = 0;
  k.freed_seq = 0;
}

void PathResolver::forget_name(InodeKey k) {
  if (auto it = inodes_.find(k); it != inodes_.end())
    retire(it, &Known::unlinked_seq, unlinked_, kMaxUnlinked);
}

void PathResolver::retire(Inodes::iterator it, uint64_t Known::*mark, Retiring &r,
                          std::size_t max) {
  it->second.*mark = ++r.last_mark;
  r.queue.emplace_back(it->first, r.last_mark);
  while (r.queue.size() > max) {
    auto [old, m] = r.queue.front();
    r.queue.pop_front();
    // Not marked again since (named anew, or queued once more): forget it.
    if (auto o = inodes_.find(old); o != inodes_.end() && o->second.*mark == m)
      inodes_.erase(o);
  }
}

PathResolver::Outcome PathResolver::resolve(Event &e) {
  switch (e.type) {
  case EventType::create:
  case EventType::open:
  case EventType::resize: {
    if (e.kind != Kind::tmpfs) {
      remember(e, e.name, e.kind);
      return Outcome::resolved;
    }
    if (e.by_path) // a light hook's create: the new inode and the path as passed
      return resolve_created(e);
    if (e.mnt_id == 0) { // a light hook's resize without a file
      resolve_known_inode(e);
      return Outcome::resolved;
    }
    auto m = by_id_.find(e.mnt_id);
    // A different device under a known id means the id was reused.
    if (m == by_id_.end() || m->second.dev != e.dev)
      return Outcome::unknown_mount;
    const bool joined = join_mount_path_into(joined_, m->second, e.name);
    // An id and a device can both be reused, by a mount made after
    // another's unmount (containers come and go): the path as passed, when
    // absolute, tells the stale table.
    if (joined && !agrees_with_path(e, m->second))
      return Outcome::unknown_mount;
    if (joined)
      e.full_path.assign(joined_);
    remember(e, e.full_path, e.kind);
    if (!e.full_path.empty())
      paths_[path_key(e.mntns, e.full_path)] = {e.dev, e.ino};
    return Outcome::resolved;
  }
  case EventType::memfd_create:
    remember(e, e.name, Kind::memfd);
    return Outcome::resolved;
  case EventType::nospace:
    if (is_create_nospace(e))
      return resolve_new_file(e);
    [[fallthrough]]; // a write's file, found as a fault's
  case EventType::sigbus: {
    // The file behind a fault: its mount joined to its in-mount path, as
    // for an open; an unlinked file keeps the path it was known by.
    if ((e.type == EventType::sigbus && e.fault != FaultLookup::file) || e.kind != Kind::tmpfs)
      return Outcome::resolved;
    if (e.unlinked) {
      if (auto it = inodes_.find({e.dev, e.ino}); it != inodes_.end())
        e.full_path.assign(it->second.path);
      return Outcome::resolved;
    }
    auto m = by_id_.find(e.mnt_id);
    if (m == by_id_.end() || m->second.dev != e.dev)
      return Outcome::unknown_mount;
    if (join_mount_path_into(joined_, m->second, e.name))
      e.full_path.assign(joined_);
    return Outcome::resolved;
  }
  case EventType::free: {
    auto it = inodes_.find({e.dev, e.ino});
    if (it != inodes_.end()) {
      e.kind = it->second.kind;
      e.full_path.assign(it->second.path);
      if (e.unlinked && it->second.freed_seq == 0) // more of its pages may come
        retire(it, &Known::freed_seq, freed_, kMaxFreed);
    }
    return Outcome::resolved;
  }
  case EventType::unlink:
  case EventType::rename:
  case EventType::link:
    return resolve_by_name(e);
  default:
    return Outcome::resolved;
  }
}

PathResolver::Outcome PathResolver::absolute_path(const Event &e, bool &have_start,
                                                  const MountInfo *&mount) {
  // The start directory the record carries: the old path's when it is
  // relative, else the new path's (new_start). linkat(fd, "", ...,
  // AT_EMPTY_PATH) has no old path: the kernel gave its inode exactly.
  const bool old_relative = !e.absolute && !e.path.empty();
  have_start = false;
  mount = nullptr;
  if (old_relative || e.new_start) {
    auto m = by_id_.find(e.start_mnt_id);
    if (m == by_id_.end() || m->second.dev != e.start_dev)
      return Outcome::unknown_mount;
    have_start = join_mount_path_into(start_, m->second, e.start_dir);
    if (!have_start && old_relative)
      return Outcome::not_shared_mem;
  }
  if (!knows_namespace(e.mntns))
    return Outcome::unknown_mount;
  if (e.path.empty())
    return Outcome::resolved;
  if (old_relative) {
    dir_.assign(start_);
    dir_ += '/';
    dir_ += e.path;
    normalize_into(joined_, dir_);
  } else {
    normalize_into(joined_, e.path);
  }
  mount = mount_for_path(e.mntns, joined_);
  if (!mount || !mount->is_tmpfs())
    return Outcome::not_shared_mem;
  return Outcome::resolved;
}

PathResolver::Outcome PathResolver::resolve_new_file(Event &e) {
  bool have_start = false;
  const MountInfo *m = nullptr;
  if (const Outcome o = absolute_path(e, have_start, m); o != Outcome::resolved)
    return o;
  if (!m)
    return Outcome::not_shared_mem;
  e.full_path.assign(joined_);
  e.dev = m->dev;
  e.mnt_id = m->mnt_id;
  name_in_mount(e, *m, joined_);
  return Outcome::resolved;
}

void PathResolver::name_in_mount(Event &e, const MountInfo &m, std::string_view abs) {
  if (m.mountpoint == "/")
    e.name.assign(abs);
  else if (abs.size() > m.mountpoint.size())
    e.name.assign(abs.substr(m.mountpoint.size()));
}

void PathResolver::resolve_known_inode(Event &e) {
  auto it = inodes_.find({e.dev, e.ino});
  if (it == inodes_.end() || it->second.path.empty())
    return;
  const Known &k = it->second;
  e.full_path.assign(k.path);
  e.path_from_model = true;
  if (!e.create_sent || k.mnt_id == 0)
    return;
  // The mount and name its create had, as the record of a resize by fd
  // would have them (the same thread, just after).
  auto m = by_id_.find(k.mnt_id);
  if (m == by_id_.end() || m->second.dev != e.dev)
    return;
  e.mnt_id = k.mnt_id;
  name_in_mount(e, m->second, k.path);
}

PathResolver::Outcome PathResolver::resolve_created(Event &e) {
  const uint32_t dev = e.dev;
  if (const Outcome o = resolve_new_file(e); o != Outcome::resolved)
    return o;
  if (e.dev != dev) // the path as passed led elsewhere (a rename raced it)
    return Outcome::not_shared_mem;
  if (e.flags & kOTmpfileBit) {
    // O_TMPFILE names the directory; the kernel calls the file "#<ino>".
    const std::string leaf = "/#" + std::to_string(e.ino);
    e.full_path += leaf;
    e.name += leaf;
    e.unlinked = true;
  }
  remember(e, e.full_path, Kind::tmpfs);
  paths_[path_key(e.mntns, e.full_path)] = {e.dev, e.ino};
  return Outcome::resolved;
}

PathResolver::Outcome PathResolver::resolve_by_name(Event &e) {
  bool have_start = false;
  const MountInfo *m = nullptr;
  if (const Outcome o = absolute_path(e, have_start, m); o != Outcome::resolved)
    return o;
  const bool old_relative = !e.absolute && !e.path.empty();
  if (m) {
    const std::string &abs = joined_;
    e.full_path.assign(abs);
    if (auto it = paths_.find(path_key(e.mntns, abs)); it != paths_.end()) {
      if (!e.exact_hint) {
        e.dev = it->second.dev;
        e.ino = it->second.ino;
      }
      if (e.type != EventType::link) // a link leaves the old name
        paths_.erase(it);
    } else if (e.dev != m->dev && !e.exact_hint) {
      e.dev = 0; // the kernel's hint was another file with the same leaf name
      e.ino = 0;
    }
  }
  if (e.type == EventType::unlink) {
    if (e.ino != 0)
      forget_name({e.dev, e.ino});
    return Outcome::resolved;
  }

  // The new path: absolute, or from the start directory when it is the
  // new path's own, or the old path's and the new one has the same dirfd.
  if (e.newpath.starts_with('/')) {
    normalize_into(e.full_newpath, e.newpath);
  } else if (!e.newpath.empty() && have_start &&
             (e.new_start || (old_relative && e.dirfd == e.newdirfd))) {
    dir_.assign(start_);
    dir_ += '/';
    dir_ += e.newpath;
    normalize_into(e.full_newpath, dir_);
  }
  if (e.ino != 0 && !e.full_newpath.empty()) {
    paths_[path_key(e.mntns, e.full_newpath)] = {e.dev, e.ino};
    // A free names the file by the path it keeps: a link adds one.
    Known &k = inodes_[{e.dev, e.ino}];
    if (e.type == EventType::rename || k.path.empty() || k.unlinked_seq != 0) {
      k.path = e.full_newpath;
      k.unlinked_seq = 0;
      k.freed_seq = 0;
    }
    if (k.kind == Kind::none)
      k.kind = Kind::tmpfs;
  }
  return Outcome::resolved;
}

} // namespace shmbpf
