#include "actions/reaper.hpp"

#include "facts/dev.hpp"
#include "facts/fs_magic.hpp"
#include "sources/fd.hpp"
#include "sources/mountinfo.hpp"
#include "sources/namespaces.hpp"
#include "sources/proc_scan.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>

namespace shmbpf {

namespace {

using FileId = std::pair<uint32_t, uint64_t>; // kernel dev, ino

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    if (slash != 0)
      out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos)
      break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// The mount id of what fd refers to, where the kernel tells it (5.8+).
std::optional<uint64_t> mount_id_of(int fd) {
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) != 0 ||
      !(sx.stx_mask & STATX_MNT_ID))
    return std::nullopt;
  return sx.stx_mnt_id;
}

// Every live process of each wanted namespace of one type ("mnt", "ipc").
std::map<uint32_t, std::vector<uint32_t>> processes_by_ns(const char *type,
                                                          const std::set<uint32_t> &wanted) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  if (wanted.empty())
    return out;
  for (uint32_t pid : list_pids())
    if (const uint32_t ns = namespace_of(static_cast<int>(pid), type); wanted.count(ns))
      out[ns].push_back(pid);
  return out;
}

// One process's namespace (and, for a mount namespace, its root) held
// open: the namespace cannot go away, and every path walked from the root
// stays in that namespace's mount tree. Pinned through a pidfd, so a pid
// reused while its links were opened is noticed.
struct Pinned {
  uint32_t pid = 0;
  Fd pidfd, ns, root;
  bool foreign = false; // a mount namespace of another user namespace
  bool alive() const { return ::syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) == 0; }
};

std::optional<Pinned> pin(uint32_t pid, const char *type, uint32_t ino) {
  Pinned p;
  p.pid = pid;
  p.pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!p.pidfd.ok())
    return std::nullopt;
  const std::string dir = "/proc/" + std::to_string(pid);
  p.ns = Fd(::open((dir + "/ns/" + type).c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!p.ns.ok() || ::fstat(p.ns.get(), &st) != 0 || st.st_ino != ino)
    return std::nullopt;
  if (std::string_view(type) == "mnt") {
    p.root = Fd(::open((dir + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!p.root.ok())
      return std::nullopt;
    p.foreign = is_foreign_namespace(p.ns.get());
  }
  if (!p.alive())
    return std::nullopt;
  return p;
}

std::optional<Pinned> pin_any(const std::vector<uint32_t> &pids, const char *type, uint32_t ino) {
  for (uint32_t pid : pids)
    if (auto p = pin(pid, type, ino))
      return p;
  return std::nullopt;
}

// Walks names below dir one directory at a time, following no symlink.
// With same_mount, every directory must be on dir's mount (mnt_id) and
// device; otherwise mounts are crossed (the way to a mountpoint).
struct Walk {
  Fd fd;
  ReapSkip skip = ReapSkip::none;
};
Walk walk_dirs(int dir, const std::vector<std::string> &names, size_t count,
               std::optional<uint64_t> same_mount, uint32_t dev) {
  Walk w;
  w.fd = Fd(::openat(dir, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (size_t i = 0; i < count && w.fd.ok(); ++i) {
    Fd next(::openat(w.fd.get(), names[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.ok()) {
      w.skip = errno == ENOENT ? ReapSkip::vanished : ReapSkip::unsafe_path;
      w.fd.reset();
      return w;
    }
    w.fd = std::move(next);
    if (same_mount) {
      struct stat st {};
      if (::fstat(w.fd.get(), &st) != 0 || kernel_dev(st.st_dev) != dev ||
          mount_id_of(w.fd.get()).value_or(*same_mount) != *same_mount) {
        w.skip = ReapSkip::unsafe_path;
        w.fd.reset();
        return w;
      }
    }
  }
  if (!w.fd.ok() && w.skip == ReapSkip::none)
    w.skip = ReapSkip::unsafe_path;
  return w;
}

// The root directory of the mount a file was seen on, as the pinned
// process's namespace has it now.
struct MountDir {
  Fd fd;
  uint64_t mnt_id = 0;
  ReapSkip skip = ReapSkip::none;
};
MountDir open_mount(const Pinned &p, uint32_t mnt_id, uint32_t dev) {
  MountDir out;
  out.mnt_id = mnt_id;
  const MountInfo *found = nullptr;
  const std::vector<MountInfo> table = read_mountinfo(static_cast<int>(p.pid));
  for (const MountInfo &m : table)
    if (m.mnt_id == mnt_id)
      found = &m;
  if (!p.alive()) {
    out.skip = ReapSkip::namespace_gone;
    return out;
  }
  if (!found || found->dev != dev || !found->is_tmpfs()) {
    out.skip = ReapSkip::mount_changed;
    return out;
  }
  const std::vector<std::string> names = components(found->mountpoint);
  Walk w = walk_dirs(p.root.get(), names, names.size(), std::nullopt, dev);
  struct stat st {};
  struct statfs sfs {};
  if (!w.fd.ok() || ::fstat(w.fd.get(), &st) != 0 || kernel_dev(st.st_dev) != dev ||
      ::fstatfs(w.fd.get(), &sfs) != 0 || !is_shm_magic(static_cast<long>(sfs.f_type)) ||
      mount_id_of(w.fd.get()).value_or(mnt_id) != mnt_id) {
    out.skip = w.skip == ReapSkip::unsafe_path ? ReapSkip::unsafe_path : ReapSkip::mount_changed;
    return out;
  }
  out.fd = std::move(w.fd);
  return out;
}

// A file target between its first checks and its removal: its directory
// and the file itself held (O_PATH: not an open of its contents).
struct FileWork {
  size_t index = 0;
  Fd parent, anchor;
  std::string leaf;
  struct stat st {};
};

void skip(ReapOutcome &o, ReapSkip reason, std::string detail = {}) {
  o.status = reason == ReapSkip::vanished ? ReapStatus::gone : ReapStatus::skipped;
  o.reason = reason;
  o.detail = detail.empty() ? describe_skip(reason, o.target) : std::move(detail);
}

// The first checks of one file: path, type, identity, filesystem.
std::optional<FileWork> check_file(const MountDir &mount, size_t index, ReapOutcome &o) {
  const ReapTarget &t = o.target;
  std::vector<std::string> names = components(t.relative_path);
  if (names.empty()) {
    skip(o, ReapSkip::unsafe_path, "its path is not below its mount");
    return std::nullopt;
  }
  const uint32_t dev = t.segment.key.dev_or_ipcns;
  Walk w = walk_dirs(mount.fd.get(), names, names.size() - 1, mount.mnt_id, dev);
  if (!w.fd.ok()) {
    skip(o, w.skip);
    return std::nullopt;
  }
  FileWork work;
  work.index = index;
  work.leaf = names.back();
  work.parent = std::move(w.fd);
  work.anchor = Fd(::openat(work.parent.get(), work.leaf.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  FileLook look;
  struct statfs sfs {};
  if (work.anchor.ok() && ::fstat(work.anchor.get(), &work.st) == 0 &&
      ::fstatfs(work.anchor.get(), &sfs) == 0) {
    look.exists = true;
    look.mode = work.st.st_mode;
    look.dev = kernel_dev(work.st.st_dev);
    look.ino = work.st.st_ino;
    look.fs_magic = static_cast<long>(sfs.f_type);
    look.links = work.st.st_nlink;
  }
  if (const ReapSkip r = judge_file(t, look); r != ReapSkip::none) {
    skip(o, r);
    return std::nullopt;
  }
  o.bytes = static_cast<uint64_t>(work.st.st_blocks) * 512;
  return work;
}

// A write lease on fd (a read-only open of the file): the kernel grants one
// only while no other open file refers to the inode, whoever holds it (an
// fd in flight over a unix socket, which no process's fds show, a mapping
// whose fd was closed, a handle taken since the look at every process).
// Taken, it lasts until fd is closed: an open meanwhile waits for that. A
// break of it would signal SIGIO, whose default ends the process: SIGURG,
// ignored by default, is asked for instead.
// Not the file's owner and without CAP_LEASE (a daemon bounded to fewer
// capabilities than root's), the kernel says EACCES: then nothing is known
// of the handles no process shows, and the file is left.
enum class Lease { taken, refused, denied, unknown };
Lease take_write_lease(int fd) {
  if (::fcntl(fd, F_SETSIG, SIGURG) != 0)
    return Lease::unknown;
  if (::fcntl(fd, F_SETLEASE, F_WRLCK) == 0)
    return Lease::taken;
  if (errno == EAGAIN)
    return Lease::refused;
  return errno == EACCES || errno == EPERM ? Lease::denied
                                           : Lease::unknown; // EINVAL: no leases here
}

// The last checks of one file, then its removal.
void finish_file(FileWork &work, ReapOutcome &o,
                 const std::map<FileId, std::vector<uint32_t>> &holders, bool apply) {
  const FileId id{kernel_dev(work.st.st_dev), work.st.st_ino};
  if (auto it = holders.find(id); it != holders.end()) {
    o.holders = it->second;
    skip(o, ReapSkip::held);
    return;
  }
  if (process_alive(o.target.creator_pid)) {
    skip(o, ReapSkip::creator_alive);
    return;
  }
  // The name still leads to the file held: nothing took its place since.
  struct stat now {};
  if (::fstatat(work.parent.get(), work.leaf.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) {
    skip(o, errno == ENOENT ? ReapSkip::vanished : ReapSkip::failed,
         errno == ENOENT ? std::string() : std::string("stat: ") + std::strerror(errno));
    return;
  }
  if (now.st_dev != work.st.st_dev || now.st_ino != work.st.st_ino) {
    skip(o, S_ISREG(now.st_mode) ? ReapSkip::replaced : ReapSkip::not_regular);
    return;
  }
  if (now.st_nlink > 1) { // linked since the first look
    skip(o, ReapSkip::other_names);
    return;
  }
  // Open anywhere at all, as the kernel counts: reopened through the handle
  // on the file itself (not its name), leased until the unlink is done.
  const std::string self = "/proc/self/fd/" + std::to_string(work.anchor.get());
  Fd reader(::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  const Lease lease = reader.ok() ? take_write_lease(reader.get()) : Lease::unknown;
  if ((!reader.ok() && errno == EWOULDBLOCK) || lease == Lease::refused) {
    skip(o, ReapSkip::held,
         "open by a handle no process shows: an fd in flight over a unix socket, or one "
         "taken since");
    return;
  }
  if (lease == Lease::denied) {
    skip(o, ReapSkip::failed,
         "no lease on another user's file without CAP_LEASE: whether a handle no process "
         "shows holds it is unknown");
    return;
  }
  o.bytes = static_cast<uint64_t>(now.st_blocks) * 512;
  if (!apply) {
    o.status = ReapStatus::would_free;
    return;
  }
  if (::unlinkat(work.parent.get(), work.leaf.c_str(), 0) != 0) {
    if (errno == ENOENT)
      skip(o, ReapSkip::vanished);
    else
      skip(o, ReapSkip::failed, std::string("unlink: ") + std::strerror(errno));
    return;
  }
  o.status = ReapStatus::freed;
}

void reap_files(const ReapPlan &plan, std::vector<ReapOutcome> &out, bool apply) {
  std::set<uint32_t> namespaces;
  for (const ReapTarget &t : plan.targets)
    if (t.segment.kind != Kind::sysv && t.mntns != 0)
      namespaces.insert(t.mntns);
  const auto members = processes_by_ns("mnt", namespaces);

  // Everything is held open until the removals are done: the namespaces,
  // the mounts, each file's directory and the file itself.
  std::vector<Pinned> pinned;
  pinned.reserve(namespaces.size());                        // pin_of points into it
  std::map<std::pair<uint32_t, uint32_t>, MountDir> mounts; // (mntns, mnt_id)
  std::vector<FileWork> work;
  std::map<uint32_t, const Pinned *> pin_of;
  std::optional<std::unordered_set<uint32_t>> host_devs; // read once, if needed
  for (size_t i = 0; i < plan.targets.size(); ++i) {
    ReapOutcome &o = out[i];
    const ReapTarget &t = o.target;
    if (t.segment.kind == Kind::sysv)
      continue;
    auto pit = pin_of.find(t.mntns);
    if (pit == pin_of.end()) {
      const auto m = members.find(t.mntns);
      auto p = m == members.end() ? std::nullopt : pin_any(m->second, "mnt", t.mntns);
      pit = pin_of.emplace(t.mntns, p ? &pinned.emplace_back(std::move(*p)) : nullptr).first;
    }
    if (!pit->second) {
      skip(o, ReapSkip::namespace_gone);
      continue;
    }
    // Another user's namespace names the file's filesystem as it likes:
    // where the host mounts that filesystem, its path is the host's and so
    // are its rules (naming_tmpfs_mounts). Not removed through their tree.
    if (pit->second->foreign) {
      if (!host_devs)
        host_devs = host_reported_devices(scan_mount_namespaces());
      if (host_devs->count(t.segment.key.dev_or_ipcns)) {
        skip(o, ReapSkip::unsafe_path,
             "it was seen through a mount another user namespace made of a filesystem the host "
             "mounts elsewhere");
        continue;
      }
    }
    const auto key = std::make_pair(t.mntns, t.segment.mnt_id);
    auto mit = mounts.find(key);
    if (mit == mounts.end())
      mit =
          mounts
              .emplace(key, open_mount(*pit->second, t.segment.mnt_id, t.segment.key.dev_or_ipcns))
              .first;
    if (mit->second.skip != ReapSkip::none) {
      skip(o, mit->second.skip);
      continue;
    }
    if (auto w = check_file(mit->second, i, o))
      work.push_back(std::move(*w));
  }

  // A fresh look at every process, with every file held by us (our own
  // handles are left out), then each removal right after its last check.
  std::set<FileId> ids;
  for (const FileWork &w : work)
    ids.insert({kernel_dev(w.st.st_dev), w.st.st_ino});
  const auto holders = find_holders(ids, static_cast<uint32_t>(::getpid()));
  for (FileWork &w : work)
    finish_file(w, out[w.index], holders, apply);
}

// IPC_STAT of one segment, from inside its namespace.
SysvLook look_sysv(int32_t shmid) {
  SysvLook look;
  struct shmid_ds ds {};
  if (::shmctl(shmid, IPC_STAT, &ds) != 0)
    return look;
  look.exists = true;
  look.key = static_cast<uint32_t>(ds.shm_perm.__key);
  look.size = ds.shm_segsz;
  look.cpid = static_cast<uint32_t>(ds.shm_cpid);
  look.lpid = static_cast<uint32_t>(ds.shm_lpid);
  look.nattch = static_cast<uint32_t>(ds.shm_nattch);
  look.removed = (ds.shm_perm.mode & SHM_DEST) != 0;
  look.cpid_alive = process_alive(look.cpid);
  look.lpid_alive = process_alive(look.lpid);
  return look;
}

void reap_sysv(const ReapPlan &plan, std::vector<ReapOutcome> &out, bool apply) {
  std::map<uint32_t, std::vector<size_t>> by_ns;
  for (size_t i = 0; i < plan.targets.size(); ++i)
    if (plan.targets[i].segment.kind == Kind::sysv)
      by_ns[plan.targets[i].segment.key.dev_or_ipcns].push_back(i);
  std::set<uint32_t> namespaces;
  for (const auto &[ns, indices] : by_ns)
    namespaces.insert(ns);
  const auto members = processes_by_ns("ipc", namespaces);

  // A plain name for the list: clang 14 cannot capture a structured binding.
  for (const auto &entry : by_ns) {
    const uint32_t ns = entry.first;
    const std::vector<size_t> &indices = entry.second;
    const auto m = members.find(ns);
    const auto p = m == members.end() ? std::nullopt : pin_any(m->second, "ipc", ns);
    if (!p) {
      for (size_t i : indices)
        skip(out[i], ReapSkip::namespace_gone);
      continue;
    }
    // The pids IPC_STAT gives there are ours (PID namespace unchanged).
    const bool joined = in_ipc_namespace(p->ns.get(), [&] {
      for (size_t i : indices) {
        ReapOutcome &o = out[i];
        const auto shmid = static_cast<int32_t>(o.target.segment.key.ino_or_shmid);
        const SysvLook look = look_sysv(shmid);
        if (const ReapSkip r = judge_sysv(o.target, look); r != ReapSkip::none) {
          skip(o, r);
          continue;
        }
        o.bytes = o.target.segment.bytes;
        if (!apply) {
          o.status = ReapStatus::would_free;
          continue;
        }
        if (::shmctl(shmid, IPC_RMID, nullptr) != 0) {
          if (errno == EINVAL || errno == EIDRM)
            skip(o, ReapSkip::vanished);
          else
            skip(o, ReapSkip::failed, std::string("IPC_RMID: ") + std::strerror(errno));
          continue;
        }
        o.status = ReapStatus::freed;
      }
    });
    if (!joined)
      for (size_t i : indices)
        skip(out[i], ReapSkip::failed, std::string("setns: ") + std::strerror(errno));
  }
}

} // namespace

std::vector<ReapOutcome> reap(const ReapPlan &plan, bool apply) {
  std::vector<ReapOutcome> out;
  out.reserve(plan.targets.size());
  for (const ReapTarget &t : plan.targets) {
    ReapOutcome &o = out.emplace_back();
    o.target = t;
  }
  reap_files(plan, out, apply);
  reap_sysv(plan, out, apply);
  return out;
}

} // namespace shmbpf
