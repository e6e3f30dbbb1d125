/* SPDX-License-Identifier: MIT */
/*
 * Destinations of one link (dest.h, docs/link.md "Destinations"): the
 * route cache (IBA 18.2.4.3, answers of softibd kept per (port, DLID)
 * while the fabric map's route_gen holds), the QPN-owner check and the
 * mapped peer inboxes, refcounted.  A miss is queued, never answered on
 * the caller's thread; the fabric map is read with bounds checks only.
 * Runs under the owner's progress lock, except sib_link_asks_answer.
 */
#include <stdlib.h>
#include <string.h>

#include "iba/iba.h"
#include "link/dest.h"
#include "link/wrap.h"

_Static_assert(SIB_CTL_ROUTE_MASK_WORDS * 64 >= SIB_MAX_DEVICES * SIB_MAX_PORTS,
	       "the route mask covers every CA port");
_Static_assert(SIB_MAX_DEVICES <= 256, "sib_route_ent.dst_dev is a byte");
_Static_assert(offsetof(struct sib_link_dest, tx) == 0, "a dest is its pair ring's sending end");

/* A failed mapping of a context that is still open is asked again after
 * this long (softibd short of fds, say), not on every packet. */
#define SIB_LINK_MAP_RETRY_NS 100000000ull /* 100 ms */

/* The table of port (1-based) in tab, allocated when the first answer
 * for that port is applied (calloc: zero pages until touched; the engine
 * thread's, never the application's post or poll: a large calloc is an
 * mmap); NULL when the port is out of range or memory is short. */
#define ROUTE_TABLE(tab, port, n) \
	((port) - 1u >= SIB_MAX_PORTS ? NULL : \
	 (tab)[(port) - 1] ? (tab)[(port) - 1] : ((tab)[(port) - 1] = calloc((n), sizeof(*(tab)[0]))))
/* The table if it is there already (lookups). */
#define ROUTE_TABLE_IF(tab, port) ((port) - 1u >= SIB_MAX_PORTS ? NULL : (tab)[(port) - 1])

/* Let go of our end of d's pair ring (and the receiver's doorbell). */
static void dest_unmap(const struct sib_link_dests *ds, struct sib_link_dest *d)
{
	if (d->base && ds->res && ds->res->unpair)
		ds->res->unpair(d->base, d->db_base);
}

/* The fault wrapper's count on a destination it keeps packets for. */
static void dest_ref(void *dest, int delta)
{
	if (delta > 0)
		((struct sib_link_dest *)dest)->refs++;
	else
		sib_link_dest_put(dest);
}

int sib_link_dests_open(struct sib_link *l, const struct sib_link_resolver *res, uint32_t dev_index,
			uint32_t dev_handle)
{
	struct sib_link_dests *ds = calloc(1, sizeof(*ds));

	if (!ds)
		return ENOMEM;
	ds->res = res;
	ds->dev_index = dev_index;
	ds->dev_handle = dev_handle;
	l->dests = ds;
	/* Ask softibd at the engine's first look: a sender may have paired
	 * with us before we could ask. */
	l->rx.pairs_seen = atomic_load_explicit(&l->rx.db.hdr->pairs_seq, memory_order_acquire) - 1;
	l->dest_ref = dest_ref;
	return 0;
}

void sib_link_dests_close(struct sib_link *l)
{
	struct sib_link_dests *ds = l->dests;

	if (!ds)
		return;
	for (uint32_t i = 0; i < SIB_MAX_INBOXES; i++) {
		while (ds->by_inbox[i]) {
			struct sib_link_dest *d = ds->by_inbox[i];

			ds->by_inbox[i] = d->next;
			dest_unmap(ds, d);
			free(d);
		}
	}
	for (uint32_t p = 0; p < SIB_MAX_PORTS; p++) {
		free(ds->route[p]);
		free(ds->mroute[p]);
	}
	free(ds);
	l->dests = NULL;
	l->dest_ref = NULL;
}

/* ---- asks ---- */

/* Queue a question (once) and have the engine thread answer it. */
static void ask(struct sib_link *l, uint8_t kind, uint8_t port, uint16_t lid, uint32_t inbox, uint32_t gen)
{
	struct sib_link_asks *q = &l->dests->q;

	for (uint32_t i = 0; i < q->n; i++) {
		const struct sib_link_ask *a = &q->a[i];

		if (a->kind == kind && a->port == port && a->lid == lid && a->inbox == inbox && a->gen == gen)
			goto wake;
	}
	if (q->n < SIB_LINK_ASKS_MAX) { /* full: asked again when the WQE retries */
		q->a[q->n++] = (struct sib_link_ask){ .kind = kind, .port = port, .lid = lid,
						      .inbox = inbox, .gen = gen };
		l->dests->fresh = true;
	}
wake:
	/* The engine thread sees it at its next look (no system call here:
	 * this may be the application's post or poll). */
	atomic_store_explicit(&l->service, 1, memory_order_seq_cst);
}

void sib_link_asks_take(struct sib_link *l, struct sib_link_asks *a)
{
	a->n = 0;
	for (uint32_t i = 0; l->dests && i < l->dests->q.n; i++) {
		struct sib_link_ask *k = &l->dests->q.a[i];

		if (k->taken)
			continue; /* another thread answers it */
		k->taken = 1;
		a->a[a->n++] = *k;
	}
}

/* An answered ask leaves the queue (it stayed there, taken, so that
 * nobody asked the same again meanwhile). */
static void ask_done(struct sib_link_asks *q, const struct sib_link_ask *k)
{
	for (uint32_t i = 0; i < q->n; i++) {
		const struct sib_link_ask *e = &q->a[i];

		if (e->kind == k->kind && e->port == k->port && e->lid == k->lid && e->inbox == k->inbox &&
		    e->gen == k->gen) {
			q->a[i] = q->a[--q->n];
			return;
		}
	}
}

void sib_link_asks_answer(const struct sib_link *l, struct sib_link_asks *a)
{
	const struct sib_link_resolver *res = l->dests ? l->dests->res : NULL;

	for (uint32_t i = 0; i < a->n; i++) {
		struct sib_link_ask *k = &a->a[i];

		k->base = k->db = NULL;
		k->rc = EHOSTUNREACH;
		if (k->kind == SIB_ASK_MAP) {
			if (res && res->pair)
				k->rc = res->pair(l->dests->dev_handle, k->inbox, k->gen, &k->base, &k->db);
			if (k->rc)
				k->base = k->db = NULL;
			continue;
		}
		memset(&k->r, 0, sizeof(k->r));
		k->r.dev_index = l->dests->dev_index;
		k->r.port = k->port;
		k->r.dlid = k->lid;
		if (res && res->route)
			k->rc = res->route(&k->r);
	}
}

static void apply_route(struct sib_link_dests *ds, const struct sib_link_ask *k)
{
	const struct sib_ctl_route *r = &k->r;

	if (k->lid >= SIB_MCAST_LID_MIN && k->lid != IBA_LID_PERMISSIVE) {
		struct sib_mroute_ent *e = ROUTE_TABLE(ds->mroute, k->port, SIB_MROUTE_LIDS);

		if (!e)
			return; /* no memory: asked again */
		e = &e[k->lid - SIB_UNICAST_LIDS];
		e->valid = 1;
		e->gen = k->gen;
		if (k->rc || r->verdict)
			memset(e->mask, 0, sizeof(e->mask)); /* reaches nobody */
		else
			memcpy(e->mask, r->mcast_mask, sizeof(e->mask));
		return;
	}
	struct sib_route_ent *e = ROUTE_TABLE(ds->route, k->port, SIB_UNICAST_LIDS);

	if (!e) {
		e = &ds->route_tmp;
		ds->tmp_port = k->port;
		ds->tmp_lid = k->lid;
	} else {
		e = &e[k->lid];
	}
	e->valid = 1;
	/* Kept under the gen loaded before asking: the answer is at least
	 * that new (softibd's gen only grows), and if the tables changed in
	 * between, the next load misses and asks once more.  softibd gone:
	 * lost on the wire until the tables change. */
	e->gen = k->gen;
	e->verdict = k->rc ? SIB_CTL_ROUTE_NOT_CA : r->verdict;
	e->dst_dev = (uint8_t)r->dst_dev;
	e->dst_port = r->dst_port;
	if (!e->verdict && (r->dst_dev >= SIB_MAX_DEVICES || r->dst_port - 1u >= SIB_MAX_PORTS))
		e->verdict = SIB_CTL_ROUTE_NOT_CA;
}

static struct sib_link_dest *dest_find(struct sib_link_dests *ds, uint32_t inbox, uint32_t gen)
{
	for (struct sib_link_dest *d = ds->by_inbox[inbox]; d; d = d->next)
		if (d->gen == gen)
			return d;
	return NULL;
}

/* Drop entries of inbox that nobody holds (negative ones, for an older
 * generation): a dead peer's entry does not outlive the next lookup. */
static void dest_prune(struct sib_link_dests *ds, uint32_t inbox, uint32_t gen)
{
	for (struct sib_link_dest **pp = &ds->by_inbox[inbox], *d; (d = *pp);) {
		if (d->refs || d->gen == gen) {
			pp = &d->next;
			continue;
		}
		*pp = d->next;
		dest_unmap(ds, d);
		free(d);
	}
}

static void apply_map(struct sib_link_dests *ds, struct sib_link_ask *k)
{
	struct sib_link_dest *d;

	if (k->inbox >= SIB_MAX_INBOXES || dest_find(ds, k->inbox, k->gen) ||
	    !(d = calloc(1, sizeof(*d)))) {
		/* Answered twice (the engine and a verb), or no memory. */
		if (k->base && ds->res && ds->res->unpair)
			ds->res->unpair(k->base, k->db);
		return;
	}
	dest_prune(ds, k->inbox, k->gen);
	d->base = k->base;
	d->db_base = k->db;
	if (d->base) {
		sib_pair_attach(&d->tx.r, d->base);
		sib_ring_attach(&d->tx.db, d->db_base);
	} else
		d->failed_at = sib_link_now_ns();
	d->inbox = k->inbox;
	d->gen = k->gen;
	d->owner = ds;
	d->next = ds->by_inbox[k->inbox];
	ds->by_inbox[k->inbox] = d;
}

void sib_link_asks_apply(struct sib_link *l, struct sib_link_asks *a)
{
	for (uint32_t i = 0; l->dests && i < a->n; i++) {
		ask_done(&l->dests->q, &a->a[i]);
		if (a->a[i].kind == SIB_ASK_MAP) {
			apply_map(l->dests, &a->a[i]);
		} else {
			l->dests->route_asks++;
			apply_route(l->dests, &a->a[i]);
		}
	}
	a->n = 0;
}

/* ---- lookups ---- */

/* No route hook (a test host, no switches): the LID leads where lid_map says. */
static void route_direct(uint16_t dlid, struct sib_route_ent *e)
{
	uint16_t lm = dlid && dlid < SIB_UNICAST_LIDS ?
		      atomic_load_explicit(&sib_fabric->lid_map[dlid], memory_order_acquire) : 0;

	e->verdict = lm ? 0 : SIB_CTL_ROUTE_NOT_CA;
	e->dst_dev = lm >> 8;
	e->dst_port = lm & 0xff;
}

/* The cached route from port to dlid at route_gen gen, or NULL (asked).
 * A DLID no table holds (permissive, or no memory) keeps one answer in
 * route_tmp, for the (port, DLID) it was asked for. */
static const struct sib_route_ent *route_get(struct sib_link *l, uint8_t port, uint16_t dlid, uint32_t gen)
{
	struct sib_link_dests *ds = l->dests;
	struct sib_route_ent *e = dlid < SIB_UNICAST_LIDS ? ROUTE_TABLE_IF(ds->route, port) : NULL;
	bool tmp = !e;

	e = e ? &e[dlid] : &ds->route_tmp;
	if (e->valid && e->gen == gen && (!tmp || (ds->tmp_port == port && ds->tmp_lid == dlid)))
		return e;
	if (!ds->res || !ds->res->route) {
		if (tmp && dlid < SIB_UNICAST_LIDS && ROUTE_TABLE(ds->route, port, SIB_UNICAST_LIDS)) {
			/* No host to ask: the table is made here, once. */
			e = &ds->route[port - 1][dlid];
			tmp = false;
		}
		e->valid = 1;
		e->gen = gen;
		ds->tmp_port = tmp ? port : ds->tmp_port;
		ds->tmp_lid = tmp ? dlid : ds->tmp_lid;
		route_direct(dlid, e);
		return e;
	}
	ask(l, SIB_ASK_ROUTE, port, dlid, 0, gen);
	return NULL;
}

const struct sib_route_ent *sib_link_route(struct sib_link *l, uint8_t port, uint16_t dlid)
{
	return route_get(l, port, dlid, atomic_load_explicit(&sib_fabric->route_gen, memory_order_acquire));
}

const uint64_t *sib_link_mroute(struct sib_link *l, uint8_t port, uint16_t mlid)
{
	struct sib_link_dests *ds = l->dests;
	uint32_t gen = atomic_load_explicit(&sib_fabric->route_gen, memory_order_acquire);
	struct sib_mroute_ent *e = mlid >= SIB_UNICAST_LIDS ? ROUTE_TABLE_IF(ds->mroute, port) : NULL;

	if (e) {
		e = &e[mlid - SIB_UNICAST_LIDS];
		if (e->valid && e->gen == gen)
			return e->mask;
	}
	if (!ds->res || !ds->res->route) {
		e = mlid >= SIB_UNICAST_LIDS ? ROUTE_TABLE(ds->mroute, port, SIB_MROUTE_LIDS) : NULL;
		if (!e)
			return NULL; /* no memory or a bad port */
		e = &e[mlid - SIB_UNICAST_LIDS];
		e->valid = 1;
		e->gen = gen;
		memset(e->mask, 0xff, sizeof(e->mask));
		return e->mask;
	}
	ask(l, SIB_ASK_ROUTE, port, mlid, 0, gen);
	return NULL;
}

bool sib_link_mroute_reaches_dev(const uint64_t *mask, uint32_t dev)
{
	if (!mask || dev >= SIB_MAX_DEVICES)
		return false;
	for (uint32_t p = 0; p < SIB_MAX_PORTS; p++) {
		uint32_t bit = dev * SIB_MAX_PORTS + p;

		if (mask[bit / 64] & (1ull << (bit % 64)))
			return true;
	}
	return false;
}

enum sib_link_verdict sib_link_dest_get(struct sib_link *l, uint32_t inbox, uint32_t gen,
					struct sib_link_dest **out)
{
	struct sib_link_dest *d;

	*out = NULL;
	if (!l->dests || inbox >= SIB_MAX_INBOXES || !(gen & 1))
		return SIB_LINK_UNREACHABLE;
	d = dest_find(l->dests, inbox, gen);
	if (d && !d->base && !d->refs && sib_link_inbox_gen(inbox) == gen &&
	    sib_link_now_ns() - d->failed_at >= SIB_LINK_MAP_RETRY_NS) {
		/* It failed, but the context is still there: ask again. */
		dest_prune(l->dests, inbox, gen + 2); /* gen + 2: prunes d too */
		d = NULL;
	}
	if (!d) {
		ask(l, SIB_ASK_MAP, 0, 0, inbox, gen);
		return SIB_LINK_PENDING;
	}
	if (!d->base)
		return SIB_LINK_UNREACHABLE; /* asked, and gone */
	d->refs++;
	*out = d;
	return SIB_LINK_OK;
}

void sib_link_dest_put(struct sib_link_dest *d)
{
	struct sib_link_dests *ds;

	if (!d || --d->refs)
		return;
	/* Nobody holds it.  Kept while the receiver lives: softibd pairs
	 * us with it once (a UD peer sent to again finds it here); the
	 * receiver's end goes with its context (dest_prune, pairs.c). */
	if (d->base && sib_link_inbox_gen(d->inbox) == d->gen)
		return;
	ds = d->owner;
	for (struct sib_link_dest **pp = &ds->by_inbox[d->inbox]; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	dest_unmap(ds, d);
	free(d);
}

void sib_link_dests_prune(struct sib_link *l)
{
	struct sib_link_dests *ds = l->dests;

	for (uint32_t i = 0; ds && i < SIB_MAX_INBOXES; i++)
		if (ds->by_inbox[i])
			dest_prune(ds, i, sib_link_inbox_gen(i));
}

void sib_link_peer_release(struct sib_link *l, struct sib_link_peer *p)
{
	(void)l;
	sib_link_dest_put(p->dest);
	memset(p, 0, sizeof(*p));
}

bool sib_link_peer_gone(const struct sib_link_peer *p, uint32_t dqpn)
{
	return dqpn >= SIB_MAX_QPN || sib_link_qpn_owner(dqpn) != p->owner;
}

enum sib_link_verdict sib_link_resolve_slow(struct sib_link *l, struct sib_link_peer *p, uint8_t port,
					    uint16_t dlid, uint32_t dqpn)
{
	const struct sib_route_ent *r;
	struct sib_link_dest *d;
	enum sib_link_verdict v;
	uint32_t inbox, gen;
	uint64_t w;

	if (dqpn >= SIB_MAX_QPN || !l->dests)
		return SIB_LINK_UNREACHABLE;
	w = sib_link_qpn_owner(dqpn);
	inbox = SIB_QPO_INBOX(w);
	if (!(w & SIB_QPO_VALID) || inbox >= SIB_MAX_INBOXES || sib_link_inbox_gen(inbox) != SIB_QPO_GEN(w)) {
		if (__builtin_expect(p->dest != NULL, 0)) {
			/* The peer's inbox is gone: unmap it once nobody
			 * holds it (p->owner stays, for sib_link_peer_gone). */
			sib_link_dest_put(p->dest);
			p->dest = NULL;
		}
		return SIB_LINK_UNREACHABLE;
	}
	gen = atomic_load_explicit(&sib_fabric->route_gen, memory_order_acquire);
	if (p->dest && p->owner == w && p->dlid == dlid && p->dqpn == dqpn && p->route_gen == gen)
		return SIB_LINK_OK;

	/* Slow path: where the DLID leads, and is it the CA that owns the QPN? */
	r = route_get(l, port, dlid, gen);
	if (!r)
		return SIB_LINK_PENDING;
	if (r->verdict)
		return SIB_LINK_NO_ROUTE;
	if (r->dst_dev != SIB_QPO_DEV(w))
		return SIB_LINK_UNREACHABLE;
	/* Another QP of the same inbox (a UD QP answering several peers of
	 * one process) keeps the mapping; otherwise take the new one before
	 * letting go of the old, so that a shared mapping is not torn down
	 * and rebuilt per datagram. */
	if (!p->dest || p->dest->inbox != inbox || p->dest->gen != SIB_QPO_GEN(w)) {
		v = sib_link_dest_get(l, inbox, SIB_QPO_GEN(w), &d);
		if (v != SIB_LINK_OK)
			return v;
		sib_link_dest_put(p->dest);
		p->dest = d;
	}
	p->owner = w;
	p->dlid = dlid;
	p->dqpn = dqpn;
	p->route_gen = r->gen;
	return SIB_LINK_OK;
}
