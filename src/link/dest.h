/* SPDX-License-Identifier: MIT */
/*
 * Destinations (docs/link.md "Destinations"): the link owns how a sender
 * finds its peers.  One call turns (port, DLID, DQPN) into a destination
 * handle: the route verdict of the switches' forwarding tables (IBA
 * 18.2.4.3, asked of softibd and cached per (port, DLID) while the fabric
 * map's route_gen holds), the QPN's owner (the destination CA's QPN
 * demultiplexing, done here by the sender, from the fabric map) and the
 * mapping of that owner's inbox (refcounted, one per peer context).  The
 * HCA sees destinations only through this API.
 *
 * A miss never blocks the caller: it is queued (SIB_LINK_PENDING, the WQE
 * waits as for a full wire) and answered off the application's thread by
 * the engine thread (sib_link_asks_take / _answer / _apply: the round trip
 * to softibd and the mmap run without the progress lock).  Slow-path verbs
 * (modify_qp to RTR) run the same three steps themselves.
 * Our end of each pair ring (pair.h) is opened here on first use.
 * Uses only common/ and iba/.  Everything here runs under the owner's
 * progress lock, except sib_link_asks_answer (no lock: it only touches the
 * asks it was handed).
 */
#ifndef SIB_LINK_DEST_H
#define SIB_LINK_DEST_H

#include "common/sib_ctl.h"
#include "link/link.h"

/* What the link asks of whoever talks to softibd (the verbs library; a
 * test fakes it).  Each hook blocks (a round trip); none is ever called on
 * an application's ibv_post_send or ibv_poll_cq. */
struct sib_link_resolver {
	/* Open the pair ring from our context (OPEN_DEVICE handle
	 * dev_handle) to context `inbox` at generation `gen` (softibd's
	 * SIB_CTL_PAIR_OPEN, then SIB_CTL_GET_INBOX for its doorbell): map
	 * the ring (SIB_PAIR_BYTES) into *ring and the receiver's inbox page
	 * (SIB_INBOX_BYTES) into *db.  0, or an errno (ESTALE: it is gone). */
	int (*pair)(uint32_t dev_handle, uint32_t inbox, uint32_t gen, void **ring, void **db);
	/* Undo pair.  NULL: mappings are never undone (a test). */
	void (*unpair)(void *ring, void *db);
	/* The next pair ring into our context that softibd holds for us
	 * (SIB_CTL_PAIR_ACCEPT), mapped (SIB_PAIR_BYTES), its sender's inbox
	 * and generation in *from_inbox, *from_gen; NULL when none is left. */
	void *(*accept)(uint32_t dev_handle, uint32_t *from_inbox, uint32_t *from_gen);
	/* Undo accept.  NULL: never undone. */
	void (*unaccept)(void *ring);
	/* softibd's SIB_CTL_ROUTE (common/sib_ctl.h): r->dev_index, port, dlid
	 * in; verdict, destination or multicast mask out.  0 or errno.  NULL:
	 * no switches, a LID leads straight to the port lid_map names. */
	int (*route)(struct sib_ctl_route *r);
};

/* A peer context we send to: our pair ring into it, one per (inbox,
 * generation), kept while that context lives (softibd makes one pair per
 * sender and receiver: a ring let go is not asked for again). */
struct sib_link_dest {
	struct sib_pair_tx tx;         /* first: what sib_link_reserve's dest is */
	void *base;                    /* the ring; NULL: pairing failed (negative entry) ... */
	void *db_base;                 /* the receiver's inbox page */
	uint64_t failed_at;            /* ... at this time (ns, CLOCK_MONOTONIC) */
	uint64_t wait_since;           /* first found not attached (ns; sib_link_dest_waits) */
	uint32_t inbox, gen;
	uint32_t refs;                 /* peers, member caches, held packets */
	struct sib_link_dests *owner;
	struct sib_link_dest *next;    /* same inbox, other generations */
};

/* A sender's cached destination (one per QP, or per UD datagram's peer). */
struct sib_link_peer {
	uint16_t dlid;
	uint32_t dqpn;
	uint32_t route_gen;            /* sib_fabric->route_gen it was resolved at */
	uint64_t owner;                /* qp_owner word seen when resolved (0: never) */
	struct sib_link_dest *dest;    /* a reference; NULL when unresolved */
};

enum sib_link_verdict {
	SIB_LINK_OK,                   /* *dest is where the packet goes */
	SIB_LINK_PENDING,              /* asked; retry later (nothing lost) */
	SIB_LINK_NO_ROUTE,             /* the forwarding tables drop it */
	SIB_LINK_UNREACHABLE,          /* no such QP at that port, or its context is gone */
};

/* Cached route answers (IBA 18.2.4.3), one per (port, DLID) or (port, MLID). */
#define SIB_MROUTE_LIDS  (0x10000u - SIB_UNICAST_LIDS) /* MLIDs 0xC000..0xFFFF */
struct sib_route_ent {
	uint32_t gen;                  /* route_gen of the answer */
	uint8_t valid;                 /* 0 = never asked */
	uint8_t verdict;               /* 0 = reaches (dst_dev, dst_port) */
	uint8_t dst_dev;
	uint8_t dst_port;
};
struct sib_mroute_ent {
	uint32_t gen;
	uint32_t valid;                /* 0 = never asked */
	uint64_t mask[SIB_CTL_ROUTE_MASK_WORDS]; /* CA ports reached: dev * SIB_MAX_PORTS + port - 1 */
};

/* One question for softibd and its answer. */
enum { SIB_ASK_ROUTE = 1, SIB_ASK_MAP };
struct sib_link_ask {
	uint8_t kind;                  /* SIB_ASK_* */
	uint8_t taken;                 /* in the queue: being answered (not asked again) */
	uint8_t port;
	uint16_t lid;                  /* SIB_ASK_ROUTE: DLID or MLID */
	uint32_t inbox, gen;           /* SIB_ASK_MAP; SIB_ASK_ROUTE: route_gen asked at */
	int rc;                        /* answers: the route hook's, pair's */
	void *base, *db;               /* pair's */
	struct sib_ctl_route r;
};
#define SIB_LINK_ASKS_MAX 32
struct sib_link_asks {
	uint32_t n;
	struct sib_link_ask a[SIB_LINK_ASKS_MAX];
};

/* The link's destinations: route cache, mapped peers, queued misses. */
struct sib_link_dests {
	const struct sib_link_resolver *res;
	uint32_t dev_index;            /* our device in the fabric map */
	uint32_t dev_handle;           /* our OPEN_DEVICE handle (pair, accept) */
	uint64_t route_asks;           /* questions answered by softibd */
	struct sib_link_dest *by_inbox[SIB_MAX_INBOXES];
	struct sib_route_ent *route[SIB_MAX_PORTS];   /* [port - 1][DLID], at first use */
	struct sib_mroute_ent *mroute[SIB_MAX_PORTS]; /* [port - 1][MLID - 0xC000] */
	struct sib_route_ent route_tmp; /* the answer no table can hold ... */
	uint16_t tmp_lid;               /* ... for this DLID ... */
	uint8_t tmp_port;               /* ... from this port */
	struct sib_link_asks q;        /* misses not yet answered (or being answered) */
	bool fresh;                    /* a question was queued since sib_link_asks_fresh */
};

/* Set up l's destinations for device dev_index, opened as dev_handle
 * (after sib_link_open).  res stays the caller's.  0 or ENOMEM.  Freed by
 * sib_link_close. */
int sib_link_dests_open(struct sib_link *l, const struct sib_link_resolver *res, uint32_t dev_index,
			uint32_t dev_handle);

/* Pair rings into us (pairs.c).  sib_link_accept (no lock: round trips):
 * take the rings softibd holds for us when the doorbell's pairs_seq moved
 * (the engine thread in sib_link_fetch, or a slow-path verb).
 * sib_link_rx_apply (under the lock): attach them, replacing a ring from
 * the same sender's inbox, and let go of rings whose sender closed; only
 * the engine thread (`engine`) unmaps what was let go, and prunes the
 * sending ends of closed receivers. */
void sib_link_accept(struct sib_link *l, struct sib_link_fetch *f);
void sib_link_rx_apply(struct sib_link *l, struct sib_link_fetch *f, bool engine);
/* Let go of every ring into us (sib_link_close). */
void sib_link_rx_close(struct sib_link *l);
/* Attach the ring at base, from context (from_inbox, from_gen): what
 * sib_link_rx_apply does per ring; a test harness calls it directly
 * (from_gen 0: a sender without a generation, never retired).
 * false: no memory (the ring is not attached; the caller unmaps it). */
bool sib_link_rx_attach(struct sib_link *l, void *base, uint32_t from_inbox, uint32_t from_gen);

/* Let go of p's destination; p is empty after. */
void sib_link_peer_release(struct sib_link *l, struct sib_link_peer *p);
/* Is QPN dqpn no longer the QP p was resolved to (freed, or given to
 * another context)? */
bool sib_link_peer_gone(const struct sib_link_peer *p, uint32_t dqpn);
/* The peer context's inbox number p was resolved to (for per-peer state). */
static inline uint32_t sib_link_peer_inbox(const struct sib_link_peer *p)
{
	return SIB_QPO_INBOX(p->owner);
}

/* Who owns QPN qpn now: the fabric map's owner word (SIB_QPO_*: valid
 * bit, inbox, its generation, device), written by softibd; 0 if out of
 * range.  Any thread.  The receive side's checks (XRC forwarding, direct
 * placement) ask this instead of reading the map. */
static inline uint64_t sib_link_qpn_owner(uint32_t qpn)
{
	return qpn < SIB_MAX_QPN ? atomic_load_explicit(&sib_fabric->qp_owner[qpn], memory_order_acquire) : 0;
}

/* The generation of context `inbox` now (odd: open); 0 if out of range. */
static inline uint32_t sib_link_inbox_gen(uint32_t inbox)
{
	return inbox < SIB_MAX_INBOXES ?
	       atomic_load_explicit(&sib_fabric->inboxes[inbox].gen, memory_order_acquire) : 0;
}

/* sib_link_resolve past its fast path (dest.c). */
enum sib_link_verdict sib_link_resolve_slow(struct sib_link *l, struct sib_link_peer *p, uint8_t port,
					    uint16_t dlid, uint32_t dqpn);

/*
 * Where a packet from our port `port` to (dlid, dqpn) goes: SIB_LINK_OK
 * with p->dest set, or another verdict (p->dest may then be NULL).  p is
 * the caller's cache.  Every packet asks, so the case of a cached answer
 * that still holds (the QPN's owner word, the owner's generation and the
 * map's route_gen as they were) is inline; the rest is dest.c's.
 */
static inline enum sib_link_verdict sib_link_resolve(struct sib_link *l, struct sib_link_peer *p,
						     uint8_t port, uint16_t dlid, uint32_t dqpn)
{
	if (__builtin_expect(p->dest != NULL && l->dests != NULL && p->dqpn == dqpn && p->dlid == dlid, 1)) {
		uint64_t w = sib_link_qpn_owner(dqpn);

		if (w == p->owner && (w & SIB_QPO_VALID) &&
		    sib_link_inbox_gen(SIB_QPO_INBOX(w)) == SIB_QPO_GEN(w) &&
		    atomic_load_explicit(&sib_fabric->route_gen, memory_order_acquire) == p->route_gen)
			return SIB_LINK_OK;
	}
	return sib_link_resolve_slow(l, p, port, dlid, dqpn);
}

/* The context behind (inbox, gen), with a reference for the caller:
 * SIB_LINK_OK and *d, SIB_LINK_PENDING (asked) or SIB_LINK_UNREACHABLE. */
enum sib_link_verdict sib_link_dest_get(struct sib_link *l, uint32_t inbox, uint32_t gen,
					struct sib_link_dest **d);
void sib_link_dest_put(struct sib_link_dest *d);
/* How long a sender waits for a receiver to take its end of a new pair
 * ring before the ring counts as full (a receiver that stopped, say): 1 s,
 * the time softibd and a busy receiver's engine thread may need. */
#define SIB_LINK_ATTACH_WAIT_NS 1000000000ull

/* Has the receiver taken its end of d's ring (pair.h `attached`)?  While
 * not, sib_link_reserve finds it full. */
static inline bool sib_link_dest_attached(struct sib_link_dest *d)
{
	return d->tx.live || atomic_load_explicit(&d->tx.r.hdr->attached, memory_order_acquire);
}

/* d's receiver has not taken its ring yet, and it is new (first seen so
 * less than SIB_LINK_ATTACH_WAIT_NS before `now`): wait for it, do not
 * count it as a full wire (UD's head-of-queue lifetime). */
static inline bool sib_link_dest_waits(struct sib_link_dest *d, uint64_t now)
{
	if (!d || sib_link_dest_attached(d))
		return false;
	if (!d->wait_since)
		d->wait_since = now ? now : 1;
	return now - d->wait_since < SIB_LINK_ATTACH_WAIT_NS;
}

/* Has d's receiver not yet taken every packet we put into our ring to
 * it?  (Its head, which only it writes, is behind our tail: display data
 * from the peer, trusted only to wait longer, boundedly.) */
static inline bool sib_link_dest_backlog(const struct sib_link_dest *d)
{
	return d && d->base && atomic_load_explicit(&d->tx.r.hdr->head, memory_order_relaxed) != d->tx.tail;
}

/* Let go of the pair rings into contexts that closed and that nobody
 * holds (the engine thread, under the lock: it unmaps). */
void sib_link_dests_prune(struct sib_link *l);

/* The route from our port to dlid (IBA 18.2.4.3) at the map's route_gen,
 * or NULL while the answer is asked for. */
const struct sib_route_ent *sib_link_route(struct sib_link *l, uint8_t port, uint16_t dlid);
/* The CA ports multicast LID mlid reaches from our port (IBA 18.2.4.3),
 * or NULL while the answer is asked for. */
const uint64_t *sib_link_mroute(struct sib_link *l, uint8_t port, uint16_t mlid);
/* Does mask (sib_link_mroute) name a port of device dev? */
bool sib_link_mroute_reaches_dev(const uint64_t *mask, uint32_t dev);

/*
 * Answering misses: take the queued asks (under the progress lock), answer
 * them (WITHOUT it: round trips to softibd and mmap), apply the answers
 * (under it).  The engine thread does this when sib_link_wants_service; a
 * slow-path verb may do it itself.  Each ask is taken by one thread only.
 */
void sib_link_asks_take(struct sib_link *l, struct sib_link_asks *a);
/* Was a new question queued since the last call?  (The HCA then wakes a
 * napping engine thread once, not on every pass while it waits.) */
static inline bool sib_link_asks_fresh(struct sib_link *l)
{
	bool f = l->dests && l->dests->fresh;

	if (f)
		l->dests->fresh = false;
	return f;
}
void sib_link_asks_answer(const struct sib_link *l, struct sib_link_asks *a);
void sib_link_asks_apply(struct sib_link *l, struct sib_link_asks *a);

/* Free the destinations (every mapping, whoever holds it): sib_link_close. */
void sib_link_dests_close(struct sib_link *l);

#endif
