// Finding out what the running kernel offers shmbpf's programs, before they
// load (docs/KERNELS.md): kfuncs and tracepoint argument types from its BTF,
// helpers and instructions from small test loads.
#pragma once

#include "probe/program_choice.hpp"

namespace shmbpf {

// Reads /sys/kernel/btf/vmlinux once and loads two tiny programs. Anything
// that cannot be found out reads as absent, so the programs that need it
// stay off rather than fail to load.
KernelFeatures probe_kernel_features();

} // namespace shmbpf
