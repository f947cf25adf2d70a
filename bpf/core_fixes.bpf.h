/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel-version differences, resolved with CO-RE. Each helper names the
 * kernel change it papers over.
 */
#ifndef SHMBPF_CORE_FIXES_H
#define SHMBPF_CORE_FIXES_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

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
 * Is the task hitting sched_process_exit the last thread of its process?
 * Newer kernels (v6.18 has it) pass do_exit()'s group_dead in the
 * tracepoint: the result of the atomic decrement of signal->live, true for
 * exactly one thread. Older kernels lack the field; there we can only read
 * signal->live afterwards, and two threads dying together (exit_group) can
 * both see 0 and both report.
 */
struct trace_event_raw_sched_process_exit___group_dead {
	bool group_dead;
} __attribute__((preserve_access_index));

static __always_inline int exit_is_group_dead(void *ctx, struct task_struct *t)
{
	struct trace_event_raw_sched_process_exit___group_dead *tp = ctx;

	if (bpf_core_field_exists(tp->group_dead))
		return tp->group_dead;
	return BPF_CORE_READ(t, signal, live.counter) == 0;
}

#endif /* SHMBPF_CORE_FIXES_H */
