// Login names of uids, for the USER columns of `ls` and `top`.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace shmbpf {

// Asks the system (NSS) once per uid and remembers the answer: NSS can be
// slow (LDAP, sssd) and top asks again every refresh.
class LoginNames {
public:
  // uid's login name, "" when it has none.
  const std::string &name_of(uint32_t uid);

private:
  std::unordered_map<uint32_t, std::string> cache_;
};

} // namespace shmbpf
