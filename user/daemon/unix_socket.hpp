// --socket PATH: where `shmbpf serve` answers its local JSON API (segment
// names and paths, which never go over TCP), and where `ls`, `leaks` and
// `top --server` look for it. The default, help and checks, for the option,
// the server and the clients alike; and what makes a path ready to bind.
#pragma once

#include "facts/result.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

struct SocketSetting {
  static constexpr const char *kDefault = "/run/shmbpf/shmbpf.sock";
  static constexpr const char *kFlag = "--socket";
  static constexpr const char *kHelp =
      "Unix socket for the local JSON API (segments, processes, containers, mounts, leaks; "
      "read by ls, leaks and top --server); '' turns it off";
  // Owner and group may connect (connecting needs write permission); the
  // group is root's unless --socket-group names another.
  static constexpr mode_t kMode = 0660;
  // Its directory, when shmbpf makes it: anyone may reach the socket inside,
  // whose own mode decides who connects.
  static constexpr mode_t kDirMode = 0755;
  // Why path cannot name a socket ("" when it can): sun_path holds 107 bytes.
  static std::string problem(std::string_view path);
};

// A group name or number for --socket-group, as a gid, or why not.
Result<gid_t> socket_group(std::string_view name);

// Makes path ready for bind(2): its directory made (one level, kDirMode)
// when missing, a socket file left by a daemon that is gone removed.
// Throws FatalError (exit status 2) when a daemon listens there already or
// the path is unusable (not a socket, its directory missing or not one).
void prepare_socket_path(const std::string &path);

// The proof that a client of the socket is root, for what only root may
// send (reap's records for the export): a random token in a file next to
// the socket (path + ".token") that only root can read. The daemon writes
// it once it listens (mode 0600, replacing any old one) and removes it at
// the end.
std::string socket_token_path(const std::string &socket);
Result<std::string> new_socket_token();
Result<void> write_socket_token(const std::string &socket, const std::string &token);
void remove_socket_token(const std::string &socket, const std::string &token);
// The token, "" when it cannot be read (not root, no daemon).
std::string read_socket_token(const std::string &socket);

// A connection to path, to tell a live daemon from a stale file: 0 when one
// answers, else the errno of connect(2) (ECONNREFUSED: nobody listens).
int probe_socket(const std::string &path);

} // namespace shmbpf
