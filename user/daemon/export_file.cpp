#include "daemon/export_file.hpp"

#include "daemon/own_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

namespace shmbpf {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

struct Opened {
  int fd = -1;
  uint64_t size = 0;
  bool regular = false;
};

// O_APPEND: whatever else writes to the file (an operator's echo, a second
// daemon by mistake), records are never written over. Only a regular file
// of root's own is written (daemon/own_file).
Result<Opened> open_append(const std::string &path) {
  Result<int> fd = open_own_file(path, O_APPEND);
  if (!fd)
    return Error{"cannot open " + fd.error()};
  struct stat st {};
  if (::fstat(*fd, &st) != 0) {
    const int err = errno;
    ::close(*fd);
    return Error{"cannot stat " + path + ": " + std::strerror(err)};
  }
  return Opened{*fd, static_cast<uint64_t>(st.st_size), true};
}

std::string backup_name(const std::string &path, unsigned n) {
  return path + "." + std::to_string(n);
}

// The length of the longest run of whole records at the start of data that
// is at most room bytes (0 when even the first is longer).
size_t whole_records_within(std::string_view data, uint64_t room) {
  if (data.size() <= room)
    return data.size();
  if (room == 0)
    return 0;
  const size_t nl = data.rfind('\n', static_cast<size_t>(room) - 1);
  return nl == std::string_view::npos ? 0 : nl + 1;
}

// The length of the first record (through its '\n', or all of data).
size_t first_record(std::string_view data) {
  const size_t nl = data.find('\n');
  return nl == std::string_view::npos ? data.size() : nl + 1;
}

size_t records_in(std::string_view data) {
  if (data.empty())
    return 0;
  return static_cast<size_t>(std::count(data.begin(), data.end(), '\n')) +
         (data.back() != '\n' ? 1 : 0);
}

} // namespace

Result<uint64_t> ExportFileSetting::max_bytes(double mb) {
  if (!std::isfinite(mb) || mb < 0 || mb > kMaxMaxSizeMb)
    return Error{"must be a number of MiB from 0 to " +
                 std::to_string(static_cast<uint64_t>(kMaxMaxSizeMb))};
  const auto bytes = static_cast<uint64_t>(std::llround(mb * kMiB));
  if (mb > 0 && bytes == 0)
    return Error{"must be at least one byte's worth (0 turns rotation off)"};
  return bytes;
}

Result<RotatingFile> RotatingFile::open(const std::string &path, ExportLimits limits) {
  if (std::string why = unsafe_directory(parent_of(path)); !why.empty())
    return Error{"cannot open " + path + ": " + why};
  auto o = open_append(path);
  if (!o)
    return Error{o.error()};
  return RotatingFile(path, limits, o->fd, o->size, o->regular);
}

RotatingFile RotatingFile::over_descriptor(int fd, std::string name) {
  return RotatingFile(std::move(name), ExportLimits{0, 0}, fd, 0, false);
}

RotatingFile::RotatingFile(RotatingFile &&o) noexcept
    : path_(std::move(o.path_)), limits_(o.limits_), fd_(std::exchange(o.fd_, -1)), size_(o.size_),
      regular_(o.regular_), rotations_(o.rotations_) {}

RotatingFile &RotatingFile::operator=(RotatingFile &&o) noexcept {
  if (this != &o) {
    if (fd_ >= 0)
      ::close(fd_);
    path_ = std::move(o.path_);
    limits_ = o.limits_;
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
    regular_ = o.regular_;
    rotations_ = o.rotations_;
  }
  return *this;
}

RotatingFile::~RotatingFile() { close(); }

void RotatingFile::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

int RotatingFile::write_all(std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    const int err = n < 0 ? errno : EIO;
    // A half record would make the line that follows it unreadable too.
    if (done > 0 && regular_) {
      [[maybe_unused]] const int r = ::ftruncate(fd_, static_cast<off_t>(size_));
    }
    return err;
  }
  size_ += data.size();
  return 0;
}

std::string RotatingFile::rotate() {
  for (unsigned n = limits_.max_backups; n > 1; --n) {
    const std::string from = backup_name(path_, n - 1);
    if (::rename(from.c_str(), backup_name(path_, n).c_str()) != 0 && errno != ENOENT)
      return "renaming " + from + ": " + std::strerror(errno);
  }
  const int moved = limits_.max_backups > 0 ? ::rename(path_.c_str(), backup_name(path_, 1).c_str())
                                            : ::unlink(path_.c_str());
  if (moved != 0 && errno != ENOENT)
    return "rotating " + path_ + ": " + std::strerror(errno);
  auto o = open_append(path_);
  if (!o)
    return o.error(); // the old file, renamed, stays in use
  ::close(fd_);
  fd_ = o->fd;
  size_ = o->size;
  regular_ = o->regular;
  ++rotations_;
  return {};
}

RotatingFile::Outcome RotatingFile::append(std::string_view data) {
  Outcome out;
  bool rotation_failed = false;
  while (!data.empty()) {
    size_t take = data.size();
    if (regular_ && limits_.max_bytes > 0 && !rotation_failed) {
      const uint64_t room = limits_.max_bytes > size_ ? limits_.max_bytes - size_ : 0;
      take = whole_records_within(data, room);
      if (take == 0 && size_ > 0) {
        if (std::string why = rotate(); !why.empty()) {
          // Better a file past its limit than records lost.
          rotation_failed = true;
          ++out.problems;
          if (out.error.empty())
            out.error = why;
        }
        continue;
      }
      if (take == 0)
        take = first_record(data); // larger than the limit: a file of its own
    }
    const std::string_view chunk = data.substr(0, take);
    if (const int err = write_all(chunk); err != 0) {
      ++out.problems;
      if (out.error.empty())
        out.error = "writing " + path_ + ": " + std::strerror(err);
      out.failed += records_in(data);
      return out;
    }
    out.written += records_in(chunk);
    data.remove_prefix(take);
  }
  return out;
}

std::string RotatingFile::reopen() {
  if (!regular_)
    return {}; // a descriptor of the caller's: it has no name to open again
  auto o = open_append(path_);
  if (!o)
    return o.error();
  ::close(fd_);
  fd_ = o->fd;
  size_ = o->size;
  regular_ = o->regular;
  return {};
}

} // namespace shmbpf
