/* SPDX-License-Identifier: MIT */
/*
 * The QP surface (issue 6 part 8) over the loopback fabric of hca_loop.h:
 * ibv_query_qp returns every attribute that was set (IBV_QP_* one by one,
 * GRH and alternate path included) and the init attributes; the modify
 * masks per transition and QP type (IBA 11.2.4.2 / qp_state.c's table)
 * for UC; SQD drains what is in flight, starts nothing new, raises
 * IBV_EVENT_SQ_DRAINED when asked and returns to RTS; SQD -> SQD takes
 * path attributes; a UC send error enters SQE (IBA 10.3.1), the RQ goes
 * on, SQE -> RTS resumes.
 */
#include <endian.h>
#include <errno.h>
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
#include "iba/iba.h"
#include "hca_loop.h"

static struct ibv_qp_attr query(unsigned int s, struct ibv_qp_init_attr *ia)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr dummy;

	memset(&a, 0xa5, sizeof(a)); /* nothing is left as it was */
	assert_int_equal(sib_hca_ops.query_qp(sides[s].qp, &a, ~0, ia ? ia : &dummy), 0);
	return a;
}

static int modify(unsigned int s, struct ibv_qp_attr *a, int mask)
{
	return sib_hca_ops.modify_qp(sides[s].qp, a, mask);
}

static void assert_ah_equal(const struct ibv_ah_attr *x, const struct ibv_ah_attr *y)
{
	assert_int_equal(x->dlid, y->dlid);
	assert_int_equal(x->sl, y->sl);
	assert_int_equal(x->src_path_bits, y->src_path_bits);
	assert_int_equal(x->static_rate, y->static_rate);
	assert_int_equal(x->is_global, y->is_global);
	assert_int_equal(x->port_num, y->port_num);
	assert_memory_equal(x->grh.dgid.raw, y->grh.dgid.raw, 16);
	assert_int_equal(x->grh.flow_label, y->grh.flow_label);
	assert_int_equal(x->grh.sgid_index, y->grh.sgid_index);
	assert_int_equal(x->grh.hop_limit, y->grh.hop_limit);
	assert_int_equal(x->grh.traffic_class, y->grh.traffic_class);
}

/* Moves A to RESET; query returns its init attributes. */
static void qp_walk_reset(void)
{
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(modify(A, &a, IBV_QP_STATE), 0);
	q = query(A, &ia);
	assert_int_equal(q.qp_state, IBV_QPS_RESET);
	assert_int_equal(ia.qp_type, IBV_QPT_RC);
	assert_ptr_equal(ia.send_cq, sides[A].cq);
	assert_ptr_equal(ia.recv_cq, sides[A].cq);
	assert_null(ia.srq);
	assert_int_equal(ia.sq_sig_all, 0);
	assert_true(ia.cap.max_send_wr >= 64 && ia.cap.max_recv_wr >= 64);
	assert_int_equal(q.cap.max_send_wr, ia.cap.max_send_wr);
	assert_int_equal(q.cap.max_inline_data, ia.cap.max_inline_data);
}

/* RESET -> INIT with every INIT attribute; query returns them. */
static void qp_walk_init(void)
{
	struct ibv_qp_attr a, q;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS), 0);
	q = query(A, NULL);
	assert_int_equal(q.qp_state, IBV_QPS_INIT);
	assert_int_equal(q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(q.port_num, 1);
	assert_int_equal(q.pkey_index, 0);
}

/* INIT -> RTR with every RTR attribute, the alternate path too; query returns them. */
static void qp_walk_rtr(void)
{
	struct ibv_qp_attr a, q;
	struct ibv_ah_attr alt = { .dlid = 7, .sl = 3, .src_path_bits = 0, .static_rate = 3,
				   .is_global = 1, .port_num = 1 };

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_2048;
	a.dest_qp_num = sides[B].qp->qp_num;
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 5;
	a.min_rnr_timer = 17;
	a.ah_attr.dlid = sides[B].lid;
	a.ah_attr.sl = 5;
	a.ah_attr.static_rate = 2;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	memset(a.ah_attr.grh.dgid.raw, 0x42, 16);
	a.ah_attr.grh.flow_label = 0x12345;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = 0x28;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	a.alt_ah_attr = alt;
	memset(a.alt_ah_attr.grh.dgid.raw, 0x17, 16);
	a.alt_ah_attr.grh.hop_limit = 9;
	a.alt_pkey_index = 0;
	a.alt_port_num = 1;
	a.alt_timeout = 12;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
				IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH), 0);
	q = query(A, NULL);
	assert_int_equal(q.qp_state, IBV_QPS_RTR);
	assert_int_equal(q.path_mtu, IBV_MTU_2048);
	assert_int_equal(q.dest_qp_num, sides[B].qp->qp_num);
	assert_int_equal(q.rq_psn, 0x123456);
	assert_int_equal(q.max_dest_rd_atomic, 5);
	assert_int_equal(q.min_rnr_timer, 17);
	assert_int_equal(q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_ah_equal(&q.ah_attr, &a.ah_attr);
	assert_ah_equal(&q.alt_ah_attr, &a.alt_ah_attr);
	assert_int_equal(q.alt_port_num, 1);
	assert_int_equal(q.alt_pkey_index, 0);
	assert_int_equal(q.alt_timeout, 12);
}

/* RTR -> RTS with every RTS attribute; query returns them and keeps the RTR ones. */
static void qp_walk_rts(void)
{
	struct ibv_qp_attr a, q;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 6;
	a.rnr_retry = 5;
	a.sq_psn = 0xabcdef;
	a.max_rd_atomic = 3;
	a.path_mig_state = IBV_MIG_REARM;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
				IBV_QP_PATH_MIG_STATE), 0);
	q = query(A, NULL);
	assert_int_equal(q.qp_state, IBV_QPS_RTS);
	assert_int_equal(q.cur_qp_state, IBV_QPS_RTS);
	assert_int_equal(q.timeout, 14);
	assert_int_equal(q.retry_cnt, 6);
	assert_int_equal(q.rnr_retry, 5);
	assert_int_equal(q.sq_psn, 0xabcdef);
	assert_int_equal(q.max_rd_atomic, 3);
	assert_int_equal(q.path_mig_state, IBV_MIG_REARM);
	assert_int_equal(q.sq_draining, 0);
	assert_int_equal(q.en_sqd_async_notify, 0);
	/* Still what RTR set. */
	assert_int_equal(q.rq_psn, 0x123456);
	assert_int_equal(q.min_rnr_timer, 17);
	assert_int_equal(q.ah_attr.grh.flow_label, 0x12345);
}

/* In RTS: bad values are refused and change nothing; a good optional one is taken. */
static void qp_modify_bad_values(void)
{
	struct ibv_qp_attr a;

	/* Bad values are refused and change nothing. */
	memset(&a, 0, sizeof(a));
	a.alt_port_num = 9;
	assert_int_equal(modify(A, &a, IBV_QP_ALT_PATH), EINVAL);
	a.alt_port_num = 1;
	a.alt_timeout = 32;
	assert_int_equal(modify(A, &a, IBV_QP_ALT_PATH), EINVAL);
	a.min_rnr_timer = 32;
	assert_int_equal(modify(A, &a, IBV_QP_MIN_RNR_TIMER), EINVAL);
	assert_int_equal(query(A, NULL).alt_timeout, 12);
	/* RTS -> RTS with an optional attribute. */
	a.min_rnr_timer = 3;
	assert_int_equal(modify(A, &a, IBV_QP_MIN_RNR_TIMER), 0);
	assert_int_equal(query(A, NULL).min_rnr_timer, 3);
}

/* Every attribute of an RC QP, set by modify, comes back from query. */
static void test_query_returns_every_attribute(void **state)
{
	struct opts o = def_opts;

	(void)state;
	up(&o); /* A connected: now walk it again with every bit set */
	qp_walk_reset();
	qp_walk_init();
	qp_walk_rtr();
	qp_walk_rts();
	qp_modify_bad_values();
}

/* UC's masks (IBA 11.2.4.2): no ACK timeout, retries or READ depth. */
static void test_uc_modify_masks(void **state)
{
	struct opts o = def_opts;
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr ia;

	(void)state;
	o.qpt = IBV_QPT_UC;
	up(&o);
	q = query(A, &ia);
	assert_int_equal(ia.qp_type, IBV_QPT_UC);
	assert_int_equal(q.qp_state, IBV_QPS_RTS);
	assert_int_equal(q.dest_qp_num, sides[B].qp->qp_num);
	assert_int_equal(q.path_mtu, IBV_MTU_1024);
	assert_int_equal(q.sq_psn, 100);
	assert_int_equal(q.rq_psn, 1100);
	assert_int_equal(q.timeout, 0);
	assert_int_equal(q.max_rd_atomic, 0);

	memset(&a, 0, sizeof(a));
	a.timeout = 14;
	assert_int_equal(modify(A, &a, IBV_QP_TIMEOUT), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_RETRY_CNT), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_RNR_RETRY), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_MAX_QP_RD_ATOMIC), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_MIN_RNR_TIMER), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_QKEY), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_CAP), EINVAL);
	assert_int_equal(query(A, NULL).timeout, 0);
	/* Back to RESET and up with RC-only bits: refused at each step. */
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(modify(A, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = sides[B].qp->qp_num;
	a.rq_psn = 1100;
	a.ah_attr.dlid = sides[B].lid;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_STATE), EINVAL); /* SQ_PSN is required */
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	/* SQD -> SQD on UC takes the path (AV, P_Key index), not RC's timers. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	assert_int_equal(modify(A, &a, IBV_QP_STATE), 0);
	settle(2);
	a.ah_attr.dlid = sides[B].lid;
	a.ah_attr.port_num = 1;
	a.ah_attr.sl = 4;
	a.timeout = 9;
	assert_int_equal(modify(A, &a, IBV_QP_AV | IBV_QP_TIMEOUT), EINVAL);
	assert_int_equal(modify(A, &a, IBV_QP_AV | IBV_QP_PKEY_INDEX), 0);
	assert_int_equal(query(A, NULL).ah_attr.sl, 4);
	assert_int_equal(query(A, NULL).qp_state, IBV_QPS_SQD);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(modify(A, &a, IBV_QP_STATE), 0);
	/* And it works. */
	fill(sides[A].buf, 2000, 9);
	post_recv(B, 0, 4096, 5);
	post_send(A, IBV_WR_SEND, 0, 2000, 0, 0, 6);
	expect_wc(A, 6, IBV_WC_SUCCESS);
	expect_wc(B, 5, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf, sides[A].buf, 2000);
}

/* One async event record from side s's context within ms, or fail. */
static struct sib_async_rec read_event(unsigned int s, int ms)
{
	struct pollfd pfd = { .fd = sides[s].ctx->async_fd, .events = POLLIN };
	struct sib_async_rec r;

	assert_int_equal(poll(&pfd, 1, ms), 1);
	assert_int_equal(read(pfd.fd, &r, sizeof(r)), sizeof(r));
	return r;
}

static bool event_pending(unsigned int s)
{
	struct pollfd pfd = { .fd = sides[s].ctx->async_fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/*
 * RTS -> SQD with a message in flight: sq_draining until its ACK, then
 * IBV_EVENT_SQ_DRAINED (once); a WQE posted meanwhile is not started
 * until SQD -> RTS.  SQD -> SQD takes path attributes (IBA 10.3.1).
 */
static void test_sqd_drains_then_resumes(void **state)
{
	struct opts o = def_opts;
	struct ibv_qp_attr a;
	struct sib_async_rec ev;
	unsigned int mark;

	(void)state;
	up(&o);
	fill(sides[A].buf, 65536, 4);
	post_recv(B, 0, 65536, 1);
	post_recv(B, 65536, 65536, 2);
	post_send(A, IBV_WR_SEND, 0, 65536, 0, 0, 10); /* 64 packets on A's wire, not pumped */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	assert_int_equal(query(A, NULL).qp_state, IBV_QPS_SQD);
	assert_int_equal(query(A, NULL).sq_draining, 1);
	assert_int_equal(query(A, NULL).en_sqd_async_notify, 1);
	assert_false(event_pending(A));
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 11); /* posted in SQD: waits */
	expect_wc(A, 10, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	ev = read_event(A, 2000);
	assert_int_equal(ev.type, IBV_EVENT_SQ_DRAINED);
	assert_int_equal(ev.id, sides[A].qp->qp_num);
	assert_int_equal(query(A, NULL).sq_draining, 0);
	mark = nlog;
	settle(10);
	assert_int_equal(count(mark, B, -1, 0, true), 0); /* WQE 11 not started */
	expect_no_wc(A);
	assert_false(event_pending(A)); /* once */

	/* SQD -> SQD: path attributes may change here (RC: timeout, retries). */
	memset(&a, 0, sizeof(a));
	a.timeout = 16;
	a.retry_cnt = 3;
	a.rnr_retry = 6;
	assert_int_equal(modify(A, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY), 0);
	assert_int_equal(query(A, NULL).timeout, 16);
	assert_int_equal(query(A, NULL).retry_cnt, 3);
	a.qp_state = IBV_QPS_SQD;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);

	/* SQD -> RTS: the waiting WQE goes. */
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(modify(A, &a, IBV_QP_STATE), 0);
	expect_wc(A, 11, IBV_WC_SUCCESS);
	expect_wc(B, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 65536, sides[A].buf, 100);

	/* Without en_sqd_async_notify: SQD, drained, no event. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	settle(5);
	assert_int_equal(query(A, NULL).en_sqd_async_notify, 0);
	assert_int_equal(query(A, NULL).sq_draining, 0);
	assert_false(event_pending(A));
}

/*
 * A UC send WQE that fails its L_Key check: the QP enters SQE (IBA 10.3.1,
 * not ERR as RC), the WQE completes LOC_PROT_ERR and later ones flush, the
 * receive queue goes on; SQE -> RTS and sending works again.
 */
static void test_uc_send_error_enters_sqe(void **state)
{
	struct opts o = def_opts;
	struct ibv_qp_attr a;

	(void)state;
	o.qpt = IBV_QPT_UC;
	up(&o);
	post_send_sge(A, IBV_WR_SEND, (uintptr_t)sides[A].buf, 100, sides[A].mr->lkey ^ 0x55, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(qp_state(A), IBV_QPS_SQE);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 2);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(count(0, B, -1, 0, true), 0);
	/* The RQ works in SQE: B -> A arrives. */
	fill(sides[B].buf, 500, 6);
	post_recv(A, 0, 4096, 3);
	post_send(B, IBV_WR_SEND, 0, 500, 0, 0, 4);
	expect_wc(B, 4, IBV_WC_SUCCESS);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf, 500);
	/* SQE -> RTS (UC: CUR_STATE and ACCESS_FLAGS optional, nothing else). */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.cur_qp_state = IBV_QPS_SQE;
	a.sq_psn = 5;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);
	a.cur_qp_state = IBV_QPS_RTS; /* not the state it is in */
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	a.cur_qp_state = IBV_QPS_SQE;
	assert_int_equal(modify(A, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	fill(sides[A].buf + 8192, 700, 7);
	post_recv(B, 8192, 4096, 5);
	post_send(A, IBV_WR_SEND, 8192, 700, 0, 0, 6);
	expect_wc(A, 6, IBV_WC_SUCCESS);
	expect_wc(B, 5, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 8192, sides[A].buf + 8192, 700);
}

/* What ibv_devinfo -v shows for this part is true: CUR_STATE is taken
 * and checked (test_uc_send_error_enters_sqe); no automatic path
 * migration and no QP resize (the alternate path is only stored). */
static void test_device_cap_flags(void **state)
{
	struct ibv_device_attr_ex da;

	(void)state;
	up(&def_opts);
	assert_int_equal(sib_hca_ops.query_device_ex(sides[A].ctx, NULL, &da, sizeof(da)), 0);
	assert_true(da.orig_attr.device_cap_flags & IBV_DEVICE_CURR_QP_STATE_MOD);
	assert_false(da.orig_attr.device_cap_flags & IBV_DEVICE_AUTO_PATH_MIG);
	assert_false(da.orig_attr.device_cap_flags & IBV_DEVICE_RESIZE_MAX_WR);
	assert_int_equal(modify(A, &(struct ibv_qp_attr){ .cap = { .max_send_wr = 8 } }, IBV_QP_CAP),
			 EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_query_returns_every_attribute, down),
		cmocka_unit_test_teardown(test_uc_modify_masks, down),
		cmocka_unit_test_teardown(test_sqd_drains_then_resumes, down),
		cmocka_unit_test_teardown(test_uc_send_error_enters_sqe, down),
		cmocka_unit_test_teardown(test_device_cap_flags, down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
