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

#endif /* SHMBPF_CORE_FIXES_H */
