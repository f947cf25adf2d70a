// What serves each of shmbpf's hooks on this kernel, and the kernel
// features it does without (docs/KERNELS.md): chosen by the probe before
// load, told by trace, top and doctor.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shmbpf {

// The two sets of hooks (docs/KERNELS.md): `full` watches the syscalls
// (every result, opens of existing files, System V calls) and costs every
// syscall of every process a little; `light` attaches no syscall hook and
// sees files from inside the filesystem, the rest from rescans.
enum class HookSet { full, light };
std::string_view hook_set_name(HookSet s);
// The set a name ("full", "light") names; nothing for any other.
std::optional<HookSet> hook_set_named(std::string_view name);

// The builds of bpf/ a program can come from, best first.
enum class Build { fast, compat, compat_noatomic };
std::string_view build_name(Build b);

// One hook and what serves it. `hook` is named as program_stats() names it.
struct HookStatus {
  std::string hook;    // "syscalls/sys_exit_openat", "mm_filemap_delete_from_page_cache"
  std::string program; // the program loaded for it; "" when it is off
  Build build = Build::fast;
  std::string off;    // why it is off ("no such tracepoint"); "" when on
  std::string events; // the events it reports ("create, open")
  std::string lost;   // what its being off costs ("creates and opens through open(2) not seen")
};

// A kernel feature shmbpf does without here, and how.
struct Fallback {
  std::string feature; // "BPF atomics (v5.12)"
  std::string instead; // what shmbpf does instead
  bool lossy = false;  // something is reported less well, not only more slowly
};

// "hook: why (what is lost)", for warnings.
std::string off_text(const HookStatus &h);

} // namespace shmbpf
