#include "sources/small_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace shmbpf {

std::optional<std::string> read_small_file(const std::string &path, size_t max) {
  return read_small_file_at(AT_FDCWD, path.c_str(), max);
}

std::optional<std::string> read_small_file_at(int dirfd, const char *name, size_t max) {
  const int fd = ::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  std::string out;
  char buf[8192]; // a process's maps run to many pages
  while (out.size() < max) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, max - out.size()));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

} // namespace shmbpf
