/* SPDX-License-Identifier: MIT */
/*
 * SRQ and XRC in the HCA's transport (src/hca/srq.c; IBA vol 1 ch. 10, the
 * XRC annex) over the loopback fabric of hca_loop.h (no verbs library, no
 * softibd): two RC QPs sharing one SRQ, the SRQ limit event and its
 * arming rules, LAST_WQE_REACHED, RNR on an empty SRQ, post_srq_recv's
 * errors, an XRC transfer (XRCETH, XRC opcodes, SEND/WRITE/READ/FETCH_ADD through
 * the XRC SRQ's PD), XRCETHs naming a wrong SRQ dropped and counted, and
 * RC-on-SRQ and XRC streams under the link's fault wrapper (every message
 * exactly once, in order).
 */
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hca/hca.h"
#include "hca/provider.h"
#include "hca_loop.h"
#include "iba/iba.h"
#include "stream_fill.h"

#define NQP 2

/* What a test built on top of up()'s pair, destroyed by srq_down. */
static struct {
	struct ibv_qp *qa[NQP], *qb[NQP];      /* qa[i] on A talks to qb[i] on B */
	struct ibv_srq *srq[3];                /* on B */
	struct ibv_xrcd *xrcd[2];              /* on B */
	struct ibv_mr *part;                   /* on B: a small MR (test_srq_xrc_tail_past_mr) */
} x;

static const struct sib_hca_ops *ops = &sib_hca_ops;

static int srq_down(void **state)
{
	for (unsigned int i = 0; i < NQP; i++) {
		if (x.qa[i])
			assert_int_equal(ops->destroy_qp(x.qa[i]), 0);
		if (x.qb[i])
			assert_int_equal(ops->destroy_qp(x.qb[i]), 0);
	}
	for (unsigned int i = 0; i < 3; i++)
		if (x.srq[i])
			assert_int_equal(ops->destroy_srq(x.srq[i]), 0);
	for (unsigned int i = 0; i < 2; i++)
		if (x.xrcd[i])
			assert_int_equal(ops->close_xrcd(x.xrcd[i]), 0);
	if (x.part)
		assert_int_equal(ops->dereg_mr(x.part), 0);
	memset(&x, 0, sizeof(x));
	return down(state);
}

static struct ibv_srq *srq_new(uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = max_wr, .max_sge = max_sge } };
	struct ibv_srq *srq = ops->create_srq(sides[B].pd, &a);

	assert_non_null(srq);
	assert_true(a.attr.max_wr >= max_wr);
	return srq;
}

/* A QP on side s: RC (on srq if given), XRC_SEND, or XRC_RECV in xd. */
static struct ibv_qp *qp_new(unsigned int s, enum ibv_qp_type t, struct ibv_srq *srq, struct ibv_xrcd *xd)
{
	struct ibv_qp_init_attr_ex a = { 0 };

	a.qp_type = t;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = sides[s].pd;
	a.send_cq = a.recv_cq = sides[s].cq;
	a.srq = srq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 64;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	if (t == IBV_QPT_XRC_RECV) {
		a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		a.xrcd = xd;
	}
	return ops->create_qp_ex(sides[s].ctx, &a);
}

/* RESET -> RTS toward dqpn on the other side, with the masks each QP
 * type needs (IBA 10.3.1; the XRC rows as ibv_xsrq_pingpong uses them). */
static void link_qp(struct ibv_qp *q, unsigned int s, uint32_t dqpn, const struct opts *o)
{
	struct ibv_qp_attr a = { 0 };
	bool tgt = q->qp_type == IBV_QPT_XRC_RECV, ini = q->qp_type == IBV_QPT_XRC_SEND;

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ops->modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = iba_psn_add(o->psn, s == A ? 1000 : 0);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = o->min_rnr_timer;
	a.ah_attr.dlid = sides[1 - s].lid;
	a.ah_attr.port_num = 1;
	assert_int_equal(ops->modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					(ini ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.sq_psn = iba_psn_add(o->psn, s == A ? 0 : 1000);
	a.max_rd_atomic = 4;
	assert_int_equal(ops->modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN |
					(tgt ? 0 : IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						   IBV_QP_MAX_QP_RD_ATOMIC)), 0);
}

/* x.qa[i] (type ta) on A and x.qb[i] (type tb) on B, connected. */
static void pair(unsigned int i, enum ibv_qp_type ta, enum ibv_qp_type tb, struct ibv_srq *srq,
		 struct ibv_xrcd *xd, const struct opts *o)
{
	x.qa[i] = qp_new(A, ta, NULL, NULL);
	x.qb[i] = qp_new(B, tb, srq, xd);
	assert_true(x.qa[i] && x.qb[i]);
	link_qp(x.qa[i], A, x.qb[i]->qp_num, o);
	link_qp(x.qb[i], B, x.qa[i]->qp_num, o);
}

static void srq_post(struct ibv_srq *srq, uint64_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[B].buf + off, .length = len,
			       .lkey = sides[B].mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(ops->post_srq_recv(srq, &wr, &bad), 0);
}

/* A WR on q from A's buf + off; srqn is the XRCETH of an XRC_SEND QP. */
static void send_on(struct ibv_qp *q, enum ibv_wr_opcode op, uint64_t off, uint32_t len, uint64_t raddr,
		    uint32_t srqn, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf + off, .length = len,
			       .lkey = sides[A].mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = sides[B].mr->rkey;
	wr.qp_type.xrc.remote_srqn = srqn;
	assert_int_equal(ops->post_send(q, &wr, &bad), 0);
}

/* The next async event of side s within ms (pumping meanwhile), resolved
 * as ibv_get_async_event does and acknowledged; false if none came. */
static bool next_event(unsigned int s, struct ibv_async_event *ev, unsigned int ms)
{
	uint64_t end = now_ms() + ms;
	struct pollfd p = { .fd = sides[s].ctx->async_fd, .events = POLLIN };
	struct sib_async_rec r;

	do {
		settle(1);
		while (poll(&p, 1, 0) == 1) {
			assert_int_equal(read(p.fd, &r, sizeof(r)), sizeof(r));
			if (!sib_hca_device_ops.async_event(sides[s].ctx, &r, ev))
				continue;
			if (ev->event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
				ev->element.srq->events_completed++;
			else
				ev->element.qp->events_completed++;
			return true;
		}
	} while (now_ms() < end);
	return false;
}

/* ================= SRQ ================= */

/* One SRQ feeds two RC QPs: WQEs are taken in posting order by whichever
 * QP's message comes first; a QP on an SRQ has no RQ of its own (EINVAL,
 * as rdma-core's providers); the SRQ cannot go while QPs use it (EBUSY);
 * ACKs carry the invalid credit code (no end-to-end credits). */
static void test_srq_shared_by_two_qps(void **state)
{
	struct ibv_recv_wr rwr = { 0 }, *rbad = NULL;
	uint8_t expect[1000];
	unsigned int acks = 0;

	(void)state;
	up(&def_opts);
	x.srq[0] = srq_new(16, 1);
	for (unsigned int i = 0; i < NQP; i++)
		pair(i, IBV_QPT_RC, IBV_QPT_RC, x.srq[0], NULL, &def_opts);
	for (unsigned int k = 0; k < 4; k++)
		srq_post(x.srq[0], k * 4096, 1000, 100 + k);
	for (unsigned int k = 0; k < 4; k++) {
		struct ibv_wc wc;

		fill(sides[A].buf + k * 1000, 1000, (uint8_t)(10 + k));
		send_on(x.qa[k % 2], IBV_WR_SEND, k * 1000, 1000, 0, 0, k);
		expect_wc(A, k, IBV_WC_SUCCESS);
		wc = poll_wc(B);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100 + k);
		assert_int_equal(wc.qp_num, x.qb[k % 2]->qp_num);
		assert_int_equal(wc.byte_len, 1000);
		fill(expect, 1000, (uint8_t)(10 + k));
		assert_memory_equal(sides[B].buf + k * 4096, expect, 1000);
	}
	for (unsigned int i = 0; i < nlog; i++)
		if (plog[i].dst == A && plog[i].opc == IBA_OPC_ACKNOWLEDGE) {
			assert_int_equal(plog[i].syn, IBA_AETH_ACK | IBA_AETH_CREDIT_INVALID);
			acks++;
		}
	assert_true(acks >= 4);
	assert_int_equal(ops->post_recv(x.qb[0], &rwr, &rbad), EINVAL);
	assert_ptr_equal(rbad, &rwr);
	assert_int_equal(ops->destroy_srq(x.srq[0]), EBUSY);
}

/* post_srq_recv: ENOMEM when full and EINVAL for too many SGEs, *bad_wr
 * at the first WR not posted; create refuses what the device lacks. */
static void test_srq_post_errors(void **state)
{
	struct ibv_sge sge[2] = { { .addr = (uintptr_t)sides[B].buf, .length = 8, .lkey = 0 } };
	struct ibv_recv_wr wr[5], *bad = NULL;
	struct ibv_srq_init_attr big = { .attr = { .max_wr = SIB_MAX_SRQ_WR + 1, .max_sge = 1 } };
	struct ibv_srq_init_attr sges = { .attr = { .max_wr = 4, .max_sge = SIB_MAX_SGE + 1 } };
	struct ibv_srq_attr qa;

	(void)state;
	up(&def_opts);
	sge[0].addr = (uintptr_t)sides[B].buf;
	sge[0].lkey = sides[B].mr->lkey;
	sge[1] = sge[0];
	assert_null(ops->create_srq(sides[B].pd, &big));
	assert_null(ops->create_srq(sides[B].pd, &sges));
	x.srq[0] = srq_new(4, 1);
	assert_int_equal(ops->query_srq(x.srq[0], &qa), 0);
	assert_int_equal(qa.max_wr, 4);
	assert_int_equal(qa.max_sge, 1);
	assert_int_equal(qa.srq_limit, 0);
	for (unsigned int i = 0; i < 5; i++)
		wr[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = sge, .num_sge = 1,
					      .next = i < 4 ? &wr[i + 1] : NULL };
	assert_int_equal(ops->post_srq_recv(x.srq[0], &wr[0], &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[4]);
	x.srq[1] = srq_new(4, 1);
	wr[1].num_sge = 2;
	assert_int_equal(ops->post_srq_recv(x.srq[1], &wr[0], &bad), EINVAL);
	assert_ptr_equal(bad, &wr[1]);
}

/* IBV_SRQ_LIMIT arms a low watermark: one SRQ_LIMIT_REACHED when the
 * count drops below it, naming the SRQ, then disarmed (ibv_modify_srq(3));
 * a limit above max_wr, a resize or an unknown bit give EINVAL (mlx5). */
static void test_srq_limit_event(void **state)
{
	struct ibv_srq_attr a = { 0 };
	struct ibv_async_event ev;

	(void)state;
	up(&def_opts);
	x.srq[0] = srq_new(16, 1);
	pair(0, IBV_QPT_RC, IBV_QPT_RC, x.srq[0], NULL, &def_opts);
	for (unsigned int k = 0; k < 8; k++)
		srq_post(x.srq[0], k * 4096, 64, k);
	a.srq_limit = 17;
	assert_int_equal(ops->modify_srq(x.srq[0], &a, IBV_SRQ_LIMIT), EINVAL);
	a.max_wr = 32;
	assert_int_equal(ops->modify_srq(x.srq[0], &a, IBV_SRQ_MAX_WR), EINVAL);
	assert_int_equal(ops->modify_srq(x.srq[0], &a, 1 << 5), EINVAL);
	a.srq_limit = 4;
	assert_int_equal(ops->modify_srq(x.srq[0], &a, IBV_SRQ_LIMIT), 0);
	assert_int_equal(ops->query_srq(x.srq[0], &a), 0);
	assert_int_equal(a.srq_limit, 4);
	for (unsigned int k = 0; k < 6; k++) {
		send_on(x.qa[0], IBV_WR_SEND, 0, 64, 0, 0, k);
		expect_wc(A, k, IBV_WC_SUCCESS);
		expect_wc(B, k, IBV_WC_SUCCESS);
		if (k < 4) { /* 7, 6, 5, 4 left: not below 4 */
			assert_false(next_event(B, &ev, 20));
			continue;
		}
		if (k == 4) { /* 3 left */
			assert_true(next_event(B, &ev, 1000));
			assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
			assert_ptr_equal(ev.element.srq, x.srq[0]);
			assert_int_equal(ops->query_srq(x.srq[0], &a), 0);
			assert_int_equal(a.srq_limit, 0); /* disarmed */
		} else {
			assert_false(next_event(B, &ev, 20)); /* once */
		}
	}
}

/* A QP on an SRQ that enters ERR raises LAST_WQE_REACHED (by modify, or
 * by a transport error, whose taken WQE completes with the error); the
 * SRQ's other WQEs stay for the other QPs. */
static void test_last_wqe_reached(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_async_event ev;
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	x.srq[0] = srq_new(16, 1);
	for (unsigned int i = 0; i < NQP; i++)
		pair(i, IBV_QPT_RC, IBV_QPT_RC, x.srq[0], NULL, &def_opts);
	srq_post(x.srq[0], 0, 100, 1);   /* too short for the next SEND */
	srq_post(x.srq[0], 4096, 4096, 2);
	send_on(x.qa[0], IBV_WR_SEND, 0, 500, 0, 0, 7);
	expect_wc(A, 7, IBV_WC_REM_INV_REQ_ERR);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	assert_true(next_event(B, &ev, 1000));
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.element.qp, x.qb[0]);
	/* The other QP still receives from the SRQ. */
	send_on(x.qa[1], IBV_WR_SEND, 0, 500, 0, 0, 8);
	expect_wc(A, 8, IBV_WC_SUCCESS);
	expect_wc(B, 2, IBV_WC_SUCCESS);
	/* By modify. */
	assert_int_equal(ops->modify_qp(x.qb[1], &a, IBV_QP_STATE), 0);
	assert_true(next_event(B, &ev, 1000));
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.element.qp, x.qb[1]);
	/* The QP on up()'s own RQ gets no such event. */
	assert_int_equal(ops->modify_qp(sides[B].qp, &a, IBV_QP_STATE), 0);
	assert_false(next_event(B, &ev, 20));
}

/* RC on an empty SRQ: RNR NAK (IBA 9.7.5.2.8), the SEND lands once a WQE
 * is posted. */
static void test_rnr_on_empty_srq(void **state)
{
	unsigned int rnr = 0;

	(void)state;
	up(&def_opts);
	x.srq[0] = srq_new(16, 1);
	pair(0, IBV_QPT_RC, IBV_QPT_RC, x.srq[0], NULL, &def_opts);
	fill(sides[A].buf, 300, 5);
	send_on(x.qa[0], IBV_WR_SEND, 0, 300, 0, 0, 1);
	settle(30);
	expect_no_wc(A);
	expect_no_wc(B);
	for (unsigned int i = 0; i < nlog; i++)
		if (plog[i].dst == A && (plog[i].syn & IBA_AETH_TYPE_MASK) == IBA_AETH_RNR_NAK)
			rnr++;
	assert_true(rnr >= 1);
	srq_post(x.srq[0], 8192, 300, 9);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 8192, sides[A].buf, 300);
}

/* ================= XRC ================= */

static bool is_xrc(uint8_t opc)
{
	return (opc & IBA_TRANSPORT_MASK) == IBA_TRANSPORT_XRC;
}

/* XRC_SEND -> XRC_RECV: every request carries the XRCETH and an XRC
 * opcode, ACKs too; the SEND lands in the XRC SRQ the WR names and
 * completes on its CQ; WRITE and READ check keys against the XRC SRQ's
 * PD; the domain and SRQ refuse to go while in use (EBUSY). */
/* Atomics over XRC (atomic.c): FETCH_ADD with the XRCETH, answered by an
 * XRC ATOMIC_ACKNOWLEDGE, the original value in A's buffer. */
static void xrc_atomic(uint32_t srqn)
{
	struct ibv_qp_attr qa = { .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						      IBV_ACCESS_REMOTE_ATOMIC };
	struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf + 32768, .length = 8,
			       .lkey = sides[A].mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;
	struct ibv_mr *amr;
	uint64_t *t = (uint64_t *)(void *)(sides[B].buf + 131072), orig;
	struct ibv_wc wc;

	assert_int_equal(ops->modify_qp(x.qb[0], &qa, IBV_QP_ACCESS_FLAGS), 0);
	amr = ops->reg_mr(sides[B].pd, sides[B].buf, BUF, (uintptr_t)sides[B].buf,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(amr);
	*t = 41;
	wr.wr_id = 4;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)t;
	wr.wr.atomic.rkey = amr->rkey;
	wr.wr.atomic.compare_add = 1;
	wr.qp_type.xrc.remote_srqn = srqn;
	assert_int_equal(ops->post_send(x.qa[0], &wr, &bad), 0);
	wc = poll_wc(A);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_FETCH_ADD);
	memcpy(&orig, sides[A].buf + 32768, 8);
	assert_int_equal(orig, 41);
	assert_int_equal(*t, 42);
	assert_int_equal(count(0, B, IBA_TRANSPORT_XRC | IBA_OPC_FETCH_ADD, 0, true), 1);
	assert_int_equal(count(0, A, IBA_TRANSPORT_XRC | IBA_OPC_ATOMIC_ACKNOWLEDGE, 0, true), 1);
	assert_int_equal(ops->dereg_mr(amr), 0);
}

static void test_xrc_transfer(void **state)
{
	struct ibv_srq_init_attr_ex bad_srq = { .comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
						.srq_type = IBV_SRQT_XRC };
	uint32_t srqn = 0;
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	bad_srq.pd = sides[B].pd;
	bad_srq.attr.max_wr = 4;
	assert_null(ops->create_srq_ex(sides[B].ctx, &bad_srq)); /* no XRCD, no CQ */
	assert_null(qp_new(B, IBV_QPT_XRC_RECV, NULL, NULL));
	x.xrcd[0] = loop_xrcd_open(B, -1);
	x.srq[0] = loop_xsrq_new(B, x.xrcd[0], 64, NULL);
	assert_int_equal(ops->get_srq_num(x.srq[0], &srqn), 0);
	assert_int_not_equal(srqn, 0);
	pair(0, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, NULL, x.xrcd[0], &def_opts);
	assert_int_equal(ops->close_xrcd(x.xrcd[0]), EBUSY);

	srq_post(x.srq[0], 0, 4096, 11);
	fill(sides[A].buf, 3000, 9);
	send_on(x.qa[0], IBV_WR_SEND, 0, 3000, 0, srqn, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_memory_equal(sides[B].buf, sides[A].buf, 3000);
	assert_int_equal(count(0, B, -1, 0, true), 3);
	for (unsigned int i = 0; i < nlog; i++) /* both ways: XRC opcodes only */
		assert_true(is_xrc(plog[i].opc));
	assert_int_equal(count(0, B, IBA_TRANSPORT_XRC | IBA_OPC_SEND_FIRST, 0, true), 1);
	assert_true(count(0, A, IBA_TRANSPORT_XRC | IBA_OPC_ACKNOWLEDGE, 0, true) >= 1);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true), 0);

	/* WRITE and READ through the target: the XRC SRQ's PD is B's PD. */
	fill(sides[A].buf + 8192, 2000, 3);
	send_on(x.qa[0], IBV_WR_RDMA_WRITE, 8192, 2000, (uintptr_t)sides[B].buf + 65536, srqn, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 65536, sides[A].buf + 8192, 2000);
	send_on(x.qa[0], IBV_WR_RDMA_READ, 16384, 2000, (uintptr_t)sides[B].buf + 65536, srqn, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf + 16384, sides[A].buf + 8192, 2000);
	assert_true(count(0, A, IBA_TRANSPORT_XRC | IBA_OPC_RDMA_READ_RESPONSE_FIRST, 0, true) >= 1);
	xrc_atomic(srqn);

	/* A memory-window R_Key at the target (which has no PD of its own:
	 * the check uses the SRQ's): a remote access NAK, no crash. */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf, .length = 64,
				       .lkey = sides[A].mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
				   *bad = NULL;

		wr.wr.rdma.remote_addr = (uintptr_t)sides[B].buf;
		wr.wr.rdma.rkey = 0x80000100u; /* the window key space (mw.c) */
		wr.qp_type.xrc.remote_srqn = srqn;
		assert_int_equal(ops->post_send(x.qa[0], &wr, &bad), 0);
		expect_wc(A, 5, IBV_WC_REM_ACCESS_ERR);
	}
}

/*
 * SRQ and XRC SRQ receive WQEs are checked for the bytes a message writes
 * (issue 14 item 3, as rxe and hardware): a buffer whose second half lies
 * past its MR takes a message that fills the first half (multi-packet);
 * one byte more fails that WQE with LOC_PROT_ERR (the requester: REM_OP_ERR).
 */
static void srq_tail_past_mr(struct ibv_qp *qa, struct ibv_srq *srq, uint32_t srqn, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[B].buf + 0x40000 + 4096, .length = 8192,
			       .lkey = x.part->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	struct ibv_wc wc;

	fill(sides[A].buf, 4097, (uint8_t)id);
	assert_int_equal(ops->post_srq_recv(srq, &wr, &bad), 0);
	send_on(qa, IBV_WR_SEND, 0, 4096, 0, srqn, id);
	expect_wc(A, id, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 4096);
	assert_memory_equal(sides[B].buf + 0x40000 + 4096, sides[A].buf, 4096);
	wr.wr_id = id + 1;
	assert_int_equal(ops->post_srq_recv(srq, &wr, &bad), 0);
	send_on(qa, IBV_WR_SEND, 0, 4097, 0, srqn, id + 1);
	expect_wc(A, id + 1, IBV_WC_REM_OP_ERR);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, id + 1);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
}

static void test_srq_xrc_tail_past_mr(void **state)
{
	uint32_t srqn = 0;

	(void)state;
	up(&def_opts);
	x.part = ops->reg_mr(sides[B].pd, sides[B].buf + 0x40000, 8192, (uintptr_t)sides[B].buf + 0x40000,
			     IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(x.part);
	x.srq[0] = srq_new(16, 1);
	pair(0, IBV_QPT_RC, IBV_QPT_RC, x.srq[0], NULL, &def_opts);
	srq_tail_past_mr(x.qa[0], x.srq[0], 0, 10);
	x.xrcd[0] = loop_xrcd_open(B, -1);
	x.srq[1] = loop_xsrq_new(B, x.xrcd[0], 16, &srqn);
	pair(1, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, NULL, x.xrcd[0], &def_opts);
	srq_tail_past_mr(x.qa[1], x.srq[1], srqn, 20);
}

static enum verdict hold_later_sends(const struct seen *s)
{
	uint8_t op = s->opc & 0x1f;

	return s->dst == B && (op == IBA_OPC_SEND_MIDDLE || op == IBA_OPC_SEND_LAST) ? HOLD : PASS;
}

/* An XRC SRQ destroyed while a target QP holds one of its WQEs mid-message
 * (the rest of the message is late): the WQE completes flushed on the
 * SRQ's CQ and the destroy succeeds at once, as on rdma-core. */
static void test_xrc_srq_destroy_mid_message(void **state)
{
	uint32_t srqn = 0;
	uint64_t t0;
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	x.xrcd[0] = loop_xrcd_open(B, -1);
	x.srq[0] = loop_xsrq_new(B, x.xrcd[0], 64, NULL);
	assert_int_equal(ops->get_srq_num(x.srq[0], &srqn), 0);
	pair(0, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, NULL, x.xrcd[0], &def_opts);
	srq_post(x.srq[0], 0, 4096, 31);
	filter = hold_later_sends;
	send_on(x.qa[0], IBV_WR_SEND, 0, 3000, 0, srqn, 1);
	settle(50);
	assert_int_equal(nkept, 2); /* FIRST placed, the WQE is held */
	t0 = now_ms();
	assert_int_equal(ops->destroy_srq(x.srq[0]), 0);
	assert_true(now_ms() - t0 < 1000);
	x.srq[0] = NULL;
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	filter = NULL;
}

/* The ibv_wr_* API on an XRC_SEND QP: ibv_wr_set_xrc_srqn names the SRQ
 * (verbs.h's inline calls qp_ex->wr_set_xrc_srqn). */
static void test_xrc_wr_api(void **state)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	struct ibv_qp_ex *qx;
	uint32_t srqn;
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	x.xrcd[0] = loop_xrcd_open(B, -1);
	x.srq[0] = loop_xsrq_new(B, x.xrcd[0], 64, NULL);
	assert_int_equal(ops->get_srq_num(x.srq[0], &srqn), 0);
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	a.pd = sides[A].pd;
	a.send_cq = sides[A].cq;
	a.cap.max_send_wr = 8;
	a.cap.max_send_sge = 1;
	x.qa[0] = ops->create_qp_ex(sides[A].ctx, &a);
	assert_non_null(x.qa[0]);
	x.qb[0] = qp_new(B, IBV_QPT_XRC_RECV, NULL, x.xrcd[0]);
	assert_non_null(x.qb[0]);
	link_qp(x.qa[0], A, x.qb[0]->qp_num, &def_opts);
	link_qp(x.qb[0], B, x.qa[0]->qp_num, &def_opts);
	qx = (struct ibv_qp_ex *)x.qa[0];
	assert_non_null(qx->wr_set_xrc_srqn);
	srq_post(x.srq[0], 0, 4096, 21);
	fill(sides[A].buf, 700, 4);
	qx->wr_start(qx);
	qx->wr_id = 5;
	qx->wr_flags = IBV_SEND_SIGNALED;
	qx->wr_send(qx);
	qx->wr_set_xrc_srqn(qx, srqn);
	qx->wr_set_sge(qx, sides[A].mr->lkey, (uintptr_t)sides[A].buf, 700);
	assert_int_equal(qx->wr_complete(qx), 0);
	expect_wc(A, 5, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 21);
	assert_int_equal(wc.byte_len, 700);
	assert_memory_equal(sides[B].buf, sides[A].buf, 700);
}

/* An XRCETH naming no SRQ, a basic SRQ, or an XRC SRQ of another domain:
 * the packet is dropped and counted (rx_drop xrc_srqn), nothing lands. */
static void test_xrc_wrong_srqn_dropped(void **state)
{
	struct sib_context *cb;
	uint32_t good, other, basic, before;

	(void)state;
	up(&def_opts);
	cb = to_sctx(sides[B].ctx);
	x.xrcd[0] = loop_xrcd_open(B, -1);
	x.xrcd[1] = loop_xrcd_open(B, -1);
	x.srq[0] = loop_xsrq_new(B, x.xrcd[0], 64, NULL);
	x.srq[1] = loop_xsrq_new(B, x.xrcd[1], 64, NULL);
	x.srq[2] = srq_new(4, 1);
	assert_int_equal(ops->get_srq_num(x.srq[0], &good), 0);
	assert_int_equal(ops->get_srq_num(x.srq[1], &other), 0);
	assert_int_equal(ops->get_srq_num(x.srq[2], &basic), 0);
	pair(0, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, NULL, x.xrcd[0], &def_opts);
	srq_post(x.srq[0], 0, 4096, 1);
	srq_post(x.srq[1], 0, 4096, 2);
	srq_post(x.srq[2], 0, 4096, 3);
	before = (uint32_t)sib_rx_drop_count(cb, SIB_RX_DROP_XRC_SRQN);
	send_on(x.qa[0], IBV_WR_SEND, 0, 100, 0, other, 1);
	settle(30);
	assert_true(sib_rx_drop_count(cb, SIB_RX_DROP_XRC_SRQN) >= before + 1);
	send_on(x.qa[0], IBV_WR_SEND, 0, 100, 0, basic, 2);
	send_on(x.qa[0], IBV_WR_SEND, 0, 100, 0, 0xfff0, 3);
	settle(30);
	assert_true(sib_rx_drop_count(cb, SIB_RX_DROP_XRC_SRQN) >= before + 3);
	expect_no_wc(B);
	expect_no_wc(A);
	(void)good;
}

/* ================= under the fault wrapper ================= */

#define FMSG    2500u
#define FMSGS   300u
#define FWINDOW 16u
#define FRQ     32u

/* FMSGS SENDs on q (XRCETH srqn if XRC) into srq: each exactly once, in
 * order, undamaged, whatever the wrapper loses, duplicates, reorders or
 * corrupts (IBA 9.7: RC and XRC are reliable). */
static void stream(struct ibv_qp *q, struct ibv_srq *srq, uint32_t srqn)
{
	uint32_t sent = 0, completed = 0, received = 0;
	uint8_t expect[FMSG];
	uint64_t end = now_ms() + 60000;
	struct ibv_wc wc;

	for (uint32_t k = 0; k < FRQ; k++)
		srq_post(srq, k * FMSG, FMSG, k);
	while (received < FMSGS || completed < FMSGS) {
		while (sent < FMSGS && sent - completed < FWINDOW) {
			uint32_t off = 512 * 1024 + (sent % FWINDOW) * FMSG;

			stream_fill(sides[A].buf + off, FMSG, sent);
			send_on(q, IBV_WR_SEND, off, FMSG, 0, srqn, sent++);
		}
		pump();
		if (ops->poll_cq(sides[A].cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, completed++);
		}
		if (ops->poll_cq(sides[B].cq, 1, &wc) == 1) {
			uint32_t slot = (uint32_t)wc.wr_id;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.byte_len, FMSG);
			assert_int_equal(slot, received % FRQ);
			stream_fill(expect, FMSG, received++);
			assert_memory_equal(sides[B].buf + slot * FMSG, expect, FMSG);
			memset(sides[B].buf + slot * FMSG, 0, FMSG);
			srq_post(srq, slot * FMSG, FMSG, slot);
		}
		if (now_ms() > end)
			fail_msg("stuck: sent %u completed %u received %u", sent, completed, received);
	}
	settle(20);
	expect_no_wc(A);
	expect_no_wc(B);
}

static const char *const fault_spec = "seed=11,loss=0.02,dup=0.02,reorder=0.02,corrupt=0.02";

static void test_rc_srq_under_faults(void **state)
{
	struct opts o = def_opts;

	(void)state;
	o.timeout = 10; /* 4 ms: losses recover quickly */
	o.faults = fault_spec;
	up(&o);
	x.srq[0] = srq_new(FRQ, 1);
	pair(0, IBV_QPT_RC, IBV_QPT_RC, x.srq[0], NULL, &o);
	stream(x.qa[0], x.srq[0], 0);
}

static void test_xrc_under_faults(void **state)
{
	struct opts o = def_opts;
	uint32_t srqn;

	(void)state;
	o.timeout = 10;
	o.faults = fault_spec;
	up(&o);
	x.xrcd[0] = loop_xrcd_open(B, -1);
	x.srq[0] = loop_xsrq_new(B, x.xrcd[0], 64, NULL);
	assert_int_equal(ops->get_srq_num(x.srq[0], &srqn), 0);
	pair(0, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, NULL, x.xrcd[0], &o);
	stream(x.qa[0], x.srq[0], srqn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_srq_shared_by_two_qps, srq_down),
		cmocka_unit_test_teardown(test_srq_post_errors, srq_down),
		cmocka_unit_test_teardown(test_srq_limit_event, srq_down),
		cmocka_unit_test_teardown(test_last_wqe_reached, srq_down),
		cmocka_unit_test_teardown(test_rnr_on_empty_srq, srq_down),
		cmocka_unit_test_teardown(test_xrc_transfer, srq_down),
		cmocka_unit_test_teardown(test_xrc_wr_api, srq_down),
		cmocka_unit_test_teardown(test_xrc_srq_destroy_mid_message, srq_down),
		cmocka_unit_test_teardown(test_xrc_wrong_srqn_dropped, srq_down),
		cmocka_unit_test_teardown(test_srq_xrc_tail_past_mr, srq_down),
		cmocka_unit_test_teardown(test_rc_srq_under_faults, srq_down),
		cmocka_unit_test_teardown(test_xrc_under_faults, srq_down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
