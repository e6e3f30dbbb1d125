/* SPDX-License-Identifier: MIT */
/*
 * Object tables (objtab.h): reserve/publish/abort, generations, references.
 *
 * A slot's word is generation << 32 | references.  An odd generation means
 * reserved or published, an even one free or being destroyed; reserve,
 * abort and destroy each move it by one, so a handle never matches a later
 * use of its slot.  A lookup succeeds only on an odd generation with a
 * non-zero count, by CAS, so it never revives a dying object.
 * Locking: t->lock for the writers; lookups are lock-free.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "common/objtab.h"

#define REFS(w) ((uint32_t)(w))
#define GEN(w)  ((uint32_t)((w) >> 32))
#define WORD(gen, refs) ((uint64_t)(gen) << 32 | (refs))

int sib_objtab_init(struct sib_objtab *t, const char *name, uint32_t min, uint32_t max)
{
	uint32_t pages = (max + SIB_OBJTAB_PAGE - 1) / SIB_OBJTAB_PAGE;

	t->name = name;
	t->min = min;
	t->max = max;
	t->next = min;
	t->live = 0;
	t->dir = calloc(pages ? pages : 1, sizeof(*t->dir));
	if (!t->dir)
		return ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void sib_objtab_fini(struct sib_objtab *t)
{
	uint32_t pages = (t->max + SIB_OBJTAB_PAGE - 1) / SIB_OBJTAB_PAGE;

	if (!t->dir)
		return;
	for (uint32_t i = 0; i < pages; i++)
		free(atomic_load(&t->dir[i]));
	free(t->dir);
	t->dir = NULL;
	pthread_mutex_destroy(&t->lock);
}

/* The slot of index, or NULL if its page was never allocated. */
static struct sib_objtab_slot *slot_of(struct sib_objtab *t, uint32_t index)
{
	struct sib_objtab_slot *page;

	if (index >= t->max)
		return NULL;
	page = atomic_load_explicit(&t->dir[index / SIB_OBJTAB_PAGE], memory_order_acquire);
	return page ? &page[index % SIB_OBJTAB_PAGE] : NULL;
}

/* Under t->lock: the slot of index, allocating its page. */
static struct sib_objtab_slot *slot_alloc(struct sib_objtab *t, uint32_t index)
{
	struct sib_objtab_slot *s = slot_of(t, index);

	if (!s) {
		struct sib_objtab_slot *page = calloc(SIB_OBJTAB_PAGE, sizeof(*page));

		if (!page)
			return NULL;
		atomic_store_explicit(&t->dir[index / SIB_OBJTAB_PAGE], page, memory_order_release);
		s = &page[index % SIB_OBJTAB_PAGE];
	}
	return s;
}

/* Under t->lock: take a free slot. */
static uint64_t take(struct sib_objtab *t, struct sib_objtab_slot *s, uint32_t index)
{
	uint32_t gen = GEN(atomic_load_explicit(&s->word, memory_order_relaxed)) + 1; /* odd */

	s->busy = 1;
	t->live++;
	atomic_store_explicit(&s->obj, NULL, memory_order_relaxed);
	atomic_store_explicit(&s->word, WORD(gen, 0), memory_order_release);
	return WORD(gen, index);
}

int sib_objtab_reserve(struct sib_objtab *t, uint64_t *handle)
{
	int rc = ENOSPC;

	pthread_mutex_lock(&t->lock);
	for (uint32_t n = t->min; n < t->max && t->live < t->max - t->min; n++) {
		uint32_t index = t->next;
		struct sib_objtab_slot *s;

		t->next = index + 1 < t->max ? index + 1 : t->min;
		s = slot_alloc(t, index);
		if (!s) {
			rc = ENOMEM;
			break;
		}
		if (s->busy)
			continue;
		*handle = take(t, s, index);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int sib_objtab_reserve_at(struct sib_objtab *t, uint32_t index, uint64_t *handle)
{
	struct sib_objtab_slot *s;
	int rc = 0;

	if (index >= t->max)
		return EINVAL;
	pthread_mutex_lock(&t->lock);
	s = slot_alloc(t, index);
	if (!s)
		rc = ENOMEM;
	else if (s->busy)
		rc = EEXIST;
	else
		*handle = take(t, s, index);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void sib_objtab_publish(struct sib_objtab *t, uint64_t handle, void *obj)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));

	pthread_mutex_lock(&t->lock);
	atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
	/* The table now owns this reference.  Release: a lookup that sees the
	 * count sees the object and everything built into it. */
	atomic_store_explicit(&s->word, WORD(SIB_OBJTAB_GEN(handle), 1), memory_order_release);
	pthread_mutex_unlock(&t->lock);
}

void sib_objtab_abort(struct sib_objtab *t, uint64_t handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));

	pthread_mutex_lock(&t->lock);
	atomic_store_explicit(&s->word, WORD(SIB_OBJTAB_GEN(handle) + 1, 0), memory_order_release);
	s->busy = 0;
	t->live--;
	pthread_mutex_unlock(&t->lock);
}

/* Take a reference if the slot holds a published object of generation
 * `gen` (any odd generation if gen is 0). */
static void *get_slot(struct sib_objtab_slot *s, uint32_t gen, uint64_t *seen)
{
	uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);

	for (;;) {
		if (!(GEN(w) & 1) || REFS(w) == 0 || (gen && GEN(w) != gen))
			return NULL;
		if (atomic_compare_exchange_weak_explicit(&s->word, &w, w + 1, memory_order_acquire,
							  memory_order_acquire))
			break;
	}
	*seen = w;
	return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

void *sib_objtab_get(struct sib_objtab *t, uint64_t handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));
	uint64_t w;

	if (!s || !(SIB_OBJTAB_GEN(handle) & 1))
		return NULL;
	return get_slot(s, SIB_OBJTAB_GEN(handle), &w);
}

void *sib_objtab_get_index(struct sib_objtab *t, uint32_t index, uint64_t *handle)
{
	struct sib_objtab_slot *s = slot_of(t, index);
	uint64_t w;
	void *obj;

	if (!s)
		return NULL;
	obj = get_slot(s, 0, &w);
	if (obj && handle)
		*handle = WORD(GEN(w), index);
	return obj;
}

void sib_objtab_hold(struct sib_objtab *t, uint64_t handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));

	/* The caller's reference keeps refs above 0: destroy waits for both. */
	atomic_fetch_add_explicit(&s->word, 1, memory_order_relaxed);
}

void sib_objtab_put(struct sib_objtab *t, uint64_t handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));

	/* Release: our uses of the object happen before its destroyer's free. */
	atomic_fetch_sub_explicit(&s->word, 1, memory_order_release);
}

void *sib_objtab_next(struct sib_objtab *t, uint32_t *index)
{
	for (uint32_t i = *index; i < t->max; i++) {
		struct sib_objtab_slot *s = slot_of(t, i);
		uint64_t w;
		void *obj;

		if (!s) {
			i |= SIB_OBJTAB_PAGE - 1; /* skip the missing page */
			continue;
		}
		obj = get_slot(s, 0, &w);
		if (obj) {
			*index = i;
			return obj;
		}
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int sib_objtab_unpublish(struct sib_objtab *t, uint64_t handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));
	uint32_t gen = SIB_OBJTAB_GEN(handle);
	uint64_t w;

	if (!s || !(gen & 1))
		return ENOENT;
	pthread_mutex_lock(&t->lock);
	/* Unpublish and drop the table's reference in one step: from here on
	 * no lookup succeeds, whatever the count. */
	w = atomic_load_explicit(&s->word, memory_order_relaxed);
	do {
		if (GEN(w) != gen || REFS(w) == 0) {
			pthread_mutex_unlock(&t->lock);
			return ENOENT;
		}
	} while (!atomic_compare_exchange_weak_explicit(&s->word, &w, WORD(gen + 1, REFS(w) - 1),
							memory_order_acq_rel, memory_order_relaxed));
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int sib_objtab_wait(struct sib_objtab *t, uint64_t handle, uint64_t timeout_ns,
		    void (*poke)(void *arg), void *arg)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));
	uint64_t deadline = 0;
	unsigned int spins = 0;

	/* In-flight users hold references for the length of one operation, or
	 * until the holder's next pass notices the generation moved (poke
	 * runs that pass); the bound covers a stuck one. */
	while (REFS(atomic_load_explicit(&s->word, memory_order_acquire))) {
		if (poke)
			poke(arg);
		if (++spins < 64) {
			sched_yield();
			continue;
		}
		if (!deadline)
			deadline = now_ns() + timeout_ns;
		else if (now_ns() >= deadline)
			return ETIMEDOUT;
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	}
	return 0;
}

void sib_objtab_release(struct sib_objtab *t, uint64_t handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));

	pthread_mutex_lock(&t->lock);
	atomic_store_explicit(&s->obj, NULL, memory_order_relaxed);
	s->busy = 0;
	t->live--;
	pthread_mutex_unlock(&t->lock);
}

void sib_objtab_republish(struct sib_objtab *t, uint64_t handle, void *obj, uint64_t *new_handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));
	uint32_t gen = SIB_OBJTAB_GEN(handle) + 2; /* odd again, never the old one */
	uint64_t w;

	pthread_mutex_lock(&t->lock);
	atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
	/* Late puts of old users may race: add the table's reference by CAS.
	 * Release: a lookup that sees the count sees what was changed. */
	w = atomic_load_explicit(&s->word, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&s->word, &w, WORD(gen, REFS(w) + 1),
						      memory_order_release, memory_order_relaxed))
		;
	pthread_mutex_unlock(&t->lock);
	*new_handle = WORD(gen, SIB_OBJTAB_INDEX(handle));
}

bool sib_objtab_live(struct sib_objtab *t, uint64_t handle)
{
	struct sib_objtab_slot *s = slot_of(t, SIB_OBJTAB_INDEX(handle));

	return s && GEN(atomic_load_explicit(&s->word, memory_order_acquire)) == SIB_OBJTAB_GEN(handle);
}

int sib_objtab_destroy(struct sib_objtab *t, uint64_t handle, uint64_t timeout_ns)
{
	int rc = sib_objtab_unpublish(t, handle);

	if (rc)
		return rc;
	rc = sib_objtab_wait(t, handle, timeout_ns, NULL, NULL);
	if (rc)
		return rc; /* slot retired: stays busy, never reused */
	sib_objtab_release(t, handle);
	return 0;
}
