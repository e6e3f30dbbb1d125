/* SPDX-License-Identifier: MIT */
/*
 * Inbox ring: the "wire" between processes on one host.  One ring per opened
 * device context lives in a memfd made by softibd (sib_shm.h); any process
 * may produce packets into it, only the owning context consumes them.
 *
 * N.B. on ownership and ordering:
 *  - `tail` is the producers' ticket counter, advanced by CAS only once the
 *    slot for that ticket is known to be free, so a full ring (or a dead
 *    consumer) never makes a producer wait: it gets -EAGAIN (IBA link-level
 *    flow control: the sender holds the packet, nothing is dropped).
 *  - slot->turn says whose the slot is: 2*lap = free for the producer of
 *    that lap, 2*lap+1 = full for the consumer.  All-zero memory is the valid
 *    empty ring.  Producers publish with a release store of turn; the single
 *    consumer reads it with acquire.
 *  - `head` is written only by the consumer, which must hold its context's
 *    progress lock.
 *  - `sleeping`/`wake_seq` let the consumer sleep on a futex; producers wake
 *    it only when it announced sleep, so busy peers make no system call.
 *  - A producer writes its PID into the slot right after reserving it.  A
 *    producer killed before it publishes leaves the slot unpublished; the
 *    consumer skips such a slot once its producer is known to be gone
 *    (engine.c), so a peer's death never wedges the ring.
 */
#ifndef SIB_RING_H
#define SIB_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/sib_shm.h"

#define SIB_CACHELINE 64

struct sib_ring_hdr {
	_Alignas(SIB_CACHELINE) _Atomic uint64_t tail;     /* producers */
	_Alignas(SIB_CACHELINE) _Atomic uint64_t head;     /* consumer */
	_Alignas(SIB_CACHELINE) _Atomic uint32_t sleeping; /* consumer waits on wake_seq */
	_Atomic uint32_t wake_seq;
	_Atomic uint64_t reserved0;    /* (was a shared full counter: producers
	                                  now count a full ring locally) */
	_Atomic uint64_t dropped;      /* consumer: malformed or misrouted */
};

#define SIB_SLOT_HDR_BYTES 64u
#define SIB_SLOT_DATA_BYTES (SIB_INBOX_SLOT_BYTES - SIB_SLOT_HDR_BYTES)

struct sib_ring_slot {
	_Atomic uint32_t turn;
	uint32_t len;                  /* packet bytes in data[] */
	uint32_t flags;                /* SIB_SLOT_F_* */
	uint32_t src_inbox;            /* producer's inbox, for traces */
	_Atomic int32_t producer_pid;  /* set right after reserve, 0 once released */
	uint8_t pad[SIB_SLOT_HDR_BYTES - 20];
	uint8_t data[SIB_SLOT_DATA_BYTES];
};

#define SIB_SLOT_F_VCRC 0x1            /* data ends with a computed VCRC */

_Static_assert(sizeof(struct sib_ring_hdr) <= SIB_INBOX_HDR_BYTES, "ring header fits");
_Static_assert(sizeof(struct sib_ring_slot) == SIB_INBOX_SLOT_BYTES, "slot layout");

/* A mapped inbox: header page followed by SIB_INBOX_SLOTS slots. */
struct sib_ring {
	struct sib_ring_hdr *hdr;
	struct sib_ring_slot *slots;
};

static inline void sib_ring_attach(struct sib_ring *r, void *base)
{
	r->hdr = base;
	r->slots = (struct sib_ring_slot *)((char *)base + SIB_INBOX_HDR_BYTES);
}

/*
 * Producer: claim the next slot.  Returns the slot (write the packet into
 * slot->data, then call sib_ring_publish) or NULL when the ring is full.
 * Lock-free; safe from any thread of any process.
 */
static inline struct sib_ring_slot *sib_ring_reserve(struct sib_ring *r, uint64_t *ticket)
{
	uint64_t t = atomic_load_explicit(&r->hdr->tail, memory_order_relaxed);

	for (;;) {
		struct sib_ring_slot *s = &r->slots[t % SIB_INBOX_SLOTS];
		uint32_t want = (uint32_t)(2 * (t / SIB_INBOX_SLOTS));
		uint32_t turn = atomic_load_explicit(&s->turn, memory_order_acquire);

		if (turn == want) {
			if (atomic_compare_exchange_weak_explicit(&r->hdr->tail, &t, t + 1,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				*ticket = t;
				return s;
			}
			/* t was reloaded by the failed CAS */
		} else if ((int32_t)(turn - want) < 0) {
			return NULL; /* previous lap not consumed yet: full */
		} else {
			t = atomic_load_explicit(&r->hdr->tail, memory_order_relaxed);
		}
	}
}

/*
 * Producer: hand the slot to the consumer.  Returns 1 if the consumer
 * announced that it sleeps (the caller wakes it with sib_ring_wake, a
 * futex system call), 0 otherwise, or -1 if the consumer had given the
 * slot up for lost (sib_ring_skip: it took this producer for dead): the
 * packet is lost, as on a wire, and the sender's retry timer recovers.
 * The turn moves by CAS so that exactly one of publish and skip wins.
 */
static inline int sib_ring_publish(struct sib_ring *r, struct sib_ring_slot *s,
				   uint64_t ticket, uint32_t len, uint32_t flags)
{
	uint32_t expect = (uint32_t)(2 * (ticket / SIB_INBOX_SLOTS));

	s->len = len;
	s->flags = flags;
	if (!atomic_compare_exchange_strong_explicit(&s->turn, &expect, expect + 1,
						     memory_order_seq_cst, memory_order_relaxed))
		return -1;
	return atomic_load_explicit(&r->hdr->sleeping, memory_order_seq_cst) != 0;
}

/* Consumer (holds the progress lock): the oldest full slot, or NULL. */
static inline struct sib_ring_slot *sib_ring_peek(struct sib_ring *r)
{
	uint64_t h = atomic_load_explicit(&r->hdr->head, memory_order_relaxed);
	struct sib_ring_slot *s = &r->slots[h % SIB_INBOX_SLOTS];
	uint32_t full = (uint32_t)(2 * (h / SIB_INBOX_SLOTS) + 1);

	if (atomic_load_explicit(&s->turn, memory_order_acquire) != full)
		return NULL;
	return s;
}

/* Consumer: give the slot returned by sib_ring_peek back to producers. */
static inline void sib_ring_release(struct sib_ring *r, struct sib_ring_slot *s)
{
	uint64_t h = atomic_load_explicit(&r->hdr->head, memory_order_relaxed);

	atomic_store_explicit(&r->hdr->head, h + 1, memory_order_relaxed);
	atomic_store_explicit(&s->producer_pid, 0, memory_order_relaxed);
	atomic_store_explicit(&s->turn, (uint32_t)(2 * (h / SIB_INBOX_SLOTS + 1)),
			      memory_order_release);
}

/*
 * Consumer: give up the oldest slot, reserved but never published (its
 * producer is dead).  False if the producer published it after all.
 */
static inline bool sib_ring_skip(struct sib_ring *r, struct sib_ring_slot *s)
{
	uint64_t h = atomic_load_explicit(&r->hdr->head, memory_order_relaxed);
	uint32_t expect = (uint32_t)(2 * (h / SIB_INBOX_SLOTS));

	if (!atomic_compare_exchange_strong_explicit(&s->turn, &expect, expect + 2,
						     memory_order_seq_cst, memory_order_relaxed))
		return false;
	atomic_store_explicit(&s->producer_pid, 0, memory_order_relaxed);
	atomic_store_explicit(&r->hdr->head, h + 1, memory_order_relaxed);
	return true;
}

/*
 * Consumer: the oldest slot was reserved by a producer that has not
 * published it (yet).  Returns that slot, or NULL if the ring is simply
 * empty or its oldest slot is full.
 */
static inline struct sib_ring_slot *sib_ring_stalled(struct sib_ring *r)
{
	uint64_t h = atomic_load_explicit(&r->hdr->head, memory_order_relaxed);

	if (atomic_load_explicit(&r->hdr->tail, memory_order_relaxed) == h || sib_ring_peek(r))
		return NULL;
	return &r->slots[h % SIB_INBOX_SLOTS];
}

/* Wake a consumer that sleeps in sib_ring_wait (futex, shared mapping). */
void sib_ring_wake(struct sib_ring *r);

/* Snapshot of the wake sequence: take it before checking whatever the
 * caller waits for, and pass it to sib_ring_wait/sib_ring_nap. */
static inline uint32_t sib_ring_wake_seq(struct sib_ring *r)
{
	return atomic_load_explicit(&r->hdr->wake_seq, memory_order_seq_cst);
}

/*
 * Consumer: sleep until a producer publishes, someone calls sib_ring_wake
 * (after the `seq` snapshot was taken: no wakeup is lost), or timeout_ns
 * passes (< 0: no timeout).  Announces the sleep so that producers wake it,
 * and re-checks the ring after announcing.
 */
void sib_ring_wait(struct sib_ring *r, uint32_t seq, int64_t timeout_ns);

/* Like sib_ring_wait, but producers are not asked to wake us: only
 * sib_ring_wake or the timeout end it. */
void sib_ring_nap(struct sib_ring *r, uint32_t seq, int64_t timeout_ns);

#endif
