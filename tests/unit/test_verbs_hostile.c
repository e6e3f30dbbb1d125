// SPDX-License-Identifier: MIT
/*
 * Issue 15's hostile same-uid process, against a live RC connection
 * between two contexts (docs/threat-model.md).  The attacker is what any
 * process of the uid can be: its own connection to softibd and its own
 * device context (verbs_harness.c inbox_map), with the one pair ring
 * softibd makes from it to a victim.
 *  - Snooping: GET_INBOX of a context it has no ring to is refused, and
 *    nothing it can map holds a byte of the victims' traffic (before pair
 *    rings, GET_INBOX gave any inbox, payloads in its used slots).
 *  - Stalling: it floods its ring to the receiver with junk and slot
 *    states no sender may write, while the real connection runs 2,000 SENDs: all
 *    complete, in order, with no ACK timeout (before, 64 claimed and
 *    never published slots cost 21 s of no progress).
 * Forged packets and ACKs into the connection: test_verbs.c
 * forged_from_non_peer.  Writes through /proc: test_dx_probe.c.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hca/hca.h"
#include "status_text.h"
#include "verbs_harness.h"

#define MARK "SNOOP-MARK-"

static bool holds(const void *p, size_t len, const char *what)
{
	return memmem(p, len, what, strlen(what)) != NULL;
}

/* SEND i (64 bytes from e[0]'s buf) into a receive at e[1]'s buf; both
 * completions in order, within ms. */
static void send_one(struct pair *p, int i, unsigned int ms)
{
	struct ibv_sge sge = { (uintptr_t)p->e[0].buf, 64, p->e[0].mr->lkey };
	struct ibv_wc wc;

	post_recv(&p->e[1], (uint64_t)i, 0, 64);
	assert_int_equal(post_send(&p->e[0], IBV_WR_SEND, (uint64_t)i, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p->e[0].cq, &wc, ms);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p->e[1].cq, &wc, ms);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, (uint64_t)i);
}

static void test_snoop(void **state)
{
	struct conn_opts o = default_opts;
	struct sib_ctl_msg msg;
	struct inbox_map m;
	struct pair p;
	uint64_t w;
	int fd = -1;

	(void)state;
	pair_open(&p, 1, &o, &o);
	for (int i = 0; i < 64; i++) {
		snprintf((char *)p.e[0].buf, 64, MARK "%d", i);
		send_one(&p, i, 5000);
	}
	/* The attacker, paired with the receiver (as anyone may be). */
	inbox_map(&m, p.e[1].qp->qp_num);
	/* The sender's page: no ring from the attacker to it, no page. */
	w = atomic_load(&m.fab->qp_owner[p.e[0].qp->qp_num]);
	memset(&msg, 0, sizeof(msg));
	msg.hdr.op = SIB_CTL_GET_INBOX;
	msg.u.get_inbox.inbox = SIB_QPO_INBOX(w);
	msg.u.get_inbox.inbox_gen = SIB_QPO_GEN(w);
	msg.u.get_inbox.dev_handle = m.dev_handle;
	assert_int_equal(sib_ctl_call(m.fd, &msg, &fd), 0);
	assert_int_equal(msg.hdr.status, EPERM);
	assert_int_equal(fd, -1);
	{
		char *text = status_text();

		assert_true(field(text, "pairs ", "refused") >= 1); /* counted */
		assert_true(field(text, "pairs ", "made") >= 3);    /* both ways, and the attacker's */
		free(text);
	}
	/* What it does hold: its own ring and the receiver's page. */
	assert_false(holds(m.base, SIB_PAIR_BYTES, MARK));
	assert_false(holds(m.db, SIB_INBOX_BYTES, MARK));
	inbox_unmap(&m);
	pair_close(&p);
}

struct flood {
	struct inbox_map *m;
	_Atomic bool stop;
	uint64_t sent;
};

/* Junk as fast as the ring takes it: packets of random lengths and
 * bytes, and now and then a slot state no sender may write. */
static void *flood_main(void *arg)
{
	struct flood *f = arg;
	uint32_t x = 12345;

	while (!atomic_load(&f->stop)) {
		struct sib_ring_slot *s = sib_pair_reserve(f->m->tx);

		if (!s) {
			sched_yield();
			continue;
		}
		x = x * 1103515245u + 12345u;
		if (x % 7 == 0) {
			atomic_store(&s->state, SIB_SLOT_STATE(sib_pair_turn(f->m->tx->tail) + 3 + x % 5, 0));
			f->m->tx->tail++;
			continue;
		}
		for (unsigned int i = 0; i < 64; i++)
			s->data[i] = (uint8_t)(x >> (i % 24));
		(void)sib_pair_publish(f->m->tx, s, x % 200, x & SIB_SLOT_F_ICRC);
		if (++f->sent % 64 == 0)
			sched_yield();
	}
	return NULL;
}

static void test_stall(void **state)
{
	struct conn_opts o = default_opts;
	struct flood f = { 0 };
	struct inbox_map m;
	struct sib_context *c0;
	struct pair p;
	pthread_t t;
	uint64_t end;

	(void)state;
	o.timeout = 18; /* ~1 s: a loaded CI machine is not an attack */
	pair_open(&p, 1, &o, &o);
	c0 = to_sctx(p.e[0].ctx);
	inbox_map(&m, p.e[1].qp->qp_num);
	f.m = &m;
	assert_int_equal(pthread_create(&t, NULL, flood_main, &f), 0);
	end = now_ms() + 30000;
	for (int i = 0; i < 2000; i++) {
		memcpy(p.e[0].buf, &i, sizeof(i));
		send_one(&p, i, 10000);
		assert_int_equal(memcmp(p.e[1].buf, &i, sizeof(i)), 0);
		if (now_ms() > end)
			fail_msg("%d of 2000 SENDs in 30 s beside the flood", i);
	}
	atomic_store(&f.stop, true);
	pthread_join(t, NULL);
	assert_int_equal(c0->ack_timeouts, 0);
	assert_true(f.sent > 0);
	print_message("2000 SENDs beside %llu junk packets\n", (unsigned long long)f.sent);
	inbox_unmap(&m);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snoop),
		cmocka_unit_test(test_stall),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
