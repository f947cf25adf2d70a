// What the attack tests share: the unprivileged user who makes the attack
// (nobody, uid and gid 65534, no supplementary groups), as docs/SECURITY.md
// describes the attacker.
#pragma once

#include <cstdlib>
#include <string>

namespace shmbpf::test {

constexpr unsigned kNobody = 65534;

// Runs a shell command as nobody; true when it exits 0.
inline bool as_nobody(const std::string &command) {
  std::string quoted = "'";
  for (char c : command)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  return std::system(
             ("setpriv --reuid=65534 --regid=65534 --clear-groups sh -c " + quoted).c_str()) == 0;
}

} // namespace shmbpf::test
