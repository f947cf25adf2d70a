#include "facts/names.hpp"

namespace shmbpf {

uint64_t shm_name_hash(std::string_view leaf) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : leaf) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

} // namespace shmbpf
