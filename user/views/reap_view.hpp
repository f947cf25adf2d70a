// Output of `shmbpf reap`: what was freed (or would be), what was skipped
// and why, and what is held and cannot be freed; as text and as one JSON
// document. Pure.
#pragma once

#include "model/reap.hpp"
#include "views/json.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace shmbpf {

std::string reap_text(const std::vector<ReapOutcome> &outcomes, const ReapPlan &plan, bool apply,
                      uint64_t now_ns);
std::string reap_json(const std::vector<ReapOutcome> &outcomes, const ReapPlan &plan, bool apply,
                      uint64_t now_ns);

// One removal as the audit export records it (a "reaped" record: path or
// shmid, device and inode, bytes, container, age, creator), without the
// trailing newline.
void write_reap_outcome(JsonWriter &w, const ReapOutcome &o, uint64_t now_ns);

} // namespace shmbpf
