// Names for the containers the engine knows, from the runtimes' files: read
// once per container id, when it first shows up (Monitor's gathers; `ls`
// and `leaks` after their scan), never per event.
#pragma once

#include "facts/container_name.hpp"
#include "model/containers.hpp"
#include "model/engine.hpp"
#include "sources/runtime_names.hpp"

#include <string>
#include <utility>
#include <vector>

namespace shmbpf {

// What the files say about each container, one read per id, in the roots
// given and those the running daemons tell (with_discovered, looked for
// once per call with containers to name). Reads files: the caller keeps it
// off the engine's lock.
std::vector<std::pair<std::string, ContainerName>>
read_container_names(const RuntimeRoots &roots, const std::vector<ContainerRef> &containers);

// Names every container the engine has not named yet.
void name_containers(Engine &engine, const RuntimeRoots &roots);

} // namespace shmbpf
