// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Process lifecycle: exit, exec (SIGBUS, with its file, is in tmpfs.bpf.c).
 * Also the one place that defines the shared maps and settings: in the
 * fast build, the one every kernel links (core_fixes.bpf.h). */
#ifndef SHMBPF_COMPAT
#define SHMBPF_DEFINE_MAPS
#endif
#include "shmbpf.bpf.h"

#ifndef SHMBPF_COMPAT
const volatile __u32 page_size = 4096;
const volatile __u64 wakeup_interval_ns = 10000000; /* 10 ms */
const volatile __u64 wakeup_bytes = 1 << 20;	    /* set to a quarter of the ring */
__u64 last_wakeup_ns = 0;
__u64 realtime_minus_boot_ns = 0;
const volatile __u32 name_bucket_mask = (1 << 16) / SHMBPF_NAME_WAYS - 1;
const volatile __u8 have_task_pt_regs = 1;
const volatile __u8 have_find_vma = 1;

char LICENSE[] SEC("license") = "Dual BSD/GPL";
#endif

SEC("tracepoint/sched/sched_process_exit")
int SHMBPF_PROG(tracepoint__sched__sched_process_exit)(void *ctx)
{
	/* Untyped on purpose: exit_is_group_dead reads it with BPF_CORE_READ. */
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct shmbpf_exit_event *e;

	/* Only the last thread of a process (see exit_is_group_dead). */
	if (!exit_is_group_dead(ctx, t))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->hdr, SHMBPF_EV_EXIT, sizeof(*e), 0);
	e->exit_code = BPF_CORE_READ(t, exit_code);
	e->pad = 0;
	submit(e);
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int SHMBPF_PROG(tracepoint__sched__sched_process_exec)(
	struct trace_event_raw_sched_process_exec *ctx)
{
	struct shmbpf_exec_event *e = reserve(sizeof(*e));
	unsigned int off = ctx->__data_loc_filename & 0xffff;
	struct task_struct *t;
	struct super_block *sb;
	struct inode *inode;
	unsigned long magic;
	struct file *exe;
	long n;

	if (!e)
		return 0;
	fill_hdr(&e->hdr, SHMBPF_EV_EXEC, sizeof(*e), 0);
	e->old_pid = ctx->old_pid;
	e->pad = 0;
	n = bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), (void *)ctx + off);
	e->filename_len = n > 0 ? n - 1 : 0;
	/* begin_new_exec set the new mm's exe_file before this tracepoint. */
	t = (struct task_struct *)bpf_get_current_task();
	exe = BPF_CORE_READ(t, mm, exe_file);
	inode = BPF_CORE_READ(exe, f_inode);
	sb = BPF_CORE_READ(inode, i_sb);
	magic = BPF_CORE_READ(sb, s_magic);
	e->exe_fs = magic == TMPFS_MAGIC       ? SHMBPF_FS_TMPFS
		    : magic == HUGETLBFS_MAGIC ? SHMBPF_FS_HUGETLBFS
					       : SHMBPF_FS_UNKNOWN;
	e->exe_dev = BPF_CORE_READ(sb, s_dev);
	e->exe_ino = BPF_CORE_READ(inode, i_ino);
	n = bpf_probe_read_kernel_str(e->exe_name, sizeof(e->exe_name),
				      BPF_CORE_READ(exe, f_path.dentry, d_name.name));
	e->exe_name_len = n > 0 ? n - 1 : 0;
	submit(e);
	return 0;
}
