#include "sources/namespaces.hpp"

#include "sources/mountinfo.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>

namespace shmbpf {

uint32_t namespace_of(int pid, const char *kind) {
  struct stat st {};
  std::string p = "/proc/" + std::to_string(pid) + "/ns/" + kind;
  if (stat(p.c_str(), &st) != 0)
    return 0;
  return static_cast<uint32_t>(st.st_ino);
}

bool in_ipc_namespace(int nsfd, const std::function<void()> &fn) {
  bool joined = false;
  int err = 0;
  std::thread worker([&] {
    joined = ::setns(nsfd, CLONE_NEWIPC) == 0;
    err = errno;
    if (joined)
      fn();
  });
  worker.join();
  if (!joined)
    errno = err;
  return joined;
}

uint32_t mount_namespace_of(int pid) { return namespace_of(pid, "mnt"); }

namespace {

constexpr uint32_t kUnknownOwner = MountNamespace::kUnknownOwner;

// Whether the namespace ns_fd refers to is owned by a user namespace other
// than shmbpf's own: nullopt when it is not, else that user namespace's
// owner (kUnknownOwner when it cannot be read). One NS_GET_USERNS for both.
std::optional<uint32_t> foreign_owner(int ns_fd) {
  struct stat own {
  }, owner{};
  if (::stat("/proc/self/ns/user", &own) != 0)
    return std::nullopt; // no user namespaces in this kernel: all are the host's
  const int user_ns = ::ioctl(ns_fd, NS_GET_USERNS);
  // EPERM: owned by a user namespace outside ours, so not ours either.
  if (user_ns < 0)
    return errno != ENOTTY && errno != EINVAL ? std::optional(kUnknownOwner) : std::nullopt;
  std::optional<uint32_t> out;
  if (::fstat(user_ns, &owner) != 0 || owner.st_ino != own.st_ino || owner.st_dev != own.st_dev) {
    uid_t uid = kUnknownOwner;
    if (::ioctl(user_ns, NS_GET_OWNER_UID, &uid) != 0)
      uid = kUnknownOwner;
    out = uid;
  }
  ::close(user_ns);
  return out;
}

// Whether pid's mount namespace is foreign, and if so its user namespace's
// owner (MountNamespace::owner_uid).
std::pair<bool, uint32_t> mount_namespace_owner(int pid) {
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {true, kUnknownOwner}; // unknown: never trusted to name a filesystem
  const std::optional<uint32_t> owner = foreign_owner(fd);
  ::close(fd);
  return {owner.has_value(), owner.value_or(0)};
}

} // namespace

bool is_foreign_namespace(int ns_fd) { return foreign_owner(ns_fd).has_value(); }

uint32_t host_mount_namespace() {
  if (uint32_t init = mount_namespace_of(1))
    return init;
  return mount_namespace_of(static_cast<int>(getpid()));
}

HostNamespaces read_host_namespaces() {
  HostNamespaces host;
  host.pid = 1;
  host.mntns = namespace_of(1, "mnt");
  host.ipcns = namespace_of(1, "ipc");
  if (host.mntns == 0 || host.ipcns == 0) {
    host.pid = static_cast<uint32_t>(getpid());
    host.mntns = namespace_of(static_cast<int>(host.pid), "mnt");
    host.ipcns = namespace_of(static_cast<int>(host.pid), "ipc");
  }
  return host;
}

std::vector<MountNamespace> scan_mount_namespaces() {
  std::vector<MountNamespace> out;
  std::unordered_set<uint32_t> seen;
  DIR *d = opendir("/proc");
  if (!d)
    return out;
  while (dirent *de = readdir(d)) {
    char *end = nullptr;
    long pid = std::strtol(de->d_name, &end, 10);
    if (*end != '\0' || pid <= 0)
      continue;
    uint32_t ns = mount_namespace_of(static_cast<int>(pid));
    if (ns == 0 || !seen.insert(ns).second)
      continue;
    const auto [foreign, owner] = mount_namespace_owner(static_cast<int>(pid));
    MountNamespace m{ns, static_cast<int>(pid), read_mountinfo(static_cast<int>(pid)), foreign,
                     owner};
    if (m.mounts.empty()) {
      seen.erase(ns); // raced with an exit: let another member represent it
      continue;
    }
    out.push_back(std::move(m));
  }
  closedir(d);
  return out;
}

std::optional<std::vector<MountNamespace>>
refresh_mount_namespaces(std::vector<MountNamespace> known) {
  for (MountNamespace &m : known) {
    if (mount_namespace_of(m.pid) != m.mntns)
      return std::nullopt;
    m.mounts = read_mountinfo(m.pid);
    // Exited after the check: another member must represent it.
    if (m.mounts.empty() || mount_namespace_of(m.pid) != m.mntns)
      return std::nullopt;
  }
  return known;
}

} // namespace shmbpf
