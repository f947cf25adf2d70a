// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Process lifecycle: exit, exec, OOM kills (SIGBUS, with its file, is in
 * tmpfs.bpf.c).
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

/* The memory cgroup a task is charged to (the memory controller's css,
 * whichever hierarchy it is on), as the kernfs id of its directory. */
static __always_inline __u64 memcg_id_of(struct task_struct *t)
{
	struct cgroup_subsys_state *css = NULL;
	struct css_set *cset;
	int id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return 0;
	id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	cset = BPF_CORE_READ(t, cgroups);
	if (id < 0 || id >= 32 || !cset)
		return 0;
	bpf_core_read(&css, sizeof(css), &cset->subsys[id]);
	return css ? BPF_CORE_READ(css, cgroup, kn, id) : 0;
}

/* The OOM killer's victim. A kernel whose tracepoint gives the pid alone
 * (before its name and memory were added; Debian's 5.10, 6.1 and 6.12 have
 * them) leaves the rest zero: userspace names the victim from its exit
 * record. */
SEC("tracepoint/oom/mark_victim")
int SHMBPF_PROG(tracepoint__oom__mark_victim)(struct trace_event_raw_mark_victim *ctx)
{
	struct shmbpf_oom_event *e = reserve(sizeof(*e));
	unsigned int off;

	if (!e)
		return 0;
	fill_hdr(&e->hdr, SHMBPF_EV_OOM, sizeof(*e), 0);
	e->victim_pid = ctx->pid;
	e->victim_uid = 0;
	e->flags_ev = 0;
	e->oom_score_adj = 0;
	e->pad = 0;
	e->total_vm_kb = 0;
	e->anon_rss_kb = 0;
	e->file_rss_kb = 0;
	e->shmem_rss_kb = 0;
	e->victim_comm[0] = '\0';
	e->memcg_id = memcg_id_of((struct task_struct *)bpf_get_current_task());
	if (bpf_core_field_exists(ctx->shmem_rss)) {
		off = ctx->__data_loc_comm & 0xffff;
		bpf_probe_read_kernel_str(e->victim_comm, sizeof(e->victim_comm),
					  (void *)ctx + off);
		e->victim_uid = ctx->uid;
		e->total_vm_kb = ctx->total_vm;
		e->anon_rss_kb = ctx->anon_rss;
		e->file_rss_kb = ctx->file_rss;
		e->shmem_rss_kb = ctx->shmem_rss;
		e->flags_ev |= SHMBPF_F_OOM_VICTIM_MEM;
	}
	if (bpf_core_field_exists(ctx->oom_score_adj)) {
		e->oom_score_adj = ctx->oom_score_adj;
		e->flags_ev |= SHMBPF_F_OOM_SCORE_ADJ;
	}
	submit(e);
	return 0;
}
