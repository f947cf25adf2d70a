#include "daemon/unix_socket.hpp"

#include "views/escape.hpp"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

namespace shmbpf {

namespace {

[[noreturn]] void refuse(const std::string &path, const std::string &why) {
  throw FatalError("socket " + escape_text(path), why, 2);
}

std::string parent_of(const std::string &path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

std::string SocketSetting::problem(std::string_view path) {
  if (path.empty())
    return "is empty";
  if (path.size() >= sizeof(sockaddr_un{}.sun_path))
    return "is " + std::to_string(path.size()) +
           " bytes long; a unix socket's path holds at most " +
           std::to_string(sizeof(sockaddr_un{}.sun_path) - 1);
  if (path.find('\0') != std::string_view::npos)
    return "holds a NUL byte";
  if (path.back() == '/')
    return "names a directory, not a socket";
  return {};
}

Result<gid_t> socket_group(std::string_view name) {
  gid_t gid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), gid);
  if (!name.empty() && ec == std::errc{} && end == name.data() + name.size())
    return gid;
  const std::string n(name);
  group g{};
  group *found = nullptr;
  std::vector<char> buf(16384);
  const int err = getgrnam_r(n.c_str(), &g, buf.data(), buf.size(), &found);
  if (found)
    return found->gr_gid;
  return Error{"no group named '" + escape_text(name) + "'" +
               (err ? std::string(" (") + std::strerror(err) + ")" : std::string())};
}

int probe_socket(const std::string &path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return errno;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof addr.sun_path - 1));
  const int rc = connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr);
  const int err = rc == 0 ? 0 : errno;
  close(fd);
  return err;
}

void prepare_socket_path(const std::string &path) {
  if (const std::string why = SocketSetting::problem(path); !why.empty())
    refuse(path, "the path " + why);
  const std::string dir = parent_of(path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    // Only the socket's own directory is made (/run/shmbpf): a path whose
    // parents are missing too is more likely a typo than a wish.
    if (err != ENOENT || mkdir(dir.c_str(), SocketSetting::kDirMode) != 0)
      refuse(path, "cannot make its directory " + escape_text(dir) + ": " +
                       std::strerror(err != ENOENT ? err : errno));
  } else if (!S_ISDIR(st.st_mode)) {
    refuse(path, escape_text(dir) + " is not a directory");
  }
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      refuse(path, std::strerror(errno));
    return;
  }
  if (!S_ISSOCK(st.st_mode))
    refuse(path, "the path exists and is not a socket; remove it or choose another --socket");
  const int err = probe_socket(path);
  if (err == 0)
    refuse(path, "another shmbpf serve listens there already");
  if (err != ECONNREFUSED)
    refuse(path, std::string("cannot tell whether a daemon listens there: ") + std::strerror(err));
  // Nobody listens: the file of a daemon that did not get to remove it.
  if (unlink(path.c_str()) != 0 && errno != ENOENT)
    refuse(path, std::string("cannot remove the stale socket: ") + std::strerror(errno));
}

} // namespace shmbpf
