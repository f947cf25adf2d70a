// The one stage that changes the system: `shmbpf reap`'s removal of the
// orphans a plan selected (model/reap.hpp), each checked again at the
// moment of removal. Files are reached from a directory descriptor of
// their own mount, through the mount namespace they were seen in (pinned
// while in use), without following a symlink or crossing into another
// mount; System V segments from inside their IPC namespace.
#pragma once

#include "model/reap.hpp"

#include <vector>

namespace shmbpf {

// Checks every target of the plan again now: the namespace, the mount, the
// path, the file's identity and filesystem; a fresh look at every process's
// fds and mappings; the creator's pid. With apply, removes each target that
// passes (unlink, IPC_RMID) right after its last check; without, reports it
// as would-free and changes nothing. One outcome per target, in the plan's
// order. Needs root (CAP_SYS_ADMIN to enter namespaces, CAP_SYS_PTRACE to
// read other processes' fds).
std::vector<ReapOutcome> reap(const ReapPlan &plan, bool apply);

} // namespace shmbpf
