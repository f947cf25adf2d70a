/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared by every BPF source in bpf/: maps, runtime settings and small helpers.
 * A build's sources are joined into one object, and the builds' objects
 * into one by `bpftool gen object` (cmake/BpfObject.cmake); maps and
 * settings are defined once (in process.bpf.c's fast build, which defines
 * SHMBPF_DEFINE_MAPS) and declared extern everywhere else.
 */
#ifndef SHMBPF_BPF_H
#define SHMBPF_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifdef SHMBPF_DEFINE_MAPS
#define SHMBPF_EXTERN
#else
#define SHMBPF_EXTERN extern
#endif

#include "core_fixes.bpf.h"
#include "shmbpf_events.h"
#include "shmbpf_names.h"

#define TMPFS_MAGIC	0x01021994
#define HUGETLBFS_MAGIC 0x958458f6

#define O_CREAT	      00000100
#define __O_TMPFILE   020000000
#define AT_FDCWD      -100
#define AT_REMOVEDIR  0x200
#define AT_EMPTY_PATH 0x1000
#define IPC_CREAT     00001000
#define IPC_EXCL      00002000
#define IPC_PRIVATE   0
#define IPC_RMID      0
#define IPC_SHM_IDS   2
#define SIGBUS	      7
#define NAME_MAX      255
#define ENOSPC	      28
#define EDQUOT	      122

/* Runtime settings, written by userspace between open and load. */
SHMBPF_EXTERN const volatile __u32 page_size;
/* Wake the consumer at most this often, or sooner when this much is pending
 * (see submit()). */
SHMBPF_EXTERN const volatile __u64 wakeup_interval_ns;
SHMBPF_EXTERN const volatile __u64 wakeup_bytes;
/* For benchmarks only: the light hooks on a file's changes look at this
 * process alone and return at once for any other (0, the default: every
 * process); exits, execs, frees and SIGBUS are not filtered. Two hook sets
 * are then timed side by side, each on its own workload (bench.py, section
 * "paired"). Read-only: at 0 the verifier knows the branch is never taken
 * and drops the call and compare behind it as dead code. */
SHMBPF_EXTERN const volatile __u32 only_tgid;
/* When submit() last woke the consumer; racy across CPUs, on purpose: the
 * worst case is one extra wakeup. */
SHMBPF_EXTERN __u64 last_wakeup_ns;
/* CLOCK_REALTIME minus CLOCK_BOOTTIME, kept current by userspace while it
 * reads the ring (Probe): the light hooks' records take their time from
 * the file's new ctime, a realtime stamp, less this (fill_light_hdr()). */
SHMBPF_EXTERN __u64 realtime_minus_boot_ns;

SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by userspace before load */
} events SEC(".maps");

/* Per-CPU delivery counters (enum shmbpf_counter). */
SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SHMBPF_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Leaf names of the files on tmpfs/hugetlbfs, by FNV-1a hash: the kernel
 * cannot resolve an unlinked path, so an unlink/rename is reported when its
 * leaf name is known here and userspace resolves the full path. Filled by
 * creates in the kernel and by the start-up scan in userspace (through an
 * mmap); the value is the last inode created under that name, a hint. A
 * lock-free set-associative table, see shmbpf_names.h. */
SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, (1 << 16) / SHMBPF_NAME_WAYS); /* sized by userspace before load */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct shmbpf_name_bucket);
} tracked_names SEC(".maps");
/* Buckets of tracked_names minus one (their number is a power of two). */
SHMBPF_EXTERN const volatile __u32 name_bucket_mask;

/* Scratch space: paths are read here before we know they matter. Twice
 * SHMBPF_PATH_LEN so that masked offsets below SHMBPF_PATH_LEN plus reads of
 * up to SHMBPF_PATH_LEN bytes always stay inside (the verifier sees that). */
struct shmbpf_scratch {
	char buf[2 * SHMBPF_PATH_LEN];
};
SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shmbpf_scratch);
} scratch SEC(".maps");

/* Where the light hooks build a record before output() sends the part of
 * it that is used. */
union shmbpf_record {
	struct shmbpf_file_event file;
	struct shmbpf_path_event path;
};
SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, union shmbpf_record);
} record_buf SEC(".maps");

/*
 * The last resize each CPU sent from a light hook (inode_hooks.bpf.c). shmem_setattr changes a
 * ctime twice (setattr_copy, then its own update), both after the new size is set: the second
 * record would say the same again.
 */
struct last_resize {
	__u64 pid_tgid;
	__u64 ino;
	__u64 size;
	__u64 bytes;
	__u16 origin;
	/* The file this CPU last sent the create of, and the thread that made
	 * it, until its resize: its path is then in the ring already
	 * (inode_hooks.bpf.c). */
	__u32 created_dev;
	__u64 created_ino;
	__u64 created_by;
};

SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_resize);
} last_resize SEC(".maps");

/*
 * Programs on functions (fentry, fexit: the light set before v6.13) run
 * with only migration disabled. On a fully preemptible kernel another
 * task can run on the CPU in the middle of one, and its programs would
 * write the same per-CPU buffers (record_buf, scratch, free_acc,
 * last_resize). userspace sets function_hooks when it loads such
 * programs; each claims its CPU while it uses them (claim_cpu), and a
 * program that finds the CPU claimed leaves them alone: a light record is
 * then not sent and a free not summed (both counted lost), a SIGBUS goes
 * without its file's name. Tracepoint programs cannot be preempted, so
 * without function_hooks none of this is looked at.
 */
SHMBPF_EXTERN const volatile __u8 function_hooks;
SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cpu_claimed SEC(".maps");

/* Frees of one inode are summed per CPU until another inode's page is freed
 * on that CPU, a syscall we trace returns on it, or userspace flushes it. */
SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shmbpf_free_event);
} free_acc SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		*c += 1; /* per-CPU: no atomics needed */
}

/* This CPU's claim (see cpu_claimed); NULL never in practice. */
static __always_inline __u32 *cpu_claim_slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_claimed, &zero);
}

/* Whether a preempted program has this CPU's buffers: only with
 * function_hooks, else never. */
static __always_inline int cpu_is_claimed(void)
{
	__u32 *c;

	if (!function_hooks)
		return 0;
	c = cpu_claim_slot();
	return !c || *(volatile __u32 *)c;
}

/* Claims this CPU's buffers for a program on a function: the claim to
 * give back with release_cpu(), or NULL when another holds them. */
static __always_inline __u32 *claim_cpu(void)
{
	__u32 *c = cpu_claim_slot();

	if (!c || *(volatile __u32 *)c)
		return NULL;
	*(volatile __u32 *)c = 1;
	/* Preemption is seen by this CPU in program order: only the compiler
	 * could move the buffers' use across the claim. */
	asm volatile("" ::: "memory");
	return c;
}

static __always_inline void release_cpu(__u32 *c)
{
	asm volatile("" ::: "memory");
	*(volatile __u32 *)c = 0;
}

/* Reserve a record; a failure is counted, never silent. */
static __always_inline void *reserve(__u32 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);
	if (!e)
		count(SHMBPF_CNT_LOST);
	return e;
}

/*
 * How a record goes to the ring (submit() and output() below): waking the
 * consumer only when it is due. A wakeup is an
 * irq_work self-IPI plus a context switch for the consumer: measured at
 * about 1 us per record in a VM, more than everything else a program does
 * (docs/BENCHMARKS.md). So records are submitted without a wakeup unless
 * wakeup_interval_ns has passed since the last one (the first record after
 * a quiet spell is delivered at once) or wakeup_bytes are waiting; the
 * consumer picks up the rest when its poll times out (Probe::poll).
 */
static __always_inline __u64 wakeup_flag(const void *e)
{
	/* A light record's time may be up to a tick old (fill_light_hdr()):
	 * after a quiet spell of less than the interval and a tick, its wakeup
	 * may wait for the consumer's poll. */
	__u64 now = ((const struct shmbpf_hdr *)e)->ts_ns;

	/* Signed: another CPU, or a record timed by a ctime, may have stored
	 * a later time meanwhile. */
	if ((__s64)(now - last_wakeup_ns) >= (__s64)wakeup_interval_ns ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes) {
		last_wakeup_ns = now;
		return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

static __always_inline void submit(void *e)
{
	bpf_ringbuf_submit(e, wakeup_flag(e));
}

/*
 * n, a length the verifier must see as at most max (a constant). In the
 * compat build in assembly: clang copies n before a clamp written in C,
 * and a v5.10 verifier does not carry the clamp's bound over to the copy
 * ("R2 unbounded memory access"). The fast build's kernels do.
 */
#ifdef SHMBPF_COMPAT
#define BOUNDED(n, max)                                                                            \
	({                                                                                         \
		__u64 __n = (n);                                                                   \
		asm volatile("if %0 <= %1 goto +1\n\t%0 = %1" : "+r"(__n) : "i"(max));             \
		__n;                                                                               \
	})
#else
#define BOUNDED(n, max) ((n) > (max) ? (max) : (n))
#endif

/*
 * Send the first size bytes of a record built in record_buf: a file or
 * path record whose char arrays are not all used ends after the last one
 * used (shmbpf_events.h). Records sent whole from a reserve are up to 14
 * cache lines apart in the ring, and each line a record writes there is a
 * miss on a line last written a ring ago, which its submit then waits
 * for; built here and sent this way, an unlink of an absolute path is
 * about 2.5 lines, one after the other (docs/BENCHMARKS.md, finding 32).
 */
static __always_inline int output(void *e, __u32 size)
{
	__u64 n = BOUNDED(size, sizeof(union shmbpf_record));

	((struct shmbpf_hdr *)e)->size = n;
	if (bpf_ringbuf_output(&events, e, n, wakeup_flag(e))) {
		count(SHMBPF_CNT_LOST);
		return 0;
	}
	return 1;
}

/* The header of a record of the current task's, timed ts_ns (CLOCK_BOOTTIME). */
static __always_inline void fill_hdr_at(struct shmbpf_hdr *h, __u8 type, __u16 size, long ret,
					__u64 ts_ns)
{
	struct task_struct *t = current_task();
	__u64 id = bpf_get_current_pid_tgid();

	h->type = type;
	h->abi = SHMBPF_ABI_VERSION;
	h->size = size;
	h->tid = (__u32)id;
	h->pid = id >> 32;
	h->ts_ns = ts_ns;
	h->ppid = KREAD(t, real_parent, tgid);
	h->mntns = KREAD(t, nsproxy, mnt_ns, ns.inum);
	h->ipcns = KREAD(t, nsproxy, ipc_ns, ns.inum);
	h->ret = (__s32)ret;
	/* The fast build reads what the helpers would (the uid in the initial
	 * namespace, the cgroup v2 id, comm) with loads: three calls fewer on
	 * every record. */
#ifdef SHMBPF_COMPAT
	h->uid = (__u32)bpf_get_current_uid_gid();
	h->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
#else
	h->uid = KREAD(t, cred, uid.val);
	h->cgroup_id = KREAD(t, cgroups, dfl_cgrp, kn, id);
	__builtin_memcpy(h->comm, t->comm, sizeof(h->comm));
#endif
}

/* The header of a record of the current task's, timed now. */
static __always_inline void fill_hdr(struct shmbpf_hdr *h, __u8 type, __u16 size, long ret)
{
	fill_hdr_at(h, type, size, ret, bpf_ktime_get_boot_ns());
}

#ifdef SHMBPF_KFUNCS /* the file helpers below: tmpfs.bpf.c's */

/* Every unrelated open pays for this and the magic check after it: in the
 * fast build the table is reached with BTF loads, and only the slot itself
 * (an array the verifier cannot bound) needs a probe read. The file is
 * returned typed, so that f->f_inode->i_sb->s_magic costs loads, not probe
 * reads. */
static __always_inline struct file *fd_to_file(int fd)
{
	struct task_struct *t = current_task();
	struct fdtable *fdt = KREAD(t, files, fdt);
	struct file **fds;
	struct file *f = NULL;

	if (fd >= 0 && (unsigned int)fd < KREAD(fdt, max_fds)) {
		fds = KREAD(fdt, fd);
		bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	}
	/* Typed even when NULL: loads through it then read 0. */
	return TYPED(f, struct file);
}

#define S_IFMT	00170000
#define S_IFREG 0100000

/*
 * Kernel pointers below are read through KREAD: in the fast build they are
 * BTF-typed (from current_task(), a tp_btf argument or fd_to_file()), so
 * their fields are plain loads; a faulting load reads 0, like a failed
 * probe read would (core_fixes.bpf.h).
 */

/* enum shmbpf_fs of a superblock: the cheap in-kernel filter. */
static __always_inline __u8 sb_fs(struct super_block *sb)
{
	unsigned long magic = KREAD(sb, s_magic);

	if (magic == TMPFS_MAGIC)
		return SHMBPF_FS_TMPFS;
	if (magic == HUGETLBFS_MAGIC)
		return SHMBPF_FS_HUGETLBFS;
	return SHMBPF_FS_UNKNOWN;
}

/* Shared memory is a regular file on tmpfs/hugetlbfs. devtmpfs has the
 * tmpfs magic too, so device nodes (/dev/null) are excluded here. */
static __always_inline __u8 inode_fs(struct inode *inode, struct super_block *sb)
{
	/* The magic first: it rejects most files (ext4, ...) in one read. */
	__u8 fs = sb_fs(sb);

	if (fs == SHMBPF_FS_UNKNOWN || (KREAD(inode, i_mode) & S_IFMT) != S_IFREG)
		return SHMBPF_FS_UNKNOWN;
	return fs;
}

static __always_inline __u32 mount_id(struct vfsmount *vfs)
{
	struct mount *m =
		TYPED((void *)vfs - bpf_core_field_offset(struct mount, mnt), struct mount);

	return KREAD(m, mnt_id);
}

/*
 * Write the names from dentry d up to the root of mount vfs into s->buf
 * (NUL-separated, leaf first). Pseudo dentries (memfd) are their own
 * parent: their name is still recorded. Returns bytes used.
 */
static __always_inline __u16 walk_components(struct shmbpf_scratch *s, struct dentry *d,
					     struct vfsmount *vfs, __u8 *ncomp, __u32 *flags_ev)
{
	struct dentry *root = KREAD(vfs, mnt_root);
	__u32 off = 0;
	__u8 n = 0;

	for (int i = 0; i < SHMBPF_MAX_COMPONENTS; i++) {
		struct dentry *parent;
		const unsigned char *name;
		long len;

		if (d == root) {
			*flags_ev |= SHMBPF_F_MNT_ROOT;
			break;
		}
		if (off >= SHMBPF_PATH_LEN) {
			*flags_ev |= SHMBPF_F_TRUNCATED;
			break;
		}
		name = KREAD(d, d_name.name);
		len = bpf_probe_read_kernel_str(&s->buf[off & (SHMBPF_PATH_LEN - 1)],
						SHMBPF_PATH_LEN, name);
		if (len <= 0)
			break;
		off += len;
		n++;
		parent = KREAD(d, d_parent);
		if (parent == d) {
			*flags_ev |= SHMBPF_F_MNT_ROOT;
			break;
		}
		d = parent;
	}
	if (off > SHMBPF_PATH_LEN) {
		off = SHMBPF_PATH_LEN;
		*flags_ev |= SHMBPF_F_TRUNCATED;
	}
	*ncomp = n;
	return off;
}

/*
 * Copy the first len bytes of a scratch buffer into a record's
 * SHMBPF_PATH_LEN-byte field: only what the decoder reads (it stops at the
 * lengths the record gives), since every cache line of a record written is
 * a miss in a fresh part of the ring.
 */
static __always_inline void copy_used(char *out, const char *buf, __u32 len)
{
	bpf_probe_read_kernel(out, BOUNDED(len, SHMBPF_PATH_LEN), buf);
}

/* walk_components() into out, a record's SHMBPF_PATH_LEN bytes. */
static __always_inline __u16 collect_components(struct dentry *d, struct vfsmount *vfs, char *out,
						__u8 *ncomp, __u32 *flags_ev)
{
	__u32 zero = 0;
	struct shmbpf_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	__u16 off;

	if (!s)
		return 0;
	off = walk_components(s, d, vfs, ncomp, flags_ev);
	copy_used(out, s->buf, off);
	return off;
}

/*
 * FNV-1a of the leaf of a NUL-terminated path in a buffer of at least
 * SHMBPF_PATH_LEN bytes (see shmbpf_events.h): one pass, restarting at each
 * '/', so the verifier sees one simple bounded loop. *slash is set when the
 * path has a directory part.
 */
static __always_inline __u64 leaf_hash(const char *buf, int *slash)
{
	__u64 h = SHMBPF_FNV_OFFSET;

	for (__u32 i = 0; i < SHMBPF_PATH_LEN; i++) {
		char c = buf[i];

		if (!c)
			break;
		if (c == '/') {
			h = SHMBPF_FNV_OFFSET;
			*slash = 1;
			continue;
		}
		h ^= (__u8)c;
		h *= SHMBPF_FNV_PRIME;
	}
	return h;
}

/* Hash of a dentry's own name. */
static __always_inline __u64 dentry_name_hash(struct dentry *d)
{
	__u32 zero = 0;
	struct shmbpf_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	const unsigned char *name = KREAD(d, d_name.name);
	int slash = 0;

	if (!s)
		return 0;
	if (bpf_probe_read_kernel_str(s->buf, SHMBPF_PATH_LEN, name) <= 0)
		return 0;
	return leaf_hash(s->buf, &slash);
}

/* The bucket of tracked_names a name key lives in. */
static __always_inline struct shmbpf_name_bucket *name_bucket(__u64 key)
{
	__u32 i = shmbpf_name_bucket_of(key, name_bucket_mask);

	return bpf_map_lookup_elem(&tracked_names, &i);
}

/* Remember a file's leaf name (last file wins), for its unlink or rename. */
static __always_inline void track_key(__u64 key, __u32 dev, __u64 ino)
{
	struct shmbpf_name_bucket *b = name_bucket(key);

	if (!b || shmbpf_name_put(b, key, dev, ino, 1) == SHMBPF_NAME_FULL)
		count(SHMBPF_CNT_TRACK_FULL);
}

/* Emit this CPU's pending free aggregate, if any. */
static __always_inline void flush_free_acc(void)
{
	__u32 zero = 0;
	struct shmbpf_free_event *acc = bpf_map_lookup_elem(&free_acc, &zero);
	struct shmbpf_free_event *e;

	if (!acc || !acc->folios)
		return;
	e = reserve(sizeof(*e));
	if (e) {
		__builtin_memcpy(e, acc, sizeof(*e));
		submit(e);
	}
	acc->folios = 0;
	acc->bytes = 0;
	acc->ino = 0;
}

#endif /* SHMBPF_KFUNCS */

#endif /* SHMBPF_BPF_H */
