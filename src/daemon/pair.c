// SPDX-License-Identifier: MIT
/*
 * Pair rings (src/link/pair.h, docs/link.md "Pair rings"): softibd makes
 * the wire between two contexts and gives its ends to those two only.
 * PAIR_OPEN (the sender, naming its own OPEN_DEVICE handle, so it cannot
 * speak for another context) makes a ring into a live context, replies
 * with the sender's end and keeps the receiver's until that context takes
 * it (PAIR_ACCEPT), with the sender's inbox and generation: the receiver
 * learns who sends on each ring from softibd, never from the ring.  The
 * receiver is told by its inbox page's pairs_seq and a futex wake.
 * GET_INBOX (a receiver's doorbell page) is for its senders only.
 *
 * Bounds: one ring per (sender, receiver) at a time (a new PAIR_OPEN
 * replaces the one not yet taken), at most SIB_CTL_PAIRS_PENDING_MAX
 * waiting per receiver (EAGAIN beyond), and every ring waiting counts
 * against its sender's budget of pair rings (budget.c; EMFILE, ENFILE):
 * the fds softibd holds for rings are bounded per client and in all, and
 * go when either end closes.  The pair table is the authoritative
 * record; nothing of it is in shared memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/futex.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/softibd.h"
#include "link/ring.h"

/* One (sender, receiver) pair. */
struct sibd_pair {
	int fd;                         /* the receiver's end, not taken yet; -1 */
	struct sibd_client *charged;    /* the sender's client, whose budget holds fd */
	uint32_t sgen, rgen;            /* generations paired (0: never) */
	uint64_t made;                  /* order of making (oldest is accepted first) */
};

#define PAIR(d, s, r) (&(d)->pairs[(size_t)(s) * SIB_MAX_INBOXES + (r)])

int sibd_pairs_init(struct sibd *d)
{
	d->pairs = calloc((size_t)SIB_MAX_INBOXES * SIB_MAX_INBOXES, sizeof(*d->pairs));
	if (!d->pairs)
		return -ENOMEM;
	for (size_t i = 0; i < (size_t)SIB_MAX_INBOXES * SIB_MAX_INBOXES; i++)
		d->pairs[i].fd = -1;
	return 0;
}

static void pair_reset(struct sibd *d, struct sibd_pair *p, uint32_t r)
{
	if (p->fd >= 0) {
		close(p->fd);
		d->pairs_pending[r]--;
		d->pairs_fds--;
		p->charged->pairs--;
	}
	memset(p, 0, sizeof(*p));
	p->fd = -1;
}

void sibd_pairs_fini(struct sibd *d)
{
	for (uint32_t s = 0; d->pairs && s < SIB_MAX_INBOXES; s++)
		for (uint32_t r = 0; r < SIB_MAX_INBOXES; r++)
			pair_reset(d, PAIR(d, s, r), r);
	free(d->pairs);
	d->pairs = NULL;
}

void sibd_pairs_inbox_gone(struct sibd *d, uint32_t inbox)
{
	if (!d->pairs || inbox >= SIB_MAX_INBOXES)
		return;
	for (uint32_t i = 0; i < SIB_MAX_INBOXES; i++) {
		pair_reset(d, PAIR(d, inbox, i), i);
		pair_reset(d, PAIR(d, i, inbox), inbox);
	}
}

/* Is context (inbox, gen) open now? */
static bool live(const struct sibd *d, uint32_t inbox, uint32_t gen)
{
	return inbox < SIB_MAX_INBOXES && d->inbox[inbox].fd >= 0 && (gen & 1) && d->inbox[inbox].gen == gen;
}

/* Tell receiver r that a ring waits: its pairs_seq moves, and its engine,
 * if it sleeps on its doorbell, wakes. */
static void ring_doorbell(struct sibd *d, uint32_t r)
{
	struct sib_ring_hdr *h = mmap(NULL, SIB_INBOX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
				      d->inbox[r].fd, 0);

	if (h == MAP_FAILED) {
		sibd_log("inbox %u: mmap: %s", r, strerror(errno));
		return;
	}
	atomic_fetch_add_explicit(&h->pairs_seq, 1, memory_order_seq_cst);
	sib_ring_hdr_wake(h);
	munmap(h, SIB_INBOX_BYTES);
}

/* A zero-filled ring memfd clients may map and write but never resize. */
static int ring_memfd(uint32_t s, uint32_t r)
{
	char name[48];

	snprintf(name, sizeof(name), "softib-pair-%u-%u", s, r);
	return sibd_sealed_memfd(name, SIB_PAIR_BYTES);
}

int sibd_cmd_pair_open(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_pair *pr = &m->u.pair;
	struct sibd_pair *p;
	uint32_t s, r = pr->inbox;
	int fd, ret;

	if (!d->pairs)
		return -ENOMEM;
	ret = sibd_dev_inbox(c, pr->dev_handle, &s);
	if (ret)
		return ret;
	if (!live(d, r, pr->inbox_gen))
		return -ESTALE;
	p = PAIR(d, s, r);
	if (p->fd < 0 && d->pairs_pending[r] >= SIB_CTL_PAIRS_PENDING_MAX) {
		d->pairs_refused++;
		return -EAGAIN; /* the receiver does not take its rings */
	}
	/* The fd softibd holds until the receiver takes it is the sender's
	 * (budget.c "pair_rings"); a replaced one was charged already. */
	if (p->fd < 0 && (ret = sibd_budget_take(d, c->proc, SIBD_RES_PAIR)))
		return ret;
	fd = ring_memfd(s, r);
	if (fd < 0)
		return fd;
	pair_reset(d, p, r); /* a ring the receiver did not take yet is replaced */
	p->fd = fd;
	p->charged = c;
	c->pairs++;
	p->sgen = d->inbox[s].gen;
	p->rgen = pr->inbox_gen;
	p->made = ++d->pairs_made;
	d->pairs_pending[r]++;
	d->pairs_fds++;
	ring_doorbell(d, r);
	pr->ring_size = SIB_PAIR_BYTES;
	*pass_fd = fd; /* ours stays with p until the receiver takes it */
	return 0;
}

int sibd_cmd_pair_accept(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_pair *pr = &m->u.pair;
	struct sibd_pair *best = NULL;
	uint32_t r, from = 0;
	int ret;

	if (!d->pairs)
		return -ENOENT;
	ret = sibd_dev_inbox(c, pr->dev_handle, &r);
	if (ret)
		return ret;
	if (!d->pairs_pending[r])
		return -ENOENT;
	for (uint32_t s = 0; s < SIB_MAX_INBOXES; s++) {
		struct sibd_pair *p = PAIR(d, s, r);

		if (p->fd >= 0 && (!best || p->made < best->made)) {
			best = p;
			from = s;
		}
	}
	if (!best)
		return -ENOENT;
	/* Handed over with the reply (a queued reply holds its own dup),
	 * then closed: softibd keeps no fd of a taken ring. */
	*pass_fd = best->fd;
	d->pass_owned = true;
	best->fd = -1;
	best->charged->pairs--;
	d->pairs_pending[r]--;
	d->pairs_fds--;
	pr->inbox = from;
	pr->inbox_gen = best->sgen;
	pr->ring_size = SIB_PAIR_BYTES;
	return 0;
}

int sibd_pair_check_doorbell(struct sibd *d, struct sibd_client *c, uint32_t dev_handle, uint32_t r,
			     uint32_t rgen)
{
	uint32_t s;
	int ret = sibd_dev_inbox(c, dev_handle, &s);

	if (ret)
		return ret;
	if (!live(d, r, rgen))
		return -ESTALE;
	if (!d->pairs)
		return -EPERM;
	if (PAIR(d, s, r)->rgen != rgen || PAIR(d, s, r)->sgen != d->inbox[s].gen) {
		d->pairs_refused++;
		return -EPERM; /* not its receiver: nobody else maps its page */
	}
	return 0;
}
