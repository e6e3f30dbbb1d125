/* SPDX-License-Identifier: MIT */
/*
 * Per-connection handle tables of softibd (the idr tables of seed 003):
 * small integer handles for objects, never pointers, with a generation so
 * that a stale handle fails instead of reaching a reused slot.
 * Reserve, then publish once built, or abort; remove unpublishes and frees
 * the slot.  softibd is single-threaded, so there are no references to wait
 * for: a removed object is the caller's to free at once.  No locks.
 */
#ifndef SIB_DAEMON_HANDLE_H
#define SIB_DAEMON_HANDLE_H

#include <stdint.h>

/* Handle = gen << 16 | slot; gen is 1..0xffff, so 0 is never a handle. */
#define SIB_HT_MAX_SLOTS 65536u

struct sib_ht_slot {
	void *obj;          /* NULL while free or reserved */
	uint32_t next_free; /* free list link (slot index), valid while free */
	uint16_t gen;
	uint8_t state;      /* enum sib_ht_state */
};

struct sib_htable {
	struct sib_ht_slot *slot;
	uint32_t cap;        /* slots allocated */
	uint32_t max;        /* slot limit, <= SIB_HT_MAX_SLOTS */
	uint32_t used;       /* reserved + live */
	uint32_t free_head;  /* first free slot, or UINT32_MAX */
	uint32_t free_tail;
};

/* Empty table of at most max slots (clamped to SIB_HT_MAX_SLOTS); allocates nothing. */
void sib_ht_init(struct sib_htable *t, uint32_t max);

/* Free the slot array; objects still published are the caller's (see sib_ht_next()). */
void sib_ht_fini(struct sib_htable *t);

/* Reserve a slot: *handle is valid for publish/abort only.  0 or -ENOMEM (full). */
int sib_ht_reserve(struct sib_htable *t, uint32_t *handle);

/* Publish obj (non-NULL) at a reserved handle: the table now holds the pointer. */
void sib_ht_publish(struct sib_htable *t, uint32_t handle, void *obj);

/* Give back a reserved, never published handle. */
void sib_ht_abort(struct sib_htable *t, uint32_t handle);

/* The live object of handle, or NULL (unknown, stale, reserved). */
void *sib_ht_lookup(const struct sib_htable *t, uint32_t handle);

/* Unpublish handle and free its slot: returns the object (now the caller's) or NULL. */
void *sib_ht_remove(struct sib_htable *t, uint32_t handle);

/*
 * Iterate live objects: start with *pos = 0; returns the next object and its
 * handle, or NULL at the end.  Removing the returned handle is allowed.
 */
void *sib_ht_next(const struct sib_htable *t, uint32_t *pos, uint32_t *handle);

#endif
