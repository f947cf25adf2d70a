// The file behind `shmbpf serve --export-file`: NDJSON records appended,
// rotated by size (PATH -> PATH.1 -> PATH.2 ..., the oldest dropped) and
// reopened on request (logrotate moved it). A record is never split across
// files, and a failed write leaves no half record behind. Synchronous: the
// exporter's writer thread is its only user.
#pragma once

#include "facts/result.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shmbpf {

// --export-file and its limits: defaults, help and checks in one place.
struct ExportFileSetting {
  static constexpr const char *kFlag = "--export-file";
  static constexpr const char *kHelp =
      "Also write every event, the kernel's losses and each orphan as it appears and goes to "
      "this file, one JSON object a line (NDJSON; docs/EVENTS.md). Created with mode 0600; "
      "reopened on SIGHUP (logrotate)";
  static constexpr const char *kMaxSizeFlag = "--export-file-max-size-mb";
  static constexpr double kDefaultMaxSizeMb = 100;
  // 1 TiB: a limit past it is a typo.
  static constexpr double kMaxMaxSizeMb = 1024 * 1024;
  static constexpr const char *kMaxSizeHelp =
      "Rotate the export file before it grows past this many MiB (fractions allowed, 0.5 is "
      "512 KiB; 0: never rotate)";
  static constexpr const char *kMaxBackupsFlag = "--export-file-max-backups";
  static constexpr unsigned kDefaultMaxBackups = 5;
  static constexpr unsigned kMaxMaxBackups = 1000;
  static constexpr const char *kMaxBackupsHelp =
      "Rotated files to keep (PATH.1 the newest); the oldest beyond them is deleted. 0: none "
      "kept";

  // The limit in bytes for a size in MiB, or why that is not one.
  static Result<uint64_t> max_bytes(double mb);
};

struct ExportLimits {
  uint64_t max_bytes = 0; // 0: never rotate
  unsigned max_backups = ExportFileSetting::kDefaultMaxBackups;
};

class RotatingFile {
public:
  // Opens path for appending, creating it: a regular file of root's, made
  // 0600 whatever its mode was, in a directory nobody else may write in
  // (daemon/own_file; a symlink, FIFO or device is refused). Error: why
  // not, one line.
  static Result<RotatingFile> open(const std::string &path, ExportLimits limits);
  // Writes to fd, already open (a pipe), and owns it: never rotated or
  // reopened by name. What a stuck disk looks like, for the exporter's
  // tests.
  static RotatingFile over_descriptor(int fd, std::string name);

  RotatingFile(RotatingFile &&o) noexcept;
  RotatingFile &operator=(RotatingFile &&o) noexcept;
  RotatingFile(const RotatingFile &) = delete;
  RotatingFile &operator=(const RotatingFile &) = delete;
  ~RotatingFile();

  struct Outcome {
    size_t written = 0;  // whole records now in a file
    size_t failed = 0;   // records not written (the failed write's and those after it)
    std::string error;   // the first failure ("" if none): "writing PATH: No space left ..."
    size_t problems = 0; // failures, a rotation that failed included (written anyway)
  };
  // Appends records, each ending in '\n' (a last one without is written as
  // one record). Rotates first whenever the next record would take a
  // non-empty file past max_bytes; a record larger than that has a file to
  // itself. A write that fails is cut back from the file (no half line),
  // and it and the records after it are counted failed: the next call
  // tries again.
  Outcome append(std::string_view records);

  // Closes path and opens it again (logrotate moved it away). On failure
  // the file open until now stays in use, and the error is returned.
  std::string reopen();
  // Closes the file; appends fail after it.
  void close();

  const std::string &path() const { return path_; }
  uint64_t size() const { return size_; }
  uint64_t rotations() const { return rotations_; }

private:
  RotatingFile(std::string path, ExportLimits limits, int fd, uint64_t size, bool regular)
      : path_(std::move(path)), limits_(limits), fd_(fd), size_(size), regular_(regular) {}
  // PATH.n-1 -> PATH.n ... PATH -> PATH.1, then a new PATH. "" or why not.
  std::string rotate();
  // Writes all of data at the end of the file, or cuts back what part of
  // it made it and returns errno.
  int write_all(std::string_view data);

  std::string path_;
  ExportLimits limits_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool regular_ = false;
  uint64_t rotations_ = 0;
};

} // namespace shmbpf
