/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A file's fields for its record, what a path call passed (read from the
 * caller's saved user registers) and the directory a relative path starts
 * from: shared by the syscall exit programs (tmpfs.bpf.c) and the
 * in-filesystem ones (inode.bpf.c), which run inside the same call.
 */
#ifndef SHMBPF_PATHS_BPF_H
#define SHMBPF_PATHS_BPF_H

#include "shmbpf.bpf.h"

/* The inode's fields; e->flags_ev must be set before. */
static __always_inline void fill_inode_fields(struct shmbpf_file_event *e, struct inode *inode,
					      struct super_block *sb)
{
	e->dev = KREAD(sb, s_dev);
	e->ino = KREAD(inode, i_ino);
	e->size = KREAD(inode, i_size);
	e->bytes = (__u64)KREAD(inode, i_blocks) << 9;
	if (KREAD(inode, __i_nlink) == 0)
		e->flags_ev |= SHMBPF_F_UNLINKED;
}

/* Everything but the components. */
static __always_inline void fill_file_fields(struct shmbpf_file_event *e, struct file *f,
					     struct inode *inode, struct super_block *sb)
{
	fill_inode_fields(e, inode, sb);
	e->mnt_id = mount_id(KREAD(f, f_path.mnt));
}

static __always_inline void fill_file_identity(struct shmbpf_file_event *e, struct file *f,
					       struct inode *inode, struct super_block *sb)
{
	e->comp_len = collect_components(KREAD(f, f_path.dentry), KREAD(f, f_path.mnt),
					 e->components, &e->ncomp, &e->flags_ev);
	fill_file_fields(e, f, inode, sb);
}

/* What ftruncate(fd, length) or fallocate(fd, mode, offset, len) asked
 * for, into a resize record; false (nothing set) for any other call. */
static __always_inline int fill_resize_args(struct shmbpf_file_event *e, struct pt_regs *regs,
					    __u16 origin)
{
	e->flags = 0;
	if (origin == SHMBPF_ORIG_FTRUNCATE) {
		e->arg_size = SYSCALL_ARG(regs, 2);
		return 1;
	}
	if (origin == SHMBPF_ORIG_FALLOCATE) {
		e->flags = SYSCALL_ARG(regs, 2);
		e->arg_size = SYSCALL_ARG(regs, 3) + SYSCALL_ARG(regs, 4);
		return 1;
	}
	return 0;
}

/* What memfd_create(name, flags) passed, into its record. */
static __always_inline void fill_memfd_args(struct shmbpf_file_event *e, struct pt_regs *regs)
{
	long n;

	e->arg_size = 0;
	e->flags = SYSCALL_ARG(regs, 2);
	e->mode = 0;
	e->origin = SHMBPF_ORIG_MEMFD_CREATE;
	e->path_len = 0;
	n = bpf_probe_read_user_str(e->path, sizeof(e->path), (const char *)SYSCALL_ARG(regs, 1));
	if (n > 0)
		e->path_len = n - 1;
}

/* An open's path, flags and mode, from its saved arguments. */
static __always_inline void open_args(struct pt_regs *regs, __u16 origin, const char **upath,
				      __u32 *flags, __u32 *mode)
{
	switch (origin) {
	case SHMBPF_ORIG_OPEN:
		*upath = (const char *)SYSCALL_ARG(regs, 1);
		*flags = SYSCALL_ARG(regs, 2);
		*mode = SYSCALL_ARG(regs, 3);
		break;
	case SHMBPF_ORIG_CREAT:
		*upath = (const char *)SYSCALL_ARG(regs, 1);
		*flags = O_CREAT | 01 /* O_WRONLY */ | 01000 /* O_TRUNC */;
		*mode = SYSCALL_ARG(regs, 2);
		break;
	case SHMBPF_ORIG_OPENAT2: {
		struct open_how how = {};

		*upath = (const char *)SYSCALL_ARG(regs, 2);
		bpf_probe_read_user(&how, sizeof(how), (void *)SYSCALL_ARG(regs, 3));
		*flags = how.flags;
		*mode = how.mode;
		break;
	}
	default:
		*upath = (const char *)SYSCALL_ARG(regs, 2);
		*flags = SYSCALL_ARG(regs, 3);
		*mode = SYSCALL_ARG(regs, 4);
		break;
	}
}

/* The directory a relative path starts from: the cwd, or dirfd's. */
static __always_inline void start_dir(int dirfd, struct dentry **d, struct vfsmount **mnt)
{
	if (dirfd == AT_FDCWD) {
		struct task_struct *t = current_task();

		*d = KREAD(t, fs, pwd.dentry);
		*mnt = KREAD(t, fs, pwd.mnt);
	} else {
		struct file *df = fd_to_file(dirfd);

		*d = KREAD(df, f_path.dentry);
		*mnt = KREAD(df, f_path.mnt);
	}
}

/* The start directory of a relative path into a path record. */
static __always_inline void fill_start(struct shmbpf_path_event *e, struct dentry *d,
				       struct vfsmount *mnt)
{
	e->start_dev = 0;
	e->start_ino = 0;
	e->start_mnt_id = 0;
	e->start_comp_len = 0;
	e->start_ncomp = 0;
	if (d) {
		e->start_dev = KREAD(d, d_sb, s_dev);
		e->start_ino = KREAD(d, d_inode, i_ino);
		e->start_mnt_id = mount_id(mnt);
		e->start_comp_len = collect_components(d, mnt, e->start_components, &e->start_ncomp,
						       &e->flags_ev);
	}
}

/*
 * The arguments of unlink, unlinkat, rename, renameat, renameat2, link and
 * linkat: the old path and its dirfd, the new path (NULL for an unlink)
 * and its dirfd, and the flags (unlinkat, renameat2, linkat).
 */
struct path_call {
	const char *upath, *unew;
	int dirfd, newdirfd;
	__u32 flags;
};

static __always_inline void path_call_args(struct pt_regs *regs, __u16 origin, struct path_call *c)
{
	c->dirfd = AT_FDCWD;
	c->newdirfd = AT_FDCWD;
	c->unew = NULL;
	c->flags = 0;
	switch (origin) {
	case SHMBPF_ORIG_UNLINK:
		c->upath = (const char *)SYSCALL_ARG(regs, 1);
		break;
	case SHMBPF_ORIG_UNLINKAT:
		c->dirfd = SYSCALL_ARG(regs, 1);
		c->upath = (const char *)SYSCALL_ARG(regs, 2);
		c->flags = SYSCALL_ARG(regs, 3);
		break;
	case SHMBPF_ORIG_RENAME:
	case SHMBPF_ORIG_LINK:
		c->upath = (const char *)SYSCALL_ARG(regs, 1);
		c->unew = (const char *)SYSCALL_ARG(regs, 2);
		break;
	default: /* renameat, renameat2, linkat: the same first four arguments */
		c->dirfd = SYSCALL_ARG(regs, 1);
		c->upath = (const char *)SYSCALL_ARG(regs, 2);
		c->newdirfd = SYSCALL_ARG(regs, 3);
		c->unew = (const char *)SYSCALL_ARG(regs, 4);
		if (origin != SHMBPF_ORIG_RENAMEAT)
			c->flags = SYSCALL_ARG(regs, 5);
		break;
	}
}

/* The record type of a path call's origin. */
static __always_inline __u8 path_call_type(__u16 origin)
{
	if (origin <= SHMBPF_ORIG_UNLINKAT)
		return SHMBPF_EV_UNLINK;
	if (origin == SHMBPF_ORIG_LINK || origin == SHMBPF_ORIG_LINKAT)
		return SHMBPF_EV_LINK;
	return SHMBPF_EV_RENAME;
}

/* Where a path call's relative path starts, and what the record says of it. */
struct path_start {
	struct dentry *d;
	struct vfsmount *mnt;
	__u32 flags_ev; /* SHMBPF_F_ABSOLUTE, SHMBPF_F_NEW_START */
};

/*
 * The start directory of a path call whose old path (in buf, its leaf
 * hashed: slash set when it has a directory part) was read: the old path's
 * when it is relative, else the new path's when that one is. False when
 * the call cannot be on tmpfs: a bare name in a directory that is not.
 */
static __always_inline int path_call_start(const struct path_call *c, const char *buf, int by_fd,
					   int slash, struct path_start *st)
{
	char new0 = 0;

	st->d = NULL;
	st->mnt = NULL;
	st->flags_ev = !by_fd && buf[0] == '/' ? SHMBPF_F_ABSOLUTE : 0;
	if (!by_fd && buf[0] != '/') {
		struct dentry *d;

		start_dir(c->dirfd, &st->d, &st->mnt);
		d = st->d; /* a local: CO-RE relocates every field KREAD names */
		if (!slash && sb_fs(KREAD(d, d_sb)) == SHMBPF_FS_UNKNOWN)
			return 0;
	} else if (c->unew && bpf_probe_read_user(&new0, 1, c->unew) == 0 && new0 && new0 != '/') {
		start_dir(c->newdirfd, &st->d, &st->mnt);
		st->flags_ev |= SHMBPF_F_NEW_START;
	}
	return 1;
}

/* A path call's record after its header and its old path (n bytes in
 * e->path with its NUL, or none): the new path read from the caller, the
 * start. */
static __always_inline void fill_path_record(struct shmbpf_path_event *e, const struct path_call *c,
					     __u16 origin, long n, const struct path_start *st,
					     __u32 hint_dev, __u64 hint_ino)
{
	e->dirfd = c->dirfd;
	e->newdirfd = c->newdirfd;
	e->flags = c->flags;
	e->flags_ev = st->flags_ev;
	if (n == SHMBPF_PATH_LEN)
		e->flags_ev |= SHMBPF_F_TRUNCATED;
	e->hint_dev = hint_dev;
	e->hint_ino = hint_ino;
	e->pad0 = 0;
	e->origin = origin;
	e->path_len = n > 0 ? n - 1 : 0;
	e->newpath_len = 0;
	if (c->unew) {
		long m = bpf_probe_read_user_str(e->newpath, sizeof(e->newpath), c->unew);

		if (m > 0)
			e->newpath_len = m - 1;
	}
	__builtin_memset(e->pad1, 0, sizeof(e->pad1));
	fill_start(e, st->d, st->mnt);
}

/* The bytes of a record built in record_buf that output() sends: up to
 * the end of the last char array used. */
static __always_inline __u32 file_record_size(const struct shmbpf_file_event *e)
{
	if (e->path_len)
		return __builtin_offsetof(struct shmbpf_file_event, path) + e->path_len;
	return __builtin_offsetof(struct shmbpf_file_event, components) + e->comp_len;
}

static __always_inline __u32 path_record_size(const struct shmbpf_path_event *e)
{
	if (e->start_comp_len)
		return __builtin_offsetof(struct shmbpf_path_event, start_components) +
		       e->start_comp_len;
	if (e->newpath_len)
		return __builtin_offsetof(struct shmbpf_path_event, newpath) + e->newpath_len;
	return __builtin_offsetof(struct shmbpf_path_event, path) + e->path_len;
}

#endif /* SHMBPF_PATHS_BPF_H */
