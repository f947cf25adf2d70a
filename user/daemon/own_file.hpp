// The files serve writes as root (the state file, the export file, the
// socket's token) live where no other user can choose what they are: a
// directory of root's (or the daemon's own user's) that nobody else may
// write in, reached through directories nobody else may rename, and opened
// without following a link at the end or blocking on a FIFO. A path that
// fails is refused with one line, before anything is written
// (docs/SECURITY.md).
#pragma once

#include "facts/result.hpp"

#include <string>

namespace shmbpf {

// The directory a path names its file in: "." for a bare name.
std::string parent_of(const std::string &path);

// "" when dir is a directory the daemon may keep files in: it and every
// directory above it are owned by root or the daemon's effective user;
// none above it is writable by others unless sticky (/tmp), and it itself
// is not writable by others at all. Otherwise why not, naming the
// directory at fault.
std::string unsafe_directory(const std::string &dir);

// Opens path (in a directory unsafe_directory accepts) for writing with
// O_CREAT and extra (O_APPEND, O_TRUNC or O_EXCL): a symlink at path is
// refused, not followed; a FIFO, device or socket is refused without being
// opened (looked at through an O_PATH handle first); an existing file must
// be a regular file of the daemon's own user with no other name (one
// link), and ends 0600 whatever its mode was. A blocking, close-on-exec fd,
// or why not.
Result<int> open_own_file(const std::string &path, int extra);

} // namespace shmbpf
