/* SPDX-License-Identifier: MIT */
/*
 * Object tables: index -> object with a publish protocol (STYLE 6.7; the
 * shape of rxe_pool.c after "Stop lookup of partially built objects" and
 * rdma_core.c's alloc_begin/commit/abort).  No I/O, no knowledge of what
 * the objects are.
 *
 * Lifetime:  reserve (slot taken, lookups see nothing) -> publish (the
 * table now owns one reference) or abort.  destroy unpublishes first (the
 * generation moves, so lookups and stale handles fail), drops the table's
 * reference, then waits, with a bound, until in-flight users put theirs.
 * Lookups take a reference only if the count is not zero.
 *
 * A user may keep a reference across operations (a responder between
 * packets) if it checks sib_objtab_live before each use and puts the
 * reference once the generation moved: destroy's wait then ends at the
 * holder's next look, which its poke callback can bring about.
 *
 * Locking: reserve/publish/abort/unpublish/republish/release take t->lock;
 * get/get_index/put/next/live are lock-free (one 64-bit CAS, add or load
 * per call) and never sleep.
 */
#ifndef SIB_OBJTAB_H
#define SIB_OBJTAB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SIB_OBJTAB_PAGE 256u            /* slots per lazily allocated page */

/* A handle: generation in the high 32 bits, index in the low 32 bits. */
#define SIB_OBJTAB_INDEX(h) ((uint32_t)(h))
#define SIB_OBJTAB_GEN(h)   ((uint32_t)((h) >> 32))

struct sib_objtab_slot {
	_Atomic uint64_t word;          /* generation << 32 | references */
	_Atomic(void *) obj;            /* set before the first reference */
	uint32_t busy;                  /* reserved or published (under lock) */
	uint32_t pad;
};

struct sib_objtab {
	const char *name;
	uint32_t min, max;              /* reserve hands out min..max-1 */
	uint32_t next;                  /* cyclic rotor (under lock) */
	uint32_t live;                  /* busy slots (under lock) */
	pthread_mutex_t lock;
	_Atomic(struct sib_objtab_slot *) *dir; /* max / PAGE pages */
};

/* Set up an empty table for indices [min, max).  0 or ENOMEM. */
int sib_objtab_init(struct sib_objtab *t, const char *name, uint32_t min, uint32_t max);
/* Free the table.  Objects still in it are not touched (the caller's). */
void sib_objtab_fini(struct sib_objtab *t);

/* Take a free index, cyclically (a freed index is reused last).  The slot
 * holds no object yet.  0, or ENOSPC (full), ENOMEM. */
int sib_objtab_reserve(struct sib_objtab *t, uint64_t *handle);
/* Take exactly `index` (e.g. a QPN handed out elsewhere).  0, EINVAL
 * (outside [0, max)), EEXIST (busy), ENOMEM. */
int sib_objtab_reserve_at(struct sib_objtab *t, uint32_t index, uint64_t *handle);
/* Make a reserved slot's object visible to lookups.  The table now owns
 * one reference to obj (dropped by destroy). */
void sib_objtab_publish(struct sib_objtab *t, uint64_t handle, void *obj);
/* Give a reserved, never published slot back. */
void sib_objtab_abort(struct sib_objtab *t, uint64_t handle);

/* The object named by handle with a reference taken, or NULL if the slot
 * is empty, not yet published, being destroyed, or of another generation. */
void *sib_objtab_get(struct sib_objtab *t, uint64_t handle);
/* The same by index alone, whatever the generation; *handle (if not NULL)
 * gets the full handle of what was found. */
void *sib_objtab_get_index(struct sib_objtab *t, uint32_t index, uint64_t *handle);
/* Drop a reference taken by get/get_index/next/hold (only the index of
 * handle is used). */
void sib_objtab_put(struct sib_objtab *t, uint64_t handle);
/* One more reference on an object the caller holds a reference on (so it
 * cannot be freed meanwhile): never fails, even once it is unpublished. */
void sib_objtab_hold(struct sib_objtab *t, uint64_t handle);
/* Iterate: the first published object at index >= *index, with a
 * reference taken; *index is set to its index.  NULL at the end.  Continue
 * from *index + 1. */
void *sib_objtab_next(struct sib_objtab *t, uint32_t *index);

/*
 * Unpublish handle, drop the table's reference and wait up to timeout_ns
 * for the references of in-flight users.  0: nobody uses the object any
 * more, the slot is free, the caller frees the object.  ENOENT: handle is
 * stale or not published.  ETIMEDOUT: a user still holds it; the object is
 * unreachable but must NOT be freed (the slot stays retired, never reused).
 */
int sib_objtab_destroy(struct sib_objtab *t, uint64_t handle, uint64_t timeout_ns);

/* destroy in steps, for owners that must act between them (objtab.c):
 * unpublish: the generation moves (lookups, live and stale handles fail)
 *   and the table's reference is dropped.  0 or ENOENT (as destroy).
 * wait: until no reference is left, calling poke(arg) (if not NULL) on
 *   every look, so that holders run and notice; 0 or ETIMEDOUT.
 * release: after wait gave 0, free the slot (the caller frees the object).
 * republish: after unpublish (and wait), publish obj again at the same
 *   index under a new generation; *new_handle names it.  References
 *   still held under the old generation stay counted until put. */
int sib_objtab_unpublish(struct sib_objtab *t, uint64_t handle);
int sib_objtab_wait(struct sib_objtab *t, uint64_t handle, uint64_t timeout_ns,
		    void (*poke)(void *arg), void *arg);
void sib_objtab_release(struct sib_objtab *t, uint64_t handle);
void sib_objtab_republish(struct sib_objtab *t, uint64_t handle, void *obj, uint64_t *new_handle);
/* Is handle's generation still the published one?  One atomic load; a
 * holder of a reference checks it before each use of the object. */
bool sib_objtab_live(struct sib_objtab *t, uint64_t handle);

#endif
