// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor under any tracer built on these hooks (docs/BENCHMARKS.md,
 * section "floor"): programs on the sys_exit tracepoints of the shm cycle
 * that do nothing, that only count the events (a per-CPU counter), or that
 * do the least a tracer that reports the events must do: hand one small
 * timestamped record per event to userspace through a ring buffer. No
 * filtering, no file or path reads, nothing of shmbpf's. The record's time
 * is a clock read, or, on the inode timestamp tracepoints in mode
 * record_ctime, the file's new ctime, which the inode has when they fire
 * (less an offset to boot time, as shmbpf's light hooks take theirs).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

enum floor_mode { FLOOR_EMPTY, FLOOR_COUNT, FLOOR_RECORD, FLOOR_RECORD_CTIME };

/* Set by floor_host before load (enum floor_mode). */
const volatile int mode;
/* With --pid: the ctime programs look at this process alone and return at
 * once for any other (0: every process), as shmbpf's light hooks do with
 * engine_host --pid (bench.py, section "paired"). */
const volatile __u32 only_tgid;

struct floor_record {
	__u64 ts_ns;
	__u64 pid_tgid;
	__s64 ret;
	__u32 hook;
	__u32 pad;
};

/* Events per hook, per CPU (mode FLOOR_COUNT). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} records SEC(".maps");

/* Wake the consumer at most every 10 ms, as shmbpf's submit() does. */
__u64 last_wakeup_ns;
/* Records the ring had no room for. */
__u64 lost;
/* CLOCK_REALTIME minus CLOCK_BOOTTIME, set by floor_host (FLOOR_RECORD_CTIME). */
__u64 realtime_minus_boot_ns;

/* Set in i_ctime_nsec when the ctime was read (multigrain times). */
#define I_CTIME_QUERIED (1U << 31)

/* inode: the file whose ctime changed (the timestamp tracepoints), else NULL. */
static __always_inline int record(long ret, __u32 hook, struct inode *inode)
{
	struct floor_record *r;
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (mode == FLOOR_EMPTY)
		return 0;
	if (mode == FLOOR_COUNT) {
		__u64 *c = bpf_map_lookup_elem(&counts, &hook);

		if (c)
			*c += 1;
		return 0;
	}
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	if (mode == FLOOR_RECORD_CTIME && inode)
		r->ts_ns = inode->i_ctime_sec * 1000000000ull +
			   (inode->i_ctime_nsec & ~I_CTIME_QUERIED) - realtime_minus_boot_ns;
	else
		r->ts_ns = bpf_ktime_get_boot_ns();
	r->pid_tgid = bpf_get_current_pid_tgid();
	r->ret = ret;
	r->hook = hook;
	r->pad = 0;
	if (r->ts_ns - last_wakeup_ns >= 10000000) {
		last_wakeup_ns = r->ts_ns;
		flags = BPF_RB_FORCE_WAKEUP;
	}
	bpf_ringbuf_submit(r, flags);
	return 0;
}

struct sys_exit_args {
	__u64 common;
	long nr;
	long ret;
};

SEC("tracepoint/syscalls/sys_exit_openat")
int floor_openat(struct sys_exit_args *ctx)
{
	return record(ctx->ret, 0, NULL);
}

SEC("tracepoint/syscalls/sys_exit_ftruncate")
int floor_ftruncate(struct sys_exit_args *ctx)
{
	return record(ctx->ret, 1, NULL);
}

SEC("tracepoint/syscalls/sys_exit_unlink")
int floor_unlink(struct sys_exit_args *ctx)
{
	return record(ctx->ret, 2, NULL);
}

SEC("tracepoint/syscalls/sys_exit_unlinkat")
int floor_unlinkat(struct sys_exit_args *ctx)
{
	return record(ctx->ret, 3, NULL);
}

/*
 * The other way in (finding 24): tmpfs changes an inode's ctime when a
 * file is created, resized, unlinked or renamed, and these tracepoints
 * fire then, on no unrelated syscall. Only files on tmpfs count here (the
 * superblock magic check a real tool would need); the syscall programs
 * above are not loaded with them.
 */
#define TMPFS_MAGIC 0x01021994

static __always_inline int on_ctime(struct inode *inode, __u32 hook)
{
	if (only_tgid && bpf_get_current_pid_tgid() >> 32 != only_tgid)
		return 0;
	/* Regular files only: a directory's ctime changes with its entries. */
	if ((inode->i_mode & 00170000) != 0100000 || inode->i_sb->s_magic != TMPFS_MAGIC)
		return 0;
	return record(0, hook, inode);
}

SEC("tp_btf/inode_set_ctime_to_ts")
int BPF_PROG(floor_ctime_set, struct inode *inode, struct timespec64 *ctime)
{
	return on_ctime(inode, 4);
}

SEC("tp_btf/ctime_ns_xchg")
int BPF_PROG(floor_ctime_xchg, struct inode *inode, __u32 old, __u32 new, __u32 cur)
{
	return on_ctime(inode, 5);
}

SEC("tp_btf/ctime_xchg_skip")
int BPF_PROG(floor_ctime_skip, struct inode *inode, struct timespec64 *ctime)
{
	return on_ctime(inode, 6);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
