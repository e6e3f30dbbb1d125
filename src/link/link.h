/* SPDX-License-Identifier: MIT */
/*
 * The link layer (docs/link.md): how a packet gets from one context to
 * another.  One ops table per link kind; the shm pair rings (pair.h) are the
 * first.  Every packet leaves through sib_link_send and arrives through
 * sib_link_recv; the HCA engine calls exactly these.  Two wrappers work over
 * any link: capture (pcap, capture.c) and faults (fault.c).  When neither
 * is active they cost one predictable branch and the shm ring is inlined.
 * Stands in for IBA ch. 7 (link layer): VCRC is the link's CRC; ICRC is
 * computed by the transport, checked at the receiver (IBA 7.8).
 * Uses only common/ and iba/: never hca/ or verbs/.
 * Locking: one link belongs to one context; every function here runs under
 * that context's progress lock (the capture file has its own mutex).
 */
#ifndef SIB_LINK_H
#define SIB_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "link/pair.h"

/*
 * Link counters of one context.  They live in its inbox's header page at
 * SIB_LINK_STATS_OFF, so that softibd can print them (`softib status`).
 * Written only by the owning context (relaxed load + store, no locked
 * instruction); any producer could scribble on them, so they are for
 * display only and nobody acts on them.
 */
enum sib_link_counter {
	SIB_LC_TX,              /* packets handed to the link */
	SIB_LC_RX,              /* packets taken from the inbox */
	SIB_LC_TX_FULL,         /* reserve found the pair ring full (retried later) */
	SIB_LC_TX_LOST,         /* publish lost on the way (a link kind that can lose) */
	SIB_LC_LOSS,            /* fault: dropped */
	SIB_LC_DUP,             /* fault: sent twice */
	SIB_LC_REORDER,         /* fault: held back behind the next packet */
	SIB_LC_CORRUPT,         /* fault: a bit flipped after the ICRC */
	SIB_LC_DELAY,           /* fault: delayed */
	SIB_LC_DOWN,            /* fault: dropped, link down */
	SIB_LC_RX_ICRC,         /* received with a bad ICRC: dropped */
	SIB_LC_RX_BAD,          /* received but malformed or misrouted: dropped */
	SIB_LC_RX_BAD_SLOT,     /* pair ring slot with a garbage state: dropped */
	SIB_LC_RX_FOREIGN,      /* dropped: its sender is not the connected QP's peer */
	SIB_LC_RX_PAIRS,        /* pair rings this context receives from now */
	SIB_LC_CAPTURED,        /* packets written to the capture */
	SIB_LC_CAP_MISSED,      /* packets the capture could not take (full/error) */
	/* Reported by the transport above, for the same status line
	 * (sib_link_report): requester retransmissions by cause. */
	SIB_LC_TR_ACK_TIMEOUTS, /* local ACK timeouts */
	SIB_LC_TR_SEQ_NAKS,     /* PSN sequence error NAKs received */
	SIB_LC_TR_RNR_NAKS,     /* RNR NAKs received */
	SIB_LC_TR_STARVED,      /* ACK timeouts not counted: the peer took nothing from our ring */
	SIB_LC_NO_ROUTE,        /* not sent: the forwarding tables drop it (dest.c) */
	SIB_LC_MAX
};

/*
 * Per-port data counters of one context, what the PMA of the port adds up
 * over the contexts of its device (IBA 16.1.3.5 PortCounters, 16.1.4.6
 * PortCountersExtended; daemon/linkcfg.c sibd_data_counters).  Data in
 * 4-byte words of LRH..ICRC (PortXmitData/PortRcvData: the octets between
 * the start delimiter and the VCRC, divided by 4).  Packets by DLID:
 * unicast or multicast (the total is their sum).  Display only, as above.
 */
enum sib_link_port_counter {
	SIB_LP_XMIT_DATA,       /* words sent */
	SIB_LP_RCV_DATA,        /* words received */
	SIB_LP_UCAST_XMIT,      /* packets sent to a unicast DLID */
	SIB_LP_UCAST_RCV,
	SIB_LP_MCAST_XMIT,      /* packets sent to a multicast DLID */
	SIB_LP_MCAST_RCV,
	SIB_LP_XMIT_DISCARDS,   /* not sent: port down, or no route (PortXmitDiscards) */
	SIB_LP_MAX
};

/* Counter names as printed by `softib status` (key=value). */
extern const char *const sib_link_counter_name[SIB_LC_MAX];

#define SIB_LINK_STATS_OFF   1024u
#define SIB_LINK_STATS_MAGIC 0x314b4c53u /* "SLK1" */
#define SIB_LINK_STAT_CAPTURE 0x1        /* flags: capture active */
#define SIB_LINK_STAT_FAULTS  0x2        /* flags: faults active */

struct sib_link_stats {
	_Atomic uint32_t magic;        /* SIB_LINK_STATS_MAGIC once the owner started */
	_Atomic uint32_t flags;        /* SIB_LINK_STAT_* */
	_Atomic uint64_t c[SIB_LC_MAX];
	_Atomic uint64_t port[SIB_MAX_PORTS][SIB_LP_MAX]; /* [port - 1] */
};
_Static_assert(SIB_LINK_STATS_OFF + sizeof(struct sib_link_stats) <= SIB_INBOX_HDR_BYTES,
	       "link stats fit in the inbox header page");

struct sib_link;
struct sib_link_wrap;

/* One pair ring this context receives from (pair.h), private. */
struct sib_link_rxq {
	struct sib_pair r;
	void *base;                    /* SIB_PAIR_BYTES mapped */
	uint64_t head;                 /* next slot to take: the truth */
	uint32_t from_inbox, from_gen; /* its sender, as softibd named it */
	struct sib_link_rxq *next;     /* on the dead list */
};

/* Packets taken from one ring in a row before the next ring's turn. */
#define SIB_LINK_RX_BURST 16u

/* The receive side: every pair ring into this context, polled in turn.
 * Changed only by the engine thread (sib_link_apply), under the progress
 * lock; read by whoever holds the lock, and by the engine thread without
 * it (sib_link_rx_ready). */
struct sib_link_rx {
	struct sib_link_rxq *q[SIB_MAX_INBOXES]; /* the first n are live */
	uint32_t n;
	uint32_t cur, burst;           /* whose turn, and how many it had */
	struct sib_link_rxq *last;     /* the ring of sib_link_recv's packet */
	_Atomic uint64_t count;        /* packets taken (the engine's progress check) */
	uint64_t bad_slots;            /* garbage slot states dropped */
	struct sib_ring db;            /* our inbox page: the doorbell senders wake */
	uint32_t pairs_seen;           /* db's pairs_seq when we last asked softibd */
	struct sib_link_rxq *dead;     /* let go, unmapped by the engine thread (it may
	                                * be reading them without the lock) */
};

/* A packet buffer reserved toward a destination. */
struct sib_link_tx {
	uint8_t *data;                 /* the packet goes here, LRH first */
	void *dest;                    /* the link's destination (shm: struct sib_pair_tx *) */
	struct sib_ring_slot *slot;    /* shm: the slot; NULL when staged by a wrapper */
	uint8_t port;                  /* local port the packet leaves from (1-based) */
};

/*
 * One link kind.  All members run under the owner's progress lock.
 *  reserve: room for one packet toward tx->dest: 0, or -EAGAIN (full:
 *           retry later, nothing lost).
 *  publish: the packet of len bytes in tx->data is complete (LRH..ICRC,
 *           then 2 VCRC bytes; flags SIB_SLOT_F_VCRC if they are computed):
 *           1 = the receiver sleeps (call wake), 0 = sent, -1 = lost.
 *  wake:    wake the receiver behind dest.
 *  place:   (a capability, not a call) data may be placed directly.
 * Receiving is the pair rings' (sib_link_recv), whatever the kind.
 */
struct sib_link_ops {
	const char *name;
	/* The two ends share the host's memory: a requester may place a
	 * WRITE's or READ's data itself (direct placement, src/hca/direct.h)
	 * and send one packet for the message.  A link between hosts
	 * cannot. */
	bool place;
	int (*reserve)(struct sib_link *l, struct sib_link_tx *tx);
	int (*publish)(struct sib_link *l, struct sib_link_tx *tx, uint32_t len, uint32_t flags);
	void (*wake)(void *dest);
};

extern const struct sib_link_ops sib_link_shm_ops;

struct sib_link {
	struct sib_link_rx rx;         /* the pair rings into this context (shm link) */
	struct sib_link_stats *stats;
	const struct sib_link_ops *ops;
	struct sib_link_wrap *wrap;    /* capture and/or faults; NULL: none */
	bool slow;                     /* wrap set, or ops is not the shm ring */
	int32_t pid;                   /* ours (capture rings' claims) */
	uint32_t src_inbox;
	const struct sib_shm_device *dev; /* our ports' LIDs, for rx port selection */
	const struct sib_shm_link_port *cfg; /* softibd's per-port settings, or NULL */
	/* The owner's count on a destination (shm: the peer inbox mapping):
	 * +1 when a wrapper keeps a packet for dest past the send that gave
	 * it, -1 when that packet leaves or is dropped.  NULL: not counted. */
	void (*dest_ref)(void *dest, int delta);
	uint32_t seen_cap[SIB_MAX_PORTS];       /* cfg[p].cap last acted on (0: none) */
	uint32_t seen_fault_seq[SIB_MAX_PORTS]; /* cfg[p].fault_seq last acted on */
	_Atomic uint32_t service;      /* sib_link_tick: the engine thread has work */
	struct sib_link_dests *dests;  /* dest.h: route cache, peers, asks (NULL: none) */
};

/* Counter update by the owner (single writer: no locked instruction). */
static inline void sib_link_count(struct sib_link *l, enum sib_link_counter c, uint64_t n)
{
	_Atomic uint64_t *p = &l->stats->c[c];

	atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + n, memory_order_relaxed);
}

/* Per-port counter update by the owner (port 1-based; others ignored). */
static inline void sib_link_count_port(struct sib_link *l, uint8_t port, enum sib_link_port_counter c,
				       uint64_t n)
{
	_Atomic uint64_t *p;

	if (port - 1u >= SIB_MAX_PORTS)
		return;
	p = &l->stats->port[port - 1][c];
	atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + n, memory_order_relaxed);
}

/* One packet of len bytes (LRH..ICRC, then the 2 VCRC bytes) through port
 * `port`: its words and its unicast or multicast count (DLID >= 0xC000:
 * the LRH's DLID high byte >= 0xC0).  xmit: sent, else received. */
static inline void sib_link_count_data(struct sib_link *l, uint8_t port, const uint8_t *pkt,
				       uint32_t len, bool xmit)
{
	bool mc;

	if (len < 4 || len > SIB_SLOT_DATA_BYTES)
		return;
	mc = pkt[2] >= 0xC0;
	sib_link_count_port(l, port, xmit ? SIB_LP_XMIT_DATA : SIB_LP_RCV_DATA, (len - 2) / 4);
	sib_link_count_port(l, port, xmit ? (mc ? SIB_LP_MCAST_XMIT : SIB_LP_UCAST_XMIT)
					  : (mc ? SIB_LP_MCAST_RCV : SIB_LP_UCAST_RCV), 1);
}

/* The port of ours a received packet's DLID names (LMC ranges); 1 when the
 * device has one port, or for a multicast or unknown DLID. */
static inline uint8_t sib_link_rx_port(const struct sib_link *l, const uint8_t *pkt, uint32_t len)
{
	uint16_t dlid;

	if (!l->dev || l->dev->num_ports < 2 || len < 4)
		return 1;
	dlid = (uint16_t)(pkt[2] << 8 | pkt[3]);
	for (unsigned int i = 0; i < SIB_MAX_PORTS; i++) {
		const struct sib_shm_port *p = &l->dev->ports[i];
		uint16_t mask = (uint16_t)~((1u << (p->lmc & 7)) - 1);

		if (p->lid && (dlid & mask) == (p->lid & mask))
			return (uint8_t)(i + 1);
	}
	return 1;
}

/*
 * Open the link of a context over its inbox mapping: the shm ring, plus
 * the wrappers that $SOFTIB_CAPTURE / $SOFTIB_FAULTS ask for this device,
 * and those softibd pushes through `cfg` (its SIB_MAX_PORTS entries of the
 * fabric map's link area; NULL: none), looked at now and by sib_link_tick
 * (docs/link.md).  Returns 0 or a positive errno (EINVAL: a malformed
 * variable, also reported on stderr; or the capture file's open error).
 */
int sib_link_open(struct sib_link *l, void *inbox_base, int32_t pid, uint32_t src_inbox,
		  const struct sib_shm_device *dev, const struct sib_shm_link_port *cfg);
/* Send what the wrappers still hold (best effort), flush the capture, free. */
void sib_link_close(struct sib_link *l);

/* Slow paths (link.c): the wrappers, or a link kind other than shm. */
int sib_link_reserve_slow(struct sib_link *l, struct sib_link_tx *tx);
int sib_link_send_slow(struct sib_link *l, struct sib_link_tx *tx, uint32_t len, uint32_t flags);
void sib_link_recv_slow(struct sib_link *l, const uint8_t *data, uint32_t len, uint32_t flags);

/*
 * Reserve room for one packet toward dest, leaving local port `port`.
 * 0: write it at tx->data.  Nothing reserved otherwise: -EAGAIN, dest's
 * inbox is full (poll again soon: freed slots wake nobody); -ENOBUFS, the
 * fault wrapper's queue is full (retry at the time sib_link_flush returns,
 * which is `now` as soon as it has room again).
 */
static inline int sib_link_reserve(struct sib_link *l, void *dest, uint8_t port, struct sib_link_tx *tx)
{
	tx->dest = dest;
	tx->port = port;
	if (__builtin_expect(l->slow, 0))
		return sib_link_reserve_slow(l, tx);
	tx->slot = sib_pair_reserve(dest);
	if (!tx->slot) {
		sib_link_count(l, SIB_LC_TX_FULL, 1);
		return -EAGAIN;
	}
	tx->slot->src_inbox = l->src_inbox;
	tx->data = tx->slot->data;
	return 0;
}

/*
 * THE exit: every packet leaves here.  tx->data holds len bytes, LRH..ICRC
 * followed by 2 VCRC bytes (computed if flags has SIB_SLOT_F_VCRC).
 * Returns 0, or -1 if the packet was lost on the way (counted).
 */
static inline int sib_link_send(struct sib_link *l, struct sib_link_tx *tx, uint32_t len, uint32_t flags)
{
	int rc;

	sib_link_count_data(l, tx->port, tx->data, len, true);
	if (__builtin_expect(l->slow, 0))
		return sib_link_send_slow(l, tx, len, flags);
	sib_link_count(l, SIB_LC_TX, 1);
	rc = sib_pair_publish(tx->dest, tx->slot, len, flags);
	if (rc > 0)
		sib_ring_wake(&((struct sib_pair_tx *)tx->dest)->db);
	return 0;
}

/* A garbage slot at q's head (its sender scribbled): drop it and what
 * follows, up to SIB_PAIR_GARBAGE_BATCH.  1: a packet is now at head,
 * 0: none.  link.c */
int sib_link_rx_garbage(struct sib_link *l, struct sib_link_rxq *q);

/*
 * THE entry: the oldest received packet of the ring whose turn it is
 * (NULL: none anywhere), *len bytes, *flags SIB_SLOT_F_*.  The rings take
 * turns, SIB_LINK_RX_BURST packets each at most, so no sender starves
 * another.  The bytes stay valid until sib_link_recv_done, but they are
 * shared with their (untrusted) sender: read each field once.  Who sent
 * it: sib_link_rx_from.
 */
static inline const uint8_t *sib_link_recv(struct sib_link *l, uint32_t *len, uint32_t *flags)
{
	struct sib_link_rx *rx = &l->rx;
	struct sib_ring_slot *s;

	if (!rx->n)
		return NULL;
	for (uint32_t i = 0; i <= rx->n; i++) {
		struct sib_link_rxq *q = rx->q[rx->cur];
		int k = sib_pair_look(&q->r, q->head);

		if (__builtin_expect(k < 0, 0))
			k = sib_link_rx_garbage(l, q);
		if (k > 0 && rx->burst < SIB_LINK_RX_BURST) {
			rx->burst++;
			rx->last = q;
			s = &q->r.slots[q->head % SIB_PAIR_SLOTS];
			*len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
			*flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
			sib_link_count(l, SIB_LC_RX, 1);
			sib_link_count_data(l, sib_link_rx_port(l, s->data, *len), s->data, *len, false);
			if (__builtin_expect(l->slow, 0))
				sib_link_recv_slow(l, s->data, *len, *flags);
			return s->data;
		}
		rx->burst = 0;
		rx->cur = rx->cur + 1 < rx->n ? rx->cur + 1 : 0;
	}
	return NULL;
}

/* The context that sent sib_link_recv's packet: its inbox number, as
 * softibd named the ring's sender (nothing in the packet says it). */
static inline uint32_t sib_link_rx_from(const struct sib_link *l)
{
	return l->rx.last ? l->rx.last->from_inbox : UINT32_MAX;
}

/* Done with the packet sib_link_recv returned. */
static inline void sib_link_recv_done(struct sib_link *l)
{
	struct sib_link_rxq *q = l->rx.last;

	sib_pair_release(&q->r, q->head);
	q->head++;
	atomic_store_explicit(&l->rx.count, atomic_load_explicit(&l->rx.count, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* Any thread of the owner, the engine thread without the lock: is a
 * packet waiting in any ring?  Read-only; may be stale at once. */
static inline bool sib_link_rx_ready(const struct sib_link *l)
{
	uint32_t n = __atomic_load_n(&l->rx.n, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++) {
		const struct sib_link_rxq *q = __atomic_load_n(&l->rx.q[i], __ATOMIC_ACQUIRE);

		if (sib_pair_look(&q->r, __atomic_load_n(&q->head, __ATOMIC_RELAXED)) > 0)
			return true;
	}
	return false;
}

/* Packets taken so far (any thread; the engine's "did traffic come"). */
static inline uint64_t sib_link_rx_count(const struct sib_link *l)
{
	return atomic_load_explicit(&l->rx.count, memory_order_relaxed);
}

/*
 * The engine thread, without the lock: sleep until a sender publishes
 * into any of our rings, someone wakes our doorbell (after the `seq`
 * snapshot of sib_ring_wake_seq(&l->rx.db)), or timeout_ns passes (< 0:
 * none).  Announces the sleep in every ring, then looks again.
 */
void sib_link_wait(struct sib_link *l, uint32_t seq, int64_t timeout_ns);

/*
 * Housekeeping, never per packet: inbox checks (stalled and garbage slots,
 * garbage tail) and the wrappers' held packets.  `now` in ns
 * (CLOCK_MONOTONIC).  Returns when it wants to run again (0: no need).
 */
uint64_t sib_link_tick(struct sib_link *l, uint64_t now);
/*
 * The slow half of the housekeeping, never on an application thread:
 * sib_link_tick only notices that softibd pushed something (a capture
 * ring armed, faults set) or that the capture file wants a write, and sets
 * `service`.  The engine thread then calls sib_link_fetch WITHOUT the
 * progress lock (it may make a round trip to softibd, with a 1 s receive
 * timeout, and mmap the ring), then sib_link_apply under the lock.
 */
struct sib_link_accepted {
	void *base;                    /* SIB_PAIR_BYTES */
	uint32_t from_inbox, from_gen;
};
struct sib_link_fetch {
	uint32_t naccepted;            /* pair rings softibd gave us */
	struct sib_link_accepted accepted[SIB_MAX_INBOXES];
	bool changed[SIB_MAX_PORTS];   /* a new capture word was seen */
	uint32_t cap_word[SIB_MAX_PORTS];
	void *cap_base[SIB_MAX_PORTS]; /* its ring, mapped (NULL: none or failed) */
};

/* The engine thread: is there service to do (asks, pushed settings, or a
 * pair ring softibd holds for us: the doorbell's pairs_seq moved)? */
static inline bool sib_link_wants_service(struct sib_link *l)
{
	return atomic_load_explicit(&l->service, memory_order_relaxed) != 0 ||
	       atomic_load_explicit(&l->rx.db.hdr->pairs_seq, memory_order_acquire) !=
		       __atomic_load_n(&l->rx.pairs_seen, __ATOMIC_RELAXED);
}

void sib_link_fetch(struct sib_link *l, struct sib_link_fetch *f);
void sib_link_apply(struct sib_link *l, struct sib_link_fetch *f);

/* Only the wrappers' held packets (called on every engine pass when slow).
 * Returns when it wants to run again (0: no need): the earliest due time
 * of a held packet, 50 us on while a destination is full, or `now` when a
 * reserve refused with -ENOBUFS would find room now. */
uint64_t sib_link_flush(struct sib_link *l, uint64_t now);

/* The transport's own counters, shown with the link's (not per packet). */
static inline void sib_link_report(struct sib_link *l, enum sib_link_counter c, uint64_t v)
{
	atomic_store_explicit(&l->stats->c[c], v, memory_order_relaxed);
}

/* Wake the receiver behind dest. */
static inline void sib_link_wake(void *dest)
{
	sib_ring_wake(&((struct sib_pair_tx *)dest)->db);
}

/*
 * May a message to dest be placed directly (its data moved by the
 * requester, one packet standing for its PSNs: src/hca/direct.h)?  Only
 * over a link kind that shares memory (ops->place), with no wrapper on our
 * side (capture and faults see and treat real packets), and while the
 * receiver's link does not capture either (its inbox page says so:
 * display data, trusted only to fall back to packets).  The one place the
 * HCA asks.
 */
static inline bool sib_link_can_place(const struct sib_link *l, void *dest)
{
	const struct sib_link_stats *ps;

	if (!dest || l->slow || !l->ops->place)
		return false;
	ps = (const struct sib_link_stats *)((const uint8_t *)((struct sib_pair_tx *)dest)->db.hdr +
					     SIB_LINK_STATS_OFF);
	return !(atomic_load_explicit(&ps->flags, memory_order_relaxed) & SIB_LINK_STAT_CAPTURE);
}

#endif
