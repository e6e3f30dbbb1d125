/* SPDX-License-Identifier: MIT */
/*
 * struct ibv_qp's `state` follows the application's ibv_modify_qp and
 * ibv_query_qp only, as in rdma-core (libibverbs sets it there and nowhere
 * else): a QP that the HCA takes to ERR or SQE by itself keeps its last
 * state in that field until the application queries or modifies it.
 * Found by UCX: when its peer died, rc_verbs flushed the endpoint and
 * asserted `ep->qp->state == IBV_QPS_RTS` (rc_verbs_ep.c), which holds on
 * every kernel provider; softib's engine had written IBV_QPS_ERR into the
 * field (from its own thread) and the process aborted instead of handling
 * the peer failure.  RC (a local protection error, a remote access NAK)
 * and UD (a local error: SQE).
 */
#include <stdlib.h>
#include <string.h>

#include "verbs_harness.h"

#define QKEY    0x1234u
#define WAIT_MS 5000

/* The HCA's own transition is seen through ibv_query_qp, which then
 * updates the field, and not before. */
static void expect_async_state(struct ibv_qp *qp, enum ibv_qp_state before, enum ibv_qp_state now)
{
	assert_int_equal(qp->state, before);
	assert_int_equal(qp_state(qp), now);
	assert_int_equal(qp->state, now);
}

static void test_rc_local_error(void **st)
{
	struct pair p;
	struct ibv_sge sge;
	struct ibv_wc wc;

	(void)st;
	pair_open(&p, 1, NULL, NULL);
	sge = (struct ibv_sge){ .addr = (uintptr_t)p.e[0].buf, .length = 64,
				.lkey = p.e[0].mr->lkey ^ 0x5a5a00 };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 1, &sge, 1, IBV_SEND_SIGNALED, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, WAIT_MS);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	expect_async_state(p.e[0].qp, IBV_QPS_RTS, IBV_QPS_ERR);
	pair_close(&p);
}

static void test_rc_remote_error(void **st)
{
	struct pair p;
	struct ibv_sge sge;
	struct ibv_wc wc;

	(void)st;
	pair_open(&p, 1, NULL, NULL);
	sge = (struct ibv_sge){ .addr = (uintptr_t)p.e[0].buf, .length = 64, .lkey = p.e[0].mr->lkey };
	/* A WRITE with a wrong R_Key: the responder NAKs, the requester goes to ERR. */
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_WRITE, 2, &sge, 1, IBV_SEND_SIGNALED,
				   (uintptr_t)p.e[1].buf, p.e[1].mr->rkey ^ 0x5a5a00, 0), 0);
	poll_one(p.e[0].cq, &wc, WAIT_MS);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	expect_async_state(p.e[0].qp, IBV_QPS_RTS, IBV_QPS_ERR);
	/* A modify sets the field as the application asked. */
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	assert_int_equal(ibv_modify_qp(p.e[0].qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(p.e[0].qp->state, IBV_QPS_RESET);
	pair_close(&p);
}

static void test_ud_local_error(void **st)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_port_attr pa;
	struct ibv_wc wc;
	uint8_t *buf = calloc(1, 4096);
	struct ibv_mr *mr;
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	(void)st;
	assert_non_null(buf);
	ctx = ibv_open_device(find_device("softib0"));
	assert_non_null(ctx);
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	assert_non_null(cq);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	struct ibv_ah_attr aa = { .dlid = pa.lid, .port_num = 1 };

	ah = ibv_create_ah(pd, &aa);
	assert_non_null(ah);

	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey ^ 0x5a5a00 };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	poll_one(cq, &wc, WAIT_MS);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	expect_async_state(qp, IBV_QPS_RTS, IBV_QPS_SQE);

	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_local_error),
		cmocka_unit_test(test_rc_remote_error),
		cmocka_unit_test(test_ud_local_error),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
