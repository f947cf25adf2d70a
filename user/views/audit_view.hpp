// Output of `shmbpf audit`: a block of text per finding for people, one
// JSON document for scripts (docs/AUDIT.md has its keys). Pure; every
// name that came from a container is escaped.
#pragma once

#include "model/audit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace shmbpf {

// One finding's block, ending in a blank line.
std::string audit_finding_text(const Finding &f);
// The count per severity, one line.
std::string audit_counts_text(const std::vector<Finding> &findings);
// Every finding's block, then the counts.
std::string audit_text(const std::vector<Finding> &findings);
// watch_seconds: what --watch asked for, nullopt for a snapshot only.
std::string audit_json(const std::vector<Finding> &findings, std::optional<double> watch_seconds);

} // namespace shmbpf
