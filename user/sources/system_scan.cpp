#include "sources/system_scan.hpp"

#include "facts/dev.hpp"
#include "sources/cgroup.hpp"
#include "sources/mountinfo.hpp"
#include "sources/namespaces.hpp"
#include "sources/proc_scan.hpp"
#include "sources/tmpfs_scan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>

namespace shmbpf {

namespace {

// cgroup v2 id of a cgroup path: the inode of its directory.
uint64_t cgroup_id_of(const std::string &cgroup2_root, const std::string &path) {
  struct stat st {};
  std::string dir = cgroup2_root + (path == "/" ? "" : path);
  return stat(dir.c_str(), &st) == 0 ? st.st_ino : 0;
}

} // namespace

SystemScan scan_system() { return scan_system(scan_mount_namespaces()); }

namespace {

// fn(namespace, mount, root) for every naming tmpfs mount a path can reach, where
// root ("/proc/<pid>/root") leads into the namespace's view.
template <typename Fn>
void for_each_tmpfs_mount(const std::vector<MountNamespace> &namespaces, Fn fn) {
  for (const NamespaceMount &r : naming_tmpfs_mounts(namespaces))
    fn(*r.ns, *r.mount, "/proc/" + std::to_string(r.ns->pid) + "/root");
}

// read(mount, path) once per tmpfs filesystem (a device and the root it is
// mounted from), path being where the mount is seen through the namespace's
// root; through a shared-memory mountpoint where it has one
// (tmpfs_mounts_in_scan_order). A read that finds the path unreachable
// returns false: the process whose root led there exited, so the
// filesystem is tried through its next mount, and is left out, not reported
// empty, when none can reach it.
template <typename Fn>
void for_each_tmpfs_filesystem(const std::vector<MountNamespace> &namespaces, Fn read) {
  std::set<std::pair<uint32_t, std::string>> done; // (device, root)
  for (const NamespaceMount &r : tmpfs_mounts_in_scan_order(namespaces)) {
    const MountInfo &m = *r.mount;
    if (!done.count({m.dev, m.root}) &&
        read(m, "/proc/" + std::to_string(r.ns->pid) + "/root" + m.mountpoint))
      done.insert({m.dev, m.root});
  }
}

struct Usage {
  uint64_t used = 0;
  uint64_t fsid = 0;
};

// statfs's used bytes and the filesystem's identity at path, if path is on
// device dev (kernel encoding): a pid reused meanwhile would lead somewhere
// else. The identity is statfs's fsid where the kernel gives one, else the
// root's generation where the mount shows the whole filesystem. O_PATH: a
// mount point may be a file (a bind-mounted secret), even a fifo.
std::optional<Usage> usage_of(const std::string &path, uint32_t dev, bool whole_filesystem) {
  int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  struct stat st {};
  struct statfs sfs {};
  std::optional<Usage> u;
  if (::fstat(fd, &st) == 0 && kernel_dev(st.st_dev) == dev && ::fstatfs(fd, &sfs) == 0) {
    uint32_t id[2];
    static_assert(sizeof id == sizeof sfs.f_fsid);
    std::memcpy(id, &sfs.f_fsid, sizeof id);
    uint64_t fsid = uint64_t{id[0]} << 32 | id[1];
    if (fsid == 0 && whole_filesystem && S_ISDIR(st.st_mode))
      fsid = root_generation(fd);
    u = Usage{static_cast<uint64_t>(sfs.f_blocks - sfs.f_bfree) * sfs.f_bsize, fsid};
  }
  ::close(fd);
  return u;
}

} // namespace

uint64_t root_generation(int fd) {
  struct {
    struct file_handle h;
    unsigned char bytes[MAX_HANDLE_SZ];
  } fh{};
  fh.h.handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  if (::name_to_handle_at(fd, "", &fh.h, &mount_id, AT_EMPTY_PATH) != 0 ||
      fh.h.handle_bytes < sizeof(uint32_t))
    return 0;
  uint32_t generation = 0; // shmem's handle: generation, then the inode number
  std::memcpy(&generation, fh.h.f_handle, sizeof generation);
  return uint64_t{1} << 63 | generation;
}

std::vector<MountState> scan_mount_usage(const std::vector<MountNamespace> &namespaces) {
  std::vector<MountState> out;
  std::map<uint32_t, Usage> used; // by device: every mount of a filesystem has its usage
  for_each_tmpfs_mount(
      namespaces, [&](const MountNamespace &ns, const MountInfo &m, const std::string &root) {
        MountState st{m.mnt_id, ns.mntns, m.mountpoint, m.dev, m.size_limit().value_or(0), 0};
        st.foreign = ns.foreign;
        st.owner_uid = ns.owner_uid;
        if (auto u = usage_of(root + m.mountpoint, m.dev, m.root == "/")) {
          // A bind mount of a directory gives no identity: keep one found.
          auto [it, fresh] = used.try_emplace(m.dev, *u);
          if (!fresh)
            it->second = Usage{u->used, u->fsid != 0 ? u->fsid : it->second.fsid};
        }
        out.push_back(std::move(st));
      });
  for (MountState &st : out) {
    auto it = used.find(st.dev);
    st.used_known = it != used.end();
    st.used_bytes = st.used_known ? it->second.used : 0;
    st.fsid = st.used_known ? it->second.fsid : 0;
  }
  return out;
}

std::vector<ScannedFs> scan_filesystems(const std::vector<MountNamespace> &namespaces) {
  std::vector<ScannedFs> out;
  for_each_tmpfs_filesystem(namespaces, [&](const MountInfo &m, const std::string &path) {
    // Paths as the namespace's processes see them.
    ScanShortfall shortfall;
    auto files =
        scan_tmpfs_dir(path, m.mountpoint, m.dev, kScanMaxDepth, kScanMaxFiles, &shortfall);
    if (files)
      out.push_back({m.dev, m.mnt_id, m.mountpoint, std::move(*files), path, shortfall});
    return files.has_value();
  });
  return out;
}

std::vector<SeedKey> list_filesystems(const std::vector<MountNamespace> &namespaces) {
  std::vector<SeedKey> out;
  for_each_tmpfs_filesystem(namespaces, [&](const MountInfo &m, const std::string &path) {
    auto keys = list_tmpfs_dir(path, m.dev);
    if (keys)
      out.insert(out.end(), keys->begin(), keys->end());
    return keys.has_value();
  });
  return out;
}

SeedKey seed_key(const TmpfsFile &f) { return {shm_name_hash(f.leaf), f.dev, f.ino}; }

std::vector<SeedKey> seed_keys(const std::vector<ScannedFs> &filesystems) {
  std::vector<SeedKey> out;
  for (const auto &fs : filesystems)
    for (const auto &f : fs.files)
      out.push_back(seed_key(f));
  return out;
}

SystemScan scan_system(std::vector<MountNamespace> namespaces) {
  SystemScan scan;
  scan.namespaces = std::move(namespaces);
  scan.mounts = scan_mount_usage(scan.namespaces);
  scan.filesystems = scan_filesystems(scan.namespaces);

  std::string cgroup2;
  if (!scan.namespaces.empty())
    cgroup2 = find_cgroup2_mount(scan.namespaces.front().mounts).value_or("");
  std::map<uint64_t, std::string> cgroups;
  std::map<uint32_t, uint32_t> ipc_pids; // ipcns -> a process in it
  std::string v2_path;
  for (uint32_t pid : list_pids()) {
    auto id = read_process(pid, &v2_path);
    if (!id)
      continue;
    ScannedProcess p;
    // The id of the v2 cgroup, as BPF sees it, even where the path that
    // tells the container is a v1 one.
    const uint64_t v2_id = cgroup2.empty() || v2_path.empty() ? 0 : cgroup_id_of(cgroup2, v2_path);
    p.cgroup_id = scan_cgroup_id(v2_id, id->cgroup_path);
    if (p.cgroup_id)
      cgroups.emplace(p.cgroup_id, v2_id ? v2_path : id->cgroup_path);
    if (id->ipcns)
      ipc_pids.emplace(id->ipcns, pid);
    p.id = std::move(*id);
    p.holdings = scan_holdings(pid, p.id.start_time);
    scan.processes.push_back(std::move(p));
  }
  scan.cgroups.assign(cgroups.begin(), cgroups.end());

  // System V segments of every IPC namespace (containers have their own).
  uint32_t my_ipcns = 0;
  if (auto self = read_process(static_cast<uint32_t>(getpid())))
    my_ipcns = self->ipcns;
  for (const auto &[ipcns, pid] : ipc_pids) {
    if (ipcns == my_ipcns) {
      scan.ipc.push_back({ipcns, read_sysvipc_shm()});
    } else if (auto entries = read_sysvipc_shm_of(pid)) {
      scan.ipc.push_back({ipcns, std::move(*entries)});
    }
  }
  if (my_ipcns && !ipc_pids.count(my_ipcns))
    scan.ipc.push_back({my_ipcns, read_sysvipc_shm()});
  return scan;
}

std::vector<std::pair<uint64_t, std::string>> find_cgroup_paths(const std::vector<uint64_t> &ids) {
  std::vector<std::pair<uint64_t, std::string>> out;
  auto root = find_cgroup2_mount(read_mountinfo(0));
  if (!root || ids.empty())
    return out;
  std::unordered_set<uint64_t> want(ids.begin(), ids.end());
  auto check = [&](const std::string &dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0 && want.erase(st.st_ino))
      out.emplace_back(st.st_ino, dir.size() == root->size() ? "/" : dir.substr(root->size()));
  };
  check(*root);
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           *root, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator() && !want.empty();
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec))
      check(it->path().string());
  }
  return out;
}

uint64_t tmpfs_files_in_use() {
  uint64_t total = 0;
  std::set<uint32_t> seen; // a filesystem mounted twice counts once
  const std::vector<MountInfo> table = read_mountinfo(0);
  for (const MountInfo &m : table) {
    struct statvfs st {};
    if (!m.is_tmpfs() || is_overmounted(table, m) || !seen.insert(m.dev).second ||
        statvfs(m.mountpoint.c_str(), &st) != 0)
      continue;
    if (st.f_files > st.f_ffree)
      total += st.f_files - st.f_ffree;
  }
  return total;
}

} // namespace shmbpf
