/* SPDX-License-Identifier: MIT */
/*
 * The receiving ends of a context's pair rings (pair.h, docs/link.md
 * "Pair rings"): softibd makes a ring when a sender first resolves us,
 * keeps our end and bumps our doorbell's pairs_seq; the engine thread
 * takes it (sib_link_accept, a round trip per ring, without the progress
 * lock) and attaches it under the lock (sib_link_rx_apply), named by the
 * sender softibd gave, never by anything in the ring.  A ring whose
 * sender's context closed is let go, as is the older ring of a sender
 * that paired again.  Uses only common/ and iba/.
 */
#include <stdlib.h>
#include <string.h>

#include "link/dest.h"

void sib_link_accept(struct sib_link *l, struct sib_link_fetch *f)
{
	const struct sib_link_resolver *res = l->dests ? l->dests->res : NULL;
	uint32_t seq;

	f->naccepted = 0;
	if (!l->rx.db.hdr)
		return;
	seq = atomic_load_explicit(&l->rx.db.hdr->pairs_seq, memory_order_acquire);
	if (seq == __atomic_load_n(&l->rx.pairs_seen, __ATOMIC_RELAXED))
		return;
	/* Seen before asking: a ring made while we ask moves it again.
	 * Nobody to ask (no resolver yet): sib_link_dests_open asks anew.
	 * The engine thread and a slow-path verb may both be here: each
	 * ring softibd holds goes to one of them. */
	__atomic_store_n(&l->rx.pairs_seen, seq, __ATOMIC_RELAXED);
	if (!res || !res->accept)
		return;
	while (f->naccepted < SIB_MAX_INBOXES) {
		struct sib_link_accepted *a = &f->accepted[f->naccepted];

		a->base = res->accept(l->dests->dev_handle, &a->from_inbox, &a->from_gen);
		if (!a->base)
			break;
		f->naccepted++;
	}
}

static void rxq_free(struct sib_link *l, struct sib_link_rxq *q)
{
	const struct sib_link_resolver *res = l->dests ? l->dests->res : NULL;

	if (res && res->unaccept)
		res->unaccept(q->base);
	free(q);
}

/* Remove ring i (its order among the others does not matter). */
static void rxq_remove(struct sib_link *l, uint32_t i)
{
	struct sib_link_rx *rx = &l->rx;
	struct sib_link_rxq *q = rx->q[i];

	/* The engine thread may be looking at the list without the lock
	 * (sib_link_rx_ready, sib_link_wait) with the old count: the slot
	 * past the end keeps its pointer, and q stays mapped on the dead
	 * list until the engine thread itself reaps it. */
	__atomic_store_n(&rx->q[i], rx->q[rx->n - 1], __ATOMIC_RELEASE);
	__atomic_store_n(&rx->n, rx->n - 1, __ATOMIC_RELEASE);
	if (rx->last == q)
		rx->last = NULL;
	if (rx->cur >= rx->n)
		rx->cur = 0;
	rx->burst = 0;
	q->next = rx->dead;
	rx->dead = q;
}

/* Unmap what was let go (the engine thread, or the last user). */
static void rx_reap(struct sib_link *l)
{
	while (l->rx.dead) {
		struct sib_link_rxq *q = l->rx.dead;

		l->rx.dead = q->next;
		rxq_free(l, q);
	}
}

bool sib_link_rx_attach(struct sib_link *l, void *base, uint32_t from_inbox, uint32_t from_gen)
{
	struct sib_link_rx *rx = &l->rx;
	struct sib_link_rxq *q;

	if (from_inbox >= SIB_MAX_INBOXES)
		return false;
	/* One ring per sending context: a newer one replaces (the sender
	 * let go of the old ring, or its inbox number was reused). */
	for (uint32_t i = 0; i < rx->n; i++)
		if (rx->q[i]->from_inbox == from_inbox) {
			rxq_remove(l, i);
			break;
		}
	if (rx->n >= SIB_MAX_INBOXES || !(q = calloc(1, sizeof(*q))))
		return false;
	q->base = base;
	sib_pair_attach(&q->r, base);
	q->from_inbox = from_inbox;
	q->from_gen = from_gen;
	rx->q[rx->n] = q;
	/* The engine thread reads the list without the lock (sib_link_rx_ready). */
	__atomic_store_n(&rx->n, rx->n + 1, __ATOMIC_RELEASE);
	atomic_store_explicit(&q->r.hdr->attached, 1, memory_order_release);
	return true;
}

void sib_link_rx_apply(struct sib_link *l, struct sib_link_fetch *f, bool engine)
{
	const struct sib_link_resolver *res = l->dests ? l->dests->res : NULL;
	struct sib_link_rx *rx = &l->rx;

	for (uint32_t i = 0; i < f->naccepted; i++) {
		struct sib_link_accepted *a = &f->accepted[i];

		if (!sib_link_rx_attach(l, a->base, a->from_inbox, a->from_gen) && res && res->unaccept)
			res->unaccept(a->base);
	}
	f->naccepted = 0;
	/* Senders gone: their rings go (what is left in them was sent by
	 * QPs that are gone too). */
	for (uint32_t i = 0; i < rx->n;) {
		if (rx->q[i]->from_gen && sib_link_inbox_gen(rx->q[i]->from_inbox) != rx->q[i]->from_gen)
			rxq_remove(l, i);
		else
			i++;
	}
	if (!engine)
		return;
	rx_reap(l);
	sib_link_dests_prune(l);
}

void sib_link_rx_close(struct sib_link *l)
{
	while (l->rx.n)
		rxq_remove(l, l->rx.n - 1);
	rx_reap(l);
}
