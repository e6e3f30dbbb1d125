/* SPDX-License-Identifier: MIT */
/*
 * Inbox ring sleep and wakeup (see ring.h for the ring itself).  The futex
 * lives in shared memory, so the wake crosses processes; it is only called
 * when the consumer announced that it sleeps.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hca/ring.h"

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

void sib_ring_wake(struct sib_ring *r)
{
	atomic_fetch_add_explicit(&r->hdr->wake_seq, 1, memory_order_seq_cst);
	futex(&r->hdr->wake_seq, FUTEX_WAKE, 1, NULL);
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

void sib_ring_wait(struct sib_ring *r, uint32_t seq, int64_t timeout_ns)
{
	atomic_store_explicit(&r->hdr->sleeping, 1, memory_order_seq_cst);
	/* Store-load order against producers (publish, then read sleeping). */
	atomic_thread_fence(memory_order_seq_cst);
	if (!sib_ring_peek(r))
		wait_seq(r, seq, timeout_ns);
	atomic_store_explicit(&r->hdr->sleeping, 0, memory_order_relaxed);
}

void sib_ring_nap(struct sib_ring *r, uint32_t seq, int64_t timeout_ns)
{
	wait_seq(r, seq, timeout_ns);
}
