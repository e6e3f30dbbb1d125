/* SPDX-License-Identifier: MIT */
/*
 * Receive WQEs are checked for the bytes a message writes, not the whole
 * posted buffer (issue 14 item 3; rxe's copy_data and hardware check what
 * they write; UCX with UCX_IB_ALLOC=heap posts buffers whose tail lies past
 * their MR), over the loopback fabric of hca_loop.h, for RC and UC SENDs,
 * WRITE with immediate and UD datagrams (the GRH area counts only when
 * the datagram has a GRH).  What still fails as before: a written byte
 * outside its MR or without LOCAL_WRITE (LOC_PROT_ERR; RC: the requester
 * gets REM_OP_ERR), and a message longer than the whole posted buffer
 * (LOC_LEN_ERR; RC: REM_INV_REQ_ERR).  SRQ, XRC and forwarded XRC are in
 * test_hca_srq.c and test_hca_xrc_fwd.c.
 */
#include <endian.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hca/hca.h"
#include "hca/provider.h"
#include "hca_loop.h"
#include "iba/iba.h"

#define PART   0x40000u                /* the small MR: B's buf + PART, PART_LEN bytes */
#define PART_LEN 8192u
#define QKEY   0x11111111u

static const struct sib_hca_ops *ops = &sib_hca_ops;
static struct ibv_mr *part;            /* on B, LOCAL_WRITE only */
static struct ibv_qp *ud[NDEV];
static struct ibv_ah *ah[NDEV];

static int rsge_down(void **state)
{
	for (unsigned int s = 0; s < NDEV; s++) {
		if (ud[s])
			assert_int_equal(ops->destroy_qp(ud[s]), 0);
		if (ah[s])
			assert_int_equal(ops->destroy_ah(ah[s]), 0);
		ud[s] = NULL;
		ah[s] = NULL;
	}
	if (part)
		assert_int_equal(ops->dereg_mr(part), 0);
	part = NULL;
	return down(state);
}

/* The small MR on B: [buf + PART, + PART_LEN), local write only. */
static void part_open(void)
{
	uint8_t *p = sides[B].buf + PART;

	part = ops->reg_mr(sides[B].pd, p, PART_LEN, (uintptr_t)p, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(part);
}

/* A receive on qp of one SGE at B's buf + PART + off, len bytes, part's L_Key. */
static void recv_part(struct ibv_qp *qp, int64_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[B].buf + PART + off, .length = len,
			       .lkey = part->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(ops->post_recv(qp, &wr, &bad), 0);
}

static struct ibv_wc expect_recv(uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc = poll_wc(B);

	if (wc.wr_id != wr_id || wc.status != st)
		fail_msg("B: wr_id %llu status %d, want wr_id %llu status %d",
			 (unsigned long long)wc.wr_id, wc.status, (unsigned long long)wr_id, st);
	return wc;
}

/*
 * A connected QP of type t (RC or UC): the receive buffer is 8192 bytes at
 * PART + 4096, so its first 4096 bytes lie in the MR and the rest past it.
 */
static void connected(enum ibv_qp_type t)
{
	struct opts o = def_opts;
	bool rc = t == IBV_QPT_RC;
	struct ibv_wc wc;

	o.qpt = t;
	up(&o);
	part_open();
	/* Messages that stop short of the MR's end: every size, multi-packet
	 * (MTU 1024) included, and zero bytes. */
	for (uint32_t i = 0, len; i < 4; i++) {
		len = (uint32_t[]){ 4096, 3000, 1, 0 }[i];
		fill(sides[A].buf, 8192, (uint8_t)(i + 1));
		memset(sides[B].buf + PART + 4096, 0, 4096);
		recv_part(sides[B].qp, 4096, 8192, 10 + i);
		post_send(A, IBV_WR_SEND_WITH_IMM, 0, len, 0, 0, 20 + i);
		expect_wc(A, 20 + i, IBV_WC_SUCCESS);
		wc = expect_recv(10 + i, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, len);
		assert_int_equal(wc.opcode, IBV_WC_RECV);
		assert_memory_equal(sides[B].buf + PART + 4096, sides[A].buf, len);
	}
	/* Two SGEs, the second with a key that names no MR: a message that
	 * fits the first never looks at it. */
	{
		struct ibv_sge sg[2] = {
			{ (uintptr_t)sides[B].buf + PART, 100, part->lkey },
			{ (uintptr_t)sides[B].buf, 4096, part->lkey ^ 0x5a5a00 },
		};
		struct ibv_recv_wr wr = { .wr_id = 30, .sg_list = sg, .num_sge = 2 }, *bad = NULL;

		assert_int_equal(ops->post_recv(sides[B].qp, &wr, &bad), 0);
		post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 31);
		expect_wc(A, 31, IBV_WC_SUCCESS);
		assert_int_equal(expect_recv(30, IBV_WC_SUCCESS).byte_len, 100);
		assert_memory_equal(sides[B].buf + PART, sides[A].buf, 100);
	}
	/* WRITE with immediate takes a receive WQE and writes nothing into
	 * it: its SGE is never checked (a bad key). */
	{
		struct ibv_sge sg = { (uintptr_t)sides[B].buf, 64, part->lkey ^ 0x5a5a00 };
		struct ibv_recv_wr wr = { .wr_id = 40, .sg_list = &sg, .num_sge = 1 }, *bad = NULL;

		assert_int_equal(ops->post_recv(sides[B].qp, &wr, &bad), 0);
		post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 2000, (uintptr_t)sides[B].buf + 0x80000,
			  sides[B].mr->rkey, 41);
		expect_wc(A, 41, IBV_WC_SUCCESS);
		wc = expect_recv(40, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(wc.byte_len, 2000);
	}
	/* One byte past the MR: the packet that writes it fails the L_Key
	 * check (LOC_PROT_ERR; RC: class A, REM_OP_ERR at the requester). */
	recv_part(sides[B].qp, 4096, 8192, 50);
	post_send(A, IBV_WR_SEND, 0, 4097, 0, 0, 51);
	expect_wc(A, 51, rc ? IBV_WC_REM_OP_ERR : IBV_WC_SUCCESS);
	expect_recv(50, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
	expect_no_wc(B);
}

static void test_rc_tail_past_mr(void **state)
{
	(void)state;
	connected(IBV_QPT_RC);
}

static void test_uc_tail_past_mr(void **state)
{
	(void)state;
	connected(IBV_QPT_UC);
}

/* A message longer than the whole posted buffer fails as before, ahead of
 * any key check: LOC_LEN_ERR (RC: REM_INV_REQ_ERR at the requester); and
 * the bytes written must have LOCAL_WRITE (B's mr_ro has REMOTE_READ only). */
static void longer_and_no_write(enum ibv_qp_type t)
{
	struct opts o = def_opts;
	bool rc = t == IBV_QPT_RC;

	o.qpt = t;
	up(&o);
	part_open();
	recv_part(sides[B].qp, PART_LEN - 100, 500, 1); /* 100 bytes in, 400 past */
	post_send(A, IBV_WR_SEND, 0, 501, 0, 0, 2);
	expect_wc(A, 2, rc ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_SUCCESS);
	expect_recv(1, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
	assert_int_equal(ops->dereg_mr(part), 0);
	part = NULL;
	down(NULL);

	up(&o);
	{
		struct ibv_sge sg = { (uintptr_t)sides[B].buf2 + 2048, 64, sides[B].mr_ro->lkey };
		struct ibv_recv_wr wr = { .wr_id = 3, .sg_list = &sg, .num_sge = 1 }, *bad = NULL;

		assert_int_equal(ops->post_recv(sides[B].qp, &wr, &bad), 0);
	}
	post_send(A, IBV_WR_SEND, 0, 8, 0, 0, 4);
	expect_wc(A, 4, rc ? IBV_WC_REM_OP_ERR : IBV_WC_SUCCESS);
	expect_recv(3, IBV_WC_LOC_PROT_ERR);
}

static void test_rc_longer_and_no_write(void **state)
{
	(void)state;
	longer_and_no_write(IBV_QPT_RC);
}

static void test_uc_longer_and_no_write(void **state)
{
	(void)state;
	longer_and_no_write(IBV_QPT_UC);
}

/* ---- UD: the GRH area is written only when the datagram has a GRH ---- */

static struct ibv_ah *make_ah(unsigned int s, bool global)
{
	struct ibv_ah_attr at = { 0 };
	struct ibv_ah *h;

	at.dlid = sides[1 - s].lid;
	at.port_num = 1;
	if (global) {
		uint64_t pfx = htobe64(0xfe80000000000000ull), guid = htobe64(0x2000 + (1 - s));

		at.is_global = 1;
		at.grh.hop_limit = 64;
		memcpy(at.grh.dgid.raw, &pfx, 8);
		memcpy(at.grh.dgid.raw + 8, &guid, 8);
	}
	h = ops->create_ah(sides[s].pd, &at);
	assert_non_null(h);
	return h;
}

static void ud_send(struct ibv_ah *h, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf, .length = len, .lkey = sides[A].mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = h;
	wr.wr.ud.remote_qpn = ud[B]->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(ops->post_send(ud[A], &wr, &bad), 0);
	expect_wc(A, wr_id, IBV_WC_SUCCESS);
}

static void test_ud_grh_area_and_tail(void **state)
{
	struct ibv_ah *global;
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	part_open();
	for (unsigned int s = 0; s < NDEV; s++) {
		ud[s] = ud_qp_create(s, QKEY, 0);
		ah[s] = make_ah(s, false);
	}
	global = make_ah(A, true);
	fill(sides[A].buf, 4096, 9);

	/* GRH area and 100 bytes in the MR, 1900 past it: up to 100 go. */
	for (uint32_t len = 0; len <= 100; len += 100) {
		recv_part(ud[B], PART_LEN - 140, 2000, 1 + len);
		ud_send(ah[A], len, 2 + len);
		wc = expect_recv(1 + len, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 40 + len);
		assert_memory_equal(sides[B].buf + PART + PART_LEN - 100, sides[A].buf, len);
	}
	recv_part(ud[B], PART_LEN - 140, 2000, 3);
	ud_send(ah[A], 101, 4);
	expect_recv(3, IBV_WC_LOC_PROT_ERR);
	/* Longer than the whole buffer: LOC_LEN_ERR, as before. */
	recv_part(ud[B], PART_LEN - 140, 2000, 5);
	ud_send(ah[A], 1961, 6);
	expect_recv(5, IBV_WC_LOC_LEN_ERR);

	/* The GRH area before the MR's start, the payload inside: a datagram
	 * without a GRH leaves the area alone and is taken; one with a GRH
	 * would write it and fails. */
	recv_part(ud[B], -40, 200, 7);
	ud_send(ah[A], 160, 8);
	wc = expect_recv(7, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 200);
	assert_false(wc.wc_flags & IBV_WC_GRH);
	assert_memory_equal(sides[B].buf + PART, sides[A].buf, 160);
	recv_part(ud[B], -40, 200, 9);
	ud_send(global, 16, 10);
	expect_recv(9, IBV_WC_LOC_PROT_ERR);
	/* The UD QP stays as it is. */
	recv_part(ud[B], 0, 200, 11);
	ud_send(global, 16, 12);
	wc = expect_recv(11, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	assert_int_equal(ops->destroy_ah(global), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_rc_tail_past_mr, rsge_down),
		cmocka_unit_test_teardown(test_uc_tail_past_mr, rsge_down),
		cmocka_unit_test_teardown(test_rc_longer_and_no_write, rsge_down),
		cmocka_unit_test_teardown(test_uc_longer_and_no_write, rsge_down),
		cmocka_unit_test_teardown(test_ud_grh_area_and_tail, rsge_down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
