// Output of `shmbpf leaks`: a readable report for terminals and cron mail,
// and one JSON document for scripts and fleet checks. Pure.
#pragma once

#include "model/leaks.hpp"

#include <cstdint>
#include <string>

namespace shmbpf {

std::string leaks_text(const LeakReport &report, uint64_t now_ns, uint64_t min_age_s);
std::string leaks_json(const LeakReport &report, uint64_t now_ns);

} // namespace shmbpf
