/* SPDX-License-Identifier: MIT */
/*
 * XRC forwarding (src/hca/xrc_fwd.c; the XRC annex, docs/srq.md) over the
 * loopback fabric of hca_loop.h: an XRC_SEND QP on A, the XRC_RECV QP on
 * B, the XRC SRQ named by the XRCETH on C (another context of B's device,
 * same domain).  B keeps the transport and forwards the SENDs to C, which
 * places and completes them (B's SRQ with the same index gets nothing); a
 * forged flagged packet is dropped and counted; no WQE, a too short WQE at
 * C are dropped and counted while B's transport goes on; a full inbox at
 * C holds the messages back (not ACKed) until it has room, none lost; a
 * WRITE naming C's SRQ is NAKed (invalid request).
 */
#include <endian.h>
#include <fcntl.h>
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
#include "hca/transport.h"
#include "hca_loop.h"
#include "iba/iba.h"

static const struct sib_hca_ops *ops = &sib_hca_ops;

/* What a test built, destroyed by fwd_down. */
static struct {
	struct ibv_qp *ini, *tgt;              /* XRC_SEND on A, XRC_RECV on B */
	struct ibv_srq *srq_b, *srq_c;         /* XRC SRQs, one domain */
	struct ibv_xrcd *xrcd_b, *xrcd_c;      /* the same file's domain */
	int fd;
	uint32_t srqn_b, srqn_c;
	struct ibv_mr *part;                   /* on C: a small MR (test_tail_past_mr) */
} f;

static int fwd_down(void **state)
{
	if (f.ini)
		assert_int_equal(ops->destroy_qp(f.ini), 0);
	if (f.tgt)
		assert_int_equal(ops->destroy_qp(f.tgt), 0);
	if (f.srq_b)
		assert_int_equal(ops->destroy_srq(f.srq_b), 0);
	if (f.srq_c)
		assert_int_equal(ops->destroy_srq(f.srq_c), 0);
	if (f.xrcd_b)
		assert_int_equal(ops->close_xrcd(f.xrcd_b), 0);
	if (f.xrcd_c)
		assert_int_equal(ops->close_xrcd(f.xrcd_c), 0);
	if (f.part)
		assert_int_equal(ops->dereg_mr(f.part), 0);
	if (f.fd > 0)
		close(f.fd);
	memset(&f, 0, sizeof(f));
	return down(state);
}

/* RESET -> RTS toward dqpn (the XRC rows of ibv_xsrq_pingpong). */
static void link_qp(struct ibv_qp *q, unsigned int s, uint16_t dlid, uint32_t dqpn)
{
	struct ibv_qp_attr a = { 0 };
	bool ini = q->qp_type == IBV_QPT_XRC_SEND;

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ops->modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = s == A ? 1000 : 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = 1;
	assert_int_equal(ops->modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					(ini ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)), 0);
	if (!ini)
		return; /* a target stays in RTR, as xsrq_pingpong's */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 100;
	a.max_rd_atomic = 4;
	assert_int_equal(ops->modify_qp(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN |
					IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

/* The pair, both SRQs in the domain of one file; C opened. */
static void fwd_up(void)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	char path[] = "/tmp/test_xrc_fwd.XXXXXX";

	up(&def_opts);
	side_open_c();
	f.fd = mkstemp(path);
	assert_true(f.fd > 0);
	unlink(path);
	f.xrcd_b = loop_xrcd_open(B, f.fd);
	f.xrcd_c = loop_xrcd_open(C, f.fd);
	f.srq_b = loop_xsrq_new(B, f.xrcd_b, 2048, &f.srqn_b);
	f.srq_c = loop_xsrq_new(C, f.xrcd_c, 2048, &f.srqn_c);
	/* Unique numbers: the same index in each context, inbox above. */
	assert_int_equal(f.srqn_b & 0xffff, f.srqn_c & 0xffff);
	assert_int_equal(f.srqn_c >> 16, C);
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = sides[A].pd;
	a.send_cq = sides[A].cq;
	a.cap.max_send_wr = 64;
	a.cap.max_send_sge = 1;
	f.ini = ops->create_qp_ex(sides[A].ctx, &a);
	assert_non_null(f.ini);
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = f.xrcd_b;
	f.tgt = ops->create_qp_ex(sides[B].ctx, &a);
	assert_non_null(f.tgt);
	link_qp(f.ini, A, sides[B].lid, f.tgt->qp_num);
	link_qp(f.tgt, B, sides[A].lid, f.ini->qp_num);
}

static void srq_post(unsigned int s, struct ibv_srq *srq, uint64_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[s].buf + off, .length = len,
			       .lkey = sides[s].mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(ops->post_srq_recv(srq, &wr, &bad), 0);
}

static void send_xrc(enum ibv_wr_opcode op, uint64_t off, uint32_t len, uint32_t srqn, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf + off, .length = len,
			       .lkey = sides[A].mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(0x600d);
	wr.wr.rdma.remote_addr = (uintptr_t)sides[C].buf;
	wr.wr.rdma.rkey = sides[C].mr->rkey;
	wr.qp_type.xrc.remote_srqn = srqn;
	assert_int_equal(ops->post_send(f.ini, &wr, &bad), 0);
}

static uint64_t drops(unsigned int s, enum sib_rx_drop why)
{
	return sib_rx_drop_count(to_sctx(sides[s].ctx), why);
}

/* Pump and drive until side s has dropped n packets for why (or WAIT_MS
 * passed): the engine thread may be the one that drops it, a moment after
 * the requester's completion. */
static uint64_t drops_reach(unsigned int s, enum sib_rx_drop why, uint64_t n)
{
	uint64_t end = now_ms() + WAIT_MS;

	while (drops(s, why) < n && now_ms() < end)
		settle(1);
	return drops(s, why);
}

/* SENDs naming C's SRQ through B's TGT QP: C completes them (TGT QPN,
 * imm, data), B's SRQ of the same index gets nothing; the packets appear
 * twice on the wires (A to B, then B to C). */
static void test_forward(void **state)
{
	struct ibv_wc wc;

	(void)state;
	fwd_up();
	srq_post(C, f.srq_c, 0, 4096, 71);
	srq_post(C, f.srq_c, 4096, 4096, 72);
	srq_post(B, f.srq_b, 0, 4096, 81);
	fill(sides[A].buf, 100, 3);
	fill(sides[A].buf + 8192, 3000, 9);
	send_xrc(IBV_WR_SEND, 0, 100, f.srqn_c, 1);
	send_xrc(IBV_WR_SEND_WITH_IMM, 8192, 3000, f.srqn_c, 2);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	wc = poll_wc(C);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 71);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 100);
	assert_int_equal(wc.qp_num, f.tgt->qp_num);
	assert_int_equal(wc.slid, sides[A].lid);
	assert_false(wc.wc_flags & IBV_WC_WITH_IMM);
	wc = poll_wc(C);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 72);
	assert_int_equal(wc.byte_len, 3000);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, htobe32(0x600d));
	assert_memory_equal(sides[C].buf, sides[A].buf, 100);
	assert_memory_equal(sides[C].buf + 4096, sides[A].buf + 8192, 3000);
	settle(20);
	expect_no_wc(B);
	expect_no_wc(C);
	/* 1 + 3 packets forwarded B to C; A to B the same, plus what A
	 * resent while B's link mapped C's inbox (a first forward to C
	 * found on the application's thread waits for the engine thread's
	 * answer: docs/link.md "Destinations"), never more than one
	 * message again. */
	assert_int_equal(count(0, C, -1, 0, true), 4);
	assert_true(count(0, B, -1, 0, true) >= 4 && count(0, B, -1, 0, true) <= 8);
	assert_int_equal(drops(C, SIB_RX_DROP_XRC_FWD_SEQ), 0);
	/* B's own SRQ still works for a SEND naming it. */
	send_xrc(IBV_WR_SEND, 0, 100, f.srqn_b, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 81);
	assert_int_equal(wc.byte_len, 100);
}

/* A flagged XRC SEND_ONLY into C's inbox, built here, to TGT QPN dqpn. */
static void forge(uint8_t opc, uint32_t dqpn, uint32_t srqn)
{
	uint8_t pkt[256];
	struct iba_pkt h = { 0 };
	size_t hl, len;

	h.lrh.dlid = sides[B].lid;
	h.lrh.slid = sides[A].lid;
	h.lrh.lnh = IBA_LNH_LOCAL;
	h.bth.opcode = opc;
	h.bth.pkey = 0xffff;
	h.bth.dqpn = dqpn;
	h.bth.psn = 5;
	h.xrc_srqn = srqn;
	hl = iba_build_headers(pkt, &h);
	memset(pkt + hl, 0x5a, 16);
	len = iba_finish(pkt, hl, 16, 0);
	pkt[len] = pkt[len + 1] = 0; /* the VCRC bytes, not computed */
	/* Bits 8..31 of the flags: the domain an attacker would claim (the
	 * format before softibd published qp_xrcd[]); the receiver ignores
	 * them. */
	inject_from(B, C, pkt, (uint32_t)len + 2, SIB_SLOT_F_XRC_FWD | (((struct sib_xrcd *)f.xrcd_c)->num << 8));
}

/* Flagged packets that lie: a TGT QPN nobody owns, one C owns itself, a
 * non-SEND opcode, an SRQ number of another context; and the attack of a
 * process of the device that never opened the domain: a QPN of its own
 * that is an RC QP, an XRC_SEND QP, or an XRC_RECV QP of another (private)
 * domain, whatever domain the slot's flags claim.  All dropped, counted,
 * no completion and no WQE taken. */
static void test_forged_dropped(void **state)
{
	uint8_t only = IBA_TRANSPORT_XRC | IBA_OPC_SEND_ONLY;
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = -1, .oflags = O_CREAT };
	struct ibv_qp_init_attr_ex a = { 0 };
	struct ibv_qp *rc, *xsend, *xrecv;
	struct ibv_xrcd *other;
	uint32_t qpn;

	(void)state;
	fwd_up();
	srq_post(C, f.srq_c, 0, 4096, 71);
	forge(only, 999, f.srqn_c);                           /* owned by nobody */
	forge(only, f.ini->qp_num, f.srqn_c);                 /* A's: another device */
	forge(IBA_TRANSPORT_XRC | IBA_OPC_RDMA_WRITE_ONLY, f.tgt->qp_num, f.srqn_c);
	forge(IBA_OPC_SEND_ONLY, f.tgt->qp_num, f.srqn_c);    /* RC, not XRC */
	forge(only, f.tgt->qp_num, f.srqn_b);                 /* B's SRQ, not C's */
	settle(20);
	expect_no_wc(C);
	assert_int_equal(drops(C, SIB_RX_DROP_XRC_FWD_FORGED), 5);

	/* B's own QPs that are not XRC_RECV QPs of the SRQ's domain. */
	a.qp_type = IBV_QPT_RC;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = sides[B].pd;
	a.send_cq = a.recv_cq = sides[B].cq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	rc = ops->create_qp_ex(sides[B].ctx, &a);
	assert_non_null(rc);
	a.qp_type = IBV_QPT_XRC_SEND;
	xsend = ops->create_qp_ex(sides[B].ctx, &a);
	assert_non_null(xsend);
	other = ops->open_xrcd(sides[B].ctx, &xa);
	assert_non_null(other);
	assert_int_not_equal(((struct sib_xrcd *)other)->num, ((struct sib_xrcd *)f.xrcd_c)->num);
	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = other;
	xrecv = ops->create_qp_ex(sides[B].ctx, &a);
	assert_non_null(xrecv);
	assert_int_equal(atomic_load(&sib_fabric->qp_xrcd[xrecv->qp_num]), ((struct sib_xrcd *)other)->num);
	assert_int_equal(atomic_load(&sib_fabric->qp_xrcd[rc->qp_num]), 0);
	forge(only, rc->qp_num, f.srqn_c);
	forge(only, xsend->qp_num, f.srqn_c);
	forge(only, xrecv->qp_num, f.srqn_c);
	settle(20);
	expect_no_wc(C);
	assert_int_equal(drops(C, SIB_RX_DROP_XRC_FWD_FORGED), 8);
	qpn = xrecv->qp_num;
	assert_int_equal(ops->destroy_qp(xrecv), 0);
	assert_int_equal(atomic_load(&sib_fabric->qp_xrcd[qpn]), 0); /* cleared with the QPN */
	assert_int_equal(ops->close_xrcd(other), 0);
	assert_int_equal(ops->destroy_qp(xsend), 0);
	assert_int_equal(ops->destroy_qp(rc), 0);

	/* The honest one: placed (the WQE was not taken by the others). */
	forge(only, f.tgt->qp_num, f.srqn_c);
	expect_wc(C, 71, IBV_WC_SUCCESS);
	assert_int_equal(drops(C, SIB_RX_DROP_XRC_FWD_FORGED), 8);
	assert_int_equal(atomic_load(&sib_fabric->qp_xrcd[f.tgt->qp_num]), ((struct sib_xrcd *)f.xrcd_b)->num);
}

/* No WQE at C: dropped and counted there, ACKed by B (no RNR on behalf
 * of another process); a too short WQE completes LOC_LEN_ERR; B's
 * transport goes on and the next SEND lands. */
static void test_no_wqe_dropped(void **state)
{
	struct ibv_wc wc;

	(void)state;
	fwd_up();
	send_xrc(IBV_WR_SEND, 0, 100, f.srqn_c, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_int_equal(drops_reach(C, SIB_RX_DROP_XRC_FWD_NORWQE, 1), 1);
	expect_no_wc(C);
	srq_post(C, f.srq_c, 0, 50, 70);
	send_xrc(IBV_WR_SEND, 0, 100, f.srqn_c, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(C, 70, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(drops_reach(C, SIB_RX_DROP_XRC_FWD_LEN, 1), 1);
	srq_post(C, f.srq_c, 0, 4096, 71);
	send_xrc(IBV_WR_SEND, 0, 2500, f.srqn_c, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	wc = poll_wc(C);
	assert_int_equal(wc.wr_id, 71);
	assert_int_equal(wc.byte_len, 2500);
	expect_no_wc(B);
}

/* C's inbox full (the wire toward it held): B does not accept what it
 * cannot forward (no ACK), the requester sends it again after its ACK
 * timeout once there is room; every message lands once, in order. */
static void test_inbox_full(void **state)
{
	const unsigned int n = SIB_PAIR_SLOTS + 40;
	uint64_t full0;

	(void)state;
	fwd_up();
	for (unsigned int i = 0; i < n; i++)
		srq_post(C, f.srq_c, (uint64_t)i * 16, 16, i);
	wire_hold[C] = true;
	for (unsigned int i = 0; i < SIB_PAIR_SLOTS; i += 32) { /* fills the wire */
		for (unsigned int j = 0; j < 32; j++)
			send_xrc(IBV_WR_SEND, 0, 8, f.srqn_c, i + j);
		for (unsigned int j = 0; j < 32; j++)
			expect_wc(A, i + j, IBV_WC_SUCCESS);
	}
	full0 = to_sctx(sides[B].ctx)->tx_ring_full;
	for (unsigned int i = SIB_PAIR_SLOTS; i < n; i++)
		send_xrc(IBV_WR_SEND, 0, 8, f.srqn_c, i);
	settle(50);
	expect_no_wc(A);
	expect_no_wc(C);
	assert_true(to_sctx(sides[B].ctx)->tx_ring_full > full0);
	wire_hold[C] = false;
	for (unsigned int i = SIB_PAIR_SLOTS; i < n; i++)
		expect_wc(A, i, IBV_WC_SUCCESS);
	for (unsigned int i = 0; i < n; i++) {
		struct ibv_wc wc = poll_wc(C);

		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.byte_len, 8);
	}
	settle(20);
	expect_no_wc(C);
	assert_int_equal(drops(C, SIB_RX_DROP_XRC_FWD_SEQ), 0);
	assert_int_equal(drops(C, SIB_RX_DROP_XRC_FWD_NORWQE), 0);
}

/* The WQE at C is checked for the bytes a forwarded message writes, not
 * the whole posted buffer (issue 14 item 3): a buffer whose second half
 * lies past its MR takes 4096 bytes; a byte more completes it with
 * LOC_PROT_ERR at C (dropped and counted; B has ACKed). */
static void test_tail_past_mr(void **state)
{
	uint8_t *p;
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	struct ibv_wc wc;

	(void)state;
	fwd_up();
	p = sides[C].buf + 0x40000;
	f.part = ops->reg_mr(sides[C].pd, p, 8192, (uintptr_t)p, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(f.part);
	sge = (struct ibv_sge){ .addr = (uintptr_t)p + 4096, .length = 8192, .lkey = f.part->lkey };
	fill(sides[A].buf, 4097, 5);
	wr.wr_id = 60;
	assert_int_equal(ops->post_srq_recv(f.srq_c, &wr, &bad), 0);
	send_xrc(IBV_WR_SEND, 0, 4096, f.srqn_c, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	wc = poll_wc(C);
	assert_int_equal(wc.wr_id, 60);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 4096);
	assert_memory_equal(p + 4096, sides[A].buf, 4096);
	wr.wr_id = 61;
	assert_int_equal(ops->post_srq_recv(f.srq_c, &wr, &bad), 0);
	send_xrc(IBV_WR_SEND, 0, 4097, f.srqn_c, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(C, 61, IBV_WC_LOC_PROT_ERR);
	/* Counted by C's engine after it pushed the completion: bounded wait. */
	for (uint64_t end = now_ms() + WAIT_MS; drops(C, SIB_RX_DROP_XRC_FWD_LKEY) == 0 && now_ms() < end;)
		settle(1);
	assert_int_equal(drops(C, SIB_RX_DROP_XRC_FWD_LKEY), 1);
}

/* A WRITE naming C's SRQ: its R_Key is C's, out of B's reach: NAK
 * (invalid request), nothing forwarded. */
static void test_write_nak(void **state)
{
	(void)state;
	fwd_up();
	send_xrc(IBV_WR_RDMA_WRITE, 0, 100, f.srqn_c, 1);
	expect_wc(A, 1, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(count(0, C, -1, 0, true), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_forward, fwd_down),
		cmocka_unit_test_teardown(test_forged_dropped, fwd_down),
		cmocka_unit_test_teardown(test_no_wqe_dropped, fwd_down),
		cmocka_unit_test_teardown(test_inbox_full, fwd_down),
		cmocka_unit_test_teardown(test_write_nak, fwd_down),
		cmocka_unit_test_teardown(test_tail_past_mr, fwd_down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
