#include "sources/users.hpp"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace shmbpf {

const std::string &LoginNames::name_of(uint32_t uid) {
  auto it = cache_.find(uid);
  if (it != cache_.end())
    return it->second;
  std::string name;
  const long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<std::size_t>(hint) : 4096);
  passwd pw{};
  passwd *found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found)
    name = found->pw_name;
  return cache_.emplace(uid, std::move(name)).first->second;
}

} // namespace shmbpf
