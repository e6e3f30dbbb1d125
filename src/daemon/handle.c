// SPDX-License-Identifier: MIT
/*
 * Handle tables (handle.h): a growable slot array with a FIFO free list and
 * a 16-bit generation per slot.  FIFO so that a freed slot is reused as late
 * as possible; the generation catches the reuse that happens anyway.
 * Single-threaded (softibd's event loop); no locks, no I/O.
 */
#include <errno.h>
#include <stdlib.h>

#include "daemon/handle.h"

enum sib_ht_state {
	SIB_HT_FREE,
	SIB_HT_RESERVED,
	SIB_HT_LIVE,
};

#define NO_SLOT UINT32_MAX

static uint32_t ht_handle(const struct sib_htable *t, uint32_t i)
{
	return (uint32_t)t->slot[i].gen << 16 | i;
}

/* The slot of handle if it is in the given state, else NULL. */
static struct sib_ht_slot *ht_slot(const struct sib_htable *t, uint32_t handle, uint8_t state)
{
	uint32_t i = handle & 0xffff;
	struct sib_ht_slot *s;

	if (i >= t->cap)
		return NULL;
	s = &t->slot[i];
	if (s->state != state || s->gen != handle >> 16)
		return NULL;
	return s;
}

static void ht_push_free(struct sib_htable *t, uint32_t i)
{
	struct sib_ht_slot *s = &t->slot[i];

	s->obj = NULL;
	s->state = SIB_HT_FREE;
	s->gen = s->gen == 0xffff ? 1 : s->gen + 1;
	s->next_free = NO_SLOT;
	if (t->free_tail == NO_SLOT)
		t->free_head = i;
	else
		t->slot[t->free_tail].next_free = i;
	t->free_tail = i;
}

void sib_ht_init(struct sib_htable *t, uint32_t max)
{
	t->slot = NULL;
	t->cap = 0;
	t->max = max < SIB_HT_MAX_SLOTS ? max : SIB_HT_MAX_SLOTS;
	t->used = 0;
	t->free_head = NO_SLOT;
	t->free_tail = NO_SLOT;
}

void sib_ht_fini(struct sib_htable *t)
{
	free(t->slot);
	sib_ht_init(t, t->max);
}

/* Double the array (16 slots at first), up to max; new slots go on the free list. */
static int ht_grow(struct sib_htable *t)
{
	uint32_t ncap, i;
	struct sib_ht_slot *ns;

	if (t->cap >= t->max)
		return -ENOMEM;
	ncap = t->cap ? t->cap * 2 : 16;
	if (ncap > t->max)
		ncap = t->max;
	ns = realloc(t->slot, ncap * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	t->slot = ns;
	for (i = t->cap; i < ncap; i++) {
		ns[i].gen = 0; /* ht_push_free() makes it 1 */
		ht_push_free(t, i);
	}
	t->cap = ncap;
	return 0;
}

int sib_ht_reserve(struct sib_htable *t, uint32_t *handle)
{
	struct sib_ht_slot *s;
	uint32_t i;
	int ret;

	if (t->free_head == NO_SLOT) {
		ret = ht_grow(t);
		if (ret)
			return ret;
	}
	i = t->free_head;
	s = &t->slot[i];
	t->free_head = s->next_free;
	if (t->free_head == NO_SLOT)
		t->free_tail = NO_SLOT;
	s->state = SIB_HT_RESERVED;
	s->obj = NULL;
	t->used++;
	*handle = ht_handle(t, i);
	return 0;
}

void sib_ht_publish(struct sib_htable *t, uint32_t handle, void *obj)
{
	struct sib_ht_slot *s = ht_slot(t, handle, SIB_HT_RESERVED);

	if (!s || !obj)
		abort(); /* a bug in the caller, never a client's doing */
	/* The table now owns this pointer; lookups can find it from here on. */
	s->obj = obj;
	s->state = SIB_HT_LIVE;
}

void sib_ht_abort(struct sib_htable *t, uint32_t handle)
{
	struct sib_ht_slot *s = ht_slot(t, handle, SIB_HT_RESERVED);

	if (!s)
		abort();
	t->used--;
	ht_push_free(t, handle & 0xffff);
}

void *sib_ht_lookup(const struct sib_htable *t, uint32_t handle)
{
	struct sib_ht_slot *s = ht_slot(t, handle, SIB_HT_LIVE);

	return s ? s->obj : NULL;
}

void *sib_ht_remove(struct sib_htable *t, uint32_t handle)
{
	struct sib_ht_slot *s = ht_slot(t, handle, SIB_HT_LIVE);
	void *obj;

	if (!s)
		return NULL;
	obj = s->obj;
	t->used--;
	ht_push_free(t, handle & 0xffff); /* unpublished: the object is the caller's */
	return obj;
}

void *sib_ht_next(const struct sib_htable *t, uint32_t *pos, uint32_t *handle)
{
	uint32_t i;

	for (i = *pos; i < t->cap; i++) {
		if (t->slot[i].state == SIB_HT_LIVE) {
			*pos = i + 1;
			if (handle)
				*handle = ht_handle(t, i);
			return t->slot[i].obj;
		}
	}
	*pos = t->cap;
	return NULL;
}
