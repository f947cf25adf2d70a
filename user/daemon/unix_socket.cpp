#include "daemon/unix_socket.hpp"

#include "daemon/own_file.hpp"
#include "views/escape.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace shmbpf {

namespace {

[[noreturn]] void refuse(const std::string &path, const std::string &why) {
  throw FatalError("socket " + escape_text(path), why, Exit::refused);
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
  const bool number = !name.empty() && ec == std::errc{} && end == name.data() + name.size();
  const std::string n(name);
  group g{};
  group *found = nullptr;
  std::vector<char> buf(16384);
  // A number must name a group too: (gid_t)-1 would make chown change
  // nothing, and a gid no group has is most likely a typo.
  const int err = number && gid != static_cast<gid_t>(-1)
                      ? getgrgid_r(gid, &g, buf.data(), buf.size(), &found)
                      : getgrnam_r(n.c_str(), &g, buf.data(), buf.size(), &found);
  if (found)
    return found->gr_gid;
  // Unescaped: the command line's error message escapes it.
  return Error{std::string(number ? "no group has the id " : "no group named ") + "'" + n + "'" +
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
  // The socket and its token are root's: nobody else may choose their names.
  if (const std::string why = unsafe_directory(dir); !why.empty())
    refuse(path, why);
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

std::string socket_token_path(const std::string &socket) { return socket + ".token"; }

Result<std::string> new_socket_token() {
  unsigned char raw[16];
  if (getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw))
    return Error{std::string("getrandom: ") + std::strerror(errno)};
  std::string token;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char b : raw) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

Result<void> write_socket_token(const std::string &socket, const std::string &token) {
  const std::string path = socket_token_path(socket);
  const std::string tmp = path + ".new";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return Error{escape_text(tmp) + ": " + std::strerror(errno)};
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const int err = errno;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Error{escape_text(path) + ": " + std::strerror(written ? errno : err)};
  }
  return {};
}

void remove_socket_token(const std::string &socket, const std::string &token) {
  // Only ours: a daemon started since may have written its own.
  if (read_socket_token(socket) == token)
    ::unlink(socket_token_path(socket).c_str());
}

std::string read_socket_token(const std::string &socket) {
  std::ifstream in(socket_token_path(socket));
  std::string token;
  if (!(in >> token) || token.size() != 32)
    return {};
  return token;
}

} // namespace shmbpf
