// Which of shmbpf's BPF programs to load on this kernel: one per hook, from
// the build that suits what the kernel offers (bpf/core_fixes.bpf.h), and
// what is given up where a hook or a feature is missing. Pure: the probing
// is kernel_features.hpp's, the loading Probe's.
#pragma once

#include "facts/hooks.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace shmbpf {

// What shmbpf's programs can use, found out before load (docs/KERNELS.md).
struct KernelFeatures {
  std::string release; // uname -r
  // The kfunc bpf_rdonly_cast is in the kernel's BTF (v6.2): the fast build.
  bool rdonly_cast = false;
  // The helper bpf_task_pt_regs (v5.15): syscall arguments from its registers.
  bool task_pt_regs = false;
  // BPF_XCHG and BPF_CMPXCHG (v5.12): the name table's claims.
  bool atomics = false;
  // What mm_filemap_delete_from_page_cache passes (its BTF): a folio (v5.17
  // on), a page, another type, or nothing (not in the kernel's BTF).
  enum class FreeArg { absent, folio, page, other };
  FreeArg free_arg = FreeArg::absent;
  // The helper bpf_find_vma (v5.17): the mapping at a SIGBUS's address.
  bool find_vma = false;
  // shmem_setattr's parameters in the BTF: 2 before v5.12, 3 since (a user
  // namespace, then an idmap, in front); 0 when it is not there.
  int setattr_args = 0;
  // d_instantiate's id in the BTF (0 when it is not there): the function
  // function_attach_missing() attaches its fentry program to.
  uint32_t probe_function_id = 0;
};

// A program of the object, as libbpf names it.
struct ProgramRef {
  std::string name;    // "tracepoint__syscalls__sys_exit_openat_compat"
  std::string section; // "tracepoint/syscalls/sys_exit_openat"
};

struct ProgramChoice {
  std::vector<std::string> load; // the programs to load; every other one stays off
  std::vector<HookStatus> hooks; // every hook of the set, in the object's order
  std::vector<Fallback> fallbacks;
  // The light set has nothing that sees files from inside the filesystem
  // here: why ("" when it has, and for the full set).
  std::string light_missing;
};

// What a program's section attaches to: "tracepoint/syscalls/sys_exit_openat"
// is a tracepoint named "syscalls/sys_exit_openat", "tp_btf/x" a BTF
// tracepoint "x", "fentry/d_move" and "fexit/d_move" the function "d_move";
// any other section (raw_tp) attaches to nothing the kernel may lack.
struct SectionTarget {
  enum class Kind { none, tracepoint, tp_btf, function };
  Kind kind = Kind::none;
  std::string_view name; // a view into the section
};
SectionTarget target_of(std::string_view section);

// Answers "" when the kernel has the hook of a program's section, else why
// not ("no such tracepoint", "not a function the kernel can trace").
using HookCheck = std::function<std::string(const std::string &section)>;

// One program per hook of the set: the first build in this kernel's order
// of preference that has one (fast when bpf_rdonly_cast exists; compat, or
// compat_noatomic without atomics, otherwise) and, for the free hook, the
// one whose argument type matches. Hooks of the other set are left out
// (the light set has no syscalls/ hook, the full set none of the
// in-filesystem ones). The light set's in-filesystem hooks are the inode
// timestamp tracepoints where the kernel has one, else the fentry and
// fexit programs on the calls that make the same changes. Programs outside
// any hook (flush_free) are always loaded.
ProgramChoice choose_programs(const std::vector<ProgramRef> &programs,
                              const KernelFeatures &features, const HookCheck &missing,
                              HookSet set = HookSet::full);

// SHMBPF_BUILD: features lowered to what an older kernel offers, so that
// its builds load here (tests of the fallbacks on a new kernel): "compat"
// as without bpf_rdonly_cast (v6.1), "compat_noatomic" as without
// bpf_task_pt_regs, bpf_find_vma and atomics too (v5.10); "" or "fast" change nothing.
// False for any other value.
bool lower_features(KernelFeatures &f, std::string_view build);

} // namespace shmbpf
