#include "cli/version.hpp"

#include "shmbpf_revision.h"

namespace shmbpf {

const char *shmbpf_version() { return SHMBPF_VERSION; }
const char *shmbpf_revision() { return SHMBPF_REVISION; }
const char *shmbpf_build_date() { return SHMBPF_BUILD_DATE; }

std::string version_line() {
  return std::string("shmbpf ") + shmbpf_version() + " (revision " + shmbpf_revision() +
         ", built " + shmbpf_build_date() + ")";
}

} // namespace shmbpf
