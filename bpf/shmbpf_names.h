/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tracked-name table: leaf-name hash -> the last inode created under
 * that name. Written by the BPF programs (create, unlink, rename, link) and by
 * userspace (the start-up scan, through an mmap of the same array), and
 * included by both, so the unit tests run the code the kernel runs.
 *
 * A set-associative table without locks or allocation: an array of buckets,
 * SHMBPF_NAME_WAYS slots each; a name lives in the bucket its hash picks.
 * A bucket keeps its keys together (two cache lines to scan), then the
 * values: 20 bytes per slot.
 * A slot's key is claimed and released with a compare-and-swap:
 *
 *   EMPTY --CAS--> BUSY --(write dev, ino; publish)--> key --CAS--> EMPTY
 *
 * A hash map update or delete takes a bucket spinlock with interrupts off
 * and allocates; in a guest where every interrupt enable is a hypercall
 * that was most of a create's and an unlink's cost (docs/BENCHMARKS.md).
 *
 * Semantics, for writers racing each other:
 * - put with replace (kernel creates, renames): the last file wins. If the
 *   name's slot is BUSY at that moment, or two CPUs insert the same new
 *   name at once, the name can end up in two slots; get returns the first
 *   one and remove clears them all.
 * - put without replace (seeding, restore): the first file wins.
 * - A reader sees a slot's value only while its key reads the same before
 *   and after: a name being rewritten reads as absent for those few
 *   instructions (its unlink is then found by reconciliation), and a value
 *   rewritten twice between the two reads is the only torn hint possible.
 * - A full bucket refuses the name (SHMBPF_NAME_FULL); the caller counts it.
 */
#ifndef SHMBPF_NAMES_H
#define SHMBPF_NAMES_H

/* 16 ways: at the default load (a quarter of the slots used) a bucket
 * holds 4 names on average and about one name in 3 million finds its
 * bucket full (Poisson); at half load, under one in 1,000. */
#define SHMBPF_NAME_WAYS  16
#define SHMBPF_NAME_EMPTY 0ULL
#define SHMBPF_NAME_BUSY  1ULL

/* One element of the BPF_MAP_TYPE_ARRAY `tracked_names`. */
struct shmbpf_name_bucket {
	__u64 key[SHMBPF_NAME_WAYS]; /* shmbpf_name_key(hash), SHMBPF_NAME_EMPTY or _BUSY */
	__u64 ino[SHMBPF_NAME_WAYS];
	__u32 dev[SHMBPF_NAME_WAYS];
};

enum shmbpf_name_put_result {
	SHMBPF_NAME_ADDED = 0, /* written (a new slot, or the name's own) */
	SHMBPF_NAME_KEPT = 1,  /* without replace: the name was there */
	SHMBPF_NAME_FULL = 2,  /* no free slot in the bucket */
};

#if defined(__bpf__)
#define SHMBPF_NAMES_FN static __always_inline
/* Plain loads and stores are single instructions here; the CAS and the
 * exchange that publishes a key are fully ordered BPF atomics (-mcpu=v3). */
#define SHMBPF_NAMES_LOAD(p)	 (*(volatile __typeof__(*(p)) *)(p))
#define SHMBPF_NAMES_STORE(p, v) (*(volatile __typeof__(*(p)) *)(p) = (v))
#ifndef SHMBPF_NO_ATOMICS
#define SHMBPF_NAMES_PUBLISH(p, v) ((void)__sync_lock_test_and_set((p), (v)))
#define SHMBPF_NAMES_CAS(p, o, n)  __sync_bool_compare_and_swap((p), (o), (n))
#else
/*
 * Kernels before v5.12 ("bpf: Add instructions for atomic_[cmp]xchg") have
 * no BPF exchange or compare-and-swap (core_fixes.bpf.h): a claim is a load
 * and a store. Two CPUs writing one slot at once can then both win and one
 * change is lost: a name not followed (its unlink is found by
 * reconciliation) or a name kept after its unlink, whose inode is only a
 * hint anyway (docs/KERNELS.md). A reader still checks the key before and
 * after it reads the value.
 */
#define SHMBPF_NAMES_PUBLISH(p, v) SHMBPF_NAMES_STORE(p, v)
#define SHMBPF_NAMES_CAS(p, o, n)  (SHMBPF_NAMES_LOAD(p) == (o) ? (SHMBPF_NAMES_STORE(p, n), 1) : 0)
#endif
#else
#define SHMBPF_NAMES_FN		   static inline
#define SHMBPF_NAMES_LOAD(p)	   __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SHMBPF_NAMES_STORE(p, v)   __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define SHMBPF_NAMES_PUBLISH(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define SHMBPF_NAMES_CAS(p, o, n)  __sync_bool_compare_and_swap((p), (o), (n))
#endif

/* The key a leaf-name hash is stored under: 0 and 1 mark free and busy
 * slots, so the two hashes that collide with them move up by two. */
SHMBPF_NAMES_FN __u64 shmbpf_name_key(__u64 hash)
{
	return hash > SHMBPF_NAME_BUSY ? hash : hash + 2;
}

/* The bucket of a key in a table of mask + 1 buckets (a power of two).
 * FNV-1a's low bits only see the low bits of the name's bytes: fold in
 * the high half. */
SHMBPF_NAMES_FN __u32 shmbpf_name_bucket_of(__u64 key, __u32 mask)
{
	return (__u32)(key ^ (key >> 32)) & mask;
}

/* Fill slot i, which this writer holds BUSY, and publish it under key. */
SHMBPF_NAMES_FN void shmbpf_name_fill(struct shmbpf_name_bucket *b, int i, __u64 key, __u32 dev,
				      __u64 ino)
{
	SHMBPF_NAMES_STORE(&b->dev[i], dev);
	SHMBPF_NAMES_STORE(&b->ino[i], ino);
	SHMBPF_NAMES_PUBLISH(&b->key[i], key);
}

/* Insert or (with replace) rewrite a name. Returns shmbpf_name_put_result. */
SHMBPF_NAMES_FN int shmbpf_name_put(struct shmbpf_name_bucket *b, __u64 key, __u32 dev, __u64 ino,
				    int replace)
{
	for (int i = 0; i < SHMBPF_NAME_WAYS; i++) {
		if (SHMBPF_NAMES_LOAD(&b->key[i]) != key)
			continue;
		if (!replace)
			return SHMBPF_NAME_KEPT;
		if (SHMBPF_NAMES_CAS(&b->key[i], key, SHMBPF_NAME_BUSY)) {
			shmbpf_name_fill(b, i, key, dev, ino);
			return SHMBPF_NAME_ADDED;
		}
	}
	for (int i = 0; i < SHMBPF_NAME_WAYS; i++) {
		if (SHMBPF_NAMES_LOAD(&b->key[i]) == SHMBPF_NAME_EMPTY &&
		    SHMBPF_NAMES_CAS(&b->key[i], SHMBPF_NAME_EMPTY, SHMBPF_NAME_BUSY)) {
			shmbpf_name_fill(b, i, key, dev, ino);
			return SHMBPF_NAME_ADDED;
		}
	}
	return SHMBPF_NAME_FULL;
}

/* The value of a name: 1 and *dev, *ino set when it is in the table. */
SHMBPF_NAMES_FN int shmbpf_name_get(struct shmbpf_name_bucket *b, __u64 key, __u32 *dev, __u64 *ino)
{
	for (int i = 0; i < SHMBPF_NAME_WAYS; i++) {
		if (SHMBPF_NAMES_LOAD(&b->key[i]) != key)
			continue;
		*dev = SHMBPF_NAMES_LOAD(&b->dev[i]);
		*ino = SHMBPF_NAMES_LOAD(&b->ino[i]);
		if (SHMBPF_NAMES_LOAD(&b->key[i]) == key)
			return 1;
	}
	return 0;
}

/* Remove every slot of a name; returns how many there were. */
SHMBPF_NAMES_FN int shmbpf_name_remove(struct shmbpf_name_bucket *b, __u64 key)
{
	int n = 0;

	for (int i = 0; i < SHMBPF_NAME_WAYS; i++)
		if (SHMBPF_NAMES_LOAD(&b->key[i]) == key &&
		    SHMBPF_NAMES_CAS(&b->key[i], key, SHMBPF_NAME_EMPTY))
			n++;
	return n;
}

/* Rewrite a name to (dev, ino) only while it still holds (old_dev,
 * old_ino); returns 1 when rewritten. */
SHMBPF_NAMES_FN int shmbpf_name_swap(struct shmbpf_name_bucket *b, __u64 key, __u32 old_dev,
				     __u64 old_ino, __u32 dev, __u64 ino)
{
	for (int i = 0; i < SHMBPF_NAME_WAYS; i++) {
		if (SHMBPF_NAMES_LOAD(&b->key[i]) != key ||
		    !SHMBPF_NAMES_CAS(&b->key[i], key, SHMBPF_NAME_BUSY))
			continue;
		if (SHMBPF_NAMES_LOAD(&b->dev[i]) == old_dev &&
		    SHMBPF_NAMES_LOAD(&b->ino[i]) == old_ino) {
			shmbpf_name_fill(b, i, key, dev, ino);
			return 1;
		}
		SHMBPF_NAMES_PUBLISH(&b->key[i], key); /* another file's: leave it */
	}
	return 0;
}

#endif /* SHMBPF_NAMES_H */
