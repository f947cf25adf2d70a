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
 * Order of a folio (log2 of its pages). A large folio has PG_head set in its
 * flags and keeps the order in the low byte of _flags_1 (v6.0+, "mm: add
 * folio_order"); page->flags became memdesc_flags_t in v6.17, which is a
 * one-word struct, so we read the word, whatever its type.
 */

static __always_inline unsigned int folio_order_of(struct folio *folio)
{
	unsigned long flags = 0, flags_1 = 0;
	int head = bpf_core_enum_value(enum pageflags, PG_head);

	bpf_core_read(&flags, sizeof(flags), &folio->flags);
	if (!(flags & (1UL << head)))
		return 0;
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
