/* SPDX-License-Identifier: MIT */
/*
 * Multi-producer ring (docs/link.md): what `softib capture` reads, every
 * context of the uid producing into it (common/sib_shm.h SIB_RING_BYTES),
 * and, in struct sib_ring_hdr, the layout of a context's inbox page (its
 * doorbell: wake_seq, pairs_seq; its link counters follow).  Packets
 * between contexts travel in pair rings (pair.h), not here.  Not IBA.
 * Must not include hca/ or verbs/.
 *
 * Every byte of the mapping is writable by every producer, so nothing in it
 * is trusted by the consumer (DESIGN principle 6):
 *  - slot->state = turn << 32 | producer pid, one 64-bit word.  turn 2*lap
 *    with pid 0 is free for the producer of that lap; 2*lap with a pid is
 *    claimed by that producer; 2*lap+1 is published.  A producer claims a
 *    slot and names itself in ONE compare-and-swap: no claimed slot is ever
 *    anonymous.  All-zero memory is the valid empty ring.
 *  - `tail` is only a hint where to claim next: producers advance it by CAS
 *    once the slot under it is claimed (and help each other do so); a
 *    garbage tail costs a producer at most SIB_RING_TRIES steps and is
 *    repaired by the consumer (sib_ring_check).
 *  - The consumer's position is its PRIVATE copy (struct sib_ring_rx.head);
 *    the shared `head` is written for status only, never read back.
 *  - A slot claimed and never published (producer killed or stopped) is
 *    skipped by age (sib_ring_check) and QUARANTINED: its state becomes the
 *    next lap's turn with the negated pid of the producer that claimed it,
 *    which no producer takes for free, so a producer that resumes late
 *    writes only into a slot nobody else uses (its publish then fails).
 *    The consumer steps over a quarantined slot on every lap without
 *    waiting, and frees it once that pid is gone or after
 *    SIB_RING_QUARANTINE_NS; at most SIB_RING_QUARANTINE_MAX at once.
 *    A slot whose turn is neither "ours" nor "published", or a quarantine
 *    the consumer did not make, is garbage: dropped and counted.  Work per call is
 *    bounded, so no content of the mapping can hang the consumer.
 *  - `sleeping`/`wake_seq` let the consumer sleep on a futex; producers wake
 *    it only when it announced sleep, so busy peers make no system call.
 * Locking: producers are lock-free; the consumer side must be serialized by
 * its owner (the context's progress lock).
 */
#ifndef SIB_RING_H
#define SIB_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/sib_shm.h"

#define SIB_CACHELINE 64

/* Test hook: tests/unit/test_ring.c defines it to stop a producer at each step. */
#ifndef SIB_RING_STEP
#define SIB_RING_STEP(n) ((void)0)
#endif

struct sib_ring_hdr {
	_Alignas(SIB_CACHELINE) _Atomic uint64_t tail;     /* producers: claim hint */
	_Alignas(SIB_CACHELINE) _Atomic uint64_t head;     /* consumer: for status only */
	_Alignas(SIB_CACHELINE) _Atomic uint32_t sleeping; /* consumer waits on wake_seq */
	_Atomic uint32_t wake_seq;
	_Atomic uint64_t reserved0;
	_Atomic uint64_t dropped;      /* consumer: malformed, misrouted or garbage */
	/* A context's inbox page (its doorbell): softibd bumps this when a
	 * pair ring into the context awaits SIB_CTL_PAIR_ACCEPT (link/pair.h). */
	_Alignas(SIB_CACHELINE) _Atomic uint32_t pairs_seq;
};

#define SIB_SLOT_HDR_BYTES 64u
#define SIB_SLOT_DATA_BYTES (SIB_INBOX_SLOT_BYTES - SIB_SLOT_HDR_BYTES)

struct sib_ring_slot {
	_Atomic uint64_t state;        /* turn << 32 | producer pid (see above) */
	uint32_t len;                  /* packet bytes in data[] */
	uint32_t flags;                /* SIB_SLOT_F_* */
	uint32_t src_inbox;            /* producer's inbox, for traces */
	uint32_t pad0;
	uint64_t stamp;                /* capture rings: CLOCK_REALTIME ns when captured */
	uint8_t pad[SIB_SLOT_HDR_BYTES - 32];
	uint8_t data[SIB_SLOT_DATA_BYTES];
};

#define SIB_SLOT_F_VCRC 0x1            /* data ends with a computed VCRC */
/* XRC forwarding (src/hca/xrc_fwd.c): the packet is an XRC SEND the owner
 * of its TGT QP passes on, unchanged, to the process that owns the XRC SRQ
 * its XRCETH names.  Its domain is not in the slot: the receiver reads the
 * TGT QP's from softibd's fabric map (qp_xrcd[]). */
#define SIB_SLOT_F_XRC_FWD 0x2
/* The packet carries a computed ICRC; without it the receiver does not
 * check the ICRC (a memory link cannot corrupt a packet: DESIGN principle
 * 1).  Whatever lets a packet leave memory (capture, the fault wrapper,
 * SOFTIB_ICRC=1) computes it (docs/link.md "CRCs on a memory link"). */
#define SIB_SLOT_F_ICRC 0x4

#define SIB_SLOT_STATE(turn, pid) ((uint64_t)(turn) << 32 | (uint32_t)(pid))
#define SIB_SLOT_TURN(st)         ((uint32_t)((st) >> 32))
#define SIB_SLOT_PID(st)          ((int32_t)(uint32_t)(st))

/* Direct placement (src/hca/direct.c): the requester placed this message's
 * data itself (or, on a READ response, read it itself); the packet has no
 * payload and stands for all of the message's PSNs. */
#define SIB_SLOT_F_PLACED 0x8

/* Steps a producer takes before it gives up on a (garbage) tail: -EAGAIN. */
#define SIB_RING_TRIES (2 * SIB_INBOX_SLOTS)
/* A claimed, unpublished oldest slot is skipped after this long if its
 * producer is gone, and after SIB_RING_STALL_MAX_NS in any case (stopped,
 * or a pid that lies).  Filling a slot takes microseconds. */
#define SIB_RING_STALL_DEAD_NS 10000000ull  /* 10 ms */
#define SIB_RING_STALL_MAX_NS  250000000ull /* 250 ms */
/* A skipped slot stays out of use until its producer is gone, or this
 * long at most (a producer stopped longer may still write into it late);
 * beyond SIB_RING_QUARANTINE_MAX quarantined slots, skipped slots are freed
 * at once (counted), so claims that are never published cannot take the
 * ring away for long. */
#define SIB_RING_QUARANTINE_NS  60000000000ull /* 60 s */
#define SIB_RING_QUARANTINE_MAX 64

_Static_assert(sizeof(struct sib_ring_hdr) <= 1024, "ring header fits before the link stats");
_Static_assert(sizeof(struct sib_ring_slot) == SIB_INBOX_SLOT_BYTES, "slot layout");

/* A mapped inbox as a producer sees it: header page followed by the slots. */
struct sib_ring {
	struct sib_ring_hdr *hdr;
	struct sib_ring_slot *slots;
};

/* The consumer's private state.  Never in shared memory. */
struct sib_ring_rx {
	struct sib_ring r;
	uint64_t head;                 /* next slot to consume: the truth (owner writes) */
	uint64_t stall_head;           /* oldest slot seen claimed ... */
	uint64_t stall_state;          /* ... in this state ... */
	uint64_t stall_since;          /* ... since then (ns); 0 = not stalled */
	uint64_t bad_slots;            /* garbage slot states dropped */
	uint64_t bad_tail;             /* garbage tails repaired */
	uint64_t skipped;              /* stalled slots skipped */
	uint64_t quarantine_freed;     /* quarantined slots given back to producers */
	uint64_t quarantine_full;      /* skipped slots freed at once: quarantine full */
	uint32_t quarantined;          /* slots in quarantine now */
	uint64_t q_since[SIB_INBOX_SLOTS]; /* per slot: quarantined since (ns), 0 = not */
};

static inline void sib_ring_attach(struct sib_ring *r, void *base)
{
	r->hdr = base;
	r->slots = (struct sib_ring_slot *)((char *)base + SIB_INBOX_HDR_BYTES);
}

/* Attach the consumer side.  The shared head is not read: a new owner
 * starts where the slots say, at 0 of a zero-filled inbox. */
static inline void sib_ring_rx_attach(struct sib_ring_rx *c, void *base)
{
	*c = (struct sib_ring_rx){ 0 };
	sib_ring_attach(&c->r, base);
}

static inline uint32_t sib_ring_turn(uint64_t ticket)
{
	return (uint32_t)(2 * (ticket / SIB_INBOX_SLOTS));
}

/*
 * Producer: claim the next slot in the name of `pid` (> 0).  Returns the
 * slot (write the packet into slot->data, then sib_ring_publish) or NULL
 * when the ring is full or its tail is garbage (retry later; IBA link-level
 * flow control: the sender holds the packet).  Lock-free, bounded.
 */
static inline struct sib_ring_slot *sib_ring_reserve(struct sib_ring *r, int32_t pid, uint64_t *ticket)
{
	uint64_t t = atomic_load_explicit(&r->hdr->tail, memory_order_acquire);

	for (unsigned int n = 0; n < SIB_RING_TRIES; n++) {
		struct sib_ring_slot *s = &r->slots[t % SIB_INBOX_SLOTS];
		uint32_t want = sib_ring_turn(t);
		uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);
		int32_t d = (int32_t)(SIB_SLOT_TURN(st) - want);

		if (d == 0 && SIB_SLOT_PID(st) == 0) {
			SIB_RING_STEP(0);
			if (!atomic_compare_exchange_strong_explicit(&s->state, &st, SIB_SLOT_STATE(want, pid),
								     memory_order_acq_rel, memory_order_relaxed))
				continue; /* lost the race: look again */
			SIB_RING_STEP(1);
			uint64_t t0 = t;
			/* May fail: another producer already helped. */
			atomic_compare_exchange_strong_explicit(&r->hdr->tail, &t0, t + 1,
								memory_order_release, memory_order_relaxed);
			SIB_RING_STEP(2);
			*ticket = t;
			return s;
		}
		if (d < 0)
			return NULL; /* the previous lap is not consumed: full */
		/* Claimed or published by another producer, or tail is behind:
		 * help move it on. */
		uint64_t t0 = t;
		t = atomic_compare_exchange_strong_explicit(&r->hdr->tail, &t0, t + 1, memory_order_acq_rel,
							    memory_order_acquire) ? t + 1 : t0;
	}
	return NULL;
}

/*
 * Producer: hand the slot to the consumer.  Returns 1 if the consumer
 * announced that it sleeps and this producer is the first to see it since
 * (the caller wakes it with sib_ring_wake, a futex system call), 0
 * otherwise, or -1 if the consumer had given the slot up (skipped it as
 * stalled): the packet is lost, as on a wire, and the sender's retry timer
 * recovers.  Exactly one of publish and skip wins.  One wake per sleep:
 * the first producer clears `sleeping` as it takes the wake on, so that
 * the packets published while the sleeper gets going (a futex wakeup takes
 * tens of microseconds here) make no system call each (ib_write_bw -s 8:
 * 0.11 wakes per message before).  The sleeper re-checks the ring after it
 * announced (sib_ring_wait), so a publish that finds the flag clear is
 * seen either way.
 */
static inline int sib_ring_publish(struct sib_ring *r, struct sib_ring_slot *s, uint64_t ticket,
				   int32_t pid, uint32_t len, uint32_t flags)
{
	uint32_t want = sib_ring_turn(ticket);
	uint64_t expect = SIB_SLOT_STATE(want, pid);

	s->len = len;
	s->flags = flags;
	SIB_RING_STEP(3);
	if (!atomic_compare_exchange_strong_explicit(&s->state, &expect, SIB_SLOT_STATE(want + 1, pid),
						     memory_order_seq_cst, memory_order_relaxed))
		return -1;
	SIB_RING_STEP(4);
	if (!atomic_load_explicit(&r->hdr->sleeping, memory_order_seq_cst))
		return 0;
	return atomic_exchange_explicit(&r->hdr->sleeping, 0, memory_order_seq_cst) != 0;
}

/* Consumer (slow path of sib_ring_peek): the oldest slot holds a turn no
 * honest producer writes.  Drop it.  ring.c */
struct sib_ring_slot *sib_ring_garbage(struct sib_ring_rx *c, struct sib_ring_slot *s);

/*
 * Consumer: the oldest published slot, or NULL (empty, or the oldest slot
 * is claimed but unpublished).  Garbage slot states are dropped and
 * counted on the way (at most one per call, so the work is bounded).
 */
static inline struct sib_ring_slot *sib_ring_peek(struct sib_ring_rx *c)
{
	struct sib_ring_slot *s = &c->r.slots[c->head % SIB_INBOX_SLOTS];
	uint32_t want = sib_ring_turn(c->head);
	uint32_t turn = SIB_SLOT_TURN(atomic_load_explicit(&s->state, memory_order_acquire));

	if (__builtin_expect(turn == want + 1, 1))
		return s;
	if (__builtin_expect(turn == want, 1))
		return NULL;
	return sib_ring_garbage(c, s);
}

/*
 * Any thread, without the owner's lock (sib_ring_wait): is a published
 * packet waiting at the consumer's position?  Read-only; the answer may be
 * stale by the time it returns.
 */
static inline bool sib_ring_ready(const struct sib_ring_rx *c)
{
	uint64_t h = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
	const struct sib_ring_slot *s = &c->r.slots[h % SIB_INBOX_SLOTS];

	return SIB_SLOT_TURN(atomic_load_explicit(&s->state, memory_order_acquire)) == sib_ring_turn(h) + 1;
}

/* Consumer: give the slot returned by sib_ring_peek back to producers. */
static inline void sib_ring_release(struct sib_ring_rx *c, struct sib_ring_slot *s)
{
	uint32_t next = sib_ring_turn(c->head) + 2;

	/* Atomic only for sib_ring_ready's sake: the owner is the one writer. */
	__atomic_store_n(&c->head, c->head + 1, __ATOMIC_RELAXED);
	atomic_store_explicit(&s->state, SIB_SLOT_STATE(next, 0), memory_order_release);
	atomic_store_explicit(&c->r.hdr->head, c->head, memory_order_relaxed);
}

/* Is process `pid` alive?  (kill(pid, 0); for sib_ring_check) */
bool sib_ring_pid_alive(int32_t pid);

/*
 * Consumer maintenance, called now and then (never per packet: it reads the
 * producers' cache line).  `now` in ns, CLOCK_MONOTONIC (any clock that
 * moves forward).  Skips a stalled oldest slot by age, drops a garbage one,
 * repairs a garbage tail.  Returns true if it changed anything;
 * *next_ns (if not NULL) gets when it wants to be called again (0: none).
 */
bool sib_ring_check(struct sib_ring_rx *c, uint64_t now, uint64_t *next_ns);

/* Wake a consumer that sleeps in sib_ring_wait (futex, shared mapping). */
void sib_ring_wake(struct sib_ring *r);
/* The same on a bare header (softibd's mapping of a context's inbox page). */
void sib_ring_hdr_wake(struct sib_ring_hdr *h);

/* Snapshot of the wake sequence: take it before checking whatever the
 * caller waits for, and pass it to sib_ring_wait/sib_ring_nap. */
static inline uint32_t sib_ring_wake_seq(struct sib_ring *r)
{
	return atomic_load_explicit(&r->hdr->wake_seq, memory_order_seq_cst);
}

/*
 * Consumer (any thread of the owner; read-only, so the owner's lock need
 * not be held): sleep until a producer publishes, someone calls sib_ring_wake
 * (after the `seq` snapshot was taken: no wakeup is lost), or timeout_ns
 * passes (< 0: no timeout).  Announces the sleep so that producers wake it,
 * and re-checks the ring after announcing.
 */
void sib_ring_wait(struct sib_ring_rx *c, uint32_t seq, int64_t timeout_ns);

/* Like sib_ring_wait, but producers are not asked to wake us: only
 * sib_ring_wake or the timeout end it. */
void sib_ring_nap(struct sib_ring *r, uint32_t seq, int64_t timeout_ns);

/*
 * One step of a consumer's busy wait on sib_ring_ready (the engine's
 * bounded spin, docs/transport.md): the CPU's spin-wait hint (x86 `pause`,
 * arm64 `yield`), which slows the loop down to the cache line's pace and,
 * on an SMT core, gives the sibling thread the pipeline.  Nothing elsewhere.
 */
static inline void sib_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
