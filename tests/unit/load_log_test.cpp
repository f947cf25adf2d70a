// A failed load told as "program X: <the verifier's reason>" (LoadLog), from
// libbpf's messages as its print callback receives them.
#include "probe/load_log.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

TEST(VerifierReason, TheLastLineBeforeTheStatistics) {
  EXPECT_EQ(verifier_reason("0: (85) call unknown#158\n"
                            "invalid func unknown#158\n"
                            "processed 43 insns (limit 1000000) max_states_per_insn 0 "
                            "total_states 4 peak_states 4 mark_read 1\n"),
            "invalid func unknown#158");
  EXPECT_EQ(verifier_reason("; inode = f->f_inode;\n"
                            "12: (79) r7 = *(u64 *)(r0 +32)\n"
                            "R0 invalid mem access 'scalar'\n"
                            "verification time 120 usec\n"
                            "stack depth 88\n"
                            "processed 20 insns (limit 1000000)\n\n"),
            "R0 invalid mem access 'scalar'");
  EXPECT_EQ(verifier_reason("BPF_STX uses reserved fields\n"), "BPF_STX uses reserved fields");
  EXPECT_EQ(verifier_reason(""), "");
}

TEST(LoadLog, NamesTheProgramThatFailedAndTheVerifiersReason) {
  LoadLog log;
  log.add("libbpf: map 'events': created successfully, fd=4\n");
  log.add("libbpf: prog 'tracepoint__syscalls__sys_exit_openat_compat': BPF program load "
          "failed: Invalid argument\n");
  log.add("libbpf: prog 'tracepoint__syscalls__sys_exit_openat_compat': -- BEGIN PROG LOAD "
          "LOG --\n0: (bf) r6 = r1\n; x\n5: (db) lock *(u64 *)(r10 -8) += r1\n"
          "BPF_STX uses reserved fields\nprocessed 6 insns\n-- END PROG LOAD LOG --\n");
  log.add("libbpf: prog 'tracepoint__syscalls__sys_exit_openat_compat': failed to load: -22\n");
  log.add("libbpf: failed to load object 'shmbpf_bpf'\n");
  log.add("libbpf: failed to load BPF skeleton 'shmbpf_bpf': -22\n");
  EXPECT_EQ(log.failure(),
            "program tracepoint__syscalls__sys_exit_openat_compat: BPF_STX uses reserved fields");
}

TEST(LoadLog, ACoRERelocationThatFoundNoFieldIsTheReason) {
  LoadLog log;
  log.add("libbpf: prog 'tp_btf__mm_filemap_delete_from_page_cache': BPF program load failed: "
          "Invalid argument\n");
  log.add("libbpf: prog 'tp_btf__mm_filemap_delete_from_page_cache': -- BEGIN PROG LOAD LOG --\n"
          "reg type unsupported for arg#0 function x#1\n"
          "12: <invalid CO-RE relocation>\n"
          "failed to resolve CO-RE relocation <byte_off> [94] struct folio.flags (0:0 @ "
          "offset 0)\n"
          "processed 9 insns (limit 1000000) max_states_per_insn 0\n"
          "-- END PROG LOAD LOG --\n");
  EXPECT_EQ(log.failure(), "program tp_btf__mm_filemap_delete_from_page_cache: failed to "
                           "resolve CO-RE relocation <byte_off> [94] struct folio.flags (0:0 @ "
                           "offset 0)");
}

TEST(LoadLog, WithoutAVerifierLogLibbpfsOwnWordsOnTheProgram) {
  LoadLog log;
  log.add("libbpf: prog 'flush_free': BPF program load failed: Operation not permitted\n");
  log.add("libbpf: prog 'flush_free': failed to load: -1\n");
  EXPECT_EQ(log.failure(), "program flush_free: BPF program load failed: Operation not permitted");
}

TEST(LoadLog, NoProgramNamedNoFailureToTell) {
  LoadLog log;
  log.add("libbpf: extern (func ksym) 'bpf_rdonly_cast': not found in kernel or module BTFs\n");
  log.add("libbpf: failed to load object 'shmbpf_bpf'\n");
  EXPECT_EQ(log.failure(), "");
}

} // namespace
} // namespace shmbpf
