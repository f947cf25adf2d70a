// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* System V shared memory: shmget, shmat, shmdt, shmctl(IPC_RMID). */
#include "shmbpf.bpf.h"

/* shmget in flight: the IPC namespace's segment count at entry, so the exit
 * can tell a new segment from an existing one. shmget is rare: a map update
 * per call is affordable here, unlike on the open path. */
/* Defined by the fast build, shared by the compat one (core_fixes.bpf.h). */
#ifdef SHMBPF_COMPAT
extern
#endif
	struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} shmget_in_use SEC(".maps");

static __always_inline __u32 shm_in_use(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, nsproxy, ipc_ns, ids[IPC_SHM_IDS].in_use);
}

SEC("tracepoint/syscalls/sys_enter_shmget")
int SHMBPF_PROG(tracepoint__syscalls__sys_enter_shmget)(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 in_use = shm_in_use();

	bpf_map_update_elem(&shmget_in_use, &tid, &in_use, BPF_ANY);
	return 0;
}

static __always_inline struct shmbpf_sysv_event *sysv_event(__u8 type, long ret)
{
	struct shmbpf_sysv_event *e = reserve(sizeof(*e));

	if (!e)
		return NULL;
	/* shmat returns an address: keep only errors in the header's 32 bits. */
	fill_hdr(&e->hdr, type, sizeof(*e), ret < 0 ? ret : (type == SHMBPF_EV_SHMAT ? 0 : ret));
	e->shmid = -1;
	e->key = 0;
	e->size = 0;
	e->addr = 0;
	e->shmflg = 0;
	e->created = 2;
	return e;
}

SEC("tracepoint/syscalls/sys_exit_shmget")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_shmget)(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pt_regs *regs = syscall_regs(ctx->id);
	struct shmbpf_sysv_event *e;
	__u32 *before = bpf_map_lookup_elem(&shmget_in_use, &tid);
	__u32 in_use_before = before ? *before : 0;
	int have_before = before != NULL;
	long ret = ctx->ret;

	bpf_map_delete_elem(&shmget_in_use, &tid);
	e = sysv_event(SHMBPF_EV_SHMGET, ret);
	if (!e)
		return 0;
	e->key = SYSCALL_ARG(regs, 1);
	e->size = SYSCALL_ARG(regs, 2);
	e->shmflg = SYSCALL_ARG(regs, 3);
	if (ret >= 0) {
		e->shmid = ret;
		if (e->key == IPC_PRIVATE ||
		    (e->shmflg & (IPC_CREAT | IPC_EXCL)) == (IPC_CREAT | IPC_EXCL))
			e->created = 1;
		else if (!(e->shmflg & IPC_CREAT))
			e->created = 0;
		else if (have_before)
			/* Racy only against a concurrent create in the same namespace. */
			e->created = shm_in_use() > in_use_before ? 1 : 0;
	}
	submit(e);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_shmat")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_shmat)(struct trace_event_raw_sys_exit *ctx)
{
	struct pt_regs *regs = syscall_regs(ctx->id);
	/* Read once: clang may otherwise load it through a moved ctx pointer,
	 * which the verifier refuses. */
	long ret = ctx->ret;
	struct shmbpf_sysv_event *e = sysv_event(SHMBPF_EV_SHMAT, ret);

	if (!e)
		return 0;
	e->shmid = SYSCALL_ARG(regs, 1);
	e->shmflg = SYSCALL_ARG(regs, 3);
	e->addr = ret >= 0 ? ret : SYSCALL_ARG(regs, 2);
	submit(e);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_shmdt")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_shmdt)(struct trace_event_raw_sys_exit *ctx)
{
	struct pt_regs *regs = syscall_regs(ctx->id);
	struct shmbpf_sysv_event *e = sysv_event(SHMBPF_EV_SHMDT, ctx->ret);

	if (!e)
		return 0;
	e->addr = SYSCALL_ARG(regs, 1);
	submit(e);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_shmctl")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_shmctl)(struct trace_event_raw_sys_exit *ctx)
{
	struct pt_regs *regs = syscall_regs(ctx->id);
	struct shmbpf_sysv_event *e;
	int cmd = SYSCALL_ARG(regs, 2);

	/* Some ABIs or in IPC_64 (0x100); only removal matters. */
	if ((cmd & 0xff) != IPC_RMID)
		return 0;
	e = sysv_event(SHMBPF_EV_SHM_RMID, ctx->ret);
	if (!e)
		return 0;
	e->shmid = SYSCALL_ARG(regs, 1);
	submit(e);
	return 0;
}
