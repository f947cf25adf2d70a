#include "sources/cgroup.hpp"

#include "facts/scan.hpp"
#include "sources/small_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <deque>

namespace shmbpf {

namespace {

// v1's "no limit" is the page counter's maximum rounded down to a page
// (9223372036854771712 with 4 KiB pages); nobody sets a real limit this high.
constexpr uint64_t kNoLimitFrom = uint64_t{1} << 62;

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t at = s.find(sep);
    const std::string_view part = s.substr(0, at);
    if (!part.empty())
      out.emplace_back(part);
    if (at == std::string_view::npos)
      break;
    s.remove_prefix(at + 1);
  }
  return out;
}

// "key<sep>value" lines of a kernel file, each handed to fn(key, value);
// lines without sep are skipped.
template <class Fn> void for_each_entry(std::string_view text, char sep, Fn &&fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (const size_t at = line.find(sep); at != std::string_view::npos)
      fn(line.substr(0, at), line.substr(at + 1));
  }
}

// A whole decimal number, nothing around it.
std::optional<uint64_t> whole_number(std::string_view v) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size())
    return std::nullopt;
  return n;
}

bool has_option(const std::string &options, std::string_view name) {
  for (const std::string &o : split(options, ','))
    if (o == name)
      return true;
  return false;
}

// A ".." component: the cgroup lies outside the reader's cgroup namespace,
// which the mount (made inside it) cannot reach.
bool leaves_namespace(std::string_view path) {
  return path.find("/../") != std::string_view::npos || path.ends_with("/..");
}

// A path below a mount's root as the hierarchy names it.
std::string join_root(const std::string &root, const std::string &rel) {
  if (rel.empty())
    return root.empty() ? "/" : root;
  return (root == "/" ? std::string() : root) + rel;
}

std::string parent_of(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

} // namespace

bool CgroupLine::has(std::string_view controller) const {
  for (const std::string &c : controllers)
    if (c == controller)
      return true;
  return false;
}

std::vector<CgroupLine> parse_cgroup_lines(std::string_view text) {
  std::vector<CgroupLine> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    // The path may itself hold colons: only the first two separate fields.
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos)
      continue;
    const std::string_view id = line.substr(0, c1);
    CgroupLine l;
    auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), l.hierarchy);
    const std::string_view path = line.substr(c2 + 1);
    if (id.empty() || ec != std::errc() || end != id.data() + id.size() || !path.starts_with('/'))
      continue;
    l.controllers = split(line.substr(c1 + 1, c2 - c1 - 1), ',');
    l.path = std::string(path);
    out.push_back(std::move(l));
  }
  return out;
}

// What real hosts show, and why the v2 line is not always the answer:
//   v2 only:   "0::/system.slice/docker-<id>.scope"
//   hybrid, this project's test machine (Docker 'Cgroup Driver: cgroupfs',
//   'Cgroup Version: 1'): runc joins the unified hierarchy as well, so a
//   container's process reads "9:name=systemd:/docker/<id>",
//   "4:memory:/docker/<id>", ... and "0::/docker/<id>"; while processes
//   that no manager put in a v2 cgroup read "0::/" next to a deeper v1 path
//   ("4:memory:/process_api/<hex>").
//   v1 only (no cgroup2 mounted anywhere: the kernel shows no "0::" line
//   then): "N:name=systemd:/docker/<id>" (cgroupfs driver),
//   "N:name=systemd:/system.slice/docker-<id>.scope" (systemd driver),
//   "N:memory:/kubepods/burstable/pod<uid>/<id>" (kubelet, cgroupfs).
// A container's path is the same in every v1 hierarchy its runtime
// created; name=systemd is the one every systemd host mounts, memory the one
// a runtime always sets up.
std::optional<std::string> process_cgroup_path(const std::vector<CgroupLine> &lines) {
  const CgroupLine *v2 = nullptr;
  for (const CgroupLine &l : lines)
    if (l.v2()) {
      v2 = &l;
      break;
    }
  const CgroupLine *v1 = nullptr;
  for (std::string_view controller : {"name=systemd", "memory", ""}) {
    for (const CgroupLine &l : lines)
      if (!l.v2() && l.path != "/" && (controller.empty() || l.has(controller))) {
        v1 = &l;
        break;
      }
    if (v1)
      break;
  }
  if (v2 && (v2->path != "/" || !v1))
    return v2->path;
  if (v1)
    return v1->path;
  if (!lines.empty())
    return "/";
  return std::nullopt;
}

std::optional<MemoryLimit> parse_memory_limit(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && space(text.back()))
    text.remove_suffix(1);
  if (text == "max")
    return MemoryLimit{};
  uint64_t bytes = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  if (bytes >= kNoLimitFrom)
    return MemoryLimit{};
  return MemoryLimit{bytes};
}

MemoryLimit tighter(const MemoryLimit &a, const MemoryLimit &b) {
  if (!a.bytes)
    return b;
  if (!b.bytes)
    return a;
  return *a.bytes <= *b.bytes ? a : b;
}

MemoryCgroupDirs memory_cgroup_dirs(const std::vector<CgroupLine> &lines,
                                    const std::vector<MountInfo> &mounts) {
  // A controller lives in one hierarchy: a v1 line that has memory means
  // the v2 hierarchy has none (hybrid hosts).
  const CgroupLine *line = nullptr;
  for (const CgroupLine &l : lines)
    if (!l.v2() && l.has("memory")) {
      line = &l;
      break;
    }
  MemoryCgroupDirs out;
  out.v1 = line != nullptr;
  if (!out.v1)
    for (const CgroupLine &l : lines)
      if (l.v2()) {
        line = &l;
        break;
      }
  if (!line || leaves_namespace(line->path))
    return out;

  // The first mount of that hierarchy that reaches the cgroup (a mount of a
  // subtree may not).
  for (const MountInfo &m : mounts) {
    const bool fits = out.v1 ? m.fstype == "cgroup" && has_option(m.super_options, "memory")
                             : m.fstype == "cgroup2";
    if (!fits || !join_mount_path(m, line->path))
      continue;
    for (std::string path = line->path;; path = parent_of(path)) {
      auto dir = join_mount_path(m, path);
      if (!dir)
        break; // above the mount's root
      if (!dir->ends_with('/'))
        dir->push_back('/');
      out.dirs.push_back(std::move(*dir));
      if (path == "/")
        break;
    }
    return out;
  }
  return out;
}

namespace {

const char *limit_file(bool v1) { return v1 ? "memory.limit_in_bytes" : "memory.max"; }

// The tightest limit the cgroup's and its ancestors' files hold; nullopt
// when none of them could be read.
std::optional<MemoryLimit> tightest_limit(const MemoryCgroupDirs &cgroup) {
  std::optional<MemoryLimit> limit;
  for (const std::string &d : cgroup.dirs)
    if (const auto text = read_small_file(d + limit_file(cgroup.v1)))
      if (const auto one = parse_memory_limit(*text))
        limit = limit ? tighter(*limit, *one) : *one;
  return limit;
}

} // namespace

std::vector<std::string> memory_limit_files(const std::vector<CgroupLine> &lines,
                                            const std::vector<MountInfo> &mounts) {
  MemoryCgroupDirs d = memory_cgroup_dirs(lines, mounts);
  for (std::string &dir : d.dirs)
    dir += limit_file(d.v1);
  return std::move(d.dirs);
}

std::optional<uint64_t> parse_memory_stat_shmem(std::string_view text) {
  std::optional<uint64_t> shmem, total;
  for_each_entry(text, ' ', [&](std::string_view key, std::string_view value) {
    if (key != "shmem" && key != "total_shmem")
      return;
    if (const auto n = whole_number(value))
      (key == "shmem" ? shmem : total) = n;
  });
  return total ? total : shmem;
}

std::optional<MemoryLimit> read_memory_limit(uint32_t pid, const std::vector<MountInfo> &mounts) {
  const auto dirs = read_memory_cgroup_dirs(pid, mounts);
  return dirs ? tightest_limit(*dirs) : std::nullopt;
}

std::optional<CgroupMemory> read_cgroup_memory(const MemoryCgroupDirs &cgroup) {
  if (cgroup.dirs.empty())
    return std::nullopt;
  const std::string &dir = cgroup.dirs.front();
  const auto stat = read_small_file(dir + "memory.stat");
  const auto usage =
      read_small_file(dir + (cgroup.v1 ? "memory.usage_in_bytes" : "memory.current"));
  if (!stat || !usage)
    return std::nullopt;
  const auto shmem = parse_memory_stat_shmem(*stat);
  const auto used = parse_memory_limit(*usage); // one number, as a limit is
  if (!shmem || !used || !used->bytes)
    return std::nullopt;
  return CgroupMemory{.shmem = *shmem,
                      .usage = *used->bytes,
                      .limit = tightest_limit(cgroup).value_or(MemoryLimit{})};
}

std::optional<CgroupMemory> parse_meminfo(std::string_view text) {
  std::optional<uint64_t> total, available, shmem;
  for_each_entry(text, ':', [&](std::string_view key, std::string_view value) {
    std::optional<uint64_t> *to = key == "MemTotal"       ? &total
                                  : key == "MemAvailable" ? &available
                                  : key == "Shmem"        ? &shmem
                                                          : nullptr;
    while (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
    if (!to || !value.ends_with(" kB"))
      return;
    value.remove_suffix(3);
    if (const auto kb = whole_number(value); kb && *kb <= (UINT64_MAX >> 10))
      *to = *kb << 10;
  });
  if (!total || !available || !shmem)
    return std::nullopt;
  return CgroupMemory{.shmem = *shmem,
                      .usage = *total - std::min(*total, *available),
                      .limit = MemoryLimit{*total}};
}

std::optional<CgroupMemory> read_host_memory() {
  const auto text = read_small_file("/proc/meminfo");
  return text ? parse_meminfo(*text) : std::nullopt;
}

namespace {

// The mount of the hierarchy the memory controller is on: a v1 mount whose
// options name memory, else the first cgroup2 mount; nullptr without one.
const MountInfo *memory_hierarchy(const std::vector<MountInfo> &mounts, bool &v1) {
  for (const MountInfo &m : mounts)
    if (m.fstype == "cgroup" && has_option(m.super_options, "memory")) {
      v1 = true;
      return &m;
    }
  v1 = false;
  for (const MountInfo &m : mounts)
    if (m.fstype == "cgroup2")
      return &m;
  return nullptr;
}

// The directories of the cgroup at rel (below the mount's root) and its
// ancestors, as a process's line in that hierarchy would lead to them.
MemoryCgroupDirs dirs_below(const MountInfo &mount, bool v1, const std::string &rel) {
  const std::string in_hierarchy = join_root(mount.root, rel);
  const CgroupLine line =
      v1 ? CgroupLine{1, {"memory"}, in_hierarchy} : CgroupLine{0, {}, in_hierarchy};
  return memory_cgroup_dirs({line}, {mount});
}

} // namespace

std::vector<NamedCgroupMemory> read_top_memory_cgroups(const std::vector<MountInfo> &mounts,
                                                       size_t max) {
  bool v1 = false;
  const MountInfo *mount = memory_hierarchy(mounts, v1);
  std::vector<NamedCgroupMemory> out;
  if (!mount)
    return out;
  const int fd = ::open(mount->mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return out;
  DIR *d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return out;
  }
  std::vector<std::string> names;
  while (const dirent *ent = ::readdir(d)) {
    const std::string_view name = ent->d_name;
    if (ent->d_type == DT_DIR && name != "." && name != "..")
      names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    if (out.size() == max)
      break;
    const MemoryCgroupDirs dirs = dirs_below(*mount, v1, "/" + name);
    // A v2 child without the memory controller has no memory.stat.
    if (auto memory = read_cgroup_memory(dirs))
      out.push_back({join_root(mount->root, "/" + name), *memory});
  }
  return out;
}

std::optional<MemoryCgroupDirs>
find_memory_cgroup(uint64_t id, const std::vector<MountInfo> &mounts, size_t max_dirs) {
  bool v1 = false;
  const MountInfo *mount = memory_hierarchy(mounts, v1);
  if (!mount || id == 0)
    return std::nullopt;
  // Breadth first: a container's cgroup is a few levels down. Paths are
  // relative to the mount's root, as /proc/<pid>/cgroup would give them
  // (below the mount's own root).
  std::deque<std::string> todo{""};
  struct stat root {};
  if (::stat(mount->mountpoint.c_str(), &root) != 0)
    return std::nullopt;
  std::optional<std::string> found;
  if (root.st_ino == id)
    found = "";
  for (size_t seen = 0; !found && !todo.empty() && seen < max_dirs; ++seen) {
    const std::string rel = std::move(todo.front());
    todo.pop_front();
    const std::string dir = mount->mountpoint + rel;
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
      continue;
    DIR *d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      continue;
    }
    while (const dirent *ent = ::readdir(d)) {
      const std::string_view name = ent->d_name;
      if (ent->d_type != DT_DIR || name == "." || name == "..")
        continue;
      std::string child = rel + "/" + std::string(name);
      if (ent->d_ino == id) {
        found = std::move(child);
        break;
      }
      // What is queued is bounded as what is opened: a directory of
      // many children does not grow the walk past it.
      if (todo.size() < max_dirs)
        todo.push_back(std::move(child));
    }
    ::closedir(d);
  }
  if (!found)
    return std::nullopt;
  // Back to the root through the mount, as a process's line would lead.
  MemoryCgroupDirs dirs = dirs_below(*mount, v1, *found);
  if (dirs.dirs.empty())
    return std::nullopt;
  return dirs;
}

std::optional<MemoryCgroupDirs> read_memory_cgroup_dirs(uint32_t pid,
                                                        const std::vector<MountInfo> &mounts) {
  const auto text = read_small_file("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text)
    return std::nullopt;
  MemoryCgroupDirs d = memory_cgroup_dirs(parse_cgroup_lines(*text), mounts);
  if (d.dirs.empty())
    return std::nullopt;
  return d;
}

std::optional<MemoryCgroupDirs>
read_memory_cgroup_below_root(uint32_t pid, const std::vector<MountInfo> &mounts) {
  auto dirs = read_memory_cgroup_dirs(pid, mounts);
  if (dirs && dirs->dirs.size() < 2)
    return std::nullopt;
  return dirs;
}

uint64_t scan_cgroup_id(uint64_t v2_id, std::string_view container_path) {
  if (v2_id != 0)
    return v2_id;
  if (container_path.empty() || container_path == "/")
    return 0;
  return path_cgroup_id(container_path);
}

} // namespace shmbpf
