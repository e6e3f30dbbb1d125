/* SPDX-License-Identifier: MIT */
/*
 * Direct placement (src/hca/direct.c, docs/transport.md "Direct
 * placement") over the loopback fabric of hca_loop.c, whose host keeps
 * the contexts' memfds as softibd does (DX_PUT) and hands them to a peer
 * with a QP towards them (DX_GET): placement on and off give the same memory and
 * completions; ordering behind packets; dereg/rereg against a writer;
 * access flags and read-only mappings; fork; a hostile export table.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "hca/direct.h"
#include "hca/hca.h"
#include "hca/provider.h"
#include "hca_loop.h"

static int setup(void **state)
{
	(void)state;
	fabric_setup();
	loop_dx_serve = true; /* the other hca_loop tests see packets only */
	return 0;
}

static unsigned int placed_pkts(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < nlog; i++)
		n += is_req(plog[i].opc) && (plog[i].sflags & SIB_SLOT_F_PLACED);
	return n;
}

/* ---- on and off give the same result ---- */

struct outcome {
	uint8_t *a, *b;                /* both buffers at the end */
	struct ibv_wc wc[2][64];
	unsigned int nwc[2];
	unsigned int placed;
};

struct op {
	enum ibv_wr_opcode opc;
	uint64_t loff, roff;           /* offsets in A's and B's buffers */
	uint32_t len;
};

/* Sizes 1 B .. 1 MiB, across page boundaries, into partial head/tail
 * pages (the buffers start 16 bytes into a page: calloc of 1 MiB). */
static const struct op ops[] = {
	{ IBV_WR_RDMA_WRITE, 0, 8192, 1 },
	{ IBV_WR_RDMA_WRITE, 100, 4096 * 3 - 16 - 3, 7 },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, 200, 4096 * 5 + 1, 4095 },
	{ IBV_WR_RDMA_READ, 300, 4096 * 7 - 50, 4097 },
	{ IBV_WR_RDMA_WRITE, 0, 1, 300 },             /* partial head page: packets */
	{ IBV_WR_RDMA_WRITE, 0, BUF - 100, 100 },     /* partial tail page: packets */
	{ IBV_WR_RDMA_READ, 5000, 4096 * 10, 65536 },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, 9, 4096 * 30 + 5, 65536 + 13 },
	{ IBV_WR_RDMA_WRITE, 0, 4096 * 2, 4096 * 200 },
	{ IBV_WR_RDMA_READ, 0, 4096, BUF - 8192 },
	{ IBV_WR_RDMA_WRITE, 0, 0, BUF },             /* the whole MR: head/tail partial */
};

static void run_ops(bool direct, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	if (!direct)
		setenv("SOFTIB_DIRECT", "0", 1);
	up(&def_opts);
	unsetenv("SOFTIB_DIRECT");
	fill(sides[A].buf, BUF, 1);
	fill(sides[B].buf, BUF, 2);
	for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const struct op *p = &ops[i];

		if (p->opc == IBV_WR_RDMA_WRITE_WITH_IMM)
			post_recv(B, 0, 0, 1000 + i);
		/* a new pattern for every op, so that a lost or stale one shows */
		fill(sides[A].buf + p->loff, p->len, (uint8_t)(10 + i));
		post_send(A, p->opc, p->loff, p->len, (uintptr_t)sides[B].buf + p->roff,
			  sides[B].mr->rkey, i);
		o->wc[A][o->nwc[A]++] = poll_wc(A);
		if (p->opc == IBV_WR_RDMA_WRITE_WITH_IMM)
			o->wc[B][o->nwc[B]++] = poll_wc(B);
	}
	settle(5);
	o->placed = placed_pkts();
	o->a = malloc(BUF);
	o->b = malloc(BUF);
	assert_true(o->a && o->b);
	memcpy(o->a, sides[A].buf, BUF);
	memcpy(o->b, sides[B].buf, BUF);
	down(NULL);
}

static void test_on_off_same(void **state)
{
	struct outcome *on = calloc(1, sizeof(*on)), *off = calloc(1, sizeof(*off));

	(void)state;
	assert_true(on && off);
	run_ops(true, on);
	run_ops(false, off);
	/* placed: every op but the two into partial pages and the whole MR */
	assert_int_equal(on->placed, sizeof(ops) / sizeof(ops[0]) - 3);
	assert_int_equal(off->placed, 0);
	assert_memory_equal(on->a, off->a, BUF);
	assert_memory_equal(on->b, off->b, BUF);
	for (unsigned int s = 0; s < 2; s++) {
		assert_int_equal(on->nwc[s], off->nwc[s]);
		for (unsigned int i = 0; i < on->nwc[s]; i++) {
			const struct ibv_wc *x = &on->wc[s][i], *y = &off->wc[s][i];

			assert_int_equal(x->status, IBV_WC_SUCCESS);
			assert_int_equal(x->status, y->status);
			assert_int_equal(x->wr_id, y->wr_id);
			assert_int_equal(x->opcode, y->opcode);
			assert_int_equal(x->byte_len, y->byte_len);
			assert_int_equal(x->wc_flags, y->wc_flags);
			assert_int_equal(x->imm_data, y->imm_data);
		}
	}
	/* and both are what the ops say, applied in order */
	{
		uint8_t *ma = malloc(BUF), *mb = malloc(BUF);

		assert_true(ma && mb);
		fill(ma, BUF, 1);
		fill(mb, BUF, 2);
		for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
			const struct op *p = &ops[i];

			fill(ma + p->loff, p->len, (uint8_t)(10 + i));
			if (p->opc == IBV_WR_RDMA_READ)
				memcpy(ma + p->loff, mb + p->roff, p->len);
			else
				memcpy(mb + p->roff, ma + p->loff, p->len);
		}
		assert_memory_equal(on->a, ma, BUF);
		assert_memory_equal(on->b, mb, BUF);
		free(ma);
		free(mb);
	}
	free(on->a);
	free(on->b);
	free(off->a);
	free(off->b);
	free(on);
	free(off);
}

/* ---- ordering ---- */

static uint8_t *page_up(uint8_t *p)
{
	return (uint8_t *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
}

static bool placed_of(unsigned int from, uint32_t dmalen, bool *seen)
{
	for (unsigned int i = from; i < nlog; i++)
		if (is_req(plog[i].opc) && plog[i].dmalen == dmalen) {
			*seen = true;
			return plog[i].sflags & SIB_SLOT_F_PLACED;
		}
	*seen = false;
	return false;
}

/* A WRITE that goes as packets (it touches a partial page), then one that
 * could be placed to the same bytes: the second waits for the first's ACK
 * (it goes as packets), so the later data wins.  SEND then WRITE alike. */
static void test_ordering(void **state)
{
	uint8_t *rb, *pb;
	bool seen;

	(void)state;
	up(&def_opts);
	rb = sides[B].buf;
	pb = page_up(rb);
	fill(sides[A].buf, 8192, 1);
	fill(sides[A].buf + 65536, 8192, 2);
	/* 1: from B's partial head page on into full pages */
	assert_true(pb > rb && pb - rb < 4096);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 8000, (uintptr_t)pb - 10, sides[B].mr->rkey, 1);
	/* 2: full-page bytes of 1, posted before 1 is acknowledged */
	post_send(A, IBV_WR_RDMA_WRITE, 65536, 4000, (uintptr_t)pb + 100, sides[B].mr->rkey, 2);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	assert_false(placed_of(0, 8000, &seen));
	assert_true(seen);
	assert_false(placed_of(0, 4000, &seen));
	assert_true(seen);
	assert_memory_equal(pb + 100, sides[A].buf + 65536, 4000);
	assert_memory_equal(pb - 10, sides[A].buf, 110);
	assert_memory_equal(pb + 4100, sides[A].buf + 4110, 8000 - 4110);
	/* 3: now everything is acknowledged: placed */
	fill(sides[A].buf + 65536, 4000, 3);
	post_send(A, IBV_WR_RDMA_WRITE, 65536, 3999, (uintptr_t)pb + 101, sides[B].mr->rkey, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 3999, &seen));
	assert_memory_equal(pb + 101, sides[A].buf + 65536, 3999);

	/* SEND, then a WRITE posted before the SEND is acknowledged */
	post_recv(B, 100000, 64, 7);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 4);
	fill(sides[A].buf + 65536, 4000, 4);
	post_send(A, IBV_WR_RDMA_WRITE, 65536, 3998, (uintptr_t)rb + 8192, sides[B].mr->rkey, 5);
	expect_wc(A, 4, IBV_WC_SUCCESS);
	expect_wc(A, 5, IBV_WC_SUCCESS);
	expect_wc(B, 7, IBV_WC_SUCCESS);
	assert_false(placed_of(0, 3998, &seen));
	assert_true(seen);
	assert_memory_equal(rb + 8192, sides[A].buf + 65536, 3998);
	down(NULL);
}

/* A capture at the receiver (its link's flag in its inbox header) turns
 * placement off toward it: the capture must see real packets. */
static void test_receiver_capture(void **state)
{
	struct sib_qp *qa;
	struct sib_link_stats *ps;
	uint8_t *pb;
	bool seen;

	(void)state;
	up(&def_opts);
	pb = page_up(sides[B].buf);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 100, (uintptr_t)pb, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	qa = to_sqp(sides[A].qp);
	assert_non_null(qa->dest.dest);
	ps = (struct sib_link_stats *)((uint8_t *)qa->dest.dest->tx.db.hdr + SIB_LINK_STATS_OFF);
	atomic_store(&ps->flags, SIB_LINK_STAT_CAPTURE);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 101, (uintptr_t)pb, sides[B].mr->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	assert_false(placed_of(0, 101, &seen));
	assert_true(seen);
	atomic_store(&ps->flags, 0);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 102, (uintptr_t)pb, sides[B].mr->rkey, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 102, &seen));
	down(NULL);
}

/* Placed messages cost one packet each: fourteen WRITEs of 90 PSNs (90 KiB
 * at MTU 1024) all start and land before any ACK, where packets stop at
 * SIB_MAX_UNACKED_PSNS outstanding. */
static void test_placed_window(void **state)
{
	const uint32_t len = 90 * 1024;
	struct sib_qp *qa;
	uint8_t *pb;

	(void)state;
	up(&def_opts);
	pb = page_up(sides[B].buf);
	qa = to_sqp(sides[A].qp);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 1, (uintptr_t)pb, sides[B].mr->rkey, 99);
	expect_wc(A, 99, IBV_WC_SUCCESS); /* the peer is resolved now */
	for (unsigned int i = 0; i < 14; i++) {
		uint64_t off = (i % 11) * (uint64_t)len;

		if (i < 11)
			memset(sides[A].buf + off, 0x30 + (int)i, len);
		post_send(A, IBV_WR_RDMA_WRITE, off, len, (uintptr_t)pb + off, sides[B].mr->rkey, i);
	}
	/* nothing pumped yet, so no ACK came back: all of them are out */
	assert_true(iba_psn_diff(qa->req.psn, qa->comp.psn) >= 14 * 90);
	for (unsigned int i = 0; i < 11; i++)
		assert_memory_equal(pb + i * len, sides[A].buf + i * len, len);
	for (unsigned int i = 0; i < 14; i++)
		expect_wc(A, i, IBV_WC_SUCCESS);
	down(NULL);
}

/* ---- retries and duplicates of placed messages ---- */

static unsigned int drops_left;

static enum verdict drop_placed(const struct seen *e)
{
	if (is_req(e->opc) && (e->sflags & SIB_SLOT_F_PLACED) && drops_left) {
		drops_left--;
		return DROP;
	}
	return PASS;
}

static enum verdict keep_placed(const struct seen *e)
{
	return is_req(e->opc) && (e->sflags & SIB_SLOT_F_PLACED) && !nkept ? KEEP : PASS;
}

/* A lost placed WRITE is sent again after the ACK timeout as the same
 * placed packet, its data not copied again (it moved once, in order); a
 * duplicate placed WRITE with immediate is ACKed, never completed twice;
 * an RNR NAK on one is retried until a receive is posted. */
static void test_placed_retry_dup_rnr(void **state)
{
	struct opts o = def_opts;
	struct ibv_wc wc;
	uint8_t *pb;
	unsigned int before;

	(void)state;
	o.timeout = 12; /* ~17 ms */
	o.min_rnr_timer = 1;
	up(&o);
	pb = page_up(sides[B].buf);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 1, (uintptr_t)pb, sides[B].mr->rkey, 99);
	expect_wc(A, 99, IBV_WC_SUCCESS); /* the peer is resolved now */

	/* lost, resent without a copy */
	drops_left = 1;
	filter = drop_placed;
	before = nlog;
	fill(sides[A].buf, 5000, 1);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 5000, (uintptr_t)pb + 4096, sides[B].mr->rkey, 1);
	fill(sides[A].buf, 5000, 2); /* (an application error: shows there is no second copy) */
	expect_wc(A, 1, IBV_WC_SUCCESS);
	fill(sides[A].buf, 5000, 1);
	assert_memory_equal(pb + 4096, sides[A].buf, 5000);
	assert_true(count(before, B, IBA_OPC_RDMA_WRITE_ONLY, 0, true) >= 2); /* (more if an ACK was late) */

	/* a duplicate WRITE with immediate: one completion */
	filter = keep_placed;
	post_recv(B, 0, 0, 7);
	post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 3000, (uintptr_t)pb + 8192, sides[B].mr->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(nkept, 1);
	replay(0);
	settle(20);
	expect_no_wc(B);
	expect_no_wc(A);

	/* no receive: RNR NAKs until one is posted */
	filter = NULL;
	post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 2000, (uintptr_t)pb + 16384, sides[B].mr->rkey, 3);
	settle(20);
	expect_no_wc(A);
	expect_no_wc(B);
	post_recv(B, 0, 0, 8);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(wc.byte_len, 2000);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_memory_equal(pb + 16384, sides[A].buf, 2000);
	down(NULL);
}

/* A responder QP that takes no requests (ERR here) gets nothing placed:
 * its memory stays as it was, the WRITE fails as with packets. */
static void test_peer_qp_state(void **state)
{
	struct opts o = def_opts;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint8_t *pb, before[4096];
	bool seen;

	(void)state;
	o.timeout = 8;
	o.retry_cnt = 1;
	up(&o);
	pb = page_up(sides[B].buf);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 1, (uintptr_t)pb, sides[B].mr->rkey, 99);
	expect_wc(A, 99, IBV_WC_SUCCESS); /* the peer is resolved now */
	assert_int_equal(sib_hca_ops.modify_qp(sides[B].qp, &a, IBV_QP_STATE), 0);
	memcpy(before, pb + 4096, sizeof(before));
	fill(sides[A].buf, 4096, 77);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 4096, (uintptr_t)pb + 4096, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_RETRY_EXC_ERR);
	assert_false(placed_of(0, 4096, &seen));
	assert_memory_equal(pb + 4096, before, sizeof(before));
	down(NULL);
}

/* ---- dereg and rereg against a writer ---- */

struct writer {
	unsigned int n, posted;
	uint32_t rkey;
	uint64_t raddr;
	_Atomic bool go;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	while (!atomic_load(&w->go))
		;
	for (unsigned int i = 0; i < w->n; i++) {
		memset(sides[A].buf + 262144, (int)(i + 1), 16384);
		post_send(A, IBV_WR_RDMA_WRITE, 262144, 16384, w->raddr, w->rkey, 100 + i);
		w->posted++;
	}
	return NULL;
}

/* No write lands after dereg returns; later ones get REM_ACCESS_ERR. */
static void test_dereg_under_writer(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	struct writer w = { .n = 60 };
	uint8_t *target, *snap = malloc(262144);
	struct ibv_mr *mr2;
	pthread_t t;
	bool rem_access = false;

	(void)state;
	up(&def_opts);
	target = page_up(sides[B].buf) + 8192;
	mr2 = o->reg_mr(sides[B].pd, target, 262144, (uintptr_t)target,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr2);
	w.rkey = mr2->rkey;
	w.raddr = (uintptr_t)target;
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	atomic_store(&w.go, true);
	while (w.posted < 3)
		sched_yield();
	assert_int_equal(o->dereg_mr(mr2), 0);
	memcpy(snap, target, 262144);
	pthread_join(t, NULL);
	assert_memory_equal(snap, target, 262144); /* nothing landed since */
	/* one more, surely after the dereg, with new data */
	memset(sides[A].buf + 262144, 0x77, 4096);
	post_send(A, IBV_WR_RDMA_WRITE, 262144, 4096, w.raddr, w.rkey, 999);
	for (unsigned int i = 0; i <= w.n; i++) {
		struct ibv_wc wc = poll_wc(A);

		rem_access |= wc.status == IBV_WC_REM_ACCESS_ERR;
		if (wc.wr_id == 999)
			break;
	}
	assert_true(rem_access);
	settle(5);
	assert_memory_equal(snap, target, 262144);
	free(snap);
	down(NULL);
}

/* ---- dereg waits for a requester counted in, which then copies nothing ---- */

static struct {
	struct ibv_mr *mr;
	_Atomic bool parked, dereg_started, dereg_done;
	bool held;                     /* dereg had not returned after 200 ms parked */
	int dereg_rc;
	unsigned int parks;
} pk;

static void *dereg_main(void *arg)
{
	uint64_t end = (uint64_t)time(NULL) + 5;

	(void)arg;
	while (!atomic_load(&pk.parked) && (uint64_t)time(NULL) < end)
		sched_yield();
	atomic_store(&pk.dereg_started, true);
	pk.dereg_rc = sib_hca_ops.dereg_mr(pk.mr);
	atomic_store(&pk.dereg_done, true);
	return NULL;
}

/* The requester, counted in on the MR's counter and about to copy: let
 * the dereg start, give it 200 ms, note whether it returned meanwhile. */
static void park_hook(void)
{
	struct timespec ts = { 0, 200000000 };
	uint64_t end = (uint64_t)time(NULL) + 5;

	if (pk.parks++)
		return;
	atomic_store(&pk.parked, true);
	while (!atomic_load(&pk.dereg_started) && (uint64_t)time(NULL) < end)
		sched_yield();
	nanosleep(&ts, NULL);
	pk.held = atomic_load(&pk.dereg_started) && !atomic_load(&pk.dereg_done);
}

static void test_dereg_parked_requester(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	uint8_t *target, *snap = malloc(65536);
	pthread_t t;
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	memset(&pk, 0, sizeof(pk));
	target = page_up(sides[B].buf) + 8192;
	pk.mr = o->reg_mr(sides[B].pd, target, 65536, (uintptr_t)target,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(pk.mr);
	assert_non_null(snap);
	memcpy(snap, target, 65536);
	assert_int_equal(pthread_create(&t, NULL, dereg_main, NULL), 0);
	sib_dx_park_hook = park_hook;
	fill(sides[A].buf, 65536, 33);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 65536, (uintptr_t)target, pk.mr->rkey, 7);
	sib_dx_park_hook = NULL;
	pthread_join(t, NULL);
	assert_true(atomic_load(&pk.parked));
	assert_true(atomic_load(&pk.dereg_done));
	assert_true(pk.held);                 /* dereg waited for the parked requester */
	assert_int_equal(pk.dereg_rc, 0);
	/* The requester saw the seq move: nothing copied, the packets meet
	 * the deregistered key. */
	wc = poll_wc(A);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	settle(5);
	assert_memory_equal(snap, target, 65536);
	free(snap);
	down(NULL);
}

/* rereg: a new range and then REMOTE_READ only: the old range and writes
 * are refused (REM_ACCESS_ERR), never placed. */
static void test_rereg(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	uint8_t *b;
	struct ibv_mr *mr2;
	bool seen;

	(void)state;
	up(&def_opts);
	b = page_up(sides[B].buf);
	mr2 = o->reg_mr(sides[B].pd, b + 65536, 65536, (uintptr_t)b + 65536,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr2);
	fill(sides[A].buf, 4096, 5);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 4096, (uintptr_t)b + 65536, mr2->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 4096, &seen));
	assert_memory_equal(b + 65536, sides[A].buf, 4096);
	/* move it to [b + 2 * 65536, +65536): the old VA is out of range */
	assert_int_equal(o->rereg_mr(mr2, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b + 131072, 65536,
				     0), 0);
	fill(sides[A].buf, 4096, 6);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 4095, (uintptr_t)b + 131072, mr2->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 4095, &seen));
	assert_memory_equal(b + 131072, sides[A].buf, 4095);
	/* REMOTE_READ only: a READ is placed, a WRITE fails */
	assert_int_equal(o->rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				     IBV_ACCESS_REMOTE_READ), 0);
	post_send(A, IBV_WR_RDMA_READ, 8192, 4094, (uintptr_t)b + 131072, mr2->rkey, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 4094, &seen));
	assert_memory_equal(b + 131072, sides[A].buf + 8192, 4094);
	memcpy(sides[A].buf + 65536, b + 131072, 4096);
	fill(sides[A].buf, 4096, 7);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 4093, (uintptr_t)b + 131072, mr2->rkey, 4);
	expect_wc(A, 4, IBV_WC_REM_ACCESS_ERR);
	assert_false(placed_of(0, 4093, &seen));
	assert_true(seen);
	assert_memory_equal(b + 131072, sides[A].buf + 65536, 4096); /* untouched */
	assert_int_equal(o->dereg_mr(mr2), 0);
	down(NULL);
}

/* ---- access: a REMOTE_READ-only MR is mapped read-only by its peer ---- */

static int find_fd(const char *name)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char p[300], l[128];
		ssize_t n;

		snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
		n = readlink(p, l, sizeof(l) - 1);
		if (n <= 0)
			continue;
		l[n] = 0;
		if (!strncmp(l, name, strlen(name))) {
			found = atoi(de->d_name);
			break;
		}
	}
	closedir(d);
	return found;
}

static const struct sib_dx_ent *export_ent(const uint8_t *tab, uint32_t key)
{
	return (const struct sib_dx_ent *)(tab + SIB_DX_ENT_OFF) + (key >> 8);
}

/* fstat of the memfd of region id (an entry's fd), as softibd keeps it. */
static int region_stat(int32_t id, struct stat *st)
{
	int fd = loop_dx_fd(SIB_DX_KIND_MR, 0, (uint32_t)id), rc;

	if (fd < 0)
		return -1;
	rc = fstat(fd, st);
	close(fd);
	return rc;
}

static uint8_t *map_export(unsigned int side)
{
	char name[64];
	int fd;
	void *m;

	(void)name;
	fd = loop_dx_fd(SIB_DX_KIND_TAB, side, 0); /* what the context gave softibd */
	assert_true(fd >= 0);
	m = mmap(NULL, SIB_DX_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	close(fd);
	return m;
}

/* The owner's side of a counter word: what attach stores for entry e. */
static void cnt_attach(unsigned int side, const struct sib_dx_ent *e, uint32_t key)
{
	char name[64];
	int fd;
	_Atomic uint64_t *c;

	(void)name;
	fd = loop_dx_fd(SIB_DX_KIND_CNT, side, 0);
	assert_true(fd >= 0);
	c = mmap(NULL, SIB_DX_CNT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(c != MAP_FAILED);
	close(fd);
	atomic_store(&c[key >> 8], (uint64_t)atomic_load(&e->seq) << 32);
	munmap((void *)c, SIB_DX_CNT_BYTES);
}

static void test_read_only_mapping(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	uint8_t *ro = aligned_alloc(4096, 8192), *tab;
	struct ibv_mr *mr;
	struct stat st;
	char line[512];
	FILE *f;
	bool seen, ro_map = false, rw_other = false;

	(void)state;
	assert_non_null(ro);
	fill(ro, 8192, 9);
	up(&def_opts);
	mr = o->reg_mr(sides[B].pd, ro, 8192, (uintptr_t)ro, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	post_send(A, IBV_WR_RDMA_READ, 0, 8192, (uintptr_t)ro, mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 8192, &seen));
	assert_memory_equal(sides[A].buf, ro, 8192);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 8191, (uintptr_t)ro, mr->rkey, 2);
	expect_wc(A, 2, IBV_WC_REM_ACCESS_ERR);
	assert_false(placed_of(0, 8191, &seen));
	/* Every mapping of the MR's memfd but the owner's own is read-only. */
	tab = map_export(B);
	assert_true(export_ent(tab, mr->rkey)->fd >= 0);
	assert_int_equal(region_stat(export_ent(tab, mr->rkey)->fd, &st), 0);
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		char perms[8];
		unsigned int ma, mi;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &ma, &mi, &ino) < 7 ||
		    ino != (unsigned long)st.st_ino)
			continue;
		if (lo == (uintptr_t)ro)
			continue; /* the owner's own pages */
		ro_map |= !strcmp(perms, "r--s");
		rw_other |= perms[1] == 'w';
	}
	fclose(f);
	assert_true(ro_map);
	assert_false(rw_other);
	munmap(tab, SIB_DX_BYTES);
	assert_int_equal(o->dereg_mr(mr), 0);
	down(NULL);
	/* dereg left the pages on the memfd, contents kept */
	{
		uint8_t *want = malloc(8192);

		fill(want, 8192, 9);
		assert_memory_equal(ro, want, 8192);
		free(want);
	}
	free(ro);
}

/* ---- fork: the child gets a private snapshot ---- */

static bool range_private(uintptr_t a, uintptr_t e)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool ok = true;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) < 3 || hi <= a || lo >= e)
			continue;
		ok &= !strcmp(perms, "rw-p");
	}
	fclose(f);
	return ok;
}

static void test_fork_snapshot(void **state)
{
	uint8_t *rb;
	int to_child[2], to_parent[2], status;
	char c;
	pid_t pid;
	bool seen;

	(void)state;
	up(&def_opts);
	rb = sides[B].buf;
	fill(rb + 8192, 4096, 1);
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(to_parent), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint8_t want[4096];
		int rc = 0;

		fill(want, 4096, 1);
		if (!range_private((uintptr_t)rb + 8192, (uintptr_t)rb + 12288))
			rc |= 1;
		if (read(to_child[0], &c, 1) != 1) /* the parent wrote meanwhile */
			rc |= 2;
		if (memcmp(rb + 8192, want, 4096))
			rc |= 4;
		memset(rb + 8192, 0xee, 4096); /* private: the parent never sees it */
		if (write(to_parent[1], &c, 1) != 1)
			rc |= 8;
		_exit(rc);
	}
	close(to_child[0]); /* a child that dies closes to_parent: no hang */
	close(to_parent[1]);
	fill(sides[A].buf, 4096, 2);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 4096, (uintptr_t)rb + 8192, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 4096, &seen)); /* the child must not see a placed WRITE either */
	assert_int_equal(write(to_child[1], "x", 1), 1);
	assert_int_equal(read(to_parent[0], &c, 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_memory_equal(rb + 8192, sides[A].buf, 4096);
	close(to_child[1]);
	close(to_parent[0]);
	down(NULL);
}

/* ---- a cached mapping is used only for the entry it was made from ---- */

/* Rewrite entry fields keeping its seq (what a hostile owner can do). */
static void ent_poke(struct sib_dx_ent *e, int fd, uint64_t off, uint64_t dlo, uint64_t dhi)
{
	__atomic_store_n(&e->fd, fd, __ATOMIC_RELAXED);
	__atomic_store_n(&e->off, off, __ATOMIC_RELAXED);
	__atomic_store_n(&e->dlo, dlo, __ATOMIC_RELAXED);
	__atomic_store_n(&e->dhi, dhi, __ATOMIC_RELAXED);
}

/* One WRITE of len bytes to lo + at: placed or not as expected, and B's
 * memory right afterwards (never a write outside the MR: that would
 * crash or show here). */
static void write_check(uint64_t lo, uint64_t at, uint32_t len, uint8_t pat, bool want_placed)
{
	bool seen;

	fill(sides[A].buf, len, pat);
	post_send(A, IBV_WR_RDMA_WRITE, 0, len, lo + at, sides[B].mr->rkey, pat);
	expect_wc(A, pat, IBV_WC_SUCCESS);
	assert_int_equal(placed_of(0, len, &seen), want_placed);
	assert_true(seen);
	assert_memory_equal((uint8_t *)(uintptr_t)(lo + at), sides[A].buf, len);
}

/* Region ids a test gives the broker itself (a hostile owner's files);
 * the contexts' own count up from 1. */
#define ID_HUGE     0x7000000
#define ID_UNSEALED 0x7000001
#define ID_TMP      0x7000002
#define ID_PLAIN    0x7000003

static void test_cache_hit_bounds(void **state)
{
	uint8_t *tab;
	struct sib_dx_ent *e, good;
	uint32_t seq;
	int huge, unsealed;

	(void)state;
	up(&def_opts);
	tab = map_export(B);
	e = (struct sib_dx_ent *)export_ent(tab, sides[B].mr->rkey);
	good = *e;
	seq = atomic_load(&e->seq);
	assert_true(good.fd >= 0);
	/* a memfd that passes every file check, longer than the cap */
	huge = memfd_create("softib-mr", MFD_ALLOW_SEALING);
	unsealed = memfd_create("softib-mr", 0);
	assert_true(huge >= 0 && unsealed >= 0);
	assert_int_equal(ftruncate(huge, (off_t)(5ull << 30)), 0);
	assert_int_equal(fcntl(huge, F_ADD_SEALS, F_SEAL_SHRINK), 0);
	assert_int_equal(ftruncate(unsealed, BUF), 0);
	/* a hostile owner gives softibd these files too: ids of its own */
	assert_int_equal(loop_dx_put(SIB_DX_KIND_MR, 0, ID_HUGE, huge), 0);
	assert_int_equal(loop_dx_put(SIB_DX_KIND_MR, 0, ID_UNSEALED, unsealed), 0);
	write_check(good.dlo, 4096, 3001, 60, true); /* the map is cached now */
	/* off far past the file, same seq: not through the old map */
	ent_poke(e, good.fd, good.off + (1ull << 36), good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3002, 61, false);
	ent_poke(e, good.fd, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3003, 62, true);
	/* dlo far below: the window would be huge, same seq */
	ent_poke(e, good.fd, good.off, good.dlo - (1ull << 36), good.dhi);
	write_check(good.dlo, 4096, 3004, 63, false);
	ent_poke(e, good.fd, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3005, 64, true);
	/* dhi past the file's end, same seq */
	ent_poke(e, good.fd, good.off, good.dlo, good.dhi + (1ull << 36));
	write_check(good.dlo, 4096, 3006, 65, false);
	ent_poke(e, good.fd, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3007, 66, true);
	/* another fd, same seq: an unsealed memfd is refused */
	ent_poke(e, ID_UNSEALED, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3008, 67, false);
	ent_poke(e, good.fd, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3009, 68, true);
	/* a window longer than the cap (4 GiB) is never mapped */
	ent_poke(e, ID_HUGE, 0, good.dlo, good.dlo + (5ull << 30));
	write_check(good.dlo, 4096, 3010, 69, false);
	ent_poke(e, good.fd, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3011, 70, true);
	/* an id softibd never got: refused, packets */
	ent_poke(e, ID_HUGE + 77, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3012, 71, false);
	ent_poke(e, good.fd, good.off, good.dlo, good.dhi);
	write_check(good.dlo, 4096, 3013, 72, true);
	assert_int_equal(atomic_load(&e->seq), seq);
	loop_dx_put(SIB_DX_KIND_MR, 0, ID_HUGE, -1);
	loop_dx_put(SIB_DX_KIND_MR, 0, ID_UNSEALED, -1);
	close(huge);
	close(unsealed);
	munmap(tab, SIB_DX_BYTES);
	down(NULL);
}

/* ---- a cached peer is used only while the QPN's owner is the one resolved ---- */

static void test_stale_owner(void **state)
{
	_Atomic uint64_t *ow;
	uint64_t w, lo, at;
	uint8_t *snap;
	const uint32_t len = 3100;

	(void)state;
	up(&def_opts);
	lo = (uint64_t)(uintptr_t)page_up(sides[B].buf);
	at = lo + 8192;
	write_check(lo, 8192, 3099, 80, true); /* peer, table and map cached */
	ow = &sib_fabric->qp_owner[sides[B].qp->qp_num];
	w = atomic_load(ow);
	/* The QPN now belongs to another generation of the inbox (its
	 * process died, the QPN went to someone else): nothing placed
	 * through what we cached; the packet finds no destination. */
	atomic_store(ow, SIB_QPO_MAKE(SIB_QPO_INBOX(w), SIB_QPO_GEN(w) + 1, (w >> 48) & 0xff));
	snap = malloc(len);
	assert_non_null(snap);
	memcpy(snap, (uint8_t *)(uintptr_t)at, len);
	fill(sides[A].buf, len, 81);
	post_send(A, IBV_WR_RDMA_WRITE, 0, len, at, sides[B].mr->rkey, 81);
	settle(50);
	assert_memory_equal((uint8_t *)(uintptr_t)at, snap, len);
	/* back: the retry (ACK timeout) goes through as packets */
	atomic_store(ow, w);
	expect_wc(A, 81, IBV_WC_SUCCESS);
	assert_memory_equal((uint8_t *)(uintptr_t)at, sides[A].buf, len);
	free(snap);
	down(NULL);
}

/* ---- placement only toward a QP whose demux would take our packets ---- */

static void test_path_checks(void **state)
{
	_Atomic uint64_t *qw;
	uint64_t path, lo, at;
	uint8_t *tab, *snap;
	uint16_t *pk = &sib_fabric->devs[B].ports[0].pkey[0];
	const uint32_t len = 3200;

	(void)state;
	up(&def_opts);
	lo = (uint64_t)(uintptr_t)page_up(sides[B].buf);
	at = lo + 8192;
	tab = map_export(B);
	qw = (_Atomic uint64_t *)(tab + SIB_DX_QPP_OFF) + sides[B].qp->qp_num;
	path = atomic_load(qw);
	assert_int_equal(SIB_DX_QPP_RQPN(path), sides[A].qp->qp_num);
	write_check(lo, 8192, 3199, 90, true);
	/* B's QP connected to another QPN: packets (its demux checks only
	 * the SLID), never placed */
	atomic_store(qw, (path & ~0xffffffull) | ((SIB_DX_QPP_RQPN(path) + 1) & 0xffffff));
	write_check(lo, 8192, 3198, 91, false);
	/* another path MTU: the PSN counts would differ */
	atomic_store(qw, (path & ~(7ull << 48)) | (uint64_t)(SIB_DX_QPP_MTU(path) == 1 ? 2 : 1) << 48);
	write_check(lo, 8192, 3197, 92, false);
	/* another DLID: B's QP takes packets from someone else's port */
	atomic_store(qw, path ^ (1ull << 30));
	write_check(lo, 8192, 3196, 93, false);
	atomic_store(qw, path);
	write_check(lo, 8192, 3195, 94, true);
	/* B's port holds another partition at the QP's P_Key index: B drops
	 * the packet, and nothing is placed */
	*pk = 0x8002;
	snap = malloc(len);
	assert_non_null(snap);
	memcpy(snap, (uint8_t *)(uintptr_t)at, len);
	fill(sides[A].buf, len, 95);
	post_send(A, IBV_WR_RDMA_WRITE, 0, len, at, sides[B].mr->rkey, 95);
	settle(50);
	assert_memory_equal((uint8_t *)(uintptr_t)at, snap, len);
	/* back: the retry (ACK timeout) goes through */
	*pk = 0xffff;
	expect_wc(A, 95, IBV_WC_SUCCESS);
	assert_memory_equal((uint8_t *)(uintptr_t)at, sides[A].buf, len);
	free(snap);
	munmap(tab, SIB_DX_BYTES);
	down(NULL);
}

/* ---- a hostile export table is refused; the WRITE goes by packets ---- */

static void ent_forge(struct sib_dx_ent *e, int fd, uint64_t off, uint64_t dlo, uint64_t dhi)
{
	uint32_t s = atomic_load(&e->seq);

	atomic_store(&e->seq, s | 1);
	e->fd = fd;
	e->off = off;
	e->dlo = dlo;
	e->dhi = dhi;
	atomic_store(&e->seq, (s | 1) + 1);
}

static void test_hostile_table(void **state)
{
	uint8_t *tab, *rb;
	struct sib_dx_ent *e, good;
	int tmp, plain, unsealed;
	bool seen;
	struct {
		int fd;
		uint64_t off, dlo_delta, dhi_delta;
	} bad[6];
	uint64_t lo;

	(void)state;
	up(&def_opts);
	rb = sides[B].buf;
	tab = map_export(B);
	e = (struct sib_dx_ent *)export_ent(tab, sides[B].mr->rkey);
	good = *e;
	assert_true(good.fd >= 0);
	lo = good.dlo;
	tmp = open("/tmp", O_TMPFILE | O_RDWR, 0600);          /* a plain file */
	plain = memfd_create("softib-mrx", 0);                 /* wrong name */
	unsealed = memfd_create("softib-mr", 0);               /* not sealed */
	assert_true(tmp >= 0 && plain >= 0 && unsealed >= 0);
	assert_int_equal(ftruncate(tmp, BUF), 0);
	assert_int_equal(ftruncate(plain, BUF), 0);
	assert_int_equal(ftruncate(unsealed, BUF), 0);
	assert_int_equal(loop_dx_put(SIB_DX_KIND_MR, 0, ID_TMP, tmp), 0);
	assert_int_equal(loop_dx_put(SIB_DX_KIND_MR, 0, ID_PLAIN, plain), 0);
	assert_int_equal(loop_dx_put(SIB_DX_KIND_MR, 0, ID_UNSEALED, unsealed), 0);
	bad[0].fd = ID_TMP;
	bad[1].fd = ID_PLAIN;
	bad[2].fd = ID_UNSEALED;
	bad[3].fd = 0;                                         /* never an id */
	bad[4].fd = good.fd;                                   /* past the file's end */
	bad[5].fd = good.fd;                                   /* a range wrapping around */
	for (unsigned int i = 0; i < 6; i++) {
		bad[i].off = i == 4 ? (uint64_t)BUF : good.off;
		bad[i].dlo_delta = 0;
		bad[i].dhi_delta = good.dhi - good.dlo;
	}
	bad[5].dlo_delta = 4096;
	bad[5].dhi_delta = (uint64_t)0 - lo + 8192; /* dhi < dlo */
	for (unsigned int i = 0; i < 6; i++) {
		uint32_t len = 4000 + i;

		ent_forge(e, bad[i].fd, bad[i].off, lo + bad[i].dlo_delta, lo + bad[i].dhi_delta);
		fill(sides[A].buf, len, (uint8_t)(20 + i));
		post_send(A, IBV_WR_RDMA_WRITE, 0, len, lo + 8192, sides[B].mr->rkey, i);
		expect_wc(A, i, IBV_WC_SUCCESS);
		assert_false(placed_of(0, len, &seen));
		assert_true(seen);
		assert_memory_equal(rb + (lo - (uintptr_t)rb) + 8192, sides[A].buf, len);
	}
	/* garbage all over the entry: still packets, still right */
	memset((uint8_t *)e + offsetof(struct sib_dx_ent, rkey), 0xa5,
	       sizeof(*e) - offsetof(struct sib_dx_ent, rkey));
	atomic_store(&e->seq, 8);
	fill(sides[A].buf, 3000, 40);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 3000, lo + 4096, sides[B].mr->rkey, 50);
	expect_wc(A, 50, IBV_WC_SUCCESS);
	assert_false(placed_of(0, 3000, &seen));
	assert_memory_equal(rb + (lo - (uintptr_t)rb) + 4096, sides[A].buf, 3000);
	/* the real entry again: placed */
	ent_forge(e, good.fd, good.off, good.dlo, good.dhi);
	e->rkey = good.rkey;
	e->iova = good.iova;
	e->length = good.length;
	e->access = good.access;
	e->pd = good.pd;
	ent_forge(e, good.fd, good.off, good.dlo, good.dhi);
	cnt_attach(B, e, sides[B].mr->rkey); /* a new generation's count */
	fill(sides[A].buf, 2999, 41);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 2999, lo + 4096, sides[B].mr->rkey, 51);
	expect_wc(A, 51, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 2999, &seen));
	assert_memory_equal(rb + (lo - (uintptr_t)rb) + 4096, sides[A].buf, 2999);
	loop_dx_put(SIB_DX_KIND_MR, 0, ID_TMP, -1);
	loop_dx_put(SIB_DX_KIND_MR, 0, ID_PLAIN, -1);
	loop_dx_put(SIB_DX_KIND_MR, 0, ID_UNSEALED, -1);
	close(tmp);
	close(plain);
	close(unsealed);
	munmap(tab, SIB_DX_BYTES);
	down(NULL);
}

static unsigned long range_ino(uintptr_t a, uintptr_t e);

/* A big registration the process has barely touched stays sparse on its
 * memfd, and stays there after dereg, contents as they were. */
static void test_sparse(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	size_t len = 64u << 20;
	uint8_t *big = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *tab;
	struct ibv_mr *mr;
	struct stat st;
	char p[64];

	(void)state;
	assert_true(big != MAP_FAILED);
	big[12345] = 0x5a;
	big[len - 1] = 0xa5;
	up(&def_opts);
	mr = o->reg_mr(sides[B].pd, big, len, (uintptr_t)big, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	tab = map_export(B);
	(void)p;
	assert_int_equal(region_stat(export_ent(tab, mr->rkey)->fd, &st), 0);
	assert_int_equal(st.st_size, (off_t)len);
	assert_true(st.st_blocks * 512 <= 1 << 20); /* two pages, not 64 MiB */
	assert_int_equal(big[12345], 0x5a);
	assert_int_equal(big[len - 1], 0xa5);
	assert_int_equal(big[4096], 0);
	munmap(tab, SIB_DX_BYTES);
	assert_int_equal(o->dereg_mr(mr), 0);
	assert_int_equal(st.st_ino, range_ino((uintptr_t)big, (uintptr_t)big + len)); /* stays */
	assert_int_equal(big[12345], 0x5a);
	assert_int_equal(big[len - 1], 0xa5);
	down(NULL);
	munmap(big, len);
}

/* ---- the pages stay on the memfd after the last MR goes ---- */

static unsigned long fd_ino(int32_t id)
{
	struct stat st;

	assert_int_equal(region_stat(id, &st), 0);
	return (unsigned long)st.st_ino;
}

/* The inode of the one mapping that covers [a, e), 0 if none or several. */
static unsigned long range_ino(uintptr_t a, uintptr_t e)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long found = 0;
	bool many = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		char perms[8];
		unsigned int ma, mi;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &ma, &mi, &ino) < 7 ||
		    hi <= a || lo >= e)
			continue;
		many |= found && found != ino;
		found = ino;
	}
	fclose(f);
	return many ? 0 : found;
}

struct storer {
	uint64_t *p;
	size_t pages;
	_Atomic size_t done;
};

static void *storer_main(void *arg)
{
	struct storer *s = arg;

	for (size_t i = 0; i < s->pages; i++) {
		((volatile uint64_t *)s->p)[i * 512] = i + 1;
		atomic_store(&s->done, i + 1);
		for (volatile unsigned int k = 0; k < 500; k++)
			; /* slower than a copy of the page: they overlap */
	}
	return NULL;
}

/* A thread storing one word per page of a 64 MiB MR while another thread
 * deregisters it loses no store (dereg copies nothing back). */
static void test_dereg_keeps_stores(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	size_t len = 64u << 20, lost = 0;
	uint64_t *big = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct storer s = { .p = big, .pages = len / 4096 };
	struct ibv_mr *mr;
	uint8_t *tab;
	pthread_t t;

	(void)state;
	assert_true(big != MAP_FAILED);
	memset(big, 0, len); /* every page holds data: the memfd is dense */
	up(&def_opts);
	mr = o->reg_mr(sides[B].pd, big, len, (uintptr_t)big,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	tab = map_export(B);
	assert_true(export_ent(tab, mr->rkey)->fd >= 0); /* on a memfd */
	munmap(tab, SIB_DX_BYTES);
	assert_int_equal(pthread_create(&t, NULL, storer_main, &s), 0);
	while (atomic_load(&s.done) < 16)
		sched_yield();
	assert_int_equal(o->dereg_mr(mr), 0);
	pthread_join(t, NULL);
	for (size_t i = 0; i < s.pages; i++)
		lost += big[i * 512] != i + 1;
	assert_int_equal(lost, 0);
	down(NULL);
	munmap(big, len);
}

/* Register, dereg, register the same pages (and a part of them) again:
 * the same memfd is used again (never a copy onto a second one) and the
 * WRITEs are placed. */
static void test_reg_dereg_reg(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	size_t len = 65536;
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *tab;
	struct ibv_mr *mr;
	unsigned long ino;
	bool seen;

	(void)state;
	assert_true(b != MAP_FAILED);
	fill(b, (uint32_t)len, 3);
	up(&def_opts);
	tab = map_export(B);
	mr = o->reg_mr(sides[B].pd, b, len, (uintptr_t)b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	ino = fd_ino(export_ent(tab, mr->rkey)->fd);
	assert_int_equal(range_ino((uintptr_t)b, (uintptr_t)b + len), ino);
	assert_int_equal(o->dereg_mr(mr), 0);
	assert_int_equal(range_ino((uintptr_t)b, (uintptr_t)b + len), ino); /* stays */
	for (unsigned int i = 0; i < 2; i++) {
		size_t off = i ? 8192 : 0, l = i ? 16384 : len;

		mr = o->reg_mr(sides[B].pd, b + off, l, (uintptr_t)b + off,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		assert_non_null(mr);
		assert_true(export_ent(tab, mr->rkey)->fd >= 0);
		assert_int_equal(fd_ino(export_ent(tab, mr->rkey)->fd), ino);
		fill(sides[A].buf, 4096, (uint8_t)(4 + i));
		post_send(A, IBV_WR_RDMA_WRITE, 0, 4000 + i, (uintptr_t)b + off + 4096, mr->rkey, i);
		expect_wc(A, i, IBV_WC_SUCCESS);
		assert_true(placed_of(0, 4000 + i, &seen));
		assert_memory_equal(b + off + 4096, sides[A].buf, 4000 + i);
		assert_int_equal(o->dereg_mr(mr), 0);
	}
	assert_int_equal(range_ino((uintptr_t)b, (uintptr_t)b + len), ino);
	munmap(tab, SIB_DX_BYTES);
	down(NULL);
	munmap(b, len);
}

/* Pages a deregistered MR left on its memfd, one of them mprotect'ed
 * read-only: a fork child still gets a private copy of all of them. */
static void test_fork_after_dereg(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	uint8_t *b = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int to_child[2], status;
	struct ibv_mr *mr;
	char c;
	pid_t pid;

	(void)state;
	assert_true(b != MAP_FAILED);
	fill(b, 4 * 4096, 8);
	up(&def_opts);
	mr = o->reg_mr(sides[B].pd, b, 4 * 4096, (uintptr_t)b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	assert_int_equal(mprotect(b + 2 * 4096, 4096, PROT_READ), 0);
	assert_int_equal(o->dereg_mr(mr), 0);
	assert_int_equal(pipe(to_child), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint8_t want[4 * 4096];

		fill(want, 4 * 4096, 8);
		if (read(to_child[0], &c, 1) != 1) /* the parent stored meanwhile */
			_exit(2);
		_exit(memcmp(b, want, sizeof(want)) ? 1 : 0);
	}
	memset(b, 0x11, 4096);
	assert_int_equal(mprotect(b + 2 * 4096, 4096, PROT_READ | PROT_WRITE), 0);
	memset(b + 2 * 4096, 0x22, 4096);
	assert_int_equal(write(to_child[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(to_child[0]);
	close(to_child[1]);
	down(NULL);
	munmap(b, 4 * 4096);
}

/* A fork child's rereg_mr, dereg_mr and modify_qp leave the parent's
 * export table as it was (the child's contexts have private tables). */
static void test_fork_child_tables(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct sib_dx_ent e1, e2;
	struct ibv_mr *mr2;
	uint8_t *tab, *pb;
	uint64_t qw;
	uint32_t qpn;
	int status;
	bool seen;
	pid_t pid;

	(void)state;
	up(&def_opts);
	pb = page_up(sides[B].buf);
	mr2 = o->reg_mr(sides[B].pd, pb + 65536, 65536, (uintptr_t)pb + 65536,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr2);
	tab = map_export(B);
	qpn = sides[B].qp->qp_num;
	memcpy(&e1, export_ent(tab, sides[B].mr->rkey), sizeof(e1));
	memcpy(&e2, export_ent(tab, mr2->rkey), sizeof(e2));
	memcpy(&qw, tab + SIB_DX_QP_OFF + 8 * qpn, 8);
	assert_true(e2.fd >= 0 && (qw & SIB_DX_QP_VALID));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = 0;

		if (o->rereg_mr(sides[B].mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				IBV_ACCESS_REMOTE_READ))
			rc |= 1;
		if (o->dereg_mr(mr2))
			rc |= 2;
		if (o->modify_qp(sides[B].qp, &a, IBV_QP_STATE))
			rc |= 4;
		_exit(rc);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_memory_equal(export_ent(tab, sides[B].mr->rkey), &e1, sizeof(e1));
	assert_memory_equal(export_ent(tab, mr2->rkey), &e2, sizeof(e2));
	assert_memory_equal(tab + SIB_DX_QP_OFF + 8 * qpn, &qw, 8);
	/* and the parent still places into both */
	fill(sides[A].buf, 4096, 12);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 3001, (uintptr_t)pb + 65536 + 4096, mr2->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_true(placed_of(0, 3001, &seen));
	assert_memory_equal(pb + 65536 + 4096, sides[A].buf, 3001);
	munmap(tab, SIB_DX_BYTES);
	assert_int_equal(o->dereg_mr(mr2), 0);
	down(NULL);
}

/* Near vm.max_map_count no pages move (a MAP_FIXED failing there could
 * lose the old range): the MR has no direct path and stays private. */
static void test_map_limit(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	uint8_t *b = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *tab;
	unsigned long n = 0;
	struct ibv_mr *mr;
	char line[512];
	FILE *f;

	(void)state;
	assert_true(b != MAP_FAILED);
	fill(b, 65536, 6);
	up(&def_opts);
	tab = map_export(B);
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	sib_dx_max_map_count = n + 3;
	mr = o->reg_mr(sides[B].pd, b, 65536, (uintptr_t)b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	sib_dx_max_map_count = 0;
	assert_non_null(mr);
	assert_int_equal(export_ent(tab, mr->rkey)->fd, -1);
	assert_true(range_private((uintptr_t)b, (uintptr_t)b + 65536));
	assert_int_equal(o->dereg_mr(mr), 0);
	/* with room, the same pages move */
	mr = o->reg_mr(sides[B].pd, b, 65536, (uintptr_t)b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	assert_true(export_ent(tab, mr->rkey)->fd >= 0);
	assert_int_equal(o->dereg_mr(mr), 0);
	{
		uint8_t want[65536];

		fill(want, 65536, 6);
		assert_memory_equal(b, want, 65536);
	}
	munmap(tab, SIB_DX_BYTES);
	down(NULL);
	munmap(b, 65536);
}

/* SOFTIB_DIRECT=0: no export table, no moved pages, everything by packets. */
static void test_off(void **state)
{
	const struct sib_hca_ops *o = &sib_hca_ops;
	uint8_t *b = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;
	bool seen;

	(void)state;
	for (unsigned int i = 0; i < NINBOX; i++) { /* the broker forgets earlier tests' */
		loop_dx_put(SIB_DX_KIND_TAB, i, 0, -1);
		loop_dx_put(SIB_DX_KIND_CNT, i, 0, -1);
	}
	setenv("SOFTIB_DIRECT", "0", 1);
	up(&def_opts);
	unsetenv("SOFTIB_DIRECT");
	assert_true(find_fd("/memfd:softib-dx-") < 0);
	assert_true(loop_dx_fd(SIB_DX_KIND_TAB, B, 0) < 0);
	/* Registration moves no page: a fresh mapping stays private (the
	 * loop's own buffers come from the heap, whose pages an earlier test's
	 * MR may have moved, and dereg leaves moved pages on their memfd). */
	assert_true(b != MAP_FAILED);
	mr = o->reg_mr(sides[B].pd, b, 65536, (uintptr_t)b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	assert_true(range_private((uintptr_t)b, (uintptr_t)b + 65536));
	assert_int_equal(o->dereg_mr(mr), 0);
	munmap(b, 65536);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 8192, (uintptr_t)sides[B].buf + 8192, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_false(placed_of(0, 8192, &seen));
	assert_true(seen);
	down(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_on_off_same, down),
		cmocka_unit_test_teardown(test_ordering, down),
		cmocka_unit_test_teardown(test_receiver_capture, down),
		cmocka_unit_test_teardown(test_placed_window, down),
		cmocka_unit_test_teardown(test_placed_retry_dup_rnr, down),
		cmocka_unit_test_teardown(test_peer_qp_state, down),
		cmocka_unit_test_teardown(test_dereg_under_writer, down),
		cmocka_unit_test_teardown(test_dereg_parked_requester, down),
		cmocka_unit_test_teardown(test_rereg, down),
		cmocka_unit_test_teardown(test_read_only_mapping, down),
		cmocka_unit_test_teardown(test_fork_snapshot, down),
		cmocka_unit_test_teardown(test_hostile_table, down),
		cmocka_unit_test_teardown(test_cache_hit_bounds, down),
		cmocka_unit_test_teardown(test_stale_owner, down),
		cmocka_unit_test_teardown(test_path_checks, down),
		cmocka_unit_test_teardown(test_sparse, down),
		cmocka_unit_test_teardown(test_dereg_keeps_stores, down),
		cmocka_unit_test_teardown(test_reg_dereg_reg, down),
		cmocka_unit_test_teardown(test_fork_after_dereg, down),
		cmocka_unit_test_teardown(test_fork_child_tables, down),
		cmocka_unit_test_teardown(test_map_limit, down),
		cmocka_unit_test_teardown(test_off, down),
	};

	unsetenv("SOFTIB_DIRECT"); /* each test says itself whether it is on */
	return cmocka_run_group_tests(tests, setup, group_teardown);
}
