/* SPDX-License-Identifier: MIT */
/*
 * Pair rings (docs/link.md "Pair rings"): the shm link's wire from ONE
 * sending context to ONE receiving context.  softibd creates the ring (a
 * memfd) when the sender first resolves the receiver, gives one end to
 * each and to nobody else (SIB_CTL_PAIR_OPEN, SIB_CTL_PAIR_ACCEPT), and
 * tells the receiver who the sender is.  So a receiver knows which context
 * sent every packet (the ring says it, not the packet), no third process
 * can read packets not sent to it, and nobody but the sender can claim or
 * stall a slot.  Not IBA: it stands in for a cable (IBA ch. 7).
 *
 * Single producer, single consumer, no compare-and-swap.  Each end is the
 * other's adversary (DESIGN principle 6): both keep their position
 * privately (tail, head) and never read the other's back.
 *  - slot->state = turn << 32 (SIB_SLOT_STATE with pid 0): turn 2*lap is
 *    free for the sender's lap, 2*lap + 1 published.  All-zero memory is
 *    the valid empty ring.
 *  - The sender writes a slot only when it reads "free for my lap" there;
 *    anything else is "full" (a receiver that scribbles only stops its own
 *    traffic).  The receiver takes a slot only when it reads "published
 *    for my lap"; any other turn but "free" is garbage: dropped, counted
 *    and freed for the next lap, a bounded number per call.
 *  - `sleeping` is per ring: the receiver sets it in every ring before it
 *    sleeps on its doorbell (the wake_seq futex of its inbox page); the
 *    sender that finds it set clears it and wakes that futex.  A third
 *    party cannot clear it, and a wake cannot be stolen (every waiter
 *    wakes: sib_ring_wake).
 * Locking: the sender's side runs under the sending context's progress
 * lock, the receiver's under the receiving context's.
 */
#ifndef SIB_LINK_PAIR_H
#define SIB_LINK_PAIR_H

#include "link/ring.h"

/* SIB_PAIR_SLOTS, SIB_PAIR_HDR_BYTES, SIB_PAIR_BYTES: common/sib_shm.h */
/* Garbage slots a receiver drops per look at most. */
#define SIB_PAIR_GARBAGE_BATCH 64u

struct sib_pair_hdr {
	_Alignas(SIB_CACHELINE) _Atomic uint32_t sleeping; /* receiver: wake me (doorbell) */
	_Alignas(SIB_CACHELINE) _Atomic uint64_t head;     /* receiver: for status only */
	_Atomic uint64_t dropped;      /* receiver: garbage slots */
	_Atomic uint32_t attached;     /* receiver: 1 once it polls this ring */
};
_Static_assert(sizeof(struct sib_pair_hdr) <= SIB_PAIR_HDR_BYTES, "pair header fits its page");

/* A mapped pair ring. */
struct sib_pair {
	struct sib_pair_hdr *hdr;
	struct sib_ring_slot *slots;
};

/* The sender's end: the ring, the receiver's doorbell, the private tail. */
struct sib_pair_tx {
	struct sib_pair r;
	struct sib_ring db;            /* the receiver's inbox page (wake_seq) */
	uint64_t tail;                 /* next slot to fill: the truth */
	bool live;                     /* the receiver was seen attached */
};

static inline void sib_pair_attach(struct sib_pair *p, void *base)
{
	p->hdr = base;
	p->slots = (struct sib_ring_slot *)((char *)base + SIB_PAIR_HDR_BYTES);
}

static inline uint32_t sib_pair_turn(uint64_t pos)
{
	return (uint32_t)(2 * (pos / SIB_PAIR_SLOTS));
}

/* Sender: the slot to fill next, or NULL (full: retry later; IBA link
 * flow control, the sender holds the packet).  No write.  Until the
 * receiver has taken its end (it sets `attached`), the ring counts as
 * full: a WQE waits in the sender as for a full wire, and no datagram
 * piles up unseen while the receiver's receive queue runs dry. */
static inline struct sib_ring_slot *sib_pair_reserve(struct sib_pair_tx *t)
{
	struct sib_ring_slot *s = &t->r.slots[t->tail % SIB_PAIR_SLOTS];

	if (__builtin_expect(!t->live, 0)) {
		if (!atomic_load_explicit(&t->r.hdr->attached, memory_order_acquire))
			return NULL;
		t->live = true;
	}
	if (atomic_load_explicit(&s->state, memory_order_acquire) != SIB_SLOT_STATE(sib_pair_turn(t->tail), 0))
		return NULL;
	return s;
}

/*
 * Sender: the packet (len bytes, flags SIB_SLOT_F_*) in the slot that
 * sib_pair_reserve returned is complete.  Returns 1 when the receiver
 * sleeps and this sender is the first to see it (call sib_ring_wake on
 * t->db), else 0.  Never fails: nobody else writes into our slots.
 */
static inline int sib_pair_publish(struct sib_pair_tx *t, struct sib_ring_slot *s, uint32_t len, uint32_t flags)
{
	s->len = len;
	s->flags = flags;
	atomic_store_explicit(&s->state, SIB_SLOT_STATE(sib_pair_turn(t->tail) + 1, 0), memory_order_seq_cst);
	t->tail++;
	if (!atomic_load_explicit(&t->r.hdr->sleeping, memory_order_seq_cst))
		return 0;
	return atomic_exchange_explicit(&t->r.hdr->sleeping, 0, memory_order_seq_cst) != 0;
}

/* Receiver: the slot at head, published (1), free (0) or garbage (-1). */
static inline int sib_pair_look(const struct sib_pair *p, uint64_t head)
{
	uint32_t turn = SIB_SLOT_TURN(atomic_load_explicit(&p->slots[head % SIB_PAIR_SLOTS].state,
							    memory_order_acquire));
	uint32_t want = sib_pair_turn(head);

	return turn == want + 1 ? 1 : turn == want ? 0 : -1;
}

/* Receiver: give slot `head` back to the sender, for its next lap. */
static inline void sib_pair_release(struct sib_pair *p, uint64_t head)
{
	atomic_store_explicit(&p->slots[head % SIB_PAIR_SLOTS].state,
			      SIB_SLOT_STATE(sib_pair_turn(head) + 2, 0), memory_order_release);
	atomic_store_explicit(&p->hdr->head, head + 1, memory_order_relaxed);
}

#endif
