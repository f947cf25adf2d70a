// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tmpfs and hugetlbfs files, memfds: create, open, resize, unlink, rename,
 * link, pages freed, writes and creates that found no space, and the file
 * behind a SIGBUS fault.
 *
 * Every hook here is a sys_exit tracepoint: the result decides whether the
 * event matters (a new fd's superblock magic), and the arguments are still
 * in the task's saved user registers. That keeps unrelated syscalls to one
 * program run and a few reads, with no per-call map updates.
 */
#define SHMBPF_KFUNCS /* the file helpers; the fast build's bpf_rdonly_cast (core_fixes.bpf.h) */
#include "shmbpf.bpf.h"
#include "paths.bpf.h"
#include "syscall_nr.bpf.h"

/* f_mode bit set when the open created the file (since v4.19). */
#define FMODE_CREATED 0x100000

/*
 * An open that was to create a file and found no space: ENOSPC from a
 * tmpfs out of inodes (nr_inodes), EDQUOT from a tmpfs quota. There is no
 * file, so the record carries what userspace needs to find its mount: the
 * path as passed and, for a relative one, its start directory. A bare name
 * in a directory that is not on tmpfs is dropped here, the rest (and any
 * other filesystem out of space) in userspace.
 */
static __always_inline int handle_create_nospace(long nr, long ret, __u16 origin)
{
	__u32 zero = 0;
	struct shmbpf_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct shmbpf_path_event *e;
	struct dentry *start_d = NULL;
	struct vfsmount *start_mnt = NULL;
	struct pt_regs *regs;
	const char *upath;
	__u32 flags, mode;
	int dirfd = AT_FDCWD, slash = 0;
	long n;

	if (!s)
		return 0;
	regs = syscall_regs(nr);
	open_args(regs, origin, &upath, &flags, &mode);
	if (!(flags & (O_CREAT | __O_TMPFILE)))
		return 0;
	if (origin == SHMBPF_ORIG_OPENAT || origin == SHMBPF_ORIG_OPENAT2)
		dirfd = SYSCALL_ARG(regs, 1);
	n = bpf_probe_read_user_str(s->buf, SHMBPF_PATH_LEN, upath);
	if (n <= 1)
		return 0;
	if (s->buf[0] != '/') {
		leaf_hash(s->buf, &slash);
		start_dir(dirfd, &start_d, &start_mnt);
		if (!slash && sb_fs(KREAD(start_d, d_sb)) == SHMBPF_FS_UNKNOWN)
			return 0;
	}

	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->hdr, SHMBPF_EV_NOSPACE_CREATE, sizeof(*e), ret);
	e->dirfd = dirfd;
	e->newdirfd = AT_FDCWD;
	e->flags = flags;
	e->flags_ev = start_d ? 0 : SHMBPF_F_ABSOLUTE;
	if (n == SHMBPF_PATH_LEN)
		e->flags_ev |= SHMBPF_F_TRUNCATED;
	e->hint_dev = 0;
	e->hint_ino = 0;
	e->pad0 = 0;
	e->origin = origin;
	e->path_len = n - 1;
	copy_used(e->path, s->buf, n);
	e->newpath_len = 0;
	e->newpath[0] = 0;
	__builtin_memset(e->pad1, 0, sizeof(e->pad1));
	fill_start(e, start_d, start_mnt);
	submit(e);
	return 0;
}

static __always_inline int handle_open_exit(long nr, long ret, __u16 origin)
{
	struct shmbpf_scratch *s;
	struct shmbpf_file_event *e;
	__u32 zero = 0, walk_flags = 0;
	__u16 comp_len;
	__u8 ncomp = 0;
	struct pt_regs *regs;
	struct super_block *sb;
	struct inode *inode;
	struct file *f;
	const char *upath;
	__u32 flags, mode;
	__u8 fs;
	int create;

	if (ret == -ENOSPC || ret == -EDQUOT)
		return handle_create_nospace(nr, ret, origin);
	if (ret < 0)
		return 0;
	f = fd_to_file(ret);
	inode = KREAD(f, f_inode);
	sb = KREAD(inode, i_sb);
	fs = inode_fs(inode, sb);
	if (fs == SHMBPF_FS_UNKNOWN)
		return 0;

	regs = syscall_regs(nr);
	open_args(regs, origin, &upath, &flags, &mode);

	/* The path walk comes first, into scratch: its first name is the
	 * leaf a create tracks, read once for both. */
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	comp_len = walk_components(s, KREAD(f, f_path.dentry), KREAD(f, f_path.mnt), &ncomp,
				   &walk_flags);
	create = flags & (O_CREAT | __O_TMPFILE);
	/* Before the reservation: a create whose record is lost still has its
	 * name followed, so its unlink is reported and the model learns of it. */
	if (create) {
		int slash = 0;
		/* No first name: the file is its mount's root (a bind mount). */
		__u64 h = ncomp ? leaf_hash(s->buf, &slash)
				: dentry_name_hash(KREAD(f, f_path.dentry));

		track_key(shmbpf_name_key(h), KREAD(sb, s_dev), KREAD(inode, i_ino));
	}
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->hdr, create ? SHMBPF_EV_CREATE : SHMBPF_EV_OPEN, sizeof(*e), ret);
	e->flags_ev = walk_flags;
	e->comp_len = comp_len;
	e->ncomp = ncomp;
	copy_used(e->components, s->buf, comp_len);
	fill_file_fields(e, f, inode, sb);
	e->arg_size = 0;
	e->flags = flags;
	e->mode = mode;
	e->fd = ret;
	e->origin = origin;
	e->fs = fs;
	if (KREAD(f, f_mode) & FMODE_CREATED)
		e->flags_ev |= SHMBPF_F_NEW;
	e->path_len = 0;
	long n = bpf_probe_read_user_str(e->path, sizeof(e->path), upath);
	if (n > 0)
		e->path_len = n - 1;
	if (n == sizeof(e->path))
		e->flags_ev |= SHMBPF_F_TRUNCATED;
	submit(e);
	return 0;
}

#ifdef SHMBPF_LEGACY_CALLS /* x86-64's call without a directory fd */
SEC("tracepoint/syscalls/sys_exit_open")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_open)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_open_exit(ctx->id, ctx->ret, SHMBPF_ORIG_OPEN);
}
#endif

SEC("tracepoint/syscalls/sys_exit_openat")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_openat)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_open_exit(ctx->id, ctx->ret, SHMBPF_ORIG_OPENAT);
}

SEC("tracepoint/syscalls/sys_exit_openat2")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_openat2)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_open_exit(ctx->id, ctx->ret, SHMBPF_ORIG_OPENAT2);
}

#ifdef SHMBPF_LEGACY_CALLS /* x86-64's call without a directory fd */
SEC("tracepoint/syscalls/sys_exit_creat")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_creat)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_open_exit(ctx->id, ctx->ret, SHMBPF_ORIG_CREAT);
}
#endif

#ifndef SHMBPF_NO_ATOMICS /* memfd_create and resizes write no names */
SEC("tracepoint/syscalls/sys_exit_memfd_create")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_memfd_create)(struct trace_event_raw_sys_exit *ctx)
{
	struct shmbpf_file_event *e;
	struct super_block *sb;
	struct inode *inode;
	struct pt_regs *regs;
	struct file *f;
	long ret = ctx->ret;

	/* Failures are rare and worth seeing (EMFILE, ENOMEM). */
	f = fd_to_file(ret);
	inode = KREAD(f, f_inode);
	sb = KREAD(inode, i_sb);

	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->hdr, SHMBPF_EV_MEMFD_CREATE, sizeof(*e), ret);
	regs = syscall_regs(ctx->id);
	e->flags_ev = 0;
	e->dev = 0;
	e->ino = 0;
	e->size = 0;
	e->bytes = 0;
	e->mnt_id = 0;
	e->comp_len = 0;
	e->ncomp = 0;
	e->fs = SHMBPF_FS_UNKNOWN;
	if (f) {
		e->fs = sb_fs(sb);
		fill_file_identity(e, f, inode, sb);
	}
	e->fd = ret >= 0 ? ret : -1;
	fill_memfd_args(e, regs);
	submit(e);
	return 0;
}

/*
 * A call on a tmpfs or hugetlbfs file's fd: a resize (ftruncate, fallocate),
 * failed or not, or a write that found no space (ENOSPC: the mount is
 * full; EDQUOT: a tmpfs quota), which its caller has checked.
 */
static __always_inline int handle_fd_exit(long nr, long ret, __u16 origin)
{
	const int write = origin >= SHMBPF_ORIG_WRITE;
	struct shmbpf_file_event *e;
	struct super_block *sb;
	struct inode *inode;
	struct pt_regs *regs;
	struct file *f;
	__u8 fs;

	regs = syscall_regs(nr);
	f = fd_to_file(SYSCALL_ARG(regs, 1));
	inode = KREAD(f, f_inode);
	sb = KREAD(inode, i_sb);
	fs = inode_fs(inode, sb);
	if (fs == SHMBPF_FS_UNKNOWN)
		return 0;

	/* Pages freed by a shrinking truncate are reported before the resize. */
	if (!write)
		flush_free_acc();
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->hdr, write ? SHMBPF_EV_NOSPACE_WRITE : SHMBPF_EV_RESIZE, sizeof(*e), ret);
	e->flags_ev = 0;
	fill_file_identity(e, f, inode, sb);
	/* A write's record: the end it asked for, or where it started. */
	if (!fill_resize_args(e, regs, origin)) {
		switch (origin) {
		case SHMBPF_ORIG_WRITE: /* write(fd, buf, count) at the file position */
			e->arg_size = KREAD(f, f_pos) + SYSCALL_ARG(regs, 3);
			break;
		case SHMBPF_ORIG_PWRITE64: /* pwrite64(fd, buf, count, offset) */
			e->arg_size = SYSCALL_ARG(regs, 4) + SYSCALL_ARG(regs, 3);
			break;
		case SHMBPF_ORIG_WRITEV:
			e->arg_size = KREAD(f, f_pos);
			break;
		default: /* pwritev(fd, iov, iovcnt, pos_l, pos_h): pos_l is all of it on x86-64 */
			e->arg_size = SYSCALL_ARG(regs, 4);
			break;
		}
	}
	e->mode = KREAD(inode, i_mode);
	e->fd = SYSCALL_ARG(regs, 1);
	e->origin = origin;
	e->fs = fs;
	e->path_len = 0; /* the decoder reads no byte of path */
	submit(e);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_ftruncate")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_ftruncate)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_fd_exit(ctx->id, ctx->ret, SHMBPF_ORIG_FTRUNCATE);
}

SEC("tracepoint/syscalls/sys_exit_fallocate")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_fallocate)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_fd_exit(ctx->id, ctx->ret, SHMBPF_ORIG_FALLOCATE);
}

/*
 * Writes that found no space. These programs run at the exit of every
 * write of every process; any other result returns at the first compare.
 * What that costs (a 64-byte pwrite on ext4: 1.12x) is the syscall
 * tracepoint's own: one program on the raw sys_exit tracepoint instead
 * costs every syscall more (docs/BENCHMARKS.md, finding 29).
 */
static __always_inline int handle_write_exit(long nr, long ret, __u16 origin)
{
	if (ret != -ENOSPC && ret != -EDQUOT)
		return 0;
	return handle_fd_exit(nr, ret, origin);
}

SEC("tracepoint/syscalls/sys_exit_write")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_write)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_write_exit(ctx->id, ctx->ret, SHMBPF_ORIG_WRITE);
}

SEC("tracepoint/syscalls/sys_exit_pwrite64")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_pwrite64)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_write_exit(ctx->id, ctx->ret, SHMBPF_ORIG_PWRITE64);
}

SEC("tracepoint/syscalls/sys_exit_writev")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_writev)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_write_exit(ctx->id, ctx->ret, SHMBPF_ORIG_WRITEV);
}

SEC("tracepoint/syscalls/sys_exit_pwritev")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_pwritev)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_write_exit(ctx->id, ctx->ret, SHMBPF_ORIG_PWRITEV);
}

SEC("tracepoint/syscalls/sys_exit_pwritev2")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_pwritev2)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_write_exit(ctx->id, ctx->ret, SHMBPF_ORIG_PWRITEV2);
}

#endif /* !SHMBPF_NO_ATOMICS */

/*
 * unlink/unlinkat/rename/renameat/renameat2/link/linkat that succeeded.
 * Reported when the (old) leaf name belongs to a tracked file; a bare name
 * relative to a directory that is not on tmpfs is dropped here, anything
 * else is resolved (and dropped if not on tmpfs) in userspace. A link keeps
 * the old name; linkat(fd, "", ..., AT_EMPTY_PATH) names fd's file, which
 * needs no name to be found (an O_TMPFILE file getting its first one).
 */
static __always_inline int handle_path_exit(long nr, long ret, __u16 origin)
{
	__u32 zero = 0;
	struct shmbpf_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct shmbpf_path_event *e;
	struct shmbpf_name_bucket *b = NULL;
	struct path_start start = {};
	struct path_call c;
	__u32 hint_dev = 0;
	__u64 hint_ino = 0;
	int link = origin == SHMBPF_ORIG_LINK || origin == SHMBPF_ORIG_LINKAT;
	int slash = 0, by_fd = 0;
	__u64 key = 0;
	long n;

	if (ret != 0 || !s)
		return 0;
	path_call_args(syscall_regs(nr), origin, &c);
	if (origin == SHMBPF_ORIG_UNLINKAT && (c.flags & AT_REMOVEDIR))
		return 0;

	n = bpf_probe_read_user_str(s->buf, SHMBPF_PATH_LEN, c.upath);
	/* An empty string reads as 1 byte (its NUL) on 6.18, as 0 on 6.12 and
	 * before, where nothing is copied either. */
	if (origin == SHMBPF_ORIG_LINKAT && (c.flags & AT_EMPTY_PATH) && (n == 0 || n == 1)) {
		struct file *f = fd_to_file(c.dirfd);
		struct inode *inode = KREAD(f, f_inode);
		struct super_block *sb = KREAD(inode, i_sb);

		if (inode_fs(inode, sb) == SHMBPF_FS_UNKNOWN)
			return 0;
		hint_dev = KREAD(sb, s_dev);
		hint_ino = KREAD(inode, i_ino);
		by_fd = 1;
	} else {
		if (n <= 1)
			return 0;
		key = shmbpf_name_key(leaf_hash(s->buf, &slash));
		b = name_bucket(key);
		if (!b || !shmbpf_name_get(b, key, &hint_dev, &hint_ino))
			return 0;
	}
	if (!path_call_start(&c, s->buf, by_fd, slash, &start))
		return 0;

	flush_free_acc();
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->hdr, path_call_type(origin), sizeof(*e), ret);
	if (!by_fd)
		copy_used(e->path, s->buf, n);
	fill_path_record(e, &c, origin, by_fd ? 0 : n, &start, hint_dev, hint_ino);

	/* An unlinked or renamed file's old name is gone, a linked one's stays;
	 * a renamed or linked file is followed under its new name too. */
	if (b && !link)
		shmbpf_name_remove(b, key);
	if (c.unew && e->newpath_len > 0)
		track_key(shmbpf_name_key(leaf_hash(e->newpath, &slash)), hint_dev, hint_ino);
	submit(e);
	return 0;
}

#ifdef SHMBPF_LEGACY_CALLS /* x86-64's call without a directory fd */
SEC("tracepoint/syscalls/sys_exit_unlink")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_unlink)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_path_exit(ctx->id, ctx->ret, SHMBPF_ORIG_UNLINK);
}
#endif

SEC("tracepoint/syscalls/sys_exit_unlinkat")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_unlinkat)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_path_exit(ctx->id, ctx->ret, SHMBPF_ORIG_UNLINKAT);
}

#ifdef SHMBPF_LEGACY_CALLS /* x86-64's call without a directory fd */
SEC("tracepoint/syscalls/sys_exit_rename")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_rename)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_path_exit(ctx->id, ctx->ret, SHMBPF_ORIG_RENAME);
}
#endif

SEC("tracepoint/syscalls/sys_exit_renameat")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_renameat)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_path_exit(ctx->id, ctx->ret, SHMBPF_ORIG_RENAMEAT);
}

SEC("tracepoint/syscalls/sys_exit_renameat2")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_renameat2)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_path_exit(ctx->id, ctx->ret, SHMBPF_ORIG_RENAMEAT2);
}

#ifdef SHMBPF_LEGACY_CALLS /* x86-64's call without a directory fd */
SEC("tracepoint/syscalls/sys_exit_link")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_link)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_path_exit(ctx->id, ctx->ret, SHMBPF_ORIG_LINK);
}
#endif

SEC("tracepoint/syscalls/sys_exit_linkat")
int SHMBPF_PROG(tracepoint__syscalls__sys_exit_linkat)(struct trace_event_raw_sys_exit *ctx)
{
	return handle_path_exit(ctx->id, ctx->ret, SHMBPF_ORIG_LINKAT);
}

#ifndef SHMBPF_NO_ATOMICS /* the programs below write no names */

/*
 * One call per folio leaving the page cache (truncate, eviction). Summed per
 * CPU and inode; see free_acc. shmem never fires mm_filemap_add_to_page_cache,
 * so bytes gained are read from i_blocks at resize time instead.
 */
static __always_inline void account_free(struct inode *host, struct super_block *sb, __u8 fs,
					 unsigned int order)
{
	__u32 zero = 0;
	struct shmbpf_free_event *acc = bpf_map_lookup_elem(&free_acc, &zero);
	__u32 dev;
	__u64 ino;

	if (!acc)
		return;
	/* A preempted light program is flushing this CPU's sum. */
	if (cpu_is_claimed()) {
		count(SHMBPF_CNT_LOST);
		return;
	}
	dev = KREAD(sb, s_dev);
	ino = KREAD(host, i_ino);
	if (acc->folios && (acc->dev != dev || acc->ino != ino))
		flush_free_acc();
	if (!acc->folios) {
		fill_hdr(&acc->hdr, SHMBPF_EV_FREE, sizeof(*acc), 0);
		acc->dev = dev;
		acc->ino = ino;
		acc->fs = fs;
		acc->first_ts_ns = acc->hdr.ts_ns;
		acc->bytes = 0;
		__builtin_memset(acc->pad, 0, sizeof(acc->pad));
	}
	acc->hdr.ts_ns = bpf_ktime_get_boot_ns();
	acc->bytes += (__u64)page_size << order;
	acc->folios++;
	acc->nlink = KREAD(host, __i_nlink);
}

/* The tracepoint passes a folio (v5.17 on, see core_fixes.bpf.h). */
SEC("tp_btf/mm_filemap_delete_from_page_cache")
int SHMBPF_BPF_PROG(SHMBPF_PROG(tp_btf__mm_filemap_delete_from_page_cache), struct folio *folio)
{
	struct inode *host = KREAD(folio, mapping, host);
	struct super_block *sb = KREAD(host, i_sb);
	__u8 fs = sb_fs(sb);

	/* The order is read only for the folios that matter. */
	if (fs != SHMBPF_FS_UNKNOWN)
		account_free(host, sb, fs, folio_order_of(folio));
	return 0;
}

#ifdef SHMBPF_COMPAT
/* Before v5.17 the tracepoint passes the head page. Only compat: the fast
 * build's kernels (v6.2 on) all pass folios. */
SEC("tp_btf/mm_filemap_delete_from_page_cache")
int SHMBPF_BPF_PROG(SHMBPF_PROG(tp_btf__mm_filemap_delete_from_page_cache_page), struct page *page)
{
	struct inode *host = KREAD(page, mapping, host);
	struct super_block *sb = KREAD(host, i_sb);
	__u8 fs = sb_fs(sb);

	if (fs != SHMBPF_FS_UNKNOWN)
		account_free(host, sb, fs, page_order_of(page));
	return 0;
}
#else
/* Run by userspace through BPF_PROG_TEST_RUN on each CPU in turn: emits
 * aggregates that no later event on that CPU would push out. One for all
 * builds: it needs nothing any kernel with a ring buffer lacks. */
SEC("raw_tp")
int flush_free(void *ctx)
{
	/* A preempted light program has the sum: it stays for later. */
	if (!cpu_is_claimed())
		flush_free_acc();
	return 0;
}
#endif

#endif /* !SHMBPF_NO_ATOMICS */

/*
 * SIGBUS. A fault's signal (si_code > 0) is generated by the faulting
 * thread for itself, with the fault's address saved in its thread struct
 * (x86's set_signal_archinfo, arm64's set_thread_esr, before
 * force_sig_fault): the mapping there
 * and its file are read now, since the process is about to die with them.
 * The mmap lock is no longer held on this path, so bpf_find_vma's trylock
 * takes it.
 */
#define SB_KERNMOUNT (1 << 22)

static __always_inline void fault_file(struct shmbpf_sigbus_event *e, struct shmbpf_vma *v)
{
	struct file *f = TYPED((void *)v->file, struct file);
	struct inode *inode = KREAD(f, f_inode);
	struct super_block *sb = KREAD(inode, i_sb);
	struct shmem_sb_info *sbi;

	e->lookup = SHMBPF_FAULT_FILE;
	e->fs = inode_fs(inode, sb);
	e->dev = KREAD(sb, s_dev);
	e->ino = KREAD(inode, i_ino);
	e->size = KREAD(inode, i_size);
	e->bytes = (__u64)KREAD(inode, i_blocks) << 9;
	e->offset = e->addr - v->start + v->pgoff * page_size;
	e->mnt_id = mount_id(KREAD(f, f_path.mnt));
	if (KREAD(inode, __i_nlink) == 0)
		e->flags_ev |= SHMBPF_F_UNLINKED;
	/* A page that starts at or past i_size: SIGBUS by mmap's definition. */
	if ((e->offset & ~((__u64)page_size - 1)) >= e->size)
		e->flags_ev |= SHMBPF_F_BEYOND_EOF;
	if (KREAD(sb, s_flags) & SB_KERNMOUNT)
		e->flags_ev |= SHMBPF_F_INTERNAL;
	if (e->fs == SHMBPF_FS_TMPFS) {
		sbi = TYPED(KREAD(sb, s_fs_info), struct shmem_sb_info);
		e->mount_max_bytes = (__u64)KREAD(sbi, max_blocks) * page_size;
		e->mount_used_bytes = (__u64)KREAD(sbi, used_blocks.count) * page_size;
	}
	/* A preempted light program's walk is in scratch: no name then. */
	if (cpu_is_claimed())
		return;
	e->comp_len = collect_components(KREAD(f, f_path.dentry), KREAD(f, f_path.mnt),
					 e->components, &e->ncomp, &e->flags_ev);
}

/* The process's number in its own pid namespace, the innermost one: the
 * pid its container's processes and logs see. */
static __always_inline __u32 ns_tgid(struct task_struct *task)
{
	/* Read as numbers (probe reads in every build): the level indexes
	 * pid->numbers[], which no typed load can do. */
	struct pid *pid = BPF_CORE_READ(task, group_leader, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);
	struct upid up = {};

	if (!pid)
		return 0;
	bpf_probe_read_kernel(&up, sizeof(up),
			      (void *)((unsigned long)pid +
				       bpf_core_field_offset(struct pid, numbers) +
				       (unsigned long)level * bpf_core_type_size(struct upid)));
	return up.nr;
}

SEC("tracepoint/signal/signal_generate")
int SHMBPF_PROG(tracepoint__signal__signal_generate)(struct trace_event_raw_signal_generate *ctx)
{
	struct shmbpf_sigbus_event *e;
	struct shmbpf_vma v = {};

	if (ctx->sig != SIGBUS)
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->hdr, SHMBPF_EV_SIGBUS, sizeof(*e), 0);
	e->target_pid = ctx->pid;
	e->si_code = ctx->code;
	e->si_errno = ctx->errno;
	e->result = ctx->result;
	bpf_probe_read_kernel(e->target_comm, sizeof(e->target_comm), ctx->comm);
	__builtin_memset(&e->addr, 0,
			 __builtin_offsetof(struct shmbpf_sigbus_event, components) -
				 __builtin_offsetof(struct shmbpf_sigbus_event, addr));
	e->lookup = SHMBPF_FAULT_NOT_A_FAULT;
	if (ctx->code > 0 && ctx->pid == (__u32)bpf_get_current_pid_tgid()) {
		e->lookup = SHMBPF_FAULT_UNKNOWN;
		e->target_ns_pid = ns_tgid(current_task());
		e->addr = FAULT_ADDRESS(current_task());
		if (e->addr && vma_at(e->addr, &v)) {
			if (!v.found)
				e->lookup = SHMBPF_FAULT_NO_VMA;
			else if (!v.file)
				e->lookup = SHMBPF_FAULT_ANON;
			else
				fault_file(e, &v);
		}
	}
	submit(e);
	return 0;
}
