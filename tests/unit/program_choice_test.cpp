// Which program each hook gets on which kernel (choose_programs), and what
// is said about the hooks and features that are missing.
#include "probe/program_choice.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace shmbpf {
namespace {

// The object's programs, as bpf/ builds them: every build of a name-table
// writer, the fast and compat builds of the rest, two free flavours.
std::vector<ProgramRef> object_programs() {
  std::vector<ProgramRef> p;
  const std::string open = "tracepoint__syscalls__sys_exit_openat";
  const std::string open_sec = "tracepoint/syscalls/sys_exit_openat";
  for (const char *suffix : {"", "_compat", "_compat_noatomic"})
    p.push_back({open + suffix, open_sec});
  const std::string trunc = "tracepoint__syscalls__sys_exit_ftruncate";
  for (const char *suffix : {"", "_compat"})
    p.push_back({trunc + suffix, "tracepoint/syscalls/sys_exit_ftruncate"});
  const std::string free = "tp_btf__mm_filemap_delete_from_page_cache";
  const std::string free_sec = "tp_btf/mm_filemap_delete_from_page_cache";
  p.push_back({free, free_sec});
  p.push_back({free + "_compat", free_sec});
  p.push_back({free + "_page_compat", free_sec});
  p.push_back({"flush_free", "raw_tp"});
  // The light set's in-filesystem hooks.
  for (const char *tp : {"inode_set_ctime_to_ts", "ctime_ns_xchg", "ctime_xchg_skip"})
    for (const char *suffix : {"", "_compat"})
      p.push_back({std::string("tp_btf__") + tp + suffix, std::string("tp_btf/") + tp});
  // ... and the calls that take their place before v6.13.
  for (const char *fn : {"fentry/d_instantiate", "fentry/shmem_unlink", "fentry/d_move",
                         "fexit/shmem_setattr", "fexit/shmem_fallocate"})
    for (const char *suffix : {"", "_compat"}) {
      std::string name = fn;
      name.replace(name.find('/'), 1, "__");
      p.push_back({name + suffix, fn});
      if (name.ends_with("setattr"))
        p.push_back({name + "_2args" + suffix, fn});
    }
  return p;
}

const HookCheck kAllHooks = [](const std::string &) { return std::string(); };

KernelFeatures kernel_6_18() {
  return {"6.18.0", true, true, true, KernelFeatures::FreeArg::folio, true};
}
KernelFeatures kernel_6_1() {
  return {"6.1.0-57-amd64", false, true, true, KernelFeatures::FreeArg::folio, true, 3};
}
KernelFeatures kernel_5_10() {
  return {"5.10.0-46-amd64", false, false, false, KernelFeatures::FreeArg::page, false, 2};
}

// A kernel before v6.13: no timestamp tracepoint; functions as traced says.
HookCheck before_6_13(std::string traced = "") {
  return [traced](const std::string &sec) {
    if (sec.find("ctime") != std::string::npos)
      return std::string("no such tracepoint");
    if (sec.starts_with("fentry/") || sec.starts_with("fexit/"))
      return traced;
    return std::string();
  };
}

const HookStatus &hook(const ProgramChoice &c, const std::string &name) {
  auto it = std::find_if(c.hooks.begin(), c.hooks.end(),
                         [&](const HookStatus &h) { return h.hook == name; });
  if (it == c.hooks.end())
    throw std::runtime_error("no hook " + name);
  return *it;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ProgramChoice, NewKernelLoadsTheFastBuildOfEveryHook) {
  const ProgramChoice c = choose_programs(object_programs(), kernel_6_18(), kAllHooks);
  EXPECT_EQ(sorted(c.load), sorted({"tracepoint__syscalls__sys_exit_openat",
                                    "tracepoint__syscalls__sys_exit_ftruncate",
                                    "tp_btf__mm_filemap_delete_from_page_cache", "flush_free"}));
  ASSERT_EQ(c.hooks.size(), 3u);
  for (const HookStatus &h : c.hooks) {
    EXPECT_EQ(h.build, Build::fast) << h.hook;
    EXPECT_TRUE(h.off.empty()) << h.hook;
  }
  // Named as program_stats() names hooks.
  EXPECT_EQ(c.hooks[0].hook, "syscalls/sys_exit_openat");
  EXPECT_EQ(c.hooks[2].hook, "mm_filemap_delete_from_page_cache");
  EXPECT_EQ(c.hooks[2].events, "free");
  EXPECT_TRUE(c.fallbacks.empty());
}

TEST(ProgramChoice, WithoutTheKfuncEveryHookGetsItsCompatBuild) {
  const ProgramChoice c = choose_programs(object_programs(), kernel_6_1(), kAllHooks);
  EXPECT_EQ(sorted(c.load),
            sorted({"tracepoint__syscalls__sys_exit_openat_compat",
                    "tracepoint__syscalls__sys_exit_ftruncate_compat",
                    "tp_btf__mm_filemap_delete_from_page_cache_compat", "flush_free"}));
  EXPECT_EQ(hook(c, "syscalls/sys_exit_openat").build, Build::compat);
  ASSERT_EQ(c.fallbacks.size(), 1u);
  EXPECT_EQ(c.fallbacks[0].feature, "bpf_rdonly_cast (kfunc, v6.2)");
  EXPECT_FALSE(c.fallbacks[0].lossy);
}

TEST(ProgramChoice, WithoutAtomicsTheNameTableWritersHaveTheirOwnBuild) {
  const ProgramChoice c = choose_programs(object_programs(), kernel_5_10(), kAllHooks);
  // The writers' own build; the others' compat build (no atomics in it);
  // the free hook's program for a tracepoint that passes a page.
  EXPECT_EQ(sorted(c.load),
            sorted({"tracepoint__syscalls__sys_exit_openat_compat_noatomic",
                    "tracepoint__syscalls__sys_exit_ftruncate_compat",
                    "tp_btf__mm_filemap_delete_from_page_cache_page_compat", "flush_free"}));
  EXPECT_EQ(hook(c, "syscalls/sys_exit_openat").build, Build::compat_noatomic);
  EXPECT_EQ(hook(c, "syscalls/sys_exit_ftruncate").build, Build::compat);
  std::vector<std::string> features;
  for (const Fallback &f : c.fallbacks)
    features.push_back(f.feature);
  EXPECT_EQ(features,
            (std::vector<std::string>{"bpf_rdonly_cast (kfunc, v6.2)", "bpf_task_pt_regs (v5.15)",
                                      "BPF atomics (v5.12)",
                                      "a folio in mm_filemap_delete_from_page_cache (v5.17)"}));
  // Only the name table's race reports less; the others only cost time.
  for (const Fallback &f : c.fallbacks)
    EXPECT_EQ(f.lossy, f.feature == "BPF atomics (v5.12)") << f.feature;
}

bool has_fallback(const ProgramChoice &c, std::string_view feature) {
  return std::any_of(c.fallbacks.begin(), c.fallbacks.end(),
                     [&](const Fallback &f) { return f.feature.find(feature) == 0; });
}

// The object's programs and the SIGBUS hook's, built three times like the
// name table's writers (bpf/tmpfs.bpf.c).
std::vector<ProgramRef> with_signal() {
  std::vector<ProgramRef> p = object_programs();
  const std::string sig = "tracepoint__signal__signal_generate";
  for (const char *suffix : {"", "_compat", "_compat_noatomic"})
    p.push_back({sig + suffix, "tracepoint/signal/signal_generate"});
  return p;
}

TEST(ProgramChoice, SigbusFindsItsMappingWithFindVmaWhereTheKernelHasIt) {
  // 6.1: the compat build, whose lookup is bpf_find_vma.
  ProgramChoice c = choose_programs(with_signal(), kernel_6_1(), kAllHooks);
  EXPECT_EQ(hook(c, "signal/signal_generate").build, Build::compat);
  EXPECT_FALSE(has_fallback(c, "bpf_find_vma"));
  // 5.10: the noatomic build, which searches the VMA tree instead.
  c = choose_programs(with_signal(), kernel_5_10(), kAllHooks);
  EXPECT_EQ(hook(c, "signal/signal_generate").build, Build::compat_noatomic);
  EXPECT_TRUE(has_fallback(c, "bpf_find_vma"));
  // A compat kernel without the helper (v5.12 to v5.16) searches it too.
  KernelFeatures f = kernel_6_1();
  f.find_vma = false;
  c = choose_programs(with_signal(), f, kAllHooks);
  EXPECT_TRUE(has_fallback(c, "bpf_find_vma"));
  c = choose_programs(with_signal(), kernel_6_18(), kAllHooks);
  EXPECT_EQ(hook(c, "signal/signal_generate").build, Build::fast);
  EXPECT_FALSE(has_fallback(c, "bpf_find_vma"));
}

TEST(ProgramChoice, TheLightSetHasNoSyscallHookAndTheFullSetNoInodeHook) {
  const ProgramChoice light =
      choose_programs(object_programs(), kernel_6_18(), kAllHooks, HookSet::light);
  EXPECT_EQ(sorted(light.load), sorted({"tp_btf__mm_filemap_delete_from_page_cache", "flush_free",
                                        "tp_btf__inode_set_ctime_to_ts", "tp_btf__ctime_ns_xchg",
                                        "tp_btf__ctime_xchg_skip"}));
  for (const HookStatus &h : light.hooks)
    EXPECT_FALSE(h.hook.starts_with("syscalls/")) << h.hook; // left out, not listed as off
  EXPECT_EQ(hook(light, "ctime_ns_xchg").events,
            "create, memfd_create, resize, unlink, rename, link");
  EXPECT_TRUE(light.light_missing.empty());

  const ProgramChoice full = choose_programs(object_programs(), kernel_6_18(), kAllHooks);
  for (const HookStatus &h : full.hooks)
    EXPECT_EQ(h.hook.find("ctime"), std::string::npos) << h.hook;
  EXPECT_TRUE(full.light_missing.empty());
}

TEST(ProgramChoice, BeforeTimestampTracepointsTheLightSetTracesShmemsCalls) {
  const ProgramChoice c =
      choose_programs(object_programs(), kernel_6_1(), before_6_13(), HookSet::light);
  EXPECT_TRUE(c.light_missing.empty()) << c.light_missing;
  EXPECT_EQ(sorted(c.load),
            sorted({"tp_btf__mm_filemap_delete_from_page_cache_compat", "flush_free",
                    "fentry__d_instantiate_compat", "fentry__shmem_unlink_compat",
                    "fentry__d_move_compat", "fexit__shmem_setattr_compat",
                    "fexit__shmem_fallocate_compat"}));
  for (const HookStatus &h : c.hooks)
    EXPECT_EQ(h.hook.find("ctime"), std::string::npos) << h.hook; // left out, not off
  EXPECT_EQ(hook(c, "fentry/d_instantiate").events, "create, memfd_create, link");
  EXPECT_EQ(hook(c, "fexit/shmem_setattr").events, "resize");

  // v5.10: the compat build, the only one with these programs, and
  // shmem_setattr's program for two parameters.
  const ProgramChoice old =
      choose_programs(object_programs(), kernel_5_10(), before_6_13(), HookSet::light);
  EXPECT_EQ(hook(old, "fentry/d_move").program, "fentry__d_move_compat");
  EXPECT_EQ(hook(old, "fexit/shmem_setattr").program, "fexit__shmem_setattr_2args_compat");
  EXPECT_TRUE(old.light_missing.empty());

  // Where the tracepoints exist, they are the set's, and no call is.
  const ProgramChoice now =
      choose_programs(object_programs(), kernel_6_18(), kAllHooks, HookSet::light);
  for (const HookStatus &h : now.hooks)
    EXPECT_FALSE(h.hook.starts_with("fentry/") || h.hook.starts_with("fexit/")) << h.hook;
  // And the full set has neither.
  const ProgramChoice full = choose_programs(object_programs(), kernel_6_1(), before_6_13());
  for (const HookStatus &h : full.hooks)
    EXPECT_FALSE(h.hook.starts_with("fentry/") || h.hook.starts_with("fexit/")) << h.hook;
}

TEST(ProgramChoice, ALightSetWithNeitherKindOfHookSaysWhy) {
  const ProgramChoice c =
      choose_programs(object_programs(), kernel_6_1(),
                      before_6_13("no function tracing here (available_filter_functions: "
                                  "Operation not permitted)"),
                      HookSet::light);
  EXPECT_EQ(c.light_missing,
            "no inode timestamp tracepoint (v6.13) on kernel 6.1.0-57-amd64, and no tracing of "
            "shmem's calls (fentry/d_instantiate: no function tracing here "
            "(available_filter_functions: Operation not permitted))");
  EXPECT_TRUE(hook(c, "inode_set_ctime_to_ts").program.empty());
  EXPECT_TRUE(hook(c, "fentry/d_move").program.empty());
  EXPECT_FALSE(hook(c, "mm_filemap_delete_from_page_cache").program.empty());
}

TEST(ProgramChoice, ShmemSetattrWithParametersNotKnownIsOff) {
  KernelFeatures f = kernel_6_1();
  f.setattr_args = 4;
  ProgramChoice c = choose_programs(object_programs(), f, before_6_13(), HookSet::light);
  EXPECT_TRUE(hook(c, "fexit/shmem_setattr").program.empty());
  EXPECT_EQ(hook(c, "fexit/shmem_setattr").off,
            "on kernel 6.1.0-57-amd64 it has 4 parameters, not 2 or 3");
  EXPECT_FALSE(hook(c, "fexit/shmem_fallocate").program.empty());
  EXPECT_TRUE(c.light_missing.empty()); // the other calls still load
  f.setattr_args = 0;
  c = choose_programs(object_programs(), f, before_6_13(), HookSet::light);
  EXPECT_EQ(hook(c, "fexit/shmem_setattr").off, "not in the kernel's BTF");
}

TEST(ProgramChoice, AMissingHookIsOffAndSaysWhatIsLost) {
  const HookCheck no_ftruncate = [](const std::string &sec) {
    return sec.ends_with("sys_exit_ftruncate") ? std::string("no such tracepoint") : std::string();
  };
  const ProgramChoice c = choose_programs(object_programs(), kernel_6_18(), no_ftruncate);
  const HookStatus &h = hook(c, "syscalls/sys_exit_ftruncate");
  EXPECT_TRUE(h.program.empty());
  EXPECT_EQ(off_text(h), "syscalls/sys_exit_ftruncate: no such tracepoint (sizes set with "
                         "ftruncate(2) come from rescans)");
  EXPECT_EQ(std::count(c.load.begin(), c.load.end(), "tracepoint__syscalls__sys_exit_ftruncate"),
            0);
  EXPECT_FALSE(hook(c, "syscalls/sys_exit_openat").program.empty());
}

TEST(ProgramChoice, AFreeTracepointOfAnotherTypeTurnsOffOnlyFrees) {
  KernelFeatures f = kernel_6_18();
  f.free_arg = KernelFeatures::FreeArg::other;
  const ProgramChoice c = choose_programs(object_programs(), f, kAllHooks);
  const HookStatus &h = hook(c, "mm_filemap_delete_from_page_cache");
  EXPECT_TRUE(h.program.empty());
  EXPECT_EQ(off_text(h), "mm_filemap_delete_from_page_cache: on kernel 6.18.0 it passes neither "
                         "a folio nor a page (freed bytes of unlinked files come from rescans)");
  EXPECT_EQ(c.load.size(), 3u); // openat, ftruncate, flush_free

  f.free_arg = KernelFeatures::FreeArg::absent;
  EXPECT_EQ(
      hook(choose_programs(object_programs(), f, kAllHooks), "mm_filemap_delete_from_page_cache")
          .off,
      "not in the kernel's BTF");
}

TEST(ProgramChoice, AKfuncKernelWhoseTracepointPassesAPageTakesTheCompatPageProgram) {
  KernelFeatures f = kernel_6_18();
  f.free_arg = KernelFeatures::FreeArg::page;
  const ProgramChoice c = choose_programs(object_programs(), f, kAllHooks);
  EXPECT_EQ(hook(c, "mm_filemap_delete_from_page_cache").program,
            "tp_btf__mm_filemap_delete_from_page_cache_page_compat");
  EXPECT_EQ(hook(c, "syscalls/sys_exit_openat").build, Build::fast);
}

TEST(ProgramChoice, LoweredFeaturesPickAnOlderKernelsBuilds) {
  KernelFeatures f = kernel_6_18();
  EXPECT_TRUE(lower_features(f, ""));
  EXPECT_TRUE(lower_features(f, "fast"));
  EXPECT_TRUE(f.rdonly_cast && f.atomics && f.task_pt_regs);
  EXPECT_TRUE(lower_features(f, "compat"));
  EXPECT_FALSE(f.rdonly_cast);
  EXPECT_TRUE(f.atomics && f.task_pt_regs);
  EXPECT_TRUE(lower_features(f, "compat_noatomic"));
  EXPECT_FALSE(f.rdonly_cast || f.atomics || f.task_pt_regs);
  EXPECT_FALSE(lower_features(f, "turbo"));
  EXPECT_EQ(
      hook(choose_programs(object_programs(), f, kAllHooks), "syscalls/sys_exit_openat").program,
      "tracepoint__syscalls__sys_exit_openat_compat_noatomic");
}

// Sections name what they attach to; raw_tp and others attach to nothing
// the kernel may lack.
TEST(ProgramChoice, SectionTargets) {
  using Kind = SectionTarget::Kind;
  const struct {
    std::string_view section;
    Kind kind;
    std::string_view name;
  } cases[] = {
      {"tracepoint/syscalls/sys_exit_openat", Kind::tracepoint, "syscalls/sys_exit_openat"},
      {"tp_btf/ctime_ns_xchg", Kind::tp_btf, "ctime_ns_xchg"},
      {"fentry/d_move", Kind::function, "d_move"},
      {"fexit/shmem_setattr", Kind::function, "shmem_setattr"},
      {"raw_tp/flush", Kind::none, ""},
      {"fentryd_move", Kind::none, ""},
  };
  for (const auto &c : cases) {
    const SectionTarget t = target_of(c.section);
    EXPECT_EQ(t.kind, c.kind) << c.section;
    EXPECT_EQ(t.name, c.name) << c.section;
  }
}

} // namespace
} // namespace shmbpf
