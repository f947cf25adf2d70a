// `shmbpf doctor`'s report, as text for a person and as JSON.
#pragma once

#include "facts/doctor.hpp"

#include <string>

namespace shmbpf {

// The verdict first ("shmbpf can run here" or why not), then each check,
// each hook with the program that serves it or why it is off, the
// fallbacks, and the tmpfs mounts.
std::string doctor_text(const DoctorReport &r);

// One object: can_run, reason, kernel, checks, hooks, fallbacks, sizes,
// cgroup2, mounts (docs/EVENTS.md).
std::string doctor_json(const DoctorReport &r);

} // namespace shmbpf
