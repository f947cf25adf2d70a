// Fills an Engine with what exists right now, from /proc and the tmpfs
// mounts of every mount namespace: the scan behind `shmbpf ls` and the
// start-up state of the live commands.
#pragma once

#include "model/engine.hpp"
#include "sources/namespaces.hpp"

#include <vector>

namespace shmbpf {

struct BootstrapStats {
  size_t files = 0;
  size_t processes = 0;
  size_t holdings = 0;
  size_t sysv = 0;
};

BootstrapStats bootstrap(Engine &engine, const std::vector<MountNamespace> &namespaces);

} // namespace shmbpf
