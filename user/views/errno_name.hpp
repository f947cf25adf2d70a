// The names of errnos, as trace prints a call's result. Pure.
#pragma once

#include <string>

namespace shmbpf {

// Text for an errno shmbpf knows by name ("ENOSPC"), else nullptr.
const char *errno_literal(int err);

// errno_literal's name, else the number in decimal.
std::string errno_name(int err);

} // namespace shmbpf
