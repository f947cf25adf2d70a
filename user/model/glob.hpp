// The --match glob of ls, leaks and reap (and the API's match=): one rule
// for what a glob is and what it matches. Pure.
#pragma once

#include <string>

namespace shmbpf {

// fnmatch(3) with no flags: '*' also matches '/'.
bool glob_matches(const std::string &glob, const std::string &path);

// "" for a glob that can match; else why not. fnmatch takes a '[' with no
// ']' for a set that matches nothing, so a typo would filter out every
// segment and read as a clean report.
std::string glob_problem(const std::string &glob);

} // namespace shmbpf
