#include "probe/kernel_features.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace shmbpf {

namespace {

struct BtfFree {
  void operator()(btf *b) const { btf__free(b); }
};

// The struct a pointer type points to ("folio"), or "".
std::string pointee_struct(const btf *b, __u32 id) {
  const btf_type *t = btf__type_by_id(b, id);
  if (!t || !btf_is_ptr(t))
    return {};
  t = btf__type_by_id(b, t->type);
  while (t && (btf_is_typedef(t) || btf_is_mod(t)))
    t = btf__type_by_id(b, t->type);
  if (!t || !btf_is_struct(t))
    return {};
  const char *name = btf__name_by_offset(b, t->name_off);
  return name ? name : "";
}

// mm_filemap_delete_from_page_cache's argument: the second parameter of
// its BTF prototype, typedef void (*btf_trace_<name>)(void *, T *).
KernelFeatures::FreeArg free_arg_of(const btf *b) {
  const int id =
      btf__find_by_name_kind(b, "btf_trace_mm_filemap_delete_from_page_cache", BTF_KIND_TYPEDEF);
  if (id <= 0)
    return KernelFeatures::FreeArg::absent;
  const btf_type *t = btf__type_by_id(b, static_cast<__u32>(id));
  t = t ? btf__type_by_id(b, t->type) : nullptr; // the pointer
  t = t && btf_is_ptr(t) ? btf__type_by_id(b, t->type) : nullptr;
  if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 2)
    return KernelFeatures::FreeArg::other;
  const std::string arg = pointee_struct(b, btf_params(t)[1].type);
  if (arg == "folio")
    return KernelFeatures::FreeArg::folio;
  if (arg == "page")
    return KernelFeatures::FreeArg::page;
  return KernelFeatures::FreeArg::other;
}

// How many parameters a function has in the BTF; 0 when it is not there.
int param_count(const btf *b, const char *function) {
  const int id = btf__find_by_name_kind(b, function, BTF_KIND_FUNC);
  if (id <= 0)
    return 0;
  const btf_type *t = btf__type_by_id(b, static_cast<__u32>(id));
  t = t ? btf__type_by_id(b, t->type) : nullptr;
  return t && btf_is_func_proto(t) ? btf_vlen(t) : 0;
}

constexpr bpf_insn insn(__u8 code, __u8 dst, __u8 src, __s16 off, __s32 imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// BPF_XCHG and BPF_CMPXCHG (v5.12): a program that exchanges a stack slot
// loads, or the kernel rejects the encoding ("BPF_STX uses reserved fields").
bool has_atomics() {
  constexpr __u8 mov = BPF_ALU64 | BPF_MOV | BPF_K;
  constexpr __u8 atomic = BPF_STX | BPF_DW | BPF_ATOMIC;
  const bpf_insn prog[] = {
      insn(mov, BPF_REG_1, 0, 0, 0),
      insn(BPF_STX | BPF_DW | BPF_MEM, BPF_REG_10, BPF_REG_1, -8, 0),
      insn(mov, BPF_REG_0, 0, 0, 0),
      insn(mov, BPF_REG_1, 0, 0, 1),
      insn(atomic, BPF_REG_10, BPF_REG_1, -8, BPF_CMPXCHG),
      insn(atomic, BPF_REG_10, BPF_REG_1, -8, BPF_XCHG),
      insn(mov, BPF_REG_0, 0, 0, 0),
      insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
  };
  const int fd = bpf_prog_load(BPF_PROG_TYPE_TRACEPOINT, "shmbpf_atomics", "GPL", prog,
                               sizeof(prog) / sizeof(prog[0]), nullptr);
  if (fd < 0)
    return false;
  close(fd);
  return true;
}

// The kernel's "operation not supported" (ENOTSUPP), which has no name in
// userspace: what attaching gives where the architecture has no trampolines.
constexpr int kKernelEnotsupp = 524;

} // namespace

std::string function_attach_missing(const KernelFeatures &f) {
  if (f.probe_function_id == 0)
    return {}; // the function's own check says what is missing
  const bpf_insn prog[] = {
      insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
      insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FENTRY,
              .attach_btf_id = f.probe_function_id);
  const int fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "shmbpf_fentry", "GPL", prog,
                               sizeof(prog) / sizeof(prog[0]), &opts);
  if (fd < 0) {
    const int err = errno;
    // Without the privilege to load, the real load says so.
    if (err == EPERM || err == EACCES)
      return {};
    return std::string("programs on kernel functions do not load here (") + std::strerror(err) +
           ")";
  }
  const int link = bpf_raw_tracepoint_open(nullptr, fd);
  const int err = errno;
  close(fd);
  if (link >= 0) {
    close(link);
    return {};
  }
  if (err == kKernelEnotsupp)
    return "no BPF trampolines for kernel functions on this kernel (arm64 before 6.4)";
  return std::string("programs on kernel functions do not attach here (") + std::strerror(err) +
         ")";
}

KernelFeatures probe_kernel_features() {
  KernelFeatures f;
  if (utsname u{}; uname(&u) == 0)
    f.release = u.release;
  // libbpf would parse the BTF again while loading; it keeps no copy to
  // share. Every question is answered from this one parse.
  if (std::unique_ptr<btf, BtfFree> b{btf__load_vmlinux_btf()}; b) {
    f.rdonly_cast = btf__find_by_name_kind(b.get(), "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
    f.free_arg = free_arg_of(b.get());
    f.setattr_args = param_count(b.get(), "shmem_setattr");
    const int id = btf__find_by_name_kind(b.get(), "d_instantiate", BTF_KIND_FUNC);
    f.probe_function_id = id > 0 ? static_cast<uint32_t>(id) : 0;
  }
  f.task_pt_regs =
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_task_pt_regs, nullptr) == 1;
  f.find_vma = libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_find_vma, nullptr) == 1;
  f.atomics = has_atomics();
  return f;
}

} // namespace shmbpf
