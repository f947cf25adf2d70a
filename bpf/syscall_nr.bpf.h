/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The numbers of the calls the light hooks report, per architecture: the
 * light programs run inside the call and tell which one it is by the number
 * in the caller's saved registers. arm64 has the generic table
 * (include/uapi/asm-generic/unistd.h), without the calls that take no
 * directory fd (open, creat, unlink, rename, link): there they are always
 * the *at forms.
 */
#ifndef SHMBPF_SYSCALL_NR_BPF_H
#define SHMBPF_SYSCALL_NR_BPF_H

#if defined(__TARGET_ARCH_x86)
#define NR_open		2
#define NR_truncate	76
#define NR_ftruncate	77
#define NR_rename	82
#define NR_creat	85
#define NR_link		86
#define NR_unlink	87
#define NR_openat	257
#define NR_unlinkat	263
#define NR_renameat	264
#define NR_linkat	265
#define NR_fallocate	285
#define NR_renameat2	316
#define NR_memfd_create 319
#define NR_openat2	437

/* The calls without a directory fd exist: their tracepoints are built. */
#define SHMBPF_LEGACY_CALLS 1
#elif defined(__TARGET_ARCH_arm64)
#define NR_unlinkat	35
#define NR_linkat	37
#define NR_renameat	38
#define NR_truncate	45
#define NR_ftruncate	46
#define NR_fallocate	47
#define NR_openat	56
#define NR_renameat2	276
#define NR_memfd_create 279
#define NR_openat2	437
#else
#error "syscall_nr.bpf.h: no call numbers for this architecture (vmlinux/README.md)"
#endif

#endif /* SHMBPF_SYSCALL_NR_BPF_H */
