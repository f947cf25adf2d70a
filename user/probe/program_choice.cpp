#include "probe/program_choice.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace shmbpf {

namespace {

constexpr std::string_view kCompatNoatomic = "_compat_noatomic";
constexpr std::string_view kCompat = "_compat";
// The free hook's program for kernels whose tracepoint passes a page.
constexpr std::string_view kPageFlavour = "_page";
// shmem_setattr's program for kernels before v5.12 (two parameters).
constexpr std::string_view kTwoArgsFlavour = "_2args";
constexpr std::string_view kFreeHook = "mm_filemap_delete_from_page_cache";
constexpr std::string_view kSignalHook = "signal/signal_generate";
constexpr std::string_view kSyscallHooks = "syscalls/";
// The light set's in-filesystem hooks: the inode timestamp tracepoints
// (v6.13) or, on older kernels, the calls that make the same changes.
constexpr std::array<std::string_view, 3> kTimestampHooks = {"inode_set_ctime_to_ts",
                                                             "ctime_ns_xchg", "ctime_xchg_skip"};
constexpr std::string_view kSetattrHook = "fexit/shmem_setattr";
constexpr std::array<std::string_view, 5> kFunctionHooks = {"fentry/d_instantiate",
                                                            "fentry/shmem_unlink", "fentry/d_move",
                                                            kSetattrHook, "fexit/shmem_fallocate"};
constexpr std::string_view kInodeEvents = "create, memfd_create, resize, unlink, rename, link";

bool is_timestamp_hook(std::string_view hook) {
  return std::find(kTimestampHooks.begin(), kTimestampHooks.end(), hook) != kTimestampHooks.end();
}

bool is_function_hook(std::string_view hook) {
  return std::find(kFunctionHooks.begin(), kFunctionHooks.end(), hook) != kFunctionHooks.end();
}

bool is_inode_hook(std::string_view hook) {
  return is_timestamp_hook(hook) || is_function_hook(hook);
}

// Whether a hook belongs to a set: syscall hooks to full only, the inode
// hooks to light only, the rest (exit, exec, SIGBUS, frees) to both.
bool in_set(std::string_view hook, HookSet set) {
  if (hook.starts_with(kSyscallHooks))
    return set == HookSet::full;
  if (is_inode_hook(hook))
    return set == HookSet::light;
  return true;
}

// What each hook reports, and what is left when it is off.
struct HookMeaning {
  std::string_view hook, events, lost;
};
constexpr std::array kMeanings = {
    HookMeaning{"sys_exit_open", "create, open, nospace",
                "files created or opened with open(2) not seen"},
    HookMeaning{"sys_exit_openat", "create, open, nospace",
                "files created or opened with openat(2) not seen"},
    HookMeaning{"sys_exit_openat2", "create, open, nospace",
                "files created or opened with openat2(2) not seen"},
    HookMeaning{"sys_exit_creat", "create, nospace", "files created with creat(2) not seen"},
    HookMeaning{"sys_exit_memfd_create", "memfd_create",
                "memfds found only by rescans of processes' fds"},
    HookMeaning{"sys_exit_ftruncate", "resize", "sizes set with ftruncate(2) come from rescans"},
    HookMeaning{"sys_exit_fallocate", "resize", "sizes set with fallocate(2) come from rescans"},
    HookMeaning{"sys_exit_write", "nospace", "writes with write(2) that find no space not seen"},
    HookMeaning{"sys_exit_pwrite64", "nospace",
                "writes with pwrite(2) that find no space not seen"},
    HookMeaning{"sys_exit_writev", "nospace", "writes with writev(2) that find no space not seen"},
    HookMeaning{"sys_exit_pwritev", "nospace",
                "writes with pwritev(2) that find no space not seen"},
    HookMeaning{"sys_exit_pwritev2", "nospace",
                "writes with pwritev2(2) that find no space not seen"},
    HookMeaning{"sys_exit_unlink", "unlink", "unlinks with unlink(2) found by reconciliation"},
    HookMeaning{"sys_exit_unlinkat", "unlink", "unlinks with unlinkat(2) found by reconciliation"},
    HookMeaning{"sys_exit_rename", "rename", "renames with rename(2) found by reconciliation"},
    HookMeaning{"sys_exit_renameat", "rename", "renames with renameat(2) found by reconciliation"},
    HookMeaning{"sys_exit_renameat2", "rename",
                "renames with renameat2(2) found by reconciliation"},
    HookMeaning{"sys_exit_link", "link", "hard links made with link(2) found by rescans"},
    HookMeaning{"sys_exit_linkat", "link", "hard links made with linkat(2) found by rescans"},
    HookMeaning{"sys_enter_shmget", "shmget",
                "shmget with IPC_CREAT cannot tell a new segment from an existing one"},
    HookMeaning{"sys_exit_shmget", "shmget", "SysV segments found by rescans"},
    HookMeaning{"sys_exit_shmat", "shmat", "SysV attaches found by rescans"},
    HookMeaning{"sys_exit_shmdt", "shmdt", "SysV detaches found by rescans"},
    HookMeaning{"sys_exit_shmctl", "shm_rmid", "SysV removals found by rescans"},
    HookMeaning{"sched_process_exit", "exit", "exits found by rescans"},
    HookMeaning{"sched_process_exec", "exec", "new programs of a process found by rescans"},
    HookMeaning{"signal_generate", "sigbus", "SIGBUS faults (a full tmpfs) not seen"},
    HookMeaning{"mark_victim", "oom", "OOM kills not seen"},
    HookMeaning{kFreeHook, "free", "freed bytes of unlinked files come from rescans"},
    HookMeaning{"d_instantiate", "create, memfd_create, link",
                "files and memfds made, and links, found by rescans"},
    HookMeaning{"shmem_unlink", "unlink", "unlinks found by reconciliation"},
    HookMeaning{"d_move", "rename", "renames found by reconciliation"},
    HookMeaning{"shmem_setattr", "resize",
                "sizes set by truncate, ftruncate and O_TRUNC come from rescans"},
    HookMeaning{"shmem_fallocate", "resize", "sizes set with fallocate(2) come from rescans"},
};

const HookMeaning *meaning_of(std::string_view hook) {
  const std::string_view leaf = hook.substr(hook.find_last_of('/') + 1);
  for (const HookMeaning &m : kMeanings)
    if (m.hook == leaf)
      return &m;
  return nullptr;
}

// A hook's name: a tracepoint's ("syscalls/sys_exit_openat", "x" of
// "tp_btf/x"); a function's keeps its kind ("fentry/x"); "" for a section
// that attaches to nothing (raw_tp).
std::string hook_of(std::string_view section) {
  const SectionTarget t = target_of(section);
  return std::string(t.kind == SectionTarget::Kind::function ? section : t.name);
}

struct Parsed {
  Build build;
  bool flavour; // the page or the two-parameter flavour of its hook's program
};

Parsed parse(std::string_view name) {
  Build build = Build::fast;
  if (name.ends_with(kCompatNoatomic)) {
    build = Build::compat_noatomic;
    name.remove_suffix(kCompatNoatomic.size());
  } else if (name.ends_with(kCompat)) {
    build = Build::compat;
    name.remove_suffix(kCompat.size());
  }
  return {build, name.ends_with(kPageFlavour) || name.ends_with(kTwoArgsFlavour)};
}

// The builds in this kernel's order of preference. Without atomics the
// name table's writers have a build of their own; every other program's
// compat build has no atomic instruction, so it comes next.
std::vector<Build> preference(const KernelFeatures &f) {
  if (f.rdonly_cast)
    return {Build::fast, Build::compat, Build::compat_noatomic};
  if (f.atomics)
    return {Build::compat, Build::compat_noatomic};
  return {Build::compat_noatomic, Build::compat};
}

std::string release_text(const KernelFeatures &f) {
  return f.release.empty() ? "this kernel" : "kernel " + f.release;
}

} // namespace

SectionTarget target_of(std::string_view section) {
  using Kind = SectionTarget::Kind;
  constexpr std::pair<std::string_view, Kind> kPrefixes[] = {{"tracepoint/", Kind::tracepoint},
                                                             {"tp_btf/", Kind::tp_btf},
                                                             {"fentry/", Kind::function},
                                                             {"fexit/", Kind::function}};
  for (const auto &[prefix, kind] : kPrefixes)
    if (section.starts_with(prefix))
      return {kind, section.substr(prefix.size())};
  return {};
}

bool lower_features(KernelFeatures &f, std::string_view build) {
  if (build.empty() || build == build_name(Build::fast))
    return true;
  if (build != build_name(Build::compat) && build != build_name(Build::compat_noatomic))
    return false;
  f.rdonly_cast = false;
  if (build == build_name(Build::compat_noatomic)) {
    f.task_pt_regs = false;
    f.find_vma = false;
    f.atomics = false;
  }
  return true;
}

namespace {

// The sections of the set's hooks in the order of their first program;
// programs on no hook (helpers) go to load. The light set keeps one kind
// of in-filesystem hook: the tracepoints where the kernel has one, the
// calls otherwise. Where neither loads, both stay listed (off).
std::vector<std::string> sections_of(const std::vector<ProgramRef> &programs, HookSet set,
                                     const HookCheck &missing, std::vector<std::string> &load) {
  std::vector<std::string> sections;
  for (const ProgramRef &p : programs) {
    if (hook_of(p.section).empty())
      load.push_back(p.name);
    else if (in_set(hook_of(p.section), set) &&
             std::find(sections.begin(), sections.end(), p.section) == sections.end())
      sections.push_back(p.section);
  }
  if (set == HookSet::light) {
    const bool stamps = std::any_of(sections.begin(), sections.end(), [&](const std::string &sec) {
      return is_timestamp_hook(hook_of(sec)) && missing(sec).empty();
    });
    const bool calls =
        !stamps && std::any_of(sections.begin(), sections.end(), [&](const std::string &sec) {
          return is_function_hook(hook_of(sec)) && missing(sec).empty();
        });
    std::erase_if(sections, [&](const std::string &sec) {
      const std::string hook = hook_of(sec);
      return (stamps && is_function_hook(hook)) || (calls && is_timestamp_hook(hook));
    });
  }
  return sections;
}

// Why a hook is off on this kernel before any build is tried; "" when its
// programs may load.
std::string off_reason(const std::string &section, const std::string &hook,
                       const KernelFeatures &features, const HookCheck &missing) {
  const bool free_hook = hook == kFreeHook;
  if (std::string why = missing(section); !why.empty())
    return why;
  if (free_hook && features.free_arg == KernelFeatures::FreeArg::absent)
    return "not in the kernel's BTF";
  if (hook == kSetattrHook && features.setattr_args != 2 && features.setattr_args != 3)
    return features.setattr_args == 0
               ? "not in the kernel's BTF"
               : "on " + release_text(features) + " it has " +
                     std::to_string(features.setattr_args) + " parameters, not 2 or 3";
  if (free_hook && features.free_arg == KernelFeatures::FreeArg::other)
    return "on " + release_text(features) + " it passes neither a folio nor a page";
  return {};
}

// The section's program of the first build in order that has one in the
// flavour this kernel's arguments need; null when none fits.
const ProgramRef *pick_program(const std::vector<ProgramRef> &programs, const std::string &section,
                               const std::string &hook, const KernelFeatures &features,
                               const std::vector<Build> &order, Build &build) {
  const bool wants_flavour =
      (hook == kFreeHook && features.free_arg == KernelFeatures::FreeArg::page) ||
      (hook == kSetattrHook && features.setattr_args == 2);
  for (Build b : order)
    for (const ProgramRef &p : programs) {
      if (p.section != section)
        continue;
      const Parsed parsed = parse(p.name);
      if (parsed.build == b && parsed.flavour == wants_flavour) {
        build = b;
        return &p;
      }
    }
  return nullptr;
}

// What the loaded programs' builds cost: each fallback they live with.
struct Loaded {
  bool compat = false, noatomic = false, page = false, sigbus_by_rbtree = false;
};

std::vector<Fallback> fallbacks_of(const Loaded &l, const KernelFeatures &features) {
  std::vector<Fallback> out;
  if (l.compat && !features.rdonly_cast)
    out.push_back({"bpf_rdonly_cast (kfunc, v6.2)",
                   "kernel structures read with bpf_probe_read_kernel, a helper call "
                   "per field instead of a load: the same events, at a higher cost",
                   false});
  if (l.compat && !features.task_pt_regs)
    out.push_back({"bpf_task_pt_regs (v5.15)",
                   "syscall arguments read from the user registers saved at the top of "
                   "the task's kernel stack",
                   false});
  if (l.noatomic)
    out.push_back(
        {"BPF atomics (v5.12)",
         "the kernel's table of file names is written with plain stores: two CPUs writing one "
         "slot at once can lose a name, and that file's unlink or rename is then found by "
         "reconciliation",
         true});
  if (l.sigbus_by_rbtree)
    out.push_back({"bpf_find_vma (v5.17)",
                   "the mapping at a SIGBUS's address is found by a search of the "
                   "process's VMA tree (the rbtree mm_rb before v6.1, the maple tree "
                   "from v6.1), without the mmap lock",
                   false});
  if (l.page)
    out.push_back({"a folio in mm_filemap_delete_from_page_cache (v5.17)",
                   "freed pages counted from the head page and its compound order", false});
  return out;
}

// What keeps the light set from loading: no in-filesystem hook of it.
std::string light_missing_text(const std::vector<HookStatus> &hooks,
                               const KernelFeatures &features) {
  if (std::any_of(hooks.begin(), hooks.end(),
                  [](const HookStatus &h) { return is_inode_hook(h.hook) && !h.program.empty(); }))
    return {};
  std::string out = "no inode timestamp tracepoint (v6.13) on " + release_text(features);
  for (const HookStatus &h : hooks)
    if (is_function_hook(h.hook)) {
      out += ", and no tracing of shmem's calls (" + h.hook + ": " + h.off + ")";
      break;
    }
  return out;
}

} // namespace

ProgramChoice choose_programs(const std::vector<ProgramRef> &programs,
                              const KernelFeatures &features, const HookCheck &missing,
                              HookSet set) {
  ProgramChoice out;
  const std::vector<Build> order = preference(features);
  Loaded loaded;
  for (const std::string &section : sections_of(programs, set, missing, out.load)) {
    HookStatus h;
    h.hook = hook_of(section);
    if (const HookMeaning *m = meaning_of(h.hook)) {
      h.events = m->events;
      h.lost = m->lost;
    } else if (is_timestamp_hook(h.hook)) {
      h.events = kInodeEvents;
      h.lost = "changes the kernel reports here come from rescans";
    }
    h.off = off_reason(section, h.hook, features, missing);
    const ProgramRef *pick =
        h.off.empty() ? pick_program(programs, section, h.hook, features, order, h.build) : nullptr;
    if (h.off.empty() && !pick)
      h.off = "no build of its program fits " + release_text(features);
    if (pick) {
      h.program = pick->name;
      out.load.push_back(pick->name);
      loaded.compat = loaded.compat || h.build != Build::fast;
      loaded.noatomic = loaded.noatomic || h.build == Build::compat_noatomic;
      if (h.hook == kSignalHook)
        loaded.sigbus_by_rbtree =
            h.build == Build::compat_noatomic || (h.build == Build::compat && !features.find_vma);
      loaded.page = loaded.page || (h.hook == kFreeHook && parse(pick->name).flavour);
    }
    out.hooks.push_back(std::move(h));
  }
  if (set == HookSet::light)
    out.light_missing = light_missing_text(out.hooks, features);
  out.fallbacks = fallbacks_of(loaded, features);
  return out;
}

} // namespace shmbpf
