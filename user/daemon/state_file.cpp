#include "daemon/state_file.hpp"

#include "daemon/own_file.hpp"
#include "views/escape.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace shmbpf {

namespace {

std::string errno_text(const std::string &what, int err) {
  return what + ": " + std::strerror(err);
}

// Writes all of text to fd; false with errno set.
bool write_all(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

} // namespace

StateFile::StateFile(std::string dir)
    : dir_(std::move(dir)), path_(dir_ + "/" + StateDirSetting::kFileName) {}

Result<StateFile> StateFile::open(const std::string &dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error{errno_text(escape_text(dir), errno)};
  // Root writes here: nobody else may choose what a name in it is.
  if (std::string why = unsafe_directory(dir); !why.empty())
    return Error{why};
  // Root passes permission checks: only a real write proves the directory
  // takes files (a read-only mount, a full disk).
  StateFile f(dir);
  Result<void> probe = f.save_probe();
  if (!probe)
    return Error{probe.error()};
  return f;
}

Result<int> StateFile::create(const std::string &path) {
  // A name left by a daemon that had this pid and died: only root could
  // have put it there (unsafe_directory), so it goes.
  ::unlink(path.c_str());
  return open_own_file(path, O_EXCL);
}

Result<void> StateFile::save_probe() const {
  const std::string probe = dir_ + "/.probe." + std::to_string(::getpid());
  Result<int> fd = create(probe);
  if (!fd)
    return Error{escape_text(dir_) + ": cannot write in it: " + fd.error()};
  ::close(*fd);
  ::unlink(probe.c_str());
  return {};
}

std::optional<SavedState> StateFile::load(std::string *why) const {
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    if (::access(path_.c_str(), F_OK) == 0 && why)
      *why = path_ + ": cannot be read";
    return std::nullopt;
  }
  // Read one byte past the limit, so that parse_state sees a file too big.
  std::string text(kStateMaxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  Result<SavedState> st = parse_state(text);
  if (!st) {
    if (why)
      *why = path_ + ": " + st.error();
    return std::nullopt;
  }
  return std::move(*st);
}

Result<void> StateFile::save(const std::string &text) const {
  // Named after the process: two daemons given one directory never write
  // into the same temporary file.
  const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
  Result<int> created = create(tmp);
  if (!created)
    return Error{created.error()};
  const int fd = *created;
  if (!write_all(fd, text) || ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return Error{errno_text(tmp, err)};
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Error{errno_text(path_, err)};
  }
  // The rename itself survives a crash once the directory is synced.
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

std::string current_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

} // namespace shmbpf
