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

// Why programs on kernel functions (fentry, fexit) cannot attach here, ""
// when they can: a tiny fentry program on d_instantiate (its BTF id from
// probe_kernel_features) is loaded and attached, then let go. The kernel lists the function either
// way; arm64 kernels before 6.4 load such a program and then refuse to attach it (no BPF
// trampolines for kernel functions). Asked only when a function hook would be chosen: attaching
// patches the kernel's text.
std::string function_attach_missing(const KernelFeatures &f);

} // namespace shmbpf
