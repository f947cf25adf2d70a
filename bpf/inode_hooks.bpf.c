// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The light hook set: tmpfs and hugetlbfs files and memfds seen from inside
 * the filesystem, with no syscall tracepoint, so that unrelated syscalls
 * pay nothing (docs/BENCHMARKS.md, findings 8 and 24).
 *
 * A file's ctime changes when it is made, resized, unlinked, renamed or
 * linked, and the kernel's inode timestamp tracepoints (v6.13: one of the
 * three fires for every change) pass the inode. They run inside the call,
 * in the caller's context: the header is the caller's, and the call's
 * number and arguments are in its saved user registers. The number says
 * what happened; anything else that changes a ctime (a write, chmod) is
 * dropped at the first compare. The record is the one the syscall exit
 * programs send for the same call, except a create, whose file has no
 * dentry yet: it goes as the path as passed (SHMBPF_EV_CREATE_BY_PATH),
 * resolved in userspace. Before v6.13, programs on the calls that make the
 * same changes pass the inode instead (the end of this file).
 *
 * Compiled in the fast and compat builds only (CMakeLists.txt): a kernel
 * before v5.12 loads these programs from the compat build, as it does the
 * tmpfs.bpf.c programs that are not in its _compat_noatomic one
 * (user/probe/program_choice.cpp).
 */
#define SHMBPF_KFUNCS /* the file helpers; the fast build's bpf_rdonly_cast (core_fixes.bpf.h) */
#include "shmbpf.bpf.h"
#include "paths.bpf.h"
#include "syscall_nr.bpf.h"

/* The origin of a call by its number; SHMBPF_ORIG_NONE for any other. */
static __always_inline __u16 origin_of(long nr)
{
	switch (nr) {
#ifdef NR_open
	case NR_open:
		return SHMBPF_ORIG_OPEN;
#endif
	case NR_openat:
		return SHMBPF_ORIG_OPENAT;
	case NR_openat2:
		return SHMBPF_ORIG_OPENAT2;
#ifdef NR_creat
	case NR_creat:
		return SHMBPF_ORIG_CREAT;
#endif
	case NR_memfd_create:
		return SHMBPF_ORIG_MEMFD_CREATE;
	case NR_ftruncate:
		return SHMBPF_ORIG_FTRUNCATE;
	case NR_fallocate:
		return SHMBPF_ORIG_FALLOCATE;
	case NR_truncate:
		return SHMBPF_ORIG_TRUNCATE;
#ifdef NR_unlink
	case NR_unlink:
		return SHMBPF_ORIG_UNLINK;
#endif
	case NR_unlinkat:
		return SHMBPF_ORIG_UNLINKAT;
#ifdef NR_rename
	case NR_rename:
		return SHMBPF_ORIG_RENAME;
#endif
	case NR_renameat:
		return SHMBPF_ORIG_RENAMEAT;
	case NR_renameat2:
		return SHMBPF_ORIG_RENAMEAT2;
#ifdef NR_link
	case NR_link:
		return SHMBPF_ORIG_LINK;
#endif
	case NR_linkat:
		return SHMBPF_ORIG_LINKAT;
	default:
		return SHMBPF_ORIG_NONE;
	}
}

/*
 * The caller's saved user registers and the origin of its call; NULL
 * where the kernel cannot say. Without bpf_task_pt_regs they are found as
 * saved_user_regs() finds them, taking the stack size whose saved call
 * number is one of the calls above.
 */
static __always_inline struct pt_regs *caller_regs(__u16 *origin)
{
	struct pt_regs *regs;

#ifdef SHMBPF_COMPAT
	if (!have_task_pt_regs) {
		void *stack = KREAD(current_task(), stack);
		__u32 regs_size = bpf_core_type_size(struct pt_regs);

		for (__u32 kib = 16; kib <= 64; kib *= 2) {
			regs = stack + kib * 1024 - regs_size;
			*origin = origin_of(SAVED_CALL_NR(regs));
			if (*origin != SHMBPF_ORIG_NONE)
				return regs;
		}
		return NULL;
	}
#endif
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	*origin = origin_of(SAVED_CALL_NR(regs));
	return regs;
}

/* Whether the inode has a dentry yet: a new one has none. */
static __always_inline int has_alias(struct inode *inode)
{
	return KREAD(inode, i_dentry.first) != NULL;
}

/* The names of a renamed file's dentries looked at, at most (hard links). */
#define MAX_ALIASES 4

/*
 * Whether the inode has a dentry whose name hashes to leaf. A rename over
 * another file changes both ctimes; the one renamed still has the old
 * leaf name. An inode with more names than are looked at counts as having
 * it.
 */
static __always_inline int has_name(struct inode *inode, __u64 leaf)
{
	struct hlist_node *node = KREAD(inode, i_dentry.first);

	for (int i = 0; i < MAX_ALIASES && node; i++) {
		struct dentry *d =
			TYPED((void *)node - bpf_core_field_offset(struct dentry, d_u.d_alias),
			      struct dentry);

		if (dentry_name_hash(d) == leaf)
			return 1;
		node = KREAD(node, next);
	}
	return node != NULL;
}

/* The record a light hook builds (this CPU's record_buf); NULL never in
 * practice, but the verifier wants the check. */
static __always_inline union shmbpf_record *record_space(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&record_buf, &zero);
}

/* Set in i_ctime_nsec when the ctime was read (v6.13, multigrain times). */
#define I_CTIME_QUERIED (1U << 31)

/*
 * A light record's header. by_ctime (the timestamp tracepoints): timed by
 * the change's new ctime, which each of them fires with in the inode
 * already, less realtime_minus_boot_ns; else (programs on functions, where
 * the stamp may not be made yet) by a clock read. The kernel read its clock
 * for that stamp a moment ago, and a clock read is the dearest part of a
 * record here (docs/BENCHMARKS.md, finding 38). The stamp is the kernel's
 * coarse clock, which moves once a tick, unless the file's times were read
 * since its last change: then a fine one. Read here, not as the program
 * starts, so that the changes dropped on the way (every other file's)
 * do not pay for it. Returns the flags_ev bit that says which.
 */
static __always_inline __u32 fill_light_hdr(struct shmbpf_hdr *h, __u8 type, struct inode *inode,
					    int by_ctime)
{
	__u64 off = realtime_minus_boot_ns;
	__u64 ctime_ns = 0;

	if (by_ctime && off)
		ctime_ns = (__u64)KREAD(inode, i_ctime_sec) * 1000000000 +
			   (KREAD(inode, i_ctime_nsec) & ~I_CTIME_QUERIED);
	by_ctime = ctime_ns > off;
	fill_hdr_at(h, type, 0, 0, by_ctime ? ctime_ns - off : bpf_ktime_get_boot_ns());
	return by_ctime ? SHMBPF_F_CTIME_TS : 0;
}

/* A path record's tail, its path (n bytes) in e->path already: the inode
 * changed is the hint; this CPU's pending frees go first. False when the
 * ring had no room. */
static __always_inline int send_path_record(struct shmbpf_path_event *e, __u8 type,
					    const struct path_call *c, __u16 origin, long n,
					    const struct path_start *st, struct inode *inode,
					    struct super_block *sb, int by_ctime)
{
	__u32 ts_flag = fill_light_hdr(&e->hdr, type, inode, by_ctime);

	fill_path_record(e, c, origin, n, st, KREAD(sb, s_dev), KREAD(inode, i_ino));
	e->flags_ev |= SHMBPF_F_EXACT_HINT | ts_flag;
	flush_free_acc();
	return output(e, path_record_size(e));
}

/*
 * This CPU's create of a file is in the ring: the same thread's first
 * ftruncate or fallocate of it here need not find the file's mount and
 * path again, which userspace has from the create (SHMBPF_F_CREATE_SENT;
 * docs/BENCHMARKS.md, finding 35). Only that resize: a later one goes
 * whole, as userspace may by then have forgotten an unlinked file.
 */
static __always_inline void note_create_sent(struct inode *inode, struct super_block *sb)
{
	__u32 zero = 0;
	struct last_resize *last = bpf_map_lookup_elem(&last_resize, &zero);

	if (last) {
		last->created_dev = KREAD(sb, s_dev);
		last->created_ino = KREAD(inode, i_ino);
		last->created_by = bpf_get_current_pid_tgid();
	}
}

/*
 * A new file of an open: the path as passed, resolved in userspace. It is
 * read from the copy the kernel made for the lookup that is creating the
 * file (the caller's path walk, current->nameidata), which costs less than
 * reading the caller's memory again (docs/BENCHMARKS.md, finding 37); from
 * the caller's memory when no walk is under way.
 */
static __always_inline int light_create(struct pt_regs *regs, __u16 origin, struct inode *inode,
					struct super_block *sb, int by_ctime)
{
	union shmbpf_record *r = record_space();
	const char *kpath = KREAD(current_task(), nameidata, name, name);
	struct shmbpf_path_event *e;
	struct path_start start = {};
	struct path_call c = {};
	const char *upath;
	__u32 flags, mode;
	long n;

	if (!r)
		return 0;
	e = &r->path;
	open_args(regs, origin, &upath, &flags, &mode);
	c.dirfd = AT_FDCWD;
	c.newdirfd = AT_FDCWD;
	c.flags = flags;
	if (origin == SHMBPF_ORIG_OPENAT || origin == SHMBPF_ORIG_OPENAT2)
		c.dirfd = SYSCALL_ARG(regs, 1);
	n = kpath ? bpf_probe_read_kernel_str(e->path, SHMBPF_PATH_LEN, kpath)
		  : bpf_probe_read_user_str(e->path, SHMBPF_PATH_LEN, upath);
	if (n <= 1)
		return 0;
	/* The file is on tmpfs: no start directory is dropped here (so its
	 * leaf need not be hashed to see whether the path has a directory). */
	path_call_start(&c, e->path, 0, 1, &start);
	if (send_path_record(e, SHMBPF_EV_CREATE_BY_PATH, &c, origin, n, &start, inode, sb,
			     by_ctime))
		note_create_sent(inode, sb);
	return 0;
}

/* A memfd's new inode: the name as passed, no fd yet. */
static __always_inline int light_memfd(struct pt_regs *regs, struct inode *inode,
				       struct super_block *sb, __u8 fs, int by_ctime)
{
	union shmbpf_record *r = record_space();
	struct shmbpf_file_event *e;

	if (!r)
		return 0;
	e = &r->file;
	e->flags_ev = fill_light_hdr(&e->hdr, SHMBPF_EV_MEMFD_CREATE, inode, by_ctime);
	fill_inode_fields(e, inode, sb);
	e->mnt_id = 0;
	e->comp_len = 0;
	e->ncomp = 0;
	e->fs = fs;
	e->fd = -1;
	fill_memfd_args(e, regs);
	output(e, file_record_size(e));
	return 0;
}

/*
 * A size set: by ftruncate or fallocate on an fd (the file and its path,
 * as the exit program reports them, but for the first one after the
 * file's create: see note_create_sent), or by truncate or an open's
 * O_TRUNC (the inode alone: no mount, no path). fallocate changes the ctime before
 * it allocates, so its size and bytes may be the ones before; the re-stat
 * of held files corrects them. A record that would repeat this CPU's last
 * one (the same thread, file, size and call) is not sent.
 */
static __always_inline int light_resize(struct pt_regs *regs, __u16 origin, struct inode *inode,
					struct super_block *sb, __u8 fs, int by_ctime)
{
	__u32 zero = 0;
	struct last_resize *last = bpf_map_lookup_elem(&last_resize, &zero);
	union shmbpf_record *r = record_space();
	__u64 id = bpf_get_current_pid_tgid();
	__u64 ino = KREAD(inode, i_ino);
	__u64 size = KREAD(inode, i_size);
	__u64 bytes = (__u64)KREAD(inode, i_blocks) << 9;
	struct shmbpf_file_event *e;
	struct file *f = NULL;
	int created = 0;

	if (!last || !r)
		return 0;
	if (last->pid_tgid == id && last->ino == ino && last->size == size &&
	    last->bytes == bytes && last->origin == origin)
		return 0;
	last->pid_tgid = id;
	last->ino = ino;
	last->size = size;
	last->bytes = bytes;
	last->origin = origin;
	if (origin == SHMBPF_ORIG_FTRUNCATE || origin == SHMBPF_ORIG_FALLOCATE) {
		if (last->created_ino == ino && last->created_by == id &&
		    last->created_dev == KREAD(sb, s_dev)) {
			created = 1;
			last->created_ino = 0;
		} else {
			f = fd_to_file(SYSCALL_ARG(regs, 1));
			if (KREAD(f, f_inode, i_ino) != ino)
				f = NULL;
		}
	}
	e = &r->file;
	e->flags_ev = fill_light_hdr(&e->hdr, SHMBPF_EV_RESIZE, inode, by_ctime) |
		      (created ? SHMBPF_F_CREATE_SENT : 0);
	if (f) {
		fill_file_identity(e, f, inode, sb);
		e->fd = SYSCALL_ARG(regs, 1);
	} else {
		e->comp_len = 0;
		e->ncomp = 0;
		fill_inode_fields(e, inode, sb);
		e->mnt_id = 0;
		e->fd = created ? SYSCALL_ARG(regs, 1) : -1;
	}
	if (!fill_resize_args(e, regs, origin))
		e->arg_size = e->size; /* truncate, O_TRUNC: the size set */
	e->mode = KREAD(inode, i_mode);
	e->origin = origin;
	e->fs = fs;
	e->path_len = 0;
	flush_free_acc();
	output(e, file_record_size(e));
	return 0;
}

/*
 * unlink, rename or link of this inode: the call's record, with the inode
 * itself as its hint. A rename over an existing file changes the ctime of
 * both: the one renamed is the one whose name is the old path's leaf.
 */
static __always_inline int light_path_call(struct pt_regs *regs, __u16 origin, struct inode *inode,
					   struct super_block *sb, int by_ctime)
{
	union shmbpf_record *r = record_space();
	struct shmbpf_path_event *e;
	struct path_start start = {};
	struct path_call c;
	int slash = 0, by_fd = 0;
	long n;

	if (!r)
		return 0;
	/* An unlink or rename that drops a file's last name and reference
	 * evicts it in the same call, and the truncate of its pages changes
	 * its ctime once more: a file with no link left was reported already.
	 * (A link may give an O_TMPFILE file its first.) */
	if (origin <= SHMBPF_ORIG_RENAMEAT2 && KREAD(inode, __i_nlink) == 0)
		return 0;
	e = &r->path;
	path_call_args(regs, origin, &c);
	n = bpf_probe_read_user_str(e->path, SHMBPF_PATH_LEN, c.upath);
	if (origin == SHMBPF_ORIG_LINKAT && (c.flags & AT_EMPTY_PATH) && (n == 0 || n == 1))
		by_fd = 1;
	else if (n <= 1)
		return 0;
	/* The file a rename replaces: its unlink is the rename's. */
	if (origin >= SHMBPF_ORIG_RENAME && origin <= SHMBPF_ORIG_RENAMEAT2 &&
	    !has_name(inode, leaf_hash(e->path, &slash)))
		return 0;
	path_call_start(&c, e->path, by_fd, 1, &start);
	send_path_record(e, path_call_type(origin), &c, origin, by_fd ? 0 : n, &start, inode, sb,
			 by_ctime);
	return 0;
}

/* What a hook's caller may have done to the inode, for on_ctime. */
enum {
	ON_CREATE = 1, /* made it: a create, an O_TMPFILE, a memfd */
	ON_RESIZE = 2, /* set its size */
	ON_NAME = 4,   /* unlinked, renamed or linked it */
	ON_ANY = ON_CREATE | ON_RESIZE | ON_NAME,
};

/* What a light hook sends for a change, by on_ctime. */
enum { SEND_NONE, SEND_CREATE, SEND_MEMFD, SEND_RESIZE, SEND_PATH_CALL };

/* The record for a change to inode, by the caller's call number; only
 * changes of the kinds in on are looked at. A program on a function
 * (claim) claims its CPU's buffers first (see cpu_claimed). by_ctime: the
 * inode has the change's new ctime (see fill_light_hdr). */
static __always_inline int on_ctime(struct inode *inode, int on, int claim, int by_ctime)
{
	struct super_block *sb;
	struct pt_regs *regs;
	__u16 origin = SHMBPF_ORIG_NONE;
	__u32 *claimed = NULL;
	int send = SEND_NONE;
	__u8 fs;

	if (only_tgid && bpf_get_current_pid_tgid() >> 32 != only_tgid)
		return 0;
	sb = KREAD(inode, i_sb);
	fs = inode_fs(inode, sb); /* regular files on tmpfs or hugetlbfs */
	if (fs == SHMBPF_FS_UNKNOWN)
		return 0;
	regs = caller_regs(&origin);
	if (!regs)
		return 0;
	switch (origin) {
	case SHMBPF_ORIG_NONE:
		break;
	case SHMBPF_ORIG_OPEN:
	case SHMBPF_ORIG_OPENAT:
	case SHMBPF_ORIG_OPENAT2:
	case SHMBPF_ORIG_CREAT:
		/* A new inode has no dentry yet; an existing one's ctime changes
		 * in an open only by O_TRUNC. */
		if (!has_alias(inode))
			send = (on & ON_CREATE) ? SEND_CREATE : SEND_NONE;
		else
			send = (on & ON_RESIZE) ? SEND_RESIZE : SEND_NONE;
		break;
	case SHMBPF_ORIG_MEMFD_CREATE:
		send = (on & ON_CREATE) && !has_alias(inode) ? SEND_MEMFD : SEND_NONE;
		break;
	case SHMBPF_ORIG_FTRUNCATE:
	case SHMBPF_ORIG_FALLOCATE:
	case SHMBPF_ORIG_TRUNCATE:
		send = (on & ON_RESIZE) ? SEND_RESIZE : SEND_NONE;
		break;
	default:
		send = (on & ON_NAME) ? SEND_PATH_CALL : SEND_NONE;
		break;
	}
	if (send == SEND_NONE)
		return 0;
	if (claim) {
		claimed = claim_cpu();
		if (!claimed) {
			count(SHMBPF_CNT_LOST);
			return 0;
		}
	}
	switch (send) {
	case SEND_CREATE:
		light_create(regs, origin, inode, sb, by_ctime);
		break;
	case SEND_MEMFD:
		light_memfd(regs, inode, sb, fs, by_ctime);
		break;
	case SEND_RESIZE:
		light_resize(regs, origin, inode, sb, fs, by_ctime);
		break;
	default:
		light_path_call(regs, origin, inode, sb, by_ctime);
		break;
	}
	if (claimed)
		release_cpu(claimed);
	return 0;
}

/* Each fires with the new ctime in the inode: inode_set_ctime_to_ts once
 * it stored it, ctime_ns_xchg once it swapped the nanoseconds in and set
 * the seconds, ctime_xchg_skip when the inode had it already. */
SEC("tp_btf/inode_set_ctime_to_ts")
int SHMBPF_BPF_PROG(SHMBPF_PROG(tp_btf__inode_set_ctime_to_ts), struct inode *inode)
{
	return on_ctime(inode, ON_ANY, 0, 1);
}

SEC("tp_btf/ctime_ns_xchg")
int SHMBPF_BPF_PROG(SHMBPF_PROG(tp_btf__ctime_ns_xchg), struct inode *inode)
{
	return on_ctime(inode, ON_ANY, 0, 1);
}

SEC("tp_btf/ctime_xchg_skip")
int SHMBPF_BPF_PROG(SHMBPF_PROG(tp_btf__ctime_xchg_skip), struct inode *inode)
{
	return on_ctime(inode, ON_ANY, 0, 1);
}

/*
 * Before v6.13 there is no timestamp tracepoint. Where the kernel traces
 * functions (fentry and fexit, v5.5 on x86-64), programs on the calls that
 * make the same changes take their place, each passing the changed inode
 * to on_ctime (userspace loads these only without the tracepoints):
 *   d_instantiate   a new file's first dentry (create, O_TMPFILE, memfd)
 *                   and a link's new one;
 *   shmem_unlink    an unlink, and the file a rename replaces (dropped);
 *   d_move          a rename, once the filesystem made it (before v6.6
 *                   a rename changes no ctime of the file renamed);
 *   shmem_setattr   truncate, ftruncate and O_TRUNC, once they succeeded;
 *   shmem_fallocate fallocate, once it succeeded: the size and bytes after.
 * None of them changed its parameters since v5.10 but shmem_setattr, which
 * gained a user namespace (v5.12) and then an idmap (v6.3) in front: it
 * has a program for each count. hugetlbfs files' resizes and unlinks go
 * by other calls: on these kernels, rescans.
 */

SEC("fentry/d_instantiate")
int SHMBPF_BPF_PROG(SHMBPF_PROG(fentry__d_instantiate), struct dentry *dentry, struct inode *inode)
{
	return on_ctime(inode, ON_CREATE | ON_NAME, 1, 0);
}

SEC("fentry/shmem_unlink")
int SHMBPF_BPF_PROG(SHMBPF_PROG(fentry__shmem_unlink), struct inode *dir, struct dentry *dentry)
{
	return on_ctime(KREAD(dentry, d_inode), ON_NAME, 1, 0);
}

SEC("fentry/d_move")
int SHMBPF_BPF_PROG(SHMBPF_PROG(fentry__d_move), struct dentry *dentry, struct dentry *target)
{
	return on_ctime(KREAD(dentry, d_inode), ON_NAME, 1, 0);
}

/* Before v5.12 (the _2args flavour, chosen by userspace from the BTF). */
SEC("fexit/shmem_setattr")
int SHMBPF_BPF_PROG(SHMBPF_PROG(fexit__shmem_setattr_2args), struct dentry *dentry,
		    struct iattr *attr, int ret)
{
	return ret ? 0 : on_ctime(KREAD(dentry, d_inode), ON_RESIZE, 1, 0);
}

SEC("fexit/shmem_setattr")
int SHMBPF_BPF_PROG(SHMBPF_PROG(fexit__shmem_setattr), void *ns, struct dentry *dentry,
		    struct iattr *attr, int ret)
{
	return ret ? 0 : on_ctime(KREAD(dentry, d_inode), ON_RESIZE, 1, 0);
}

SEC("fexit/shmem_fallocate")
int SHMBPF_BPF_PROG(SHMBPF_PROG(fexit__shmem_fallocate), struct file *file, int mode, loff_t offset,
		    loff_t len, long ret)
{
	return ret ? 0 : on_ctime(KREAD(file, f_inode), ON_RESIZE, 1, 0);
}
