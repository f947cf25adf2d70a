// `serve --state-dir`: the file that keeps the observed creations of
// segments across a restart (model/state), read once at start and written
// whole, atomically (a temporary file, fsync, rename), by the serve loop.
#pragma once

#include "facts/result.hpp"
#include "model/state.hpp"

#include <optional>
#include <string>

namespace shmbpf {

struct StateDirSetting {
  static constexpr const char *kDefault = "/var/lib/shmbpf";
  static constexpr const char *kFlag = "--state-dir";
  static constexpr const char *kHelp =
      "Directory where serve keeps who created the segments it saw created, when and in which "
      "container, so that a restart keeps them (made 0700 if missing); '' turns it off";
  static constexpr const char *kFileName = "state";
};

class StateFile {
public:
  // Makes the directory (0700) if it is missing, refuses one that another
  // user could write in (daemon/own_file), and proves that a file can be
  // written in it. A reason when not.
  static Result<StateFile> open(const std::string &dir);

  const std::string &path() const { return path_; }
  // The saved state; nullopt when there is none. A file that cannot be
  // read or parsed gives nullopt and a reason in *why.
  std::optional<SavedState> load(std::string *why) const;
  // Replaces the file with text; a reason on failure (the old file stays).
  Result<void> save(const std::string &text) const;

private:
  explicit StateFile(std::string dir);
  Result<void> save_probe() const;
  // A new file of root's at path, in place of whatever had the name.
  static Result<int> create(const std::string &path);
  std::string dir_;
  std::string path_;
};

// This boot's id (/proc/sys/kernel/random/boot_id), "" if unknown.
std::string current_boot_id();

} // namespace shmbpf
