/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The event ABI between shmbpf's BPF programs and its userspace decoder.
 *
 * Included by BPF C (after vmlinux.h) and by C++ (after <linux/types.h>).
 * Fixed-width types only, explicit padding, no pointers, bool or long:
 * the layout must be identical on both sides. Userspace static_asserts
 * every size below.
 *
 * Bump SHMBPF_ABI_VERSION whenever a field is added, removed, moved or
 * changes meaning; the decoder rejects records of any other version.
 * Adding a new event type with its own struct also bumps the version.
 * docs/EVENTS.md documents every field and must be updated with it.
 */
#ifndef SHMBPF_EVENTS_H
#define SHMBPF_EVENTS_H

#define SHMBPF_ABI_VERSION 11

#define SHMBPF_COMM_LEN 16
/* Paths as passed by the caller and in-mount paths: longer ones are
 * truncated and flagged with SHMBPF_F_TRUNCATED. */
#define SHMBPF_PATH_LEN 256
/* In-mount path components are collected from the leaf upwards. */
#define SHMBPF_MAX_COMPONENTS 8

enum shmbpf_event_type {
	SHMBPF_EV_CREATE = 1,	    /* open(O_CREAT) of a tmpfs/hugetlbfs file */
	SHMBPF_EV_OPEN = 2,	    /* open of a tmpfs/hugetlbfs file, no O_CREAT */
	SHMBPF_EV_MEMFD_CREATE = 3, /* memfd_create */
	SHMBPF_EV_RESIZE = 4,	    /* ftruncate/fallocate on a tmpfs inode */
	SHMBPF_EV_UNLINK = 5,	    /* unlink/unlinkat of a tracked name */
	SHMBPF_EV_RENAME = 6,	    /* rename/renameat/renameat2 of a tracked name */
	SHMBPF_EV_SHMGET = 7,
	SHMBPF_EV_SHMAT = 8,
	SHMBPF_EV_SHMDT = 9,
	SHMBPF_EV_SHM_RMID = 10,
	SHMBPF_EV_FREE = 11,   /* pages of a tmpfs inode left the page cache */
	SHMBPF_EV_SIGBUS = 12, /* SIGBUS generated for a process */
	SHMBPF_EV_EXIT = 13,   /* last thread of a process exited */
	SHMBPF_EV_EXEC = 14,
	SHMBPF_EV_LINK = 15, /* link/linkat: a tracked file got one more name */
	/* No space (ENOSPC, or EDQUOT from a tmpfs quota): a write to a tmpfs
	 * or hugetlbfs file failed (shmbpf_file_event), or an open(O_CREAT)
	 * failed to create a file (shmbpf_path_event: userspace finds its mount). */
	SHMBPF_EV_NOSPACE_WRITE = 16,
	SHMBPF_EV_NOSPACE_CREATE = 17,
	/* The light hooks' create: a tmpfs or hugetlbfs inode made by an open
	 * (shmbpf_path_event: the path as passed, hint_* the new inode). */
	SHMBPF_EV_CREATE_BY_PATH = 18,
	/* The OOM killer chose a victim (shmbpf_oom_event). */
	SHMBPF_EV_OOM = 19,
	SHMBPF_EV_MAX = 20,
};

/* The syscall (or hook) an event came from, for display and tests. */
enum shmbpf_origin {
	SHMBPF_ORIG_NONE = 0,
	SHMBPF_ORIG_OPEN = 1,
	SHMBPF_ORIG_OPENAT = 2,
	SHMBPF_ORIG_OPENAT2 = 3,
	SHMBPF_ORIG_CREAT = 4,
	SHMBPF_ORIG_FTRUNCATE = 5,
	SHMBPF_ORIG_FALLOCATE = 6,
	SHMBPF_ORIG_UNLINK = 7,
	SHMBPF_ORIG_UNLINKAT = 8,
	SHMBPF_ORIG_RENAME = 9,
	SHMBPF_ORIG_RENAMEAT = 10,
	SHMBPF_ORIG_RENAMEAT2 = 11,
	SHMBPF_ORIG_MEMFD_CREATE = 12,
	SHMBPF_ORIG_LINK = 13,
	SHMBPF_ORIG_LINKAT = 14,
	SHMBPF_ORIG_WRITE = 15,
	SHMBPF_ORIG_PWRITE64 = 16,
	SHMBPF_ORIG_WRITEV = 17,
	SHMBPF_ORIG_PWRITEV = 18,
	SHMBPF_ORIG_PWRITEV2 = 19,
	SHMBPF_ORIG_TRUNCATE = 20,
};

/* Filesystem of the inode an event is about. */
enum shmbpf_fs {
	SHMBPF_FS_UNKNOWN = 0,
	SHMBPF_FS_TMPFS = 1,
	SHMBPF_FS_HUGETLBFS = 2,
};

/* shmbpf_file_event.flags_ev / shmbpf_path_event.flags_ev bits */
#define SHMBPF_F_NEW	   0x1	/* the open created the file (FMODE_CREATED) */
#define SHMBPF_F_TRUNCATED 0x2	/* a path or name did not fit */
#define SHMBPF_F_UNLINKED  0x4	/* inode has no links left (i_nlink == 0) */
#define SHMBPF_F_ABSOLUTE  0x8	/* path as passed starts with '/' */
#define SHMBPF_F_MNT_ROOT  0x10 /* component walk reached the mount root */
#define SHMBPF_F_NEW_START 0x20 /* path record: start_* is newpath's start directory */
#define SHMBPF_F_INTERNAL  0x40 /* sigbus: the file is on a kernel-internal mount (memfd, SysV) */
#define SHMBPF_F_BEYOND_EOF                                                                        \
	0x80 /* sigbus: the faulting page starts at or past the end of the file */
#define SHMBPF_F_EXACT_HINT                                                                        \
	0x100 /* path record: hint_* is the file itself (a light hook saw its inode) */
#define SHMBPF_F_CREATE_SENT                                                                       \
	0x200 /* resize: no mount or path, as the file's create, just sent, has them */
#define SHMBPF_F_CTIME_TS                                                                          \
	0x400 /* light record: hdr.ts_ns is the file's new ctime, a tick-coarse time */
#define SHMBPF_F_OOM_VICTIM_MEM 0x800  /* oom: the kernel gave the victim's name, uid and memory */
#define SHMBPF_F_OOM_SCORE_ADJ	0x1000 /* oom: the kernel gave the victim's oom_score_adj */

/* Common header: every record starts with it. 64 bytes. */
struct shmbpf_hdr {
	__u8 type;	 /* enum shmbpf_event_type */
	__u8 abi;	 /* SHMBPF_ABI_VERSION */
	__u16 size;	 /* size of the whole record in bytes */
	__u32 tid;	 /* thread id of the current task */
	__u64 ts_ns;	 /* CLOCK_BOOTTIME nanoseconds; SHMBPF_F_CTIME_TS: from the ctime */
	__u32 pid;	 /* thread-group id of the current task */
	__u32 ppid;	 /* thread-group id of the real parent */
	__u32 uid;	 /* real uid (initial user namespace) */
	__u32 mntns;	 /* mount namespace inode number */
	__u64 cgroup_id; /* cgroup v2 id of the current task */
	__u32 ipcns;	 /* IPC namespace inode number */
	__s32 ret;	 /* syscall result: >= 0 value or -errno */
	char comm[SHMBPF_COMM_LEN];
};

/*
 * A file or path record may end early (hdr.size smaller than its struct,
 * never smaller than the fixed fields before its first char array): the
 * bytes left out are the unused tail of its char arrays, and read as
 * empty. The light hooks send theirs so (see output() in shmbpf.bpf.h).
 */

/*
 * create, open, memfd_create, resize, a write without space.
 * path: for create/open the path as passed; for memfd_create the name as
 * passed (without the "memfd:" prefix); empty for resize and writes.
 * components: the inode's path inside its mount, NUL-separated, leaf first
 * ("name\0dir\0"); for memfds the kernel's dentry name ("memfd:x").
 */
struct shmbpf_file_event {
	struct shmbpf_hdr hdr;
	__u32 dev;    /* kernel dev_t of the superblock: major << 20 | minor */
	__u32 mnt_id; /* mount id as in /proc/<pid>/mountinfo, 0 if unknown */
	__u64 ino;
	__u64 size;	/* i_size after the call */
	__u64 bytes;	/* i_blocks * 512 after the call: pages actually held */
	__u64 arg_size; /* resize: requested length (ftruncate) or offset+len;
			 * write, pwrite64: the end it asked for (offset+count);
			 * writev, pwritev(2): the offset it started at */
	__u32 flags;	/* open flags / memfd flags / fallocate mode */
	__u32 mode;	/* create mode as passed, or the inode's i_mode */
	__s32 fd;	/* the fd returned or operated on, -1 if none */
	__u16 origin;	/* enum shmbpf_origin */
	__u8 fs;	/* enum shmbpf_fs */
	__u8 ncomp;	/* number of components filled in */
	__u32 flags_ev; /* SHMBPF_F_* */
	__u16 path_len; /* bytes used in path, without NUL */
	__u16 comp_len; /* bytes used in components, including NULs */
	char components[SHMBPF_PATH_LEN];
	char path[SHMBPF_PATH_LEN];
};

/*
 * unlink, rename, link, a create that failed for lack of space (flags:
 * the open flags), and the light hooks' create (flags: the open flags). The kernel cannot resolve
 * the path after the call, so it sends what userspace needs to do it: the path(s) as passed, the
 * dirfds, and a start directory (its mount and in-mount components): the
 * old path's when it is relative, else (SHMBPF_F_NEW_START) the new path's
 * when that one is.
 * hint_dev/hint_ino: the last tracked inode created under this leaf name;
 * for linkat(fd, "", ..., AT_EMPTY_PATH), fd's inode itself; from a light
 * hook (SHMBPF_F_EXACT_HINT), the inode the call changed.
 */
struct shmbpf_path_event {
	struct shmbpf_hdr hdr;
	__s32 dirfd;
	__s32 newdirfd;
	__u32 flags;	 /* unlinkat/renameat2/linkat flags */
	__u32 flags_ev;	 /* SHMBPF_F_* */
	__u32 start_dev; /* start directory of a relative path */
	__u32 start_mnt_id;
	__u64 start_ino;
	__u32 hint_dev;
	__u32 pad0;
	__u64 hint_ino;
	__u16 origin; /* enum shmbpf_origin */
	__u16 path_len;
	__u16 newpath_len;
	__u16 start_comp_len;
	__u8 start_ncomp;
	__u8 pad1[7];
	char path[SHMBPF_PATH_LEN];
	char newpath[SHMBPF_PATH_LEN];
	char start_components[SHMBPF_PATH_LEN];
};

/* shmget, shmat, shmdt, shm_rmid */
struct shmbpf_sysv_event {
	struct shmbpf_hdr hdr;
	__s32 shmid; /* -1 when unknown (shmdt) */
	__u32 key;
	__u64 size;    /* shmget: size as passed */
	__u64 addr;    /* shmat: address returned; shmdt: address passed */
	__u32 shmflg;  /* shmget/shmat flags */
	__u32 created; /* shmget: 1 created, 0 existing, 2 unknown */
};

/* Pages of a tmpfs/hugetlbfs inode left the page cache. Aggregated in the
 * kernel: one record per run of frees of one inode on one CPU. */
struct shmbpf_free_event {
	struct shmbpf_hdr hdr;
	__u32 dev;
	__u32 nlink; /* i_nlink when the last folio of the run was freed */
	__u64 ino;
	__u64 bytes; /* bytes freed in this run */
	__u64 folios;
	__u64 first_ts_ns;
	__u8 fs; /* enum shmbpf_fs */
	__u8 pad[7];
};

/* What the kernel found at the faulting address of a SIGBUS. */
enum shmbpf_fault_lookup {
	SHMBPF_FAULT_NOT_A_FAULT = 0, /* sent by a process, or to another task */
	SHMBPF_FAULT_FILE = 1,	      /* a file mapping: the file fields are set */
	SHMBPF_FAULT_ANON = 2,	      /* a mapping without a file */
	SHMBPF_FAULT_NO_VMA = 3,      /* no mapping holds the address */
	SHMBPF_FAULT_UNKNOWN = 4,     /* no address, or the lookup could not run */
};

/* SIGBUS generated. hdr describes the task that generated it (for a
 * fault, the faulting task itself). For a fault (si_code > 0, sent by the
 * task to itself), the mapping that holds the faulting address and its
 * file are looked up in the kernel, before the process dies with them. */
struct shmbpf_sigbus_event {
	struct shmbpf_hdr hdr;
	__u32 target_pid;
	__s32 si_code;
	__s32 si_errno;
	__s32 result; /* TRACE_SIGNAL_* delivery result */
	char target_comm[SHMBPF_COMM_LEN];
	__u64 addr;		/* the faulting address, 0 if unknown */
	__u64 offset;		/* its offset in the mapped file */
	__u64 ino;		/* the mapped file's inode */
	__u64 size;		/* its i_size */
	__u64 bytes;		/* its i_blocks * 512 */
	__u64 mount_max_bytes;	/* tmpfs: the mount's size, 0 if unlimited or unknown */
	__u64 mount_used_bytes; /* tmpfs: bytes in use on it (the kernel's per-CPU-batched count) */
	__u32 dev;		/* the file's superblock: major << 20 | minor */
	__u32 mnt_id;		/* the mapping's mount id, 0 if unknown */
	__u32 flags_ev;		/* SHMBPF_F_UNLINKED, SHMBPF_F_INTERNAL, SHMBPF_F_TRUNCATED, ... */
	__u8 fs;		/* enum shmbpf_fs of the file (regular files only) */
	__u8 lookup;		/* enum shmbpf_fault_lookup */
	__u8 ncomp;		/* components filled in */
	__u8 pad0;
	__u16 comp_len; /* bytes used in components, including NULs */
	__u16 pad1;
	/* A fault's process as its own pid namespace numbers it (what a
	 * container's logs print), 0 when not a fault of the current task. */
	__u32 target_ns_pid;
	char components[SHMBPF_PATH_LEN]; /* the file's path in its mount, leaf first */
};

struct shmbpf_exit_event {
	struct shmbpf_hdr hdr;
	__u32 exit_code; /* wait status: code << 8 | signal */
	__u32 pad;
};

/* The program an exec loaded (mm->exe_file): where it is stored, read in
 * the kernel because a short-lived process is gone before userspace can
 * look at /proc/<pid>/exe. */
#define SHMBPF_EXE_NAME_LEN 64

struct shmbpf_exec_event {
	struct shmbpf_hdr hdr;
	__u32 old_pid;
	__u16 filename_len;
	__u8 exe_fs;	   /* enum shmbpf_fs of the program's superblock */
	__u8 exe_name_len; /* bytes used in exe_name, without NUL */
	__u32 exe_dev;	   /* the program's superblock: major << 20 | minor */
	__u32 pad;
	__u64 exe_ino;
	char filename[SHMBPF_PATH_LEN];
	char exe_name[SHMBPF_EXE_NAME_LEN]; /* its dentry's name: "memfd:<name>" for a memfd */
};

/* The OOM killer chose a victim (tracepoint oom/mark_victim), in a memory
 * cgroup over its limit or on a host out of memory. hdr is the task whose
 * charge found no memory: in a cgroup's OOM, a task charged to that cgroup,
 * often the victim itself. Every kernel gives the victim's pid; newer ones
 * its name, uid and memory too (SHMBPF_F_OOM_VICTIM_MEM), and their
 * oom_score_adj (SHMBPF_F_OOM_SCORE_ADJ). */
struct shmbpf_oom_event {
	struct shmbpf_hdr hdr;
	__u32 victim_pid;
	__u32 victim_uid;
	__u32 flags_ev; /* SHMBPF_F_OOM_* */
	__s16 oom_score_adj;
	__u16 pad;
	__u64 total_vm_kb; /* the victim's address space */
	__u64 anon_rss_kb; /* its resident pages: anonymous, file, shared memory */
	__u64 file_rss_kb;
	__u64 shmem_rss_kb;
	char victim_comm[SHMBPF_COMM_LEN];
	/* hdr's task's memory cgroup: its kernfs id, which is the inode number
	 * of its directory (cgroup v1 or v2); 0 without the memory controller. */
	__u64 memcg_id;
};

/* Per-CPU delivery counters, indexed by enum shmbpf_counter. */
enum shmbpf_counter {
	SHMBPF_CNT_LOST = 0,	   /* bpf_ringbuf_reserve failed */
	SHMBPF_CNT_TRACK_FULL = 1, /* tracked-name bucket full */
	SHMBPF_CNT_MAX = 2,
};

/*
 * FNV-1a over a leaf name: the same function runs in BPF (on dentry names
 * and on unlink/rename arguments) and in userspace (seeding at start-up).
 */
#define SHMBPF_FNV_OFFSET 0xcbf29ce484222325ULL
#define SHMBPF_FNV_PRIME  0x100000001b3ULL

#endif /* SHMBPF_EVENTS_H */
