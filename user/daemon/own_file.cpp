#include "daemon/own_file.hpp"

#include "views/escape.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace shmbpf {

namespace {

bool ours(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

std::string owner_problem(const std::string &path, const struct stat &st) {
  const uid_t me = ::geteuid();
  return escape_text(path) + " belongs to uid " + std::to_string(st.st_uid) + ", not to root" +
         (me == 0 ? "" : " or to uid " + std::to_string(me));
}

// path opened for writing: an existing file reopened through an O_PATH
// handle once it is known to be a regular file (opening a device or a FIFO
// may act on it), a missing one created (O_EXCL); with O_EXCL in extra,
// only created. -1 with errno set, ELOOP for a symlink, ENXIO for a special
// file.
int open_for_writing(const std::string &path, int extra) {
  constexpr int kFlags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!(extra & O_EXCL)) {
      const int handle = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (handle >= 0) {
        struct stat st {};
        int fd = -1;
        if (::fstat(handle, &st) != 0)
          fd = -1;
        else if (S_ISLNK(st.st_mode))
          errno = ELOOP;
        else if (S_ISDIR(st.st_mode))
          errno = EISDIR;
        else if (!S_ISREG(st.st_mode))
          errno = ENXIO;
        else // the handle's own inode: /proc's link is followed, by design
          fd = ::open(("/proc/self/fd/" + std::to_string(handle)).c_str(),
                      (kFlags & ~O_NOFOLLOW) | extra);
        const int err = errno;
        ::close(handle);
        errno = err;
        return fd;
      }
      if (errno != ENOENT)
        return -1;
    }
    const int fd = ::open(path.c_str(), kFlags | O_CREAT | O_EXCL | extra, 0600);
    if (fd >= 0 || errno != EEXIST || (extra & O_EXCL))
      return fd;
    // Made by someone else meanwhile: looked at again.
  }
  errno = EEXIST;
  return -1;
}

} // namespace

std::string parent_of(const std::string &path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string unsafe_directory(const std::string &dir) {
  // The path as the kernel resolves it: a symlink on the way is judged by
  // where it leads, and by the directories holding it (checked below when
  // it is itself among them: a link in a directory of root's only is
  // root's choice).
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(dir.c_str(), nullptr), &std::free);
  if (!real)
    return escape_text(dir) + ": " + std::strerror(errno);
  const std::string path = real.get();
  // "/", then each directory down to path.
  for (size_t end = 0;; end = path.find('/', end + 1)) {
    const bool last = end == std::string::npos || end + 1 == path.size();
    const std::string here = last ? path : path.substr(0, end ? end : 1);
    struct stat st {};
    if (::lstat(here.c_str(), &st) != 0)
      return escape_text(here) + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode))
      return escape_text(here) + ": not a directory";
    if (!ours(st.st_uid))
      return owner_problem(here, st);
    if ((st.st_mode & S_IWOTH) && (last || !(st.st_mode & S_ISVTX)))
      return escape_text(here) + " is writable by every user" +
             (last ? ": keep shmbpf's files in a directory of their own" : "");
    if (last)
      break;
  }
  return {};
}

Result<int> open_own_file(const std::string &path, int extra) {
  const int fd = open_for_writing(path, extra);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return Error{escape_text(path) + " is a symbolic link: shmbpf writes no file through one"};
    if (err == ENXIO || err == ENODEV)
      return Error{escape_text(path) + " is not a regular file"};
    return Error{escape_text(path) + ": " + std::strerror(err)};
  }
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = escape_text(path) + ": " + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = escape_text(path) + " is not a regular file";
  else if (!ours(st.st_uid))
    why = owner_problem(path, st);
  else if (st.st_nlink > 1)
    why = escape_text(path) + " has " + std::to_string(st.st_nlink) +
          " names (hard links): shmbpf writes only a file of its own";
  else if ((st.st_mode & 07777) != 0600 && ::fchmod(fd, 0600) != 0)
    why = escape_text(path) + ": " + std::strerror(errno);
  else if (const int fl = ::fcntl(fd, F_GETFL);
           fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
    why = escape_text(path) + ": " + std::strerror(errno);
  if (!why.empty()) {
    ::close(fd);
    return Error{why};
  }
  return fd;
}

} // namespace shmbpf
