#include "model/segment_table.hpp"

#include <algorithm>
#include <utility>

namespace shmbpf {

SegmentTable::iterator SegmentTable::insert(const SegmentKey &key, Kind kind) {
  auto it = segs_.try_emplace(key).first;
  it->second.kind = kind;
  return it;
}

void SegmentTable::erase(iterator it) {
  const SegmentKey key = it->first;
  unindex_path(it);
  births_.erase(key);
  if (!other_names_.empty())
    other_names_.erase(key);
  segs_.erase(it);
}

// set_path and set_state unindex before a change and index after.
bool SegmentTable::path_indexed(const Slot &slot) {
  const Segment &s = slot.second;
  return !slot.first.is_sysv() && s.kind == Kind::tmpfs && s.state == SegmentState::linked &&
         (s.flags & kPathFull) && !s.path.empty();
}

template <class File> void SegmentTable::for_each_indexed_path(File &&file) const {
  for (auto it = segs_.begin(); it != segs_.end(); ++it)
    if (path_indexed(*it))
      file(it.index(), path_key(it->second.path.hash()));
}

void SegmentTable::reserve(size_t n) {
  segs_.reserve(n);
  by_path_.reserve(n, [this](auto &&file) { for_each_indexed_path(file); });
}

void SegmentTable::index_path(iterator it) {
  const Segment &s = it->second;
  if (!path_indexed(*it))
    return;
  by_path_.insert(it.index(), path_key(s.path.hash()),
                  [this](auto &&file) { for_each_indexed_path(file); });
}

void SegmentTable::unindex_path(iterator it) {
  if (it->first.is_sysv() || it->second.path.empty())
    return;
  by_path_.erase(it.index(), path_key(it->second.path.hash()),
                 [this](uint32_t i) { return path_key(segs_.slot(i).second.path.hash()); });
}

void SegmentTable::set_path(iterator it, std::string_view path, bool full) {
  unindex_path(it);
  Segment &s = it->second;
  s.path.assign(path);
  s.flags = static_cast<uint8_t>(full ? s.flags | kPathFull : s.flags & ~kPathFull);
  s.pattern = classify_shm_name(path).pattern;
  index_path(it);
}

void SegmentTable::set_state(iterator it, SegmentState state) {
  Segment &s = it->second;
  if (!it->first.is_sysv()) {
    // A file is linked while it has a name.
    if (state == SegmentState::linked) {
      s.nlink = std::max<uint32_t>(s.nlink, 1);
    } else {
      s.nlink = 0;
      if (!other_names_.empty())
        other_names_.erase(it->first);
    }
  }
  if (s.state == state)
    return;
  unindex_path(it);
  it->second.state = state;
  index_path(it);
}

SegmentTable::iterator SegmentTable::find_by_path(std::string_view path, uint32_t dev) const {
  iterator found = segs_.end();
  int matches = 0;
  const uint32_t h = PathStr::hash_of(path);
  by_path_.find(path_key(h), [&](uint32_t i) {
    const Slot &slot = segs_.slot(i);
    if (slot.second.path.hash() != h || (dev != 0 && slot.first.dev_or_ipcns != dev) ||
        !(slot.second.path == path))
      return false;
    found = iterator(&segs_, i);
    ++matches;
    return false; // count them all
  });
  // The same path in two mount namespaces with no dev to tell them apart.
  return matches == 1 ? found : segs_.end();
}

SegmentTable::iterator SegmentTable::find_by_name(std::string_view path, uint32_t dev) const {
  if (auto it = find_by_path(path, dev); it != segs_.end() || other_names_.empty())
    return it;
  // Few files have hard links: a walk of them, with find_by_path's rule.
  iterator found = segs_.end();
  int matches = 0;
  for (const auto &[key, names] : other_names_) {
    if ((dev != 0 && key.dev_or_ipcns != dev) ||
        std::find(names.begin(), names.end(), path) == names.end())
      continue;
    found = segs_.find(key);
    ++matches;
  }
  return matches == 1 ? found : segs_.end();
}

bool SegmentTable::has_name(iterator it, std::string_view path) const {
  if (it->second.path == path)
    return true;
  if (other_names_.empty())
    return false;
  auto n = other_names_.find(it->first);
  return n != other_names_.end() &&
         std::find(n->second.begin(), n->second.end(), path) != n->second.end();
}

void SegmentTable::add_other_name(iterator it, std::string_view path) {
  if (it->second.state != SegmentState::linked || it->second.nlink < 2 || has_name(it, path))
    return;
  other_names_[it->first].emplace_back(path);
}

void SegmentTable::set_other_names(iterator it, std::vector<std::string> names) {
  if (names.empty() || it->second.state != SegmentState::linked || it->second.nlink < 2) {
    if (!other_names_.empty())
      other_names_.erase(it->first);
    return;
  }
  other_names_[it->first] = std::move(names);
}

bool SegmentTable::drop_name(iterator it, std::string_view path) {
  Segment &s = it->second;
  if (s.nlink <= 1) {
    set_state(it, SegmentState::unlinked);
    return true;
  }
  --s.nlink;
  auto n = other_names_.find(it->first);
  if (!path.empty() && !(s.path == path)) {
    // Another name than the one shown: forget it, if it was known.
    if (n != other_names_.end())
      std::erase(n->second, path);
  } else if (!path.empty() && n != other_names_.end() && !n->second.empty()) {
    // The name shown: show another one.
    set_path(it, n->second.back(), true);
    n->second.pop_back();
  } else if (!path.empty()) {
    // The name shown, and its others are unknown (made unseen): the file is
    // still linked, but this path no longer finds it; a rescan names it.
    unindex_path(it);
    s.flags = static_cast<uint8_t>(s.flags & ~kPathFull);
  }
  if (n != other_names_.end() && (s.nlink < 2 || n->second.empty()))
    other_names_.erase(n);
  return false;
}

void SegmentTable::rename_name(iterator it, std::string_view from, std::string_view to) {
  if (!(it->second.path == from)) {
    if (auto n = other_names_.find(it->first); n != other_names_.end()) {
      auto name = std::find(n->second.begin(), n->second.end(), from);
      if (name != n->second.end()) {
        name->assign(to);
        return;
      }
    }
  }
  set_path(it, to, true);
}

const std::vector<std::string> *SegmentTable::other_names(const SegmentKey &key) const {
  if (other_names_.empty())
    return nullptr;
  auto n = other_names_.find(key);
  return n == other_names_.end() ? nullptr : &n->second;
}

void SegmentTable::note_birth(const SegmentKey &key, SegmentBirth birth) {
  auto it = segs_.find(key);
  if (it == segs_.end() || (it->second.flags & kExistedBefore) || it->second.creator_pid == 0 ||
      birth.value == 0)
    return;
  births_[key] = birth;
}

std::optional<SegmentBirth> SegmentTable::birth(const SegmentKey &key) const {
  auto it = births_.find(key);
  if (it == births_.end())
    return std::nullopt;
  return it->second;
}

} // namespace shmbpf
