// SPDX-License-Identifier: MIT
/*
 * The IPoIB neighbour table (neigh.h): a fixed array searched linearly (a
 * link has a few peers; the bound is the array), the oldest entry evicted
 * when full, VALID entries expiring ttl_ms after their last confirmation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipoib/neigh.h"

int neigh_init(struct neigh_table *t, size_t cap, uint64_t ttl_ms,
	       void (*release)(void *ah, void *arg), void *arg)
{
	memset(t, 0, sizeof(*t));
	if (!cap)
		return -EINVAL;
	t->e = calloc(cap, sizeof(*t->e));
	if (!t->e)
		return -ENOMEM;
	t->cap = cap;
	t->ttl_ms = ttl_ms;
	t->release = release;
	t->arg = arg;
	return 0;
}

static void drop_queue(struct neigh *n)
{
	for (unsigned int i = 0; i < n->qn; i++)
		free(n->q[i].data);
	n->qn = 0;
}

static void drop_ah(struct neigh_table *t, struct neigh *n)
{
	if (n->ah && t->release)
		t->release(n->ah, t->arg);
	n->ah = NULL;
}

void neigh_forget_ah(struct neigh_table *t, struct neigh *n)
{
	drop_ah(t, n);
}

void neigh_remove(struct neigh_table *t, struct neigh *n)
{
	drop_queue(n);
	drop_ah(t, n);
	memset(n, 0, sizeof(*n));
}

void neigh_fini(struct neigh_table *t)
{
	for (size_t i = 0; t->e && i < t->cap; i++)
		if (t->e[i].state != NEIGH_FREE)
			neigh_remove(t, &t->e[i]);
	free(t->e);
	t->e = NULL;
	t->cap = 0;
}

void neigh_v4(uint32_t ip4, uint8_t ip[16])
{
	memset(ip, 0, 10);
	ip[10] = ip[11] = 0xff;
	ip[12] = ip4 >> 24;
	ip[13] = ip4 >> 16;
	ip[14] = ip4 >> 8;
	ip[15] = ip4;
}

static struct neigh *find(struct neigh_table *t, const uint8_t ip[16])
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].state != NEIGH_FREE && !memcmp(t->e[i].ip, ip, 16))
			return &t->e[i];
	return NULL;
}

struct neigh *neigh_lookup(struct neigh_table *t, const uint8_t ip[16], uint64_t now)
{
	struct neigh *n = find(t, ip);

	if (n && n->state == NEIGH_VALID && now >= n->expires) {
		neigh_remove(t, n);
		t->expired++;
		return NULL;
	}
	return n;
}

/* A free slot, or the oldest entry evicted. */
static struct neigh *slot(struct neigh_table *t)
{
	struct neigh *old = NULL;

	for (size_t i = 0; i < t->cap; i++) {
		if (t->e[i].state == NEIGH_FREE)
			return &t->e[i];
		if (!old || t->e[i].born < old->born)
			old = &t->e[i];
	}
	neigh_remove(t, old);
	t->evicted++;
	return old;
}

struct neigh *neigh_confirm(struct neigh_table *t, const uint8_t ip[16],
			    const struct ipoib_hwaddr *hw, uint64_t now)
{
	struct neigh *n = find(t, ip);

	if (!n) {
		n = slot(t);
		memcpy(n->ip, ip, 16);
		n->born = now;
	} else if (n->state == NEIGH_VALID && memcmp(&n->hw, hw, sizeof(*hw))) {
		drop_ah(t, n);
	}
	n->hw = *hw;
	n->state = NEIGH_VALID;
	n->expires = now + t->ttl_ms;
	n->probes = 0;
	return n;
}

struct neigh *neigh_get_incomplete(struct neigh_table *t, const uint8_t ip[16], uint64_t now)
{
	struct neigh *n = neigh_lookup(t, ip, now);

	if (n)
		return n;
	n = slot(t);
	memcpy(n->ip, ip, 16);
	n->born = now;
	n->state = NEIGH_INCOMPLETE;
	n->expires = now;	/* probe at once */
	return n;
}

int neigh_enqueue(struct neigh_table *t, struct neigh *n, const void *pkt, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, pkt, len);
	if (n->qn == NEIGH_QLEN) {
		free(n->q[0].data);
		memmove(&n->q[0], &n->q[1], (NEIGH_QLEN - 1) * sizeof(n->q[0]));
		n->qn--;
		t->qdrops++;
	}
	n->q[n->qn].data = copy;
	n->q[n->qn].len = len;
	n->qn++;
	return 0;
}

size_t neigh_expire(struct neigh_table *t, uint64_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < t->cap; i++) {
		struct neigh *n = &t->e[i];

		if (n->state == NEIGH_VALID && now >= n->expires) {
			neigh_remove(t, n);
			t->expired++;
			k++;
		}
	}
	return k;
}

size_t neigh_count(const struct neigh_table *t)
{
	size_t k = 0;

	for (size_t i = 0; i < t->cap; i++)
		k += t->e[i].state != NEIGH_FREE;
	return k;
}
