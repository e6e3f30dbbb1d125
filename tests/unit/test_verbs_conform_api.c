/* SPDX-License-Identifier: MIT */
/*
 * Conformance faults found by programs written the way rdma-core's pyverbs
 * tests use the API (issue 14 item 4), through the built library against a
 * private softibd: a QP moved to RESET or destroyed takes its completions
 * out of its CQs (mlx5_cq_clean), the others stay in order, with shared
 * CQs, separate send and receive CQs, and an SRQ; ibv_wr_complete before
 * RTS is EINVAL and posts nothing (rxe, EFA); a receive buffer whose tail
 * lies past its MR takes what fits (item 3); ibv_context.cmd_fd is a real
 * fd that a program may dup, poll and close without harm to the library.
 * The memory window part (IBV_ACCESS_LOCAL_WRITE in a bind) is
 * test_hca_mw's test_mw_bind_local_write.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_harness.h"

/* ---- CQ cleaning on RESET and destroy ---- */

/* An RC QP of end e on pd with the given CQs (and SRQ), sq_sig_all. */
static struct ibv_qp *qp_on(struct end *e, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = srq ? 0 : 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = scq, .recv_cq = rcq, .srq = srq,
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	assert_non_null(qp);
	return qp;
}

/* Connect qa (on p->e[0]) and qb (on p->e[1]) to each other. */
static void connect2(struct pair *p, struct ibv_qp *qa, struct ibv_qp *qb)
{
	struct end a = p->e[0], b = p->e[1];

	a.qp = qa;
	b.qp = qb;
	qp_connect(&a, &b, &default_opts);
	qp_connect(&b, &a, &default_opts);
}

static void recv_on(struct end *e, struct ibv_qp *qp, struct ibv_srq *srq, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + 4096 * (wr_id % 64), 4096, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (srq)
		assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	else
		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

static void post_one(struct end *e, struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)e->buf, 8, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
}

/* A signaled SEND of 8 bytes on qp (end e), waited for on e's CQ: the
 * ACK has come, so the receiver pushed its completion before. */
static void send_on(struct end *e, struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_wc wc;

	post_one(e, qp, wr_id);
	poll_one(e->cq, &wc, 5000);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static void to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
}

/* Exactly these completions (wr_id, qp) in this order, then none. */
static void expect_cq(struct ibv_cq *cq, const uint64_t *ids, const struct ibv_qp *const *qps, unsigned int n)
{
	struct ibv_wc wc;

	for (unsigned int i = 0; i < n; i++) {
		poll_one(cq, &wc, 5000);
		if (wc.wr_id != ids[i] || wc.qp_num != qps[i]->qp_num)
			fail_msg("completion %u: wr_id %llu of QP %u, want %llu of QP %u", i,
				 (unsigned long long)wc.wr_id, wc.qp_num, (unsigned long long)ids[i],
				 qps[i]->qp_num);
	}
	expect_no_completion(cq, 20);
}

/* What cq_clean() builds on softib1: the pair, x, y, their peers xa, ya, x's send CQ. */
struct cq_clean_fx {
	struct pair p;
	struct ibv_srq *s;		/* NULL without an SRQ */
	struct ibv_comp_channel *ch;	/* xscq's channel */
	struct ibv_cq *xscq;
	struct ibv_qp *x, *y, *xa, *ya;
};

/* Opens the pair and connects x-xa and y-ya, sharing softib1's receive CQ (and SRQ). */
static void cq_clean_setup(struct cq_clean_fx *f, bool srq)
{
	struct end *b = &f->p.e[1];
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };

	f->s = NULL;
	pair_open(&f->p, 1, NULL, NULL);
	if (srq) {
		f->s = ibv_create_srq(b->pd, &sa);
		assert_non_null(f->s);
	}
	f->ch = ibv_create_comp_channel(b->ctx);
	assert_non_null(f->ch);
	f->xscq = ibv_create_cq(b->ctx, 16, NULL, f->ch, 0);
	assert_non_null(f->xscq);
	f->x = qp_on(b, f->xscq, b->cq, f->s);
	f->y = qp_on(b, b->cq, b->cq, f->s);
	f->xa = qp_on(&f->p.e[0], f->p.e[0].cq, f->p.e[0].cq, NULL);
	f->ya = qp_on(&f->p.e[0], f->p.e[0].cq, f->p.e[0].cq, NULL);
	connect2(&f->p, f->xa, f->x);
	connect2(&f->p, f->ya, f->y);
}

/* Fills the shared CQ with y 11, x 1, y 12, x 2, y's send 61; x's send 60 goes to xscq. */
static void cq_clean_interleave(struct cq_clean_fx *f, bool srq)
{
	struct pair *pp = &f->p;
	struct end *b = &pp->e[1];
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	struct pollfd pf;
	void *ev_ctx;

	/* An SRQ's WQEs go in posting order to whichever message comes:
	 * each is posted just before the message that takes it. */
	if (!srq) {
		for (uint64_t id = 1; id <= 4; id++)
			recv_on(b, f->x, NULL, id);
		for (uint64_t id = 11; id <= 12; id++)
			recv_on(b, f->y, NULL, id);
	}
	for (uint64_t k = 0; k < 2; k++) {
		if (srq)
			recv_on(b, NULL, f->s, 11 + k);
		send_on(&pp->e[0], f->ya, 100 + 2 * k);
		if (srq)
			recv_on(b, NULL, f->s, 1 + k);
		send_on(&pp->e[0], f->xa, 101 + 2 * k);
	}
	/* x sends one (to its own send CQ), y one (to the shared CQ). */
	recv_on(&pp->e[0], f->xa, NULL, 50);
	recv_on(&pp->e[0], f->ya, NULL, 51);
	assert_int_equal(ibv_req_notify_cq(f->xscq, 0), 0);
	post_one(b, f->x, 60);
	pf = (struct pollfd){ .fd = f->ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, 5000), 1);
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, f->xscq);
	ibv_ack_cq_events(f->xscq, 1);
	poll_one(pp->e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 50);
	post_one(b, f->y, 61);
	poll_one(pp->e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 51);
}

/* x, reset and connected again, receives one message and meets none of its old completions. */
static void cq_clean_rearm_x(struct cq_clean_fx *f, bool srq)
{
	struct end *b = &f->p.e[1];
	struct end xe = *b, xp = f->p.e[0];
	struct ibv_wc wc;

	xe.qp = f->x;
	xp.qp = f->xa;
	to_state(f->xa, IBV_QPS_RESET);
	qp_connect(&xe, &xp, &default_opts);
	qp_connect(&xp, &xe, &default_opts);
	if (srq)
		recv_on(b, NULL, f->s, 5);
	else
		recv_on(b, f->x, NULL, 5);
	send_on(&f->p.e[0], f->xa, 105);
	poll_one(b->cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.qp_num, f->x->qp_num);
	assert_int_equal(ibv_destroy_qp(f->x), 0);
}

/*
 * On softib1, QPs x and y share the receive CQ (and, with srq, an SRQ),
 * x's sends go to a CQ of their own; their completions interleave in the
 * receive CQ: y 11, x 1, y 12, x 2, y's send 61, and x's flushes (3, 4;
 * none with the SRQ).  x to RESET (or destroyed) leaves y 11, y 12, y 61
 * in the shared CQ, in that order, and x's CQ empty (its send completion,
 * 60, is known to be there: its completion event came).
 */
static void cq_clean(bool destroy, bool srq)
{
	struct cq_clean_fx f;
	struct end *b = &f.p.e[1];
	struct ibv_wc wc;

	cq_clean_setup(&f, srq);
	cq_clean_interleave(&f, srq);
	to_state(f.x, IBV_QPS_ERR); /* x's remaining receives (3, 4) flush */
	if (destroy) {
		assert_int_equal(ibv_destroy_qp(f.x), 0);
		f.x = NULL;
	} else {
		to_state(f.x, IBV_QPS_RESET);
	}
	{
		const uint64_t ids[] = { 11, 12, 61 };
		const struct ibv_qp *qps[] = { f.y, f.y, f.y };

		expect_cq(b->cq, ids, qps, 3);
	}
	expect_no_completion(f.xscq, 20);
	/* y goes on: its CQ entries and its traffic. */
	if (srq)
		recv_on(b, NULL, f.s, 13);
	else
		recv_on(b, f.y, NULL, 13);
	send_on(&f.p.e[0], f.ya, 104);
	poll_one(b->cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 13);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	/* A re-armed x meets none of its old completions. */
	if (f.x)
		cq_clean_rearm_x(&f, srq);
	expect_no_completion(b->cq, 20);
	for (struct ibv_qp **q = (struct ibv_qp *[]){ f.y, f.xa, f.ya, NULL }; *q; q++)
		assert_int_equal(ibv_destroy_qp(*q), 0);
	assert_int_equal(ibv_destroy_cq(f.xscq), 0);
	assert_int_equal(ibv_destroy_comp_channel(f.ch), 0);
	if (f.s)
		assert_int_equal(ibv_destroy_srq(f.s), 0);
	pair_close(&f.p);
}

static void test_cq_clean_reset(void **state)
{
	(void)state;
	cq_clean(false, false);
}

static void test_cq_clean_destroy(void **state)
{
	(void)state;
	cq_clean(true, false);
}

static void test_cq_clean_reset_srq(void **state)
{
	(void)state;
	cq_clean(false, true);
}

static void test_cq_clean_destroy_srq(void **state)
{
	(void)state;
	cq_clean(true, true);
}

/* ---- ibv_wr_complete before RTS ---- */

/* RESET, INIT and RTR: EINVAL and nothing posted (rxe, EFA; as
 * ibv_post_send); the same QP in RTS then posts one WR, which is the only
 * one the peer receives. */
static void test_wr_complete_before_rts(void **state)
{
	struct pair p;
	struct ibv_qp_init_attr_ex ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp *qp;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc;
	struct end e;

	pair_open(&p, 1, NULL, NULL);
	ia.pd = p.e[0].pd;
	ia.send_cq = ia.recv_cq = p.e[0].cq;
	qp = ibv_create_qp_ex(p.e[0].ctx, &ia);
	assert_non_null(qp);
	qx = ibv_qp_to_qp_ex(qp);
	assert_non_null(qx);
	for (int i = 0; i < 4; i++) {
		if (i == 1) { /* INIT */
			a.qp_state = IBV_QPS_INIT;
			a.port_num = 1;
			a.qp_access_flags = 0;
			assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							       IBV_QP_ACCESS_FLAGS), 0);
		} else if (i == 2) { /* RTR */
			memset(&a, 0, sizeof(a));
			a.qp_state = IBV_QPS_RTR;
			a.path_mtu = IBV_MTU_1024;
			a.dest_qp_num = p.e[1].qp->qp_num;
			a.rq_psn = 0x123456;
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 1;
			a.ah_attr.dlid = p.e[1].lid;
			a.ah_attr.port_num = 1;
			assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
							       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
							       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
		} else if (i == 3) { /* back to RESET, then connected to RTS with e[1] */
			to_state(qp, IBV_QPS_RESET);
			e = p.e[0];
			e.qp = qp;
			to_state(p.e[1].qp, IBV_QPS_RESET);
			qp_connect(&e, &p.e[1], &default_opts);
			qp_connect(&p.e[1], &e, &default_opts);
			post_recv(&p.e[1], 7, 0, 64);
		}
		ibv_wr_start(qx);
		qx->wr_id = 40 + (uint64_t)i;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qx);
		ibv_wr_set_sge(qx, p.e[0].mr->lkey, (uintptr_t)p.e[0].buf, 8);
		assert_int_equal(ibv_wr_complete(qx), i < 3 ? EINVAL : 0);
		if (i < 3)
			assert_int_equal(qp_state(qp), i == 0 ? IBV_QPS_RESET : i == 1 ? IBV_QPS_INIT : IBV_QPS_RTR);
	}
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 43);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 8);
	expect_no_completion(p.e[0].cq, 20);
	expect_no_completion(p.e[1].cq, 20);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	pair_close(&p);
}

/* ---- receive buffers checked where a message writes (item 3) ---- */

/* The UCX_IB_ALLOC=heap case through the library: a receive buffer whose
 * tail lies past its MR takes a multi-packet SEND that stops short of the
 * MR's end; a byte more fails (LOC_PROT_ERR, the requester REM_OP_ERR). */
static void test_recv_tail_past_mr(void **state)
{
	struct pair p;
	struct ibv_mr *mr;
	struct ibv_sge sge, rsge;
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	uint8_t *r;

	pair_open(&p, 1, NULL, NULL);
	r = p.e[1].buf + 65536;
	mr = ibv_reg_mr(p.e[1].pd, r, 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	rsge = (struct ibv_sge){ (uintptr_t)r + 1024, 8192, mr->lkey }; /* 3072 bytes in the MR */
	for (uint32_t i = 0; i < 3072; i++)
		p.e[0].buf[i] = (uint8_t)(i * 13 + 1);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 3072, p.e[0].mr->lkey };
	rwr.wr_id = 1;
	assert_int_equal(ibv_post_recv(p.e[1].qp, &rwr, &bad), 0);
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 3072);
	assert_memory_equal(r + 1024, p.e[0].buf, 3072);
	rwr.wr_id = 3;
	assert_int_equal(ibv_post_recv(p.e[1].qp, &rwr, &bad), 0);
	sge.length = 3073;
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 4, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_REM_OP_ERR);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	pair_close(&p);
}

/* ---- cmd_fd ---- */

/* A real fd of its own per context (a sealed, empty memfd: docs/abi.md
 * "cmd_fd"): dup works, poll says ready as the kernel's uverbs file does,
 * it reads nothing and takes no writes, and closing the program's dup
 * changes nothing for the library; ibv_close_device closes it. */
static void test_cmd_fd(void **state)
{
	struct pair p;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct pollfd pf;
	char link[64], path[64], buf[8];
	int fd, d, flags;
	ssize_t n;

	pair_open(&p, 1, NULL, NULL);
	fd = p.e[0].ctx->cmd_fd;
	assert_true(fd >= 0);
	assert_true(p.e[1].ctx->cmd_fd >= 0);
	assert_int_not_equal(fd, p.e[1].ctx->cmd_fd);
	flags = fcntl(fd, F_GETFD);
	assert_true(flags >= 0 && (flags & FD_CLOEXEC));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	assert_true(n > 0);
	link[n] = 0;
	assert_non_null(strstr(link, "softib-cmd"));

	d = dup(fd);
	assert_true(d >= 0);
	pf = (struct pollfd){ .fd = d, .events = POLLIN | POLLOUT };
	assert_int_equal(poll(&pf, 1, 0), 1);
	assert_true(pf.revents & POLLOUT);
	assert_int_equal(read(d, buf, sizeof(buf)), 0);
	errno = 0;
	assert_int_equal(write(d, "x", 1), -1);
	assert_int_equal(errno, EPERM);
	/* O_NONBLOCK on the program's dup: shared with cmd_fd, touches nothing else. */
	assert_int_equal(fcntl(d, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(close(d), 0);

	/* The library still talks to softibd and moves data. */
	post_recv(&p.e[1], 1, 0, 64);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	{
		struct ibv_pd *pd = ibv_alloc_pd(p.e[0].ctx); /* a round trip to softibd */

		assert_non_null(pd);
		assert_int_equal(ibv_dealloc_pd(pd), 0);
	}
	pair_close(&p);
	/* Closed with its context: the number is free or names something else. */
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = 0;
		assert_null(strstr(link, "softib-cmd"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cq_clean_reset),
		cmocka_unit_test(test_cq_clean_destroy),
		cmocka_unit_test(test_cq_clean_reset_srq),
		cmocka_unit_test(test_cq_clean_destroy_srq),
		cmocka_unit_test(test_wr_complete_before_rts),
		cmocka_unit_test(test_recv_tail_past_mr),
		cmocka_unit_test(test_cmd_fd),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
