#include "model/glob.hpp"

#include <fnmatch.h>

namespace shmbpf {

bool glob_matches(const std::string &glob, const std::string &path) {
  return ::fnmatch(glob.c_str(), path.c_str(), 0) == 0;
}

std::string glob_problem(const std::string &glob) {
  for (std::size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      ++i;
      continue;
    }
    if (glob[i] != '[')
      continue;
    std::size_t j = i + 1;
    if (j < glob.size() && (glob[j] == '!' || glob[j] == '^'))
      ++j;
    if (j < glob.size() && glob[j] == ']') // a ']' first is part of the set
      ++j;
    while (j < glob.size() && glob[j] != ']')
      ++j;
    if (j >= glob.size())
      return "'[' at offset " + std::to_string(i) + " has no closing ']' (write \\[ for a '[')";
    i = j;
  }
  return {};
}

} // namespace shmbpf
