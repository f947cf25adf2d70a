/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel-version differences. Each helper names the kernel change it papers
 * over; docs/KERNELS.md lists them all with the first kernel that has each.
 *
 * Field layouts that moved are resolved with CO-RE (flavoured structs,
 * bpf_core_field_exists). What CO-RE cannot hide (a kfunc, a helper or an
 * instruction the verifier rejects) is decided at build time and at load
 * time instead:
 *
 * - Builds. cmake/BpfObject.cmake compiles the sources up to three times and
 *   links every build into one object; a program's name says which build it
 *   comes from (SHMBPF_PROG), and userspace loads one program per hook
 *   (Probe, after probing the kernel):
 *     (none)            fast: typed loads through the bpf_rdonly_cast kfunc
 *                       (v6.2), bpf_get_current_task_btf, bpf_task_pt_regs,
 *                       BPF atomics;
 *     _compat           SHMBPF_COMPAT: every kernel pointer followed with
 *                       bpf_probe_read_kernel (CO-RE), no kfunc; needs BPF
 *                       atomics (v5.12) where the name table is written;
 *     _compat_noatomic  SHMBPF_COMPAT and SHMBPF_NO_ATOMICS: the programs
 *                       that write the name table, with plain stores.
 *   A kfunc call cannot stay in a program the verifier of a kernel without
 *   it sees, even in dead code, and a v5.10 verifier rejects an atomic
 *   exchange anywhere in a program (it checks every instruction's encoding
 *   before it follows any path): hence builds, not branches.
 * - Settings. Helpers are chosen with `const volatile` flags that userspace
 *   sets after probing: the verifier reads frozen .rodata as constants and
 *   removes the branch not taken before it checks helper calls.
 */
#ifndef SHMBPF_CORE_FIXES_H
#define SHMBPF_CORE_FIXES_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#if defined(SHMBPF_NO_ATOMICS) && !defined(SHMBPF_COMPAT)
#error "SHMBPF_NO_ATOMICS is a variant of the SHMBPF_COMPAT build"
#endif

/* A program's name in this build (userspace's Probe knows the suffixes). */
#if defined(SHMBPF_NO_ATOMICS)
#define SHMBPF_PROG(name) name##_compat_noatomic
#elif defined(SHMBPF_COMPAT)
#define SHMBPF_PROG(name) name##_compat
#else
#define SHMBPF_PROG(name) name
#endif
/* BPF_PROG pastes its name: expand SHMBPF_PROG first. */
#define SHMBPF_BPF_PROG(name, ...) BPF_PROG(name, __VA_ARGS__)

/* bpf_task_pt_regs (v5.15, "bpf: Add bpf_task_pt_regs() helper") exists:
 * set by userspace (libbpf_probe_bpf_helper); read by the compat builds. */
SHMBPF_EXTERN const volatile __u8 have_task_pt_regs;
/* bpf_find_vma (v5.17, "bpf: Introduce helper bpf_find_vma") exists: set
 * by userspace; read by the compat build (the fast build's kernels all
 * have it, and the noatomic build's never call it: see vma_at()). */
SHMBPF_EXTERN const volatile __u8 have_find_vma;

/*
 * KREAD(p, a, b, ...): p->a->b..., the way this build can. The fast build
 * follows BTF-typed pointers with plain loads (a faulting load reads 0);
 * the compat builds have untyped pointers (no bpf_rdonly_cast before v6.2,
 * "bpf: Add a kfunc for generic type cast"; no bpf_get_current_task_btf
 * before v5.11) and read each hop with bpf_probe_read_kernel, which reads 0
 * on a fault too. Either way a NULL along the chain reads as 0.
 */
#ifdef SHMBPF_COMPAT
#define KREAD(p, ...) BPF_CORE_READ(p, __VA_ARGS__)
#else
#define SHMBPF_HOPS_1(p, a)		      (p)->a
#define SHMBPF_HOPS_2(p, a, b)		      (p)->a->b
#define SHMBPF_HOPS_3(p, a, b, c)	      (p)->a->b->c
#define SHMBPF_HOPS_4(p, a, b, c, d)	      (p)->a->b->c->d
#define SHMBPF_HOPS_N(_1, _2, _3, _4, n, ...) n
#define KREAD(p, ...)                                                                              \
	SHMBPF_HOPS_N(__VA_ARGS__, SHMBPF_HOPS_4, SHMBPF_HOPS_3, SHMBPF_HOPS_2, SHMBPF_HOPS_1)     \
	(p, __VA_ARGS__)
#endif

/*
 * What the architectures keep under other names: the call number in the
 * caller's saved user registers (x86's orig_ax, arm64's syscallno), and the
 * address of the task's last fault, saved before its signal is raised
 * (x86's cr2, arm64's fault_address).
 */
#if defined(__TARGET_ARCH_x86)
#define SAVED_CALL_NR(regs) KREAD(regs, orig_ax)
#define FAULT_ADDRESS(task) KREAD(task, thread.cr2)
#elif defined(__TARGET_ARCH_arm64)
#define SAVED_CALL_NR(regs) KREAD(regs, syscallno)
#define FAULT_ADDRESS(task) KREAD(task, thread.fault_address)
#else
#error "core_fixes.bpf.h: no register names for this architecture (vmlinux/README.md)"
#endif

#if defined(SHMBPF_KFUNCS) && !defined(SHMBPF_COMPAT)
/* Casts a kernel pointer read as a number to a BTF-typed one whose fields
 * are then read with plain (fault-safe) loads instead of a helper call each.
 * Declared by the sources that define SHMBPF_KFUNCS (tmpfs.bpf.c,
 * inode_hooks.bpf.c), which the build joins into one object before
 * `bpftool gen object` links the builds: libbpf 1.1's linker fails on a
 * kfunc extern declared in more than one object (cmake/BpfObject.cmake).
 * Weak, so that the object opens on kernels before v6.2 (where userspace
 * loads the compat programs, which never call it). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define TYPED(p, type) ((type *)bpf_rdonly_cast((p), bpf_core_type_id_kernel(type)))

/*
 * The current task, BTF-typed: plain loads instead of one probe read per
 * hop. Cast to an untrusted pointer on purpose: for every load through a
 * trusted task the verifier looks up "<type>__safe_trusted" and similar
 * names in the kernel's BTF, a linear search over all its types each time
 * (9% of `shmbpf top`'s start-up), and untrusted loads are just as
 * fault-safe.
 */
static __always_inline struct task_struct *current_task(void)
{
	return TYPED(bpf_get_current_task_btf(), struct task_struct);
}
#elif !defined(SHMBPF_COMPAT)
static __always_inline struct task_struct *current_task(void)
{
	return bpf_get_current_task_btf();
}
#else
#define TYPED(p, type) ((type *)(p))
/* bpf_get_current_task (v4.8): an untyped pointer, read through KREAD. */
static __always_inline struct task_struct *current_task(void)
{
	return (struct task_struct *)bpf_get_current_task();
}
#endif

/*
 * The saved user registers, where sys_exit finds the syscall's arguments;
 * nr is the syscall's number (the sys_exit tracepoint's id). Read them with
 * SYSCALL_ARG(regs, n).
 */
#ifndef SHMBPF_COMPAT
/* BTF-typed, so an argument is a plain load (the _CORE_ variants are a
 * bpf_probe_read_kernel call each). */
static __always_inline struct pt_regs *syscall_regs(long nr)
{
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}
#define SYSCALL_ARG(regs, n) PT_REGS_PARM##n##_SYSCALL(regs)
#else
/*
 * Before bpf_task_pt_regs (v5.15) the registers are found where the kernel
 * keeps them: at the top of the task's kernel stack, as task_pt_regs()
 * does on x86-64 and arm64 (nothing between them and the top before x86's
 * FRED padding, v6.9, which comes long after the helper). The stack is
 * THREAD_SIZE bytes: 16 KiB, twice or four times that with KASAN (on
 * arm64 also 64 KiB with 64 KiB pages), a build option no BTF records. So
 * each size is tried, and the one whose saved call number is this
 * syscall's is taken; none matching gives NULL, whose reads
 * are 0, never another task's or a wrong slot's values.
 */
static __always_inline struct pt_regs *saved_user_regs(long nr)
{
	void *stack = KREAD(current_task(), stack);
	__u32 regs_size = bpf_core_type_size(struct pt_regs);

	for (__u32 kib = 16; kib <= 64; kib *= 2) {
		struct pt_regs *regs = stack + kib * 1024 - regs_size;

		if (SAVED_CALL_NR(regs) == nr)
			return regs;
	}
	return NULL;
}

static __always_inline struct pt_regs *syscall_regs(long nr)
{
	if (have_task_pt_regs)
		return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return saved_user_regs(nr);
}
/* A probe read each: the pointer may be untyped. */
#define SYSCALL_ARG(regs, n) PT_REGS_PARM##n##_CORE_SYSCALL(regs)
#endif

/*
 * The mapping of the current task that holds addr: where a SIGBUS fault
 * happened. Found with bpf_find_vma where the kernel has it (v5.17), and
 * where it has not, or it cannot run, by the search find_vma() does: the
 * mm's VMAs were an rbtree, mm->mm_rb, until v6.1's maple tree ("mm:
 * remove rb tree"), searched below too. The lookup
 * stays in the fast and compat builds, the rbtree in the compat builds:
 * a callback's address is an instruction a v5.12 verifier rejects anywhere
 * in a program, so the noatomic build (v5.10, v5.11) has only the rbtree.
 */
#ifdef SHMBPF_KFUNCS /* tmpfs.bpf.c's */
struct shmbpf_vma {
	__u64 start;
	__u64 pgoff;
	__u64 file; /* struct file *, 0 for an anonymous mapping */
	__u8 found;
};

#ifndef SHMBPF_NO_ATOMICS
static long shmbpf_vma_found(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct shmbpf_vma *out = data;

	out->start = vma->vm_start;
	out->pgoff = vma->vm_pgoff;
	out->file = (__u64)vma->vm_file;
	out->found = 1;
	return 0;
}
#endif

#ifdef SHMBPF_COMPAT
struct mm_struct___rb {
	struct rb_root mm_rb;
} __attribute__((preserve_access_index));

struct vm_area_struct___rb {
	unsigned long vm_start;
	unsigned long vm_end;
	struct rb_node vm_rb;
	unsigned long vm_pgoff;
	struct file *vm_file;
} __attribute__((preserve_access_index));

/* Returns 0 when the kernel has no mm_rb (a maple tree kernel). */
static __always_inline int vma_by_rbtree(__u64 addr, struct shmbpf_vma *out)
{
	struct mm_struct___rb *mm = (void *)BPF_CORE_READ(current_task(), mm);
	__u32 link = bpf_core_field_offset(struct vm_area_struct___rb, vm_rb);
	struct rb_node *node;

	if (!bpf_core_field_exists(mm->mm_rb))
		return 0;
	node = BPF_CORE_READ(mm, mm_rb.rb_node);
	/* An rbtree of n nodes is at most 2 log2(n + 1) deep. */
	for (int i = 0; i < 64 && node; i++) {
		struct vm_area_struct___rb *vma = (void *)node - link;

		if (BPF_CORE_READ(vma, vm_end) <= addr) {
			node = BPF_CORE_READ(node, rb_right);
			continue;
		}
		if (BPF_CORE_READ(vma, vm_start) <= addr) {
			out->start = BPF_CORE_READ(vma, vm_start);
			out->pgoff = BPF_CORE_READ(vma, vm_pgoff);
			out->file = (__u64)BPF_CORE_READ(vma, vm_file);
			out->found = 1;
			break;
		}
		node = BPF_CORE_READ(node, rb_left);
	}
	return 1;
}
#endif

/*
 * The mm's maple tree (v6.1, "mm: start tracking VMAs with maple tree"),
 * searched as mtree_lookup_walk() does, without its lock: bpf_find_vma
 * cannot run here when another tracer's lookup on this CPU left its
 * deferred unlock pending (an irq_work, interrupts being off), and the
 * noatomic build has no lookup of its own on these kernels. Reads are
 * probe reads; a node changed meanwhile (another thread's mmap) can only
 * make the search miss, and the mapping found is checked to hold addr.
 *
 * A node's pointer carries its type in bits 3-6 (the node is 256-byte
 * aligned); the root's also has bit 1 set (xa_is_node, MAPLE_ROOT_NODE),
 * without which the root is an empty tree or one entry at index 0. Types 0 and 1 are
 * leaves (dense, leaf_64: a mm's are leaf_64), 2 is range_64 (15 pivots, 16
 * slots), 3 arange_64 (9 pivots, 10 slots). The first pivot at or above
 * addr picks its slot; past the last pivot, the last slot (up to the
 * node's max). A leaf's slot is the vm_area_struct, or NULL for a gap.
 * Returns 0 when the kernel has no maple tree.
 */
#define SHMBPF_MAPLE_DEPTH 8 /* 16-way: a mm's tree is 3 or 4 deep */

static __always_inline int vma_by_maple(__u64 addr, struct shmbpf_vma *out)
{
	struct mm_struct *mm = BPF_CORE_READ(current_task(), mm);
	__u32 range_pivots, range_slots, arange_pivots, arange_slots;
	__u64 entry;

	/* First: on a kernel without the tree, the offsets below have no
	 * relocation (libbpf poisons them) and must be unreachable. */
	if (!bpf_core_field_exists(mm->mm_mt))
		return 0;
	range_pivots = bpf_core_field_offset(struct maple_node, mr64.pivot);
	range_slots = bpf_core_field_offset(struct maple_node, mr64.slot);
	arange_pivots = bpf_core_field_offset(struct maple_node, ma64.pivot);
	arange_slots = bpf_core_field_offset(struct maple_node, ma64.slot);
	entry = (__u64)BPF_CORE_READ(mm, mm_mt.ma_root);
	if ((entry & 3) != 2 || entry <= 4096)
		return 1; /* no node: no mapping above address 0 */
	for (int depth = 0; depth < SHMBPF_MAPLE_DEPTH; depth++) {
		void *node = (void *)(entry & ~255ULL);
		__u64 type = (entry >> 3) & 0xf;
		__u32 npivots = type == 3 ? 9 : 15;
		__u32 pivots = type == 3 ? arange_pivots : range_pivots;
		__u32 slots = type == 3 ? arange_slots : range_slots;
		__u32 at = npivots; /* past the last pivot: the last slot */
		__u64 next = 0;

		if (entry <= 4096)
			return 1; /* a NULL child: nothing there */
		for (__u32 i = 0; i < 15; i++) {
			__u64 pivot = 0;

			if (i >= npivots)
				break;
			bpf_probe_read_kernel(&pivot, sizeof(pivot), node + pivots + i * 8);
			if (pivot >= addr) {
				at = i;
				break;
			}
			if (pivot == 0 && i > 0)
				return 1; /* the node's data ended below addr */
		}
		bpf_probe_read_kernel(&next, sizeof(next), node + slots + at * 8);
		if (type < 2) {
			struct vm_area_struct *vma = (void *)next;

			if (vma && BPF_CORE_READ(vma, vm_start) <= addr &&
			    addr < BPF_CORE_READ(vma, vm_end)) {
				out->start = BPF_CORE_READ(vma, vm_start);
				out->pgoff = BPF_CORE_READ(vma, vm_pgoff);
				out->file = (__u64)BPF_CORE_READ(vma, vm_file);
				out->found = 1;
			}
			return 1;
		}
		entry = next;
	}
	return 0; /* deeper than any mm's: give up */
}

/* The search without bpf_find_vma: the rbtree where the kernel has one,
 * else the maple tree. */
static __always_inline int vma_by_tree(__u64 addr, struct shmbpf_vma *out)
{
#ifdef SHMBPF_COMPAT
	if (vma_by_rbtree(addr, out))
		return 1;
#endif
	return vma_by_maple(addr, out);
}

/* 1 when a lookup ran (out->found says whether a mapping holds addr), 0
 * when none could (a tree deeper than expected, no way on this kernel). */
static __always_inline int vma_at(__u64 addr, struct shmbpf_vma *out)
{
#if defined(SHMBPF_NO_ATOMICS)
	return vma_by_tree(addr, out);
#else
#ifdef SHMBPF_COMPAT
	if (!have_find_vma)
		return vma_by_tree(addr, out);
#endif
	long err = bpf_find_vma(bpf_get_current_task_btf(), addr, shmbpf_vma_found, out, 0);

	if (err == 0 || err == -2 /* -ENOENT: no mapping there */)
		return 1;
	return vma_by_tree(addr, out); /* -EBUSY: the mmap lock's unlock is pending */
#endif
}
#endif /* SHMBPF_KFUNCS */

/*
 * folio->flags: an unsigned long (v6.12 still) until "mm: introduce
 * memdesc_flags_t" made it a one-word struct (v6.18's, this vmlinux.h's).
 * A field whose type changed kind does not relocate, so the old layout is a
 * flavour of its own and whichever exists is read.
 */
struct folio___ulong_flags {
	unsigned long flags;
} __attribute__((preserve_access_index));

/* The order of a large folio: a byte of its own (_folio_order, page[1]'s
 * compound_order) until v6.6's "mm: free up a word in the first tail page"
 * moved it into the low byte of _flags_1. */
struct folio___folio_order {
	unsigned char _folio_order;
} __attribute__((preserve_access_index));

static __always_inline unsigned long folio_flags_of(struct folio *folio)
{
	struct folio___ulong_flags *old = (void *)folio;
	unsigned long flags = 0;

	if (bpf_core_field_exists(old->flags))
		bpf_core_read(&flags, sizeof(flags), &old->flags);
	else
		bpf_core_read(&flags, sizeof(flags), &folio->flags);
	return flags;
}

/* Order of a folio (log2 of its pages): 0 unless it is large (PG_head). */
static __always_inline unsigned int folio_order_of(struct folio *folio)
{
	struct folio___folio_order *old = (void *)folio;
	unsigned long flags_1 = 0;
	unsigned char order = 0;
	int head = bpf_core_enum_value(enum pageflags, PG_head);

	if (!(folio_flags_of(folio) & (1UL << head)))
		return 0;
	if (bpf_core_field_exists(old->_folio_order)) {
		bpf_core_read(&order, sizeof(order), &old->_folio_order);
		return order;
	}
	if (!bpf_core_field_exists(folio->_flags_1))
		return 0;
	bpf_core_read(&flags_1, sizeof(flags_1), &folio->_flags_1);
	return flags_1 & 0xff;
}

/*
 * Until v5.17 ("mm/filemap: Convert tracing of page cache operations to
 * folio") mm_filemap_delete_from_page_cache passed the head struct page.
 * Its flags were an unsigned long then; a compound page's order is a byte
 * of its second page (compound_order, which later kernels dropped from
 * struct page for the folio's own fields).
 */
struct page___ulong_flags {
	unsigned long flags;
} __attribute__((preserve_access_index));

struct page___compound_order {
	unsigned char compound_order;
} __attribute__((preserve_access_index));

static __always_inline unsigned int page_order_of(struct page *page)
{
	struct page___ulong_flags *head_page = (void *)page;
	struct page___compound_order *second = (void *)page + bpf_core_type_size(struct page);
	unsigned long flags = 0;
	unsigned char order = 0;
	int head = bpf_core_enum_value(enum pageflags, PG_head);

	if (!bpf_core_field_exists(head_page->flags) ||
	    !bpf_core_field_exists(second->compound_order))
		return 0;
	bpf_core_read(&flags, sizeof(flags), &head_page->flags);
	if (!(flags & (1UL << head)))
		return 0;
	bpf_core_read(&order, sizeof(order), &second->compound_order);
	return order;
}

/*
 * Is the task hitting sched_process_exit the last thread of its process?
 * Newer kernels (v6.18 has it, v6.12 not) pass do_exit()'s group_dead in
 * the tracepoint: the result of the atomic decrement of signal->live, true
 * for exactly one thread. Older kernels lack the field; there signal->live
 * is read at the tracepoint, and it reads 0 for every thread that gets
 * there after the last decrement: threads dying together (exit_group), or
 * a joined thread still on its way out (its join returned when the kernel
 * cleared its tid, before the tracepoint) while the main thread, the one
 * that really was last, exits.
 *
 * So, among the threads that read 0, the group leader reports if it has
 * not passed the tracepoint yet: it will read 0 too. Another thread
 * reports only when the leader has passed (a mark it left, naming it, or
 * it is a zombie already), and then only the first of them: a claim in
 * exit_claims, an insert with BPF_NOEXIST that is atomic under the map's
 * bucket lock and so needs no BPF atomics (v5.12). The leader leaves its
 * mark before it reads signal->live, so no exit is ever left unreported;
 * at worst a thread that reads 0 just as the last leader marks wins the
 * claim, and the record describes that thread.
 */
struct trace_event_raw_sched_process_exit___group_dead {
	bool group_dead;
} __attribute__((preserve_access_index));

/* A process (its tgid and its leader's start time: a tgid is reused), and
 * what is recorded about it. */
struct shmbpf_exit_claim {
	__u32 tgid;
	__u32 what; /* SHMBPF_EXIT_LEADER_HERE or SHMBPF_EXIT_REPORTED */
	__u64 leader_start_ns;
};
#define SHMBPF_EXIT_LEADER_HERE 0 /* value: the leader's task_struct */
#define SHMBPF_EXIT_REPORTED	1

/* Least recently used entries make room: a mark matters only until the
 * leader is a zombie, a claim only while its threads pass the tracepoint. */
SHMBPF_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct shmbpf_exit_claim);
	__type(value, __u64);
} exit_claims SEC(".maps");

static __always_inline int exit_claim(struct task_struct *t)
{
	struct task_struct *leader = BPF_CORE_READ(t, group_leader);
	struct shmbpf_exit_claim key = {};
	__u64 leader_addr = (__u64)leader, reported = 1, *mark;

	key.tgid = BPF_CORE_READ(t, tgid);
	key.leader_start_ns = BPF_CORE_READ(leader, start_time);
	key.what = SHMBPF_EXIT_LEADER_HERE;
	if (leader == t)
		bpf_map_update_elem(&exit_claims, &key, &leader_addr, BPF_ANY);
	if (BPF_CORE_READ(t, signal, live.counter) != 0)
		return 0;
	if (leader != t) {
		/* A mark of a leader that exec replaced names another task. */
		mark = bpf_map_lookup_elem(&exit_claims, &key);
		if (!(mark && *mark == leader_addr) && BPF_CORE_READ(leader, exit_state) == 0)
			return 0; /* the leader is still to come, and will report */
	}
	key.what = SHMBPF_EXIT_REPORTED;
	return bpf_map_update_elem(&exit_claims, &key, &reported, BPF_NOEXIST) == 0;
}

static __always_inline int exit_is_group_dead(void *ctx, struct task_struct *t)
{
	struct trace_event_raw_sched_process_exit___group_dead *tp = ctx;

	if (bpf_core_field_exists(tp->group_dead))
		return tp->group_dead;
	return exit_claim(t);
}

#endif /* SHMBPF_CORE_FIXES_H */
