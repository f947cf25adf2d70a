// The engine filled from one scan of the machine, with its containers
// named: what `leaks` and `reap` judge from. What the scan could not cover
// is said on stderr.
#pragma once

#include "model/engine.hpp"
#include "sources/runtime_names.hpp"

namespace shmbpf {

void fill_from_scan(Engine &engine, const RuntimeRoots &roots);

} // namespace shmbpf
