#include "sources/proc_scan.hpp"

#include "facts/dev.hpp"
#include "facts/fs_magic.hpp"
#include "sources/cgroup.hpp"
#include "sources/fd.hpp"
#include "sources/mountinfo.hpp"
#include "sources/namespaces.hpp"
#include "sources/small_file.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <map>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace shmbpf {

namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

std::optional<std::string> read_link_at(int dirfd, const char *name) {
  char buf[PATH_MAX];
  ssize_t n = ::readlinkat(dirfd, name, buf, sizeof(buf));
  if (n < 0)
    return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

// A path to name in the directory dir holds open (statfs takes no
// directory descriptor): through our own /proc/self/fd, so it still leads
// into the same process's directory.
std::string through(const Fd &dir, const std::string &name) {
  return "/proc/self/fd/" + std::to_string(dir.get()) + "/" + name;
}

// /proc/<pid> held open: every read through it is of the same process, and
// fails once that process is gone, even when its pid already names another
// (a path would reach the new one).
Fd open_proc_dir(uint32_t pid) {
  const std::string path = "/proc/" + std::to_string(pid);
  return Fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

template <typename T> bool parse_num(std::string_view s, T &out, int base = 10) {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

// Splits off the next whitespace-separated field of s.
std::string_view next_field(std::string_view &s) {
  size_t b = 0;
  while (b < s.size() && is_space(s[b]))
    ++b;
  size_t e = b;
  while (e < s.size() && !is_space(s[e]))
    ++e;
  std::string_view f = s.substr(b, e - b);
  s.remove_prefix(e);
  return f;
}

// Calls fn(line) for each line of text, without the newline.
template <typename Fn> void for_each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    fn(line);
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
}

bool strip_deleted(std::string &path) {
  if (path.size() < kDeletedSuffix.size() ||
      path.compare(path.size() - kDeletedSuffix.size(), kDeletedSuffix.size(), kDeletedSuffix) != 0)
    return false;
  path.resize(path.size() - kDeletedSuffix.size());
  return true;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

uint32_t ns_inode(int proc_dir, const char *link) {
  struct stat st {};
  if (::fstatat(proc_dir, link, &st, 0) != 0)
    return 0;
  return static_cast<uint32_t>(st.st_ino);
}

struct DirCloser {
  void operator()(DIR *d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// Numeric names in the directory name under dirfd, ascending.
std::vector<uint32_t> numeric_entries(int dirfd, const char *name) {
  std::vector<uint32_t> out;
  const int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return out;
  DirPtr d(::fdopendir(fd));
  if (!d) {
    ::close(fd);
    return out;
  }
  while (dirent *e = ::readdir(d.get())) {
    uint32_t v = 0;
    if (parse_num(std::string_view(e->d_name), v))
      out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

std::optional<StatFields> parse_stat(std::string_view stat) {
  size_t open = stat.find('(');
  size_t close = stat.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  StatFields f;
  f.comm = std::string(stat.substr(open + 1, close - open - 1));
  std::string_view rest = stat.substr(close + 1);
  const std::string_view state = next_field(rest);
  if (state.size() != 1 || !parse_num(next_field(rest), f.ppid))
    return std::nullopt;
  f.state = state[0];
  // Field 22, starttime: 18 more after ppid (field 4).
  std::string_view start;
  for (int i = 0; i < 18; ++i)
    start = next_field(rest);
  if (!parse_num(start, f.start_time))
    f.start_time = 0;
  return f;
}

std::optional<uint32_t> parse_real_uid(std::string_view status) {
  std::optional<uint32_t> uid;
  for_each_line(status, [&](std::string_view line) {
    if (uid || !starts_with(line, "Uid:"))
      return;
    line.remove_prefix(4);
    uint32_t v = 0;
    if (parse_num(next_field(line), v))
      uid = v;
  });
  return uid;
}

std::optional<std::string> parse_cgroup_v2_path(std::string_view cgroup) {
  std::optional<std::string> path;
  for_each_line(cgroup, [&](std::string_view line) {
    if (!path && starts_with(line, "0::"))
      path = std::string(line.substr(3));
  });
  return path;
}

std::optional<ProcIdentity> read_process(uint32_t pid, std::string *cgroup_v2_path) {
  const Fd dir = open_proc_dir(pid);
  if (!dir.ok())
    return std::nullopt;
  auto stat = read_small_file_at(dir.get(), "stat");
  if (!stat)
    return std::nullopt;
  auto fields = parse_stat(*stat);
  if (!fields || fields->exited())
    return std::nullopt;
  ProcIdentity id;
  id.pid = pid;
  id.ppid = fields->ppid;
  id.comm = std::move(fields->comm);
  id.start_time = fields->start_time;
  if (auto status = read_small_file_at(dir.get(), "status"))
    id.uid = parse_real_uid(*status).value_or(0);
  id.mntns = ns_inode(dir.get(), "ns/mnt");
  id.ipcns = ns_inode(dir.get(), "ns/ipc");
  if (auto cg = read_small_file_at(dir.get(), "cgroup")) {
    const auto lines = parse_cgroup_lines(*cg);
    id.cgroup_path = process_cgroup_path(lines).value_or("");
    if (cgroup_v2_path) {
      cgroup_v2_path->clear();
      for (const CgroupLine &l : lines)
        if (l.v2()) {
          *cgroup_v2_path = l.path;
          break;
        }
    }
  }
  return id;
}

std::vector<uint32_t> list_pids() { return numeric_entries(AT_FDCWD, "/proc"); }

bool process_alive(uint32_t pid) {
  if (pid == 0)
    return false;
  const auto stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  const auto fields = stat ? parse_stat(*stat) : std::nullopt;
  return fields && !fields->exited();
}

std::optional<MapsEntry> parse_maps_line(std::string_view line) {
  // start-end perms offset maj:min inode [path]
  std::string_view rest = line;
  std::string_view range = next_field(rest);
  next_field(rest); // perms
  next_field(rest); // offset
  std::string_view dev = next_field(rest);
  std::string_view ino = next_field(rest);
  MapsEntry m;
  size_t dash = range.find('-');
  size_t colon = dev.find(':');
  uint32_t major = 0, minor = 0;
  if (dash == std::string_view::npos || colon == std::string_view::npos ||
      !parse_num(range.substr(0, dash), m.start, 16) ||
      !parse_num(range.substr(dash + 1), m.end, 16) ||
      !parse_num(dev.substr(0, colon), major, 16) || !parse_num(dev.substr(colon + 1), minor, 16) ||
      !parse_num(ino, m.ino))
    return std::nullopt;
  // The kernel's dev_t has 12 bits of major and 20 of minor: wider numbers
  // would fold into another device's.
  if (major > 0xfff || minor > 0xfffff)
    return std::nullopt;
  m.dev = major << 20 | minor;
  // The path is the rest after the padding; it may contain spaces.
  while (!rest.empty() && is_space(rest.front()))
    rest.remove_prefix(1);
  // The kernel writes a newline in a name as \012 here, and nothing else
  // escaped: decoded, as near as this text allows (map_files, for root,
  // gives the name exactly).
  m.path.clear();
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest.substr(i, 4) == "\\012") {
      m.path += '\n';
      i += 3;
    } else {
      m.path += rest[i];
    }
  }
  m.deleted = strip_deleted(m.path);
  return m;
}

namespace {

void fill_stat(HeldFile &h, const struct stat &st) {
  h.stat_ok = true;
  h.size = static_cast<uint64_t>(st.st_size);
  h.bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  h.uid = st.st_uid;
  h.mtime_s = st.st_mtim.tv_sec;
}

// What an inode on a tmpfs or hugetlbfs superblock is, from where it lives.
// On a filesystem the holder's mount table shows, a file. Elsewhere it is
// on one of the kernel's own shm mounts, which no mount table lists: there
// the kernel names memfds "/memfd:..." and SysV segments "/SYSV..." (and
// shared anonymous mappings "/dev/zero", which nobody can name, so they
// are left out), or it is a file of a tmpfs only another namespace mounts,
// reached through an fd. nullopt: not shared memory.
std::optional<HeldKind> held_kind(bool in_holders_mounts, bool via_fd, std::string_view path) {
  if (in_holders_mounts)
    return HeldKind::tmpfs;
  if (starts_with(path, "/memfd:"))
    return HeldKind::memfd;
  if (starts_with(path, "/SYSV"))
    return HeldKind::sysv;
  if (via_fd && !starts_with(path, "/dev/zero"))
    return HeldKind::tmpfs;
  return std::nullopt;
}

// The name without the kernel's " (deleted)" mark, which only an unlinked
// file gets: a linked file may really be named so.
void set_path(HeldFile &h, std::string path) {
  if (h.deleted)
    strip_deleted(path);
  h.path = std::move(path);
}

} // namespace

std::map<std::pair<uint32_t, uint64_t>, std::vector<uint32_t>>
find_holders(const std::set<std::pair<uint32_t, uint64_t>> &files, uint32_t skip_pid) {
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint32_t>> out;
  if (files.empty())
    return out;
  for (uint32_t pid : list_pids()) {
    if (pid == skip_pid)
      continue;
    const Fd dir = open_proc_dir(pid);
    if (!dir.ok())
      continue;
    std::set<std::pair<uint32_t, uint64_t>> mine;
    const Fd fds(::openat(dir.get(), "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    for (uint32_t fd : fds.ok() ? numeric_entries(fds.get(), ".") : std::vector<uint32_t>{}) {
      struct stat st {};
      const std::string name = std::to_string(fd);
      if (::fstatat(fds.get(), name.c_str(), &st, 0) == 0) {
        const std::pair<uint32_t, uint64_t> key{kernel_dev(st.st_dev), st.st_ino};
        if (files.count(key))
          mine.insert(key);
      }
    }
    if (auto maps = read_small_file_at(dir.get(), "maps"))
      for_each_line(*maps, [&](std::string_view line) {
        if (auto m = parse_maps_line(line); m && files.count({m->dev, m->ino}))
          mine.insert({m->dev, m->ino});
      });
    for (const auto &key : mine)
      out[key].push_back(pid);
  }
  return out;
}

std::vector<HeldFile> scan_holdings(uint32_t pid, std::optional<uint64_t> start_time) {
  std::map<std::pair<uint32_t, uint64_t>, HeldFile> held;
  const Fd dir = open_proc_dir(pid);
  if (!dir.ok())
    return {};
  // Everything below is read through dir, so it is all of the process
  // whose stat this is.
  if (start_time) {
    const auto stat = read_small_file_at(dir.get(), "stat");
    const auto fields = stat ? parse_stat(*stat) : std::nullopt;
    if (!fields || fields->start_time != *start_time)
      return {};
  }

  // Devices of the tmpfs and hugetlbfs mounts this process sees.
  std::set<uint32_t> shm_devs;
  if (auto text = read_small_file_at(dir.get(), "mountinfo"))
    for (const MountInfo &m : parse_mountinfo(*text))
      if (m.is_tmpfs())
        shm_devs.insert(m.dev);

  const Fd fds(::openat(dir.get(), "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (uint32_t fd : fds.ok() ? numeric_entries(fds.get(), ".") : std::vector<uint32_t>{}) {
    const std::string name = std::to_string(fd);
    auto target = read_link_at(fds.get(), name.c_str());
    struct stat st {};
    struct statfs sfs {};
    // stat and statfs of the magic link reach the open file itself, even
    // unlinked, without opening it: an open here would be an open of the
    // file by shmbpf, which the kernel side reports.
    if (!target || ::fstatat(fds.get(), name.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode) ||
        ::statfs(through(fds, name).c_str(), &sfs) != 0 ||
        !is_shm_magic(static_cast<long>(sfs.f_type)))
      continue;
    const uint32_t dev = kernel_dev(st.st_dev);
    const auto kind = held_kind(shm_devs.count(dev) != 0, true, *target);
    if (!kind)
      continue;
    HeldFile &h = held[{dev, st.st_ino}];
    h.dev = dev;
    h.ino = st.st_ino;
    h.kind = *kind;
    h.via_fd = true;
    h.deleted = *kind != HeldKind::tmpfs || st.st_nlink == 0;
    set_path(h, std::move(*target));
    fill_stat(h, st);
  }

  const Fd map_files(::openat(dir.get(), "map_files", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (auto maps = read_small_file_at(dir.get(), "maps")) {
    for_each_line(*maps, [&](std::string_view line) {
      auto m = parse_maps_line(line);
      if (!m || m->path.empty())
        return;
      HeldFile &h = held[{m->dev, m->ino}];
      if (h.via_fd || h.via_map) {
        h.via_map = true;
        return;
      }
      // map_files (root) reaches the mapped inode itself: its link count
      // and its name as it is, where maps escapes newlines and marks
      // deletion in text.
      char range[48];
      std::snprintf(range, sizeof range, "%llx-%llx", static_cast<unsigned long long>(m->start),
                    static_cast<unsigned long long>(m->end));
      struct stat st {};
      struct statfs sfs {};
      const bool stat_ok =
          map_files.ok() && ::fstatat(map_files.get(), range, &st, 0) == 0 && st.st_ino == m->ino;
      std::string path = std::move(m->path);
      bool deleted = m->deleted;
      if (stat_ok) {
        if (auto exact = read_link_at(map_files.get(), range))
          path = std::move(*exact);
        deleted = st.st_nlink == 0;
      }
      // Not on a tmpfs the holder mounts: a memfd or SysV segment of the
      // kernel's own mount, when map_files (root) confirms a tmpfs-like
      // filesystem at all; maps has no word of it.
      const bool mounted = shm_devs.count(m->dev) != 0;
      const bool shm_fs = mounted || !stat_ok ||
                          (::statfs(through(map_files, range).c_str(), &sfs) == 0 &&
                           is_shm_magic(static_cast<long>(sfs.f_type)));
      const auto kind = shm_fs ? held_kind(mounted, false, path) : std::nullopt;
      // A SysV mapping's inode number is its shmid, and 0 is a valid one.
      if (!kind || (m->ino == 0 && *kind != HeldKind::sysv)) {
        held.erase({m->dev, m->ino});
        return;
      }
      h.dev = m->dev;
      h.ino = m->ino;
      h.kind = *kind;
      h.via_map = true;
      h.deleted = *kind != HeldKind::tmpfs || deleted;
      set_path(h, std::move(path));
      if (stat_ok)
        fill_stat(h, st);
    });
  }

  std::vector<HeldFile> out;
  out.reserve(held.size());
  for (auto &[key, h] : held)
    out.push_back(std::move(h));
  return out;
}

std::vector<SysvEntry> parse_sysvipc_shm(std::string_view text) {
  std::vector<SysvEntry> out;
  bool header = true;
  for_each_line(text, [&](std::string_view line) {
    if (header) {
      header = false;
      return;
    }
    // key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime rss swap
    std::string_view f[16];
    size_t n = 0;
    std::string_view rest = line;
    while (n < 16) {
      std::string_view v = next_field(rest);
      if (v.empty())
        break;
      f[n++] = v;
    }
    SysvEntry e;
    int64_t key = 0;
    uint32_t perms = 0;
    if (n < 7 || !parse_num(f[0], key) || !parse_num(f[1], e.shmid) || !parse_num(f[2], perms, 8) ||
        !parse_num(f[3], e.size) || !parse_num(f[4], e.cpid) || !parse_num(f[5], e.lpid) ||
        !parse_num(f[6], e.nattch))
      return;
    // Keys >= 2^31 are printed as negative ints.
    e.key = static_cast<uint32_t>(key);
    // The mode column includes SHM_DEST (01000): IPC_RMID done, still attached.
    e.removed = (perms & 01000) != 0;
    e.mode = perms & 0777;
    // Owner and creator: unknown (0) on a line cut short.
    if (n >= 8 && !parse_num(f[7], e.uid))
      e.uid = 0;
    if (n >= 10 && !parse_num(f[9], e.cuid))
      e.cuid = 0;
    // rss (already in bytes) appeared in later kernels; absent means unknown.
    if (n >= 15 && !parse_num(f[14], e.rss_bytes))
      e.rss_bytes = 0;
    if (n >= 14 && !parse_num(f[13], e.ctime_s))
      e.ctime_s = 0;
    out.push_back(e);
  });
  return out;
}

std::vector<SysvEntry> read_sysvipc_shm() {
  auto text = read_small_file("/proc/sysvipc/shm");
  if (!text)
    return {};
  return parse_sysvipc_shm(*text);
}

std::optional<std::vector<SysvEntry>> read_sysvipc_shm_of(uint32_t pid) {
  const std::string ns = "/proc/" + std::to_string(pid) + "/ns/ipc";
  int fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  // /proc/sysvipc lists the reader's IPC namespace.
  std::optional<std::vector<SysvEntry>> out;
  in_ipc_namespace(fd, [&] {
    if (auto text = read_small_file("/proc/sysvipc/shm"))
      out = parse_sysvipc_shm(*text);
  });
  ::close(fd);
  return out;
}

} // namespace shmbpf
