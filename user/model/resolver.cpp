#include "model/resolver.hpp"

#include <vector>

namespace shmbpf {

void PathResolver::set_namespace(uint32_t mntns, std::vector<MountInfo> mounts) {
  // Mount ids are reused after an unmount: forget this namespace's old ones.
  if (auto old = by_ns_.find(mntns); old != by_ns_.end())
    for (const auto &m : old->second)
      by_id_.erase(m.mnt_id);
  for (const auto &m : mounts)
    by_id_[m.mnt_id] = m;
  by_ns_[mntns] = std::move(mounts);
}

std::string PathResolver::normalize(std::string_view p) {
  if (p.empty() || p[0] != '/')
    return {};
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos)
      j = p.size();
    auto c = p.substr(i, j - i);
    if (c == "..") {
      if (!parts.empty())
        parts.pop_back();
    } else if (!c.empty() && c != ".") {
      parts.push_back(c);
    }
    i = j + 1;
  }
  std::string out;
  for (auto c : parts) {
    out += '/';
    out += c;
  }
  return out.empty() ? "/" : out;
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

PathResolver::Outcome PathResolver::resolve(Event &e) {
  switch (e.type) {
  case EventType::create:
  case EventType::open:
  case EventType::resize: {
    if (e.kind != Kind::tmpfs) {
      inodes_[{e.dev, e.ino}] = {e.name, e.kind};
      return Outcome::resolved;
    }
    auto m = by_id_.find(e.mnt_id);
    // A different device under a known id means the id was reused.
    if (m == by_id_.end() || m->second.dev != e.dev)
      return Outcome::unknown_mount;
    if (auto p = join_mount_path(m->second, e.name))
      e.full_path = *p;
    inodes_[{e.dev, e.ino}] = {e.full_path, e.kind};
    if (!e.full_path.empty())
      paths_[std::to_string(e.mntns) + ":" + e.full_path] = {e.dev, e.ino};
    return Outcome::resolved;
  }
  case EventType::memfd_create:
    inodes_[{e.dev, e.ino}] = {e.name, Kind::memfd};
    return Outcome::resolved;
  case EventType::free: {
    auto it = inodes_.find({e.dev, e.ino});
    if (it != inodes_.end()) {
      e.kind = it->second.kind;
      e.full_path = it->second.path;
      if (e.unlinked)
        inodes_.erase(it);
    }
    return Outcome::resolved;
  }
  case EventType::unlink:
  case EventType::rename: {
    std::string abs;
    if (e.absolute) {
      abs = normalize(e.path);
    } else {
      auto m = by_id_.find(e.start_mnt_id);
      if (m == by_id_.end() || m->second.dev != e.start_dev)
        return Outcome::unknown_mount;
      auto dir = join_mount_path(m->second, e.start_dir);
      if (!dir)
        return Outcome::not_shared_mem;
      abs = normalize(*dir + "/" + e.path);
    }
    if (!knows_namespace(e.mntns))
      return Outcome::unknown_mount;
    const MountInfo *m = mount_for_path(e.mntns, abs);
    if (!m || !m->is_tmpfs())
      return Outcome::not_shared_mem;
    e.full_path = abs;
    auto key = std::to_string(e.mntns) + ":" + abs;
    if (auto it = paths_.find(key); it != paths_.end()) {
      e.dev = it->second.dev;
      e.ino = it->second.ino;
      paths_.erase(it);
    } else if (e.dev != m->dev) {
      e.dev = 0; // the kernel's hint was another file with the same leaf name
      e.ino = 0;
    }
    if (e.type == EventType::rename && e.ino != 0) {
      std::string to = e.newpath.starts_with("/") ? normalize(e.newpath) : "";
      if (!to.empty()) {
        paths_[std::to_string(e.mntns) + ":" + to] = {e.dev, e.ino};
        inodes_[{e.dev, e.ino}].path = to;
      }
    }
    return Outcome::resolved;
  }
  default:
    return Outcome::resolved;
  }
}

} // namespace shmbpf
