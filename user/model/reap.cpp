#include "model/reap.hpp"
#include "model/glob.hpp"

#include "facts/fs_magic.hpp"
#include "model/leaks.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace shmbpf {

namespace {

bool container_matches(const ContainerRef &c, const std::string &want) {
  if (want.empty())
    return c.id.empty();
  return !c.id.empty() && (c.id.starts_with(want) || (!c.name.empty() && c.name == want));
}

bool selected(const SegmentInfo &s, const ReapFilter &f) {
  // Any of a file's names: a hard link is the same memory.
  auto matches = [&](const std::string &path) { return glob_matches(*f.match, path); };
  if (f.match && !matches(s.path) &&
      std::none_of(s.other_paths.begin(), s.other_paths.end(), matches))
    return false;
  if (f.container && !container_matches(s.container, *f.container))
    return false;
  if (f.mount && s.mountpoint != *f.mount)
    return false;
  return !f.kind || (s.kind == Kind::sysv) == (*f.kind == Kind::sysv);
}

} // namespace

std::string path_below_mount(std::string_view path, std::string_view mountpoint) {
  if (mountpoint.empty() || !path.starts_with(mountpoint))
    return {};
  std::string_view rest = path.substr(mountpoint.size());
  if (mountpoint != "/") {
    if (!rest.starts_with('/'))
      return {};
    rest.remove_prefix(1);
  }
  if (rest.empty())
    return {};
  for (std::string_view left = rest; !left.empty();) {
    const size_t slash = left.find('/');
    const std::string_view part = left.substr(0, slash);
    if (part.empty() || part == "." || part == "..")
      return {};
    if (slash == std::string_view::npos)
      break;
    left.remove_prefix(slash + 1);
    if (left.empty())
      return {}; // a trailing '/'
  }
  return std::string(rest);
}

ReapPlan plan_reap(const Engine &engine, uint64_t now_ns, const ReapFilter &filter) {
  ReapPlan plan;
  std::unordered_map<uint32_t, uint32_t> mntns_of; // mount id -> mount namespace
  for (const MountUsage &m : engine.mounts())
    mntns_of.emplace(m.mount.mnt_id, m.mount.mntns);

  const auto min_age_ns =
      static_cast<uint64_t>(std::llround(std::max(0.0, filter.min_age_s) * 1e9));
  const OrphanScope scope =
      filter.all_mounts ? OrphanScope::all_mounts : OrphanScope::shared_memory;
  for (Orphan &o : engine.orphans(now_ns, min_age_ns, scope)) {
    SegmentInfo &s = o.segment;
    if (!selected(s, filter))
      continue;
    if (s.state != SegmentState::linked) {
      // Unlinked, and no holder that shmbpf can see: nothing to remove.
      plan.held.push_back({std::move(s)});
      continue;
    }
    ReapTarget t;
    t.age_ns = o.age_ns;
    t.creator_pid = s.creator.pid != 0 ? s.creator.pid : s.inferred_pid;
    if (s.kind != Kind::sysv) {
      if (auto it = mntns_of.find(s.mnt_id); it != mntns_of.end())
        t.mntns = it->second;
      t.relative_path = path_below_mount(s.path, s.mountpoint);
    }
    t.segment = std::move(s);
    plan.targets.push_back(std::move(t));
  }

  SegmentFilter unlinked;
  unlinked.state = SegmentState::unlinked;
  for (SegmentInfo &s : engine.segments(unlinked, now_ns, min_age_ns))
    if (!s.holders.empty() && selected(s, filter) && (filter.all_mounts || is_shared_memory(s)))
      plan.held.push_back({std::move(s)});
  return plan;
}

std::string_view to_string(ReapStatus s) {
  switch (s) {
  case ReapStatus::would_free:
    return "would-free";
  case ReapStatus::freed:
    return "freed";
  case ReapStatus::skipped:
    return "skipped";
  case ReapStatus::gone:
    return "gone";
  }
  return "?";
}

std::string_view to_string(ReapSkip s) {
  switch (s) {
  case ReapSkip::none:
    return "";
  case ReapSkip::namespace_gone:
    return "namespace-gone";
  case ReapSkip::mount_changed:
    return "mount-changed";
  case ReapSkip::unsafe_path:
    return "unsafe-path";
  case ReapSkip::replaced:
    return "replaced";
  case ReapSkip::other_names:
    return "other-names";
  case ReapSkip::not_regular:
    return "not-regular";
  case ReapSkip::not_shm_filesystem:
    return "not-shm-filesystem";
  case ReapSkip::held:
    return "held";
  case ReapSkip::attached:
    return "attached";
  case ReapSkip::creator_alive:
    return "creator-alive";
  case ReapSkip::last_attacher_alive:
    return "last-attacher-alive";
  case ReapSkip::vanished:
    return "vanished";
  case ReapSkip::failed:
    return "failed";
  }
  return "?";
}

ReapSkip judge_file(const ReapTarget &target, const FileLook &look) {
  if (!look.exists)
    return ReapSkip::vanished;
  if (!S_ISREG(look.mode))
    return ReapSkip::not_regular;
  if (!is_shm_magic(look.fs_magic))
    return ReapSkip::not_shm_filesystem;
  if (look.dev != target.segment.key.dev_or_ipcns || look.ino != target.segment.key.ino_or_shmid)
    return ReapSkip::replaced;
  // Its memory stays while any name does: removing one would free nothing
  // and report a lie; and the other names were never matched.
  if (look.links > 1)
    return ReapSkip::other_names;
  return ReapSkip::none;
}

ReapSkip judge_sysv(const ReapTarget &target, const SysvLook &look) {
  if (!look.exists || look.removed)
    return ReapSkip::vanished;
  const SegmentInfo &s = target.segment;
  if (look.key != s.sysv_key || look.size != s.size ||
      (target.creator_pid != 0 && look.cpid != target.creator_pid))
    return ReapSkip::replaced;
  if (look.nattch > 0)
    return ReapSkip::attached;
  if (look.cpid_alive)
    return ReapSkip::creator_alive;
  if (look.lpid_alive)
    return ReapSkip::last_attacher_alive;
  return ReapSkip::none;
}

std::string describe_skip(ReapSkip reason, const ReapTarget &target) {
  const bool sysv = target.segment.kind == Kind::sysv;
  const std::string creator = std::to_string(target.creator_pid);
  switch (reason) {
  case ReapSkip::none:
    return {};
  case ReapSkip::namespace_gone:
    return sysv ? "no process is left in its IPC namespace"
                : "no process is left in the mount namespace of its mount";
  case ReapSkip::mount_changed:
    return "its mount is no longer the one the file was seen on";
  case ReapSkip::unsafe_path:
    return "a directory on its path is a symlink or another mount";
  case ReapSkip::replaced:
    return sysv ? "the id now names another segment (key, size or creator differ)"
                : "the name now names another file (device or inode differ)";
  case ReapSkip::other_names:
    return "the file has other names (hard links): removing this one would free nothing";
  case ReapSkip::not_regular:
    return "the name is no longer a regular file";
  case ReapSkip::not_shm_filesystem:
    return "the file is not on a tmpfs or hugetlbfs";
  case ReapSkip::held:
    return "a process holds it open or mapped";
  case ReapSkip::attached:
    return "a process has it attached";
  case ReapSkip::creator_alive:
    return target.creator_pid != 0 ? "pid " + creator + ", its creator's, is alive"
                                   : "its creator is alive";
  case ReapSkip::last_attacher_alive:
    return "the pid of its last attacher is alive";
  case ReapSkip::vanished:
    return "someone removed it first";
  case ReapSkip::failed:
    return "the removal failed";
  }
  return {};
}

ReapTotals reap_totals(const std::vector<ReapOutcome> &outcomes) {
  ReapTotals t;
  for (const ReapOutcome &o : outcomes) {
    ++t.selected;
    switch (o.status) {
    case ReapStatus::freed:
      ++t.freed;
      t.bytes_freed += o.bytes;
      break;
    case ReapStatus::would_free:
      ++t.would_free;
      t.bytes_would_free += o.bytes;
      break;
    case ReapStatus::skipped:
      ++t.skipped;
      t.bytes_skipped += o.target.segment.bytes;
      break;
    case ReapStatus::gone:
      ++t.gone;
      break;
    }
  }
  return t;
}

} // namespace shmbpf
