// Mount namespaces seen through /proc: one representative pid per namespace
// and its mount table, so that every container's /dev/shm is visible.
#pragma once

#include "facts/audit.hpp"
#include "facts/mounts.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace shmbpf {

// Every mount namespace that has a live process, with its mount table.
std::vector<MountNamespace> scan_mount_namespaces();

// The same namespaces again, through the processes that represented them:
// each one's mount table read anew. Cheaper than a walk of every process,
// but blind to namespaces made since; nothing when a representative is gone
// or has moved to another namespace (walk again then).
std::optional<std::vector<MountNamespace>>
refresh_mount_namespaces(std::vector<MountNamespace> known);

// The inode number of /proc/<pid>/ns/<kind> ("mnt", "ipc", ...), 0 when it
// cannot be read.
uint32_t namespace_of(int pid, const char *kind);

// Runs fn on a thread of its own that has joined the IPC namespace nsfd
// refers to (setns moves only the calling thread; the PID namespace stays
// ours, so pids fn reads are ours). False, fn not run, when setns fails
// (errno tells why).
bool in_ipc_namespace(int nsfd, const std::function<void()> &fn);

// Whether the namespace ns_fd refers to is owned by a user namespace other
// than shmbpf's own (MountNamespace::foreign): made by any user, maybe.
bool is_foreign_namespace(int ns_fd);

// The mount namespace inode of a process, 0 if it is gone.
uint32_t mount_namespace_of(int pid);

// The mount namespace whose mounts are the host's: init's (pid 1 of the PID
// namespace shmbpf sees, the machine's with hostPID in a pod), since
// shmbpf's own may be a private copy (systemd's ProtectSystem, a pod's);
// shmbpf's own when init's cannot be read.
uint32_t host_mount_namespace();

// The host's mount and IPC namespaces, by the same rule: pid 1's when both
// can be read, else shmbpf's own (pid says which).
HostNamespaces read_host_namespaces();

} // namespace shmbpf
