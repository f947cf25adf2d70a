// Everything `shmbpf audit` judges, read from the machine in one go: a
// SystemScan, the host's namespaces, each process's program, and per
// container its runtime's name and its memory limit.
#pragma once

#include "facts/audit.hpp"
#include "sources/runtime_names.hpp"

namespace shmbpf {

// Reads files and /proc only: loads no BPF, changes nothing.
AuditScan gather_audit(const RuntimeRoots &roots);

// The same around a scan already made (a second snapshot's, a test's).
AuditScan gather_audit(const RuntimeRoots &roots, SystemScan system);

} // namespace shmbpf
