/* SPDX-License-Identifier: MIT */
/*
 * Multi-producer ring (capture rings): the consumer's slow paths (garbage slots, stalled slots,
 * garbage tail) and sleep/wakeup (see ring.h for the protocol).  The futex
 * lives in shared memory, so the wake crosses processes; producers call it
 * only when the consumer announced that it sleeps.  Every loop here is
 * bounded: nothing in the shared mapping can make the consumer spin.
 * Consumer functions are serialized by the ring's owner.
 */
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "link/ring.h"

/* Garbage slots dropped per sib_ring_peek at most. */
#define SIB_RING_GARBAGE_BATCH 64

static void drop_oldest(struct sib_ring_rx *c, struct sib_ring_slot *s)
{
	uint32_t next = sib_ring_turn(c->head) + 2;

	__atomic_store_n(&c->head, c->head + 1, __ATOMIC_RELAXED);
	atomic_store_explicit(&s->state, SIB_SLOT_STATE(next, 0), memory_order_release);
	atomic_store_explicit(&c->r.hdr->head, c->head, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->r.hdr->dropped, 1, memory_order_relaxed);
}

struct sib_ring_slot *sib_ring_garbage(struct sib_ring_rx *c, struct sib_ring_slot *s)
{
	for (int n = 0; n < SIB_RING_GARBAGE_BATCH; n++) {
		uint32_t want, turn;

		/* No honest producer leaves any other turn in the oldest slot:
		 * only the consumer moves a slot past its lap. */
		c->bad_slots++;
		drop_oldest(c, s);
		s = &c->r.slots[c->head % SIB_INBOX_SLOTS];
		want = sib_ring_turn(c->head);
		turn = SIB_SLOT_TURN(atomic_load_explicit(&s->state, memory_order_acquire));
		if (turn == want + 1)
			return s;
		if (turn == want)
			return NULL;
	}
	return NULL;
}

static bool check_oldest(struct sib_ring_rx *c, uint64_t now, uint64_t *next_ns);

bool sib_ring_pid_alive(int32_t pid)
{
	return pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

/* Move the consumer past the oldest slot, which it leaves in state `to`. */
static bool step_over(struct sib_ring_rx *c, struct sib_ring_slot *s, uint64_t from, uint64_t to)
{
	if (!atomic_compare_exchange_strong_explicit(&s->state, &from, to, memory_order_seq_cst,
						     memory_order_relaxed))
		return false;
	__atomic_store_n(&c->head, c->head + 1, __ATOMIC_RELAXED);
	atomic_store_explicit(&c->r.hdr->head, c->head, memory_order_relaxed);
	/* No producer may have passed a quarantined slot yet: move tail on
	 * (as a producer helps), or the next check would take it for garbage. */
	from = c->head - 1;
	atomic_compare_exchange_strong_explicit(&c->r.hdr->tail, &from, c->head, memory_order_acq_rel,
						memory_order_relaxed);
	return true;
}

/*
 * The oldest slot is quarantined (turn ours, pid negated): step over it at
 * once, keeping it quarantined for the next lap, or free it for the next
 * lap if its producer is gone or the quarantine is old.  A quarantine we
 * did not make is garbage.  True if the head moved.
 */
static bool quarantine_step(struct sib_ring_rx *c, struct sib_ring_slot *s, uint64_t st, uint64_t now)
{
	uint32_t i = (uint32_t)(c->head % SIB_INBOX_SLOTS), want = sib_ring_turn(c->head);
	int32_t pid = SIB_SLOT_PID(st);

	if (!c->q_since[i] || pid == INT32_MIN) {
		(void)sib_ring_garbage(c, s);
		return true;
	}
	if (now - c->q_since[i] >= SIB_RING_QUARANTINE_NS || !sib_ring_pid_alive(-pid)) {
		if (!step_over(c, s, st, SIB_SLOT_STATE(want + 2, 0)))
			return false;
		c->q_since[i] = 0;
		c->quarantined--;
		c->quarantine_freed++;
		return true;
	}
	return step_over(c, s, st, SIB_SLOT_STATE(want + 2, pid)); /* still quarantined */
}

bool sib_ring_check(struct sib_ring_rx *c, uint64_t now, uint64_t *next_ns)
{
	bool moved = false;

	if (next_ns)
		*next_ns = 0;
	/* Quarantined slots are stepped over without waiting (bounded). */
	for (unsigned int n = 0; n < SIB_RING_QUARANTINE_MAX + 1; n++) {
		struct sib_ring_slot *s = &c->r.slots[c->head % SIB_INBOX_SLOTS];
		uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);

		if (SIB_SLOT_TURN(st) != sib_ring_turn(c->head) || SIB_SLOT_PID(st) >= 0)
			return check_oldest(c, now, next_ns) || moved;
		if (!quarantine_step(c, s, st, now))
			return true; /* changed under us: look again next time */
		moved = true;
		c->stall_since = 0;
	}
	if (next_ns)
		*next_ns = now + 1; /* more to step over: soon */
	return true;
}

static bool check_oldest(struct sib_ring_rx *c, uint64_t now, uint64_t *next_ns)
{
	struct sib_ring_slot *s = &c->r.slots[c->head % SIB_INBOX_SLOTS];
	uint32_t want = sib_ring_turn(c->head);
	uint64_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	uint32_t turn = SIB_SLOT_TURN(st);
	int32_t pid = SIB_SLOT_PID(st);

	if (next_ns)
		*next_ns = 0;
	if (turn == want + 1) {
		c->stall_since = 0;
		return false;
	}
	if (turn != want) {
		(void)sib_ring_garbage(c, s);
		c->stall_since = 0;
		return true;
	}
	if (pid == 0) {
		/* Free.  Honest producers move tail past a slot only once it
		 * is claimed, so tail != head here means a garbage tail
		 * (unless a claim lands right now: look at the slot again). */
		uint64_t t = atomic_load_explicit(&c->r.hdr->tail, memory_order_acquire);

		c->stall_since = 0;
		if (t == c->head || atomic_load_explicit(&s->state, memory_order_acquire) != st)
			return false;
		c->bad_tail++;
		atomic_fetch_add_explicit(&c->r.hdr->dropped, 1, memory_order_relaxed);
		if (t - c->head <= SIB_INBOX_SLOTS) {
			/* Ahead within a lap: producers may have published
			 * behind the hole already.  Step over the unclaimed
			 * slots up to the first used one, so that what they
			 * sent stays in order. */
			for (uint32_t n = 0; n < SIB_INBOX_SLOTS && c->head != t; n++) {
				uint32_t w = sib_ring_turn(c->head);
				uint64_t free_st = SIB_SLOT_STATE(w, 0);

				s = &c->r.slots[c->head % SIB_INBOX_SLOTS];
				if (!atomic_compare_exchange_strong_explicit(&s->state, &free_st,
									     SIB_SLOT_STATE(w + 2, 0),
									     memory_order_acq_rel,
									     memory_order_relaxed))
					break; /* claimed, published or garbage: peek decides */
				__atomic_store_n(&c->head, c->head + 1, __ATOMIC_RELAXED);
			}
			atomic_store_explicit(&c->r.hdr->head, c->head, memory_order_relaxed);
			return true;
		}
		/* Behind us or more than a lap ahead: nothing was published
		 * there (producers found "full"); claim from our head again. */
		atomic_compare_exchange_strong_explicit(&c->r.hdr->tail, &t, c->head, memory_order_acq_rel,
							memory_order_relaxed);
		return true;
	}
	/* Claimed, not published: measure its age on our own clock (the slot
	 * carries no time a producer could fake). */
	if (!c->stall_since || c->stall_head != c->head || c->stall_state != st) {
		c->stall_head = c->head;
		c->stall_state = st;
		c->stall_since = now ? now : 1;
		if (next_ns)
			*next_ns = now + SIB_RING_STALL_DEAD_NS;
		return false;
	}
	uint64_t age = now - c->stall_since;

	if (age < SIB_RING_STALL_MAX_NS && (age < SIB_RING_STALL_DEAD_NS || sib_ring_pid_alive(pid))) {
		if (next_ns)
			*next_ns = c->stall_since +
				   (age < SIB_RING_STALL_DEAD_NS ? SIB_RING_STALL_DEAD_NS : SIB_RING_STALL_MAX_NS);
		return false;
	}
	c->stall_since = 0;
	/* Exactly one of this and the producer's publish wins.  The slot is
	 * quarantined: the producer may still write into it when it resumes. */
	uint32_t i = (uint32_t)(c->head % SIB_INBOX_SLOTS);
	bool q = pid > 0 && c->quarantined < SIB_RING_QUARANTINE_MAX;

	if (!step_over(c, s, st, SIB_SLOT_STATE(want + 2, q ? -pid : 0)))
		return true; /* published (or scribbled on) meanwhile: peek decides */
	c->skipped++;
	if (q) {
		if (!c->q_since[i])
			c->quarantined++;
		c->q_since[i] = now ? now : 1;
	} else {
		c->quarantine_full++;
	}
	return true;
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

/* Every waiter wakes (INT_MAX): a process that waits on another's
 * doorbell cannot take its wakeup away. */
void sib_ring_hdr_wake(struct sib_ring_hdr *h)
{
	atomic_fetch_add_explicit(&h->wake_seq, 1, memory_order_seq_cst);
	futex(&h->wake_seq, FUTEX_WAKE, INT_MAX, NULL);
}

void sib_ring_wake(struct sib_ring *r)
{
	sib_ring_hdr_wake(r->hdr);
}

static void wait_seq(struct sib_ring *r, uint32_t seq, int64_t timeout_ns)
{
	struct timespec ts, *tsp = NULL;

	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tsp = &ts;
	}
	futex(&r->hdr->wake_seq, FUTEX_WAIT, seq, tsp);
}

void sib_ring_wait(struct sib_ring_rx *c, uint32_t seq, int64_t timeout_ns)
{
	atomic_store_explicit(&c->r.hdr->sleeping, 1, memory_order_seq_cst);
	/* Store-load order against producers (publish, then read sleeping). */
	atomic_thread_fence(memory_order_seq_cst);
	/* Read-only: the owner's lock is not held here. */
	if (!sib_ring_ready(c))
		wait_seq(&c->r, seq, timeout_ns);
	atomic_store_explicit(&c->r.hdr->sleeping, 0, memory_order_relaxed);
}

void sib_ring_nap(struct sib_ring *r, uint32_t seq, int64_t timeout_ns)
{
	wait_seq(r, seq, timeout_ns);
}
