/* SPDX-License-Identifier: MIT */
/*
 * Atomics on the HCA's RC transport (IBA 9.4.5, 9.7.4.1.5, 9.7.5.1) over
 * the loopback fabric of hca_loop.h: AtomicETH / AtomicAckETH on the
 * wire, CmpSwap and FetchAdd results, misaligned VA (NAK invalid request),
 * missing REMOTE_ATOMIC (QP: invalid request; MR: remote access error),
 * duplicates answered from the saved result (never executed twice),
 * max_rd_atomic shared with READs, post-time checks of both post APIs,
 * and a counter incremented by several QPs (under loss, duplication,
 * reordering and corruption) and by the CPU at once that must end exact,
 * every original value handed out once (IBV_ATOMIC_GLOB).
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

#include "hca/atomic.h"
#include "hca/hca.h"
#include "hca/provider.h"
#include "hca_loop.h"
#include "iba/iba.h"
#include "link/link.h"

#define ACC_ALL (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define TGT_OFF 4096               /* the counter in B's atomic MR */
#define RES_OFF 8192               /* A's result slots */

static struct ibv_mr *amr;         /* B's buf, with REMOTE_ATOMIC */

static void set_access(unsigned int s, unsigned int access)
{
	struct ibv_qp_attr a = { .qp_access_flags = access };

	assert_int_equal(sib_hca_ops.modify_qp(sides[s].qp, &a, IBV_QP_ACCESS_FLAGS), 0);
}

/* up() with atomics enabled on B's QP and an atomic MR on B's buf. */
static void up_atomic(const struct opts *o)
{
	up(o);
	set_access(B, ACC_ALL);
	amr = sib_hca_ops.reg_mr(sides[B].pd, sides[B].buf, BUF, (uintptr_t)sides[B].buf,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(amr);
}

static int down_atomic(void **state)
{
	if (amr)
		assert_int_equal(sib_hca_ops.dereg_mr(amr), 0);
	amr = NULL;
	return down(state);
}

static uint64_t *target(uint64_t off)
{
	return (uint64_t *)(void *)(sides[B].buf + off);
}

static uint64_t result(unsigned int slot)
{
	uint64_t v;

	memcpy(&v, sides[A].buf + RES_OFF + 8 * slot, 8);
	return v;
}

/* An atomic from side s (the result into s's buf at RES_OFF + 8 * slot). */
static int post_atomic_on(struct ibv_qp *qp, unsigned int s, enum ibv_wr_opcode op, uint64_t raddr,
			  uint32_t rkey, uint64_t compare_add, uint64_t swap, unsigned int slot,
			  uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[s].buf + RES_OFF + 8 * slot, .length = len,
			       .lkey = sides[s].mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return sib_hca_ops.post_send(qp, &wr, &bad);
}

static void post_atomic(enum ibv_wr_opcode op, uint64_t off, uint64_t compare_add, uint64_t swap,
			unsigned int slot, uint64_t wr_id)
{
	assert_int_equal(post_atomic_on(sides[A].qp, A, op, (uintptr_t)sides[B].buf + off, amr->rkey,
					compare_add, swap, slot, 8, wr_id), 0);
}

static void expect_atomic_wc(uint64_t wr_id, enum ibv_wc_opcode opc)
{
	struct ibv_wc wc = poll_wc(A);

	if (wc.wr_id != wr_id || wc.status != IBV_WC_SUCCESS)
		fail_msg("wr_id %llu status %d, want %llu success", (unsigned long long)wc.wr_id,
			 wc.status, (unsigned long long)wr_id);
	assert_int_equal(wc.opcode, opc);
	assert_int_equal(wc.byte_len, 8);
}

/* ============ Headers: AtomicETH and AtomicAckETH, big-endian (IBA 9.3.3.3, 9.3.5) ============ */

static void test_atomic_headers_on_the_wire(void **state)
{
	uint8_t buf[256];
	struct iba_pkt p, q;
	size_t hl;
	uint64_t be;

	(void)state;
	memset(&p, 0, sizeof(p));
	p.lrh.lnh = IBA_LNH_LOCAL;
	p.bth.opcode = IBA_OPC_COMPARE_SWAP;
	p.atomic.va = 0x1122334455667788ull;
	p.atomic.rkey = 0xaabbccdd;
	p.atomic.swap_add = 0x0102030405060708ull;
	p.atomic.compare = 0x1020304050607080ull;
	hl = iba_build_headers(buf, &p);
	assert_int_equal(hl, 8 + 12 + 28); /* LRH, BTH, AtomicETH */
	be = htobe64(p.atomic.va);
	assert_memory_equal(buf + 20, &be, 8);
	assert_int_equal(buf[28], 0xaa);
	be = htobe64(p.atomic.swap_add);
	assert_memory_equal(buf + 32, &be, 8);
	be = htobe64(p.atomic.compare);
	assert_memory_equal(buf + 40, &be, 8);
	iba_finish(buf, hl, 0, 0);
	assert_int_equal(iba_decode(buf, hl + 4, 0, &q), IBA_OK);
	assert_true(q.atomic.va == p.atomic.va && q.atomic.compare == p.atomic.compare &&
		    q.atomic.swap_add == p.atomic.swap_add && q.atomic.rkey == p.atomic.rkey);

	memset(&p, 0, sizeof(p));
	p.lrh.lnh = IBA_LNH_LOCAL;
	p.bth.opcode = IBA_OPC_ATOMIC_ACKNOWLEDGE;
	p.aeth.msn = 5;
	p.atomic_ack = 0xdeadbeefcafef00dull;
	hl = iba_build_headers(buf, &p);
	assert_int_equal(hl, 8 + 12 + 4 + 8); /* LRH, BTH, AETH, AtomicAckETH */
	be = htobe64(p.atomic_ack);
	assert_memory_equal(buf + 24, &be, 8);
}

/* CmpSwap and FetchAdd through the transport: one request of one PSN with
 * AckReq and no payload, one ATOMIC_ACKNOWLEDGE with the original value,
 * the value in the local SGE in host order, the target changed. */
static void test_atomic_ops(void **state)
{
	unsigned int mark, i;

	(void)state;
	up_atomic(&def_opts);
	*target(TGT_OFF) = 40;

	post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 2, 0, 0, 1);
	expect_atomic_wc(1, IBV_WC_FETCH_ADD);
	assert_int_equal(result(0), 40);
	assert_int_equal(*target(TGT_OFF), 42);
	i = nth(0, B, -1, 0);
	expect_pkt(i, IBA_OPC_FETCH_ADD, 100, 0, true);
	assert_int_equal(plog[i].va, (uintptr_t)sides[B].buf + TGT_OFF);
	assert_int_equal(plog[i].rkey, amr->rkey);
	assert_int_equal(plog[i].swap_add, 2);
	assert_int_equal(plog[i].compare, 0);
	i = nth(0, A, IBA_OPC_ATOMIC_ACKNOWLEDGE, 0);
	expect_pkt(i, IBA_OPC_ATOMIC_ACKNOWLEDGE, 100, 0, false);
	assert_int_equal(plog[i].atomic_ack, 40);
	assert_int_equal(plog[i].syn & IBA_AETH_TYPE_MASK, IBA_AETH_ACK);
	assert_int_equal(plog[i].msn, 1);

	/* CmpSwap that matches: swapped; one that does not: unchanged. */
	mark = nlog;
	post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, TGT_OFF, 42, 0x1234567890abcdefull, 1, 2);
	post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, TGT_OFF, 42, 7, 2, 3);
	expect_atomic_wc(2, IBV_WC_COMP_SWAP);
	expect_atomic_wc(3, IBV_WC_COMP_SWAP);
	assert_int_equal(result(1), 42);
	assert_int_equal(result(2), 0x1234567890abcdefull);
	assert_int_equal(*target(TGT_OFF), 0x1234567890abcdefull);
	i = nth(mark, B, -1, 0);
	expect_pkt(i, IBA_OPC_COMPARE_SWAP, 101, 0, true);
	assert_int_equal(plog[i].swap_add, 0x1234567890abcdefull);
	assert_int_equal(plog[i].compare, 42);

	/* A SEND after the atomics: ordered, and the MSN counts all. */
	mark = nlog;
	post_recv(B, 0, 64, 9);
	post_send(A, IBV_WR_SEND, 0, 16, 0, 0, 4);
	expect_wc(A, 4, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
	assert_int_equal(plog[nth(mark, A, IBA_OPC_ACKNOWLEDGE, 0)].msn, 4);
}

/* ============ Errors: class C NAKs (IBA 9.7.5.2.x, 9.9.3) ============ */

static void expect_failed(enum ibv_wc_status st, uint8_t nak)
{
	expect_wc(A, 1, st);
	settle(5);
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
	assert_true(is_ack_of_type(&plog[nth(0, A, IBA_OPC_ACKNOWLEDGE, 0)], IBA_AETH_NAK));
	assert_int_equal(plog[nth(0, A, IBA_OPC_ACKNOWLEDGE, 0)].syn & IBA_AETH_VALUE_MASK, nak);
	assert_int_equal(*target(TGT_OFF), 5); /* nothing executed */
}

static void test_atomic_misaligned(void **state)
{
	(void)state;
	up_atomic(&def_opts);
	*target(TGT_OFF) = 5;
	post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF + 4, 1, 0, 0, 1);
	expect_failed(IBV_WC_REM_INV_REQ_ERR, IBA_NAK_INV_REQ);
}

/* The MR lacks REMOTE_ATOMIC: an R_Key violation. */
static void test_atomic_mr_without_access(void **state)
{
	(void)state;
	up_atomic(&def_opts);
	*target(TGT_OFF) = 5;
	assert_int_equal(post_atomic_on(sides[A].qp, A, IBV_WR_ATOMIC_FETCH_AND_ADD,
					(uintptr_t)sides[B].buf + TGT_OFF, sides[B].mr->rkey, 1, 0, 0, 8, 1),
			 0);
	expect_failed(IBV_WC_REM_ACCESS_ERR, IBA_NAK_REM_ACCESS);
}

/* The QP is not enabled for atomics: the opcode is not supported there
 * (as the responder treats READ and WRITE without their QP access bit). */
static void test_atomic_qp_without_access(void **state)
{
	(void)state;
	up_atomic(&def_opts);
	set_access(B, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	*target(TGT_OFF) = 5;
	post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 1, 0, 0, 1);
	expect_failed(IBV_WC_REM_INV_REQ_ERR, IBA_NAK_INV_REQ);
}

/* A wrong R_Key is a remote access error too. */
static void test_atomic_bad_rkey(void **state)
{
	(void)state;
	up_atomic(&def_opts);
	*target(TGT_OFF) = 5;
	assert_int_equal(post_atomic_on(sides[A].qp, A, IBV_WR_ATOMIC_CMP_AND_SWP,
					(uintptr_t)sides[B].buf + TGT_OFF, amr->rkey ^ 0x80, 5, 6, 0, 8, 1),
			 0);
	expect_failed(IBV_WC_REM_ACCESS_ERR, IBA_NAK_REM_ACCESS);
}

#define WR_ATOMICS (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

/* Post-time checks: the local buffer is 8 bytes (EINVAL, as rxe), both APIs;
 * atomics never on UC/UD (wr.c's table). */
static void test_atomic_post_checks(void **state)
{
	const uint64_t ops[NDEV] = { WR_ATOMICS, 0 };
	struct ibv_qp_ex *x;

	(void)state;
	up_atomic(&def_opts);
	assert_int_equal(post_atomic_on(sides[A].qp, A, IBV_WR_ATOMIC_FETCH_AND_ADD,
					(uintptr_t)sides[B].buf, amr->rkey, 1, 0, 0, 4, 1), EINVAL);
	assert_int_equal(post_atomic_on(sides[A].qp, A, IBV_WR_ATOMIC_CMP_AND_SWP,
					(uintptr_t)sides[B].buf, amr->rkey, 1, 0, 0, 16, 1), EINVAL);

	/* ibv_wr_*: a QP created with the atomic send ops. */
	swap_wr_qps(ops, &def_opts);
	x = (struct ibv_qp_ex *)sides[A].qp;
	assert_non_null(x->wr_atomic_cmp_swp);
	assert_non_null(x->wr_atomic_fetch_add);
	assert_null(x->wr_send_inv); /* only what was asked for */
	ibv_wr_start(x);
	ibv_wr_atomic_fetch_add(x, amr->rkey, (uintptr_t)sides[B].buf, 1);
	ibv_wr_set_sge(x, sides[A].mr->lkey, (uintptr_t)sides[A].buf, 4);
	assert_int_equal(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_atomic_cmp_swp(x, amr->rkey, (uintptr_t)sides[B].buf, 1, 2); /* no SGE: 0 bytes */
	assert_int_equal(ibv_wr_complete(x), EINVAL);
}

/* The ibv_wr_* forms reach the wire as post_send's do. */
static void test_atomic_wr_api(void **state)
{
	const uint64_t ops[NDEV] = { WR_ATOMICS, 0 };
	struct ibv_qp_ex *x;

	(void)state;
	up_atomic(&def_opts);
	swap_wr_qps(ops, &def_opts);
	set_access(B, ACC_ALL);
	x = (struct ibv_qp_ex *)sides[A].qp;
	*target(TGT_OFF) = 10;

	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(x, amr->rkey, (uintptr_t)sides[B].buf + TGT_OFF, 5);
	ibv_wr_set_sge(x, sides[A].mr->lkey, (uintptr_t)sides[A].buf + RES_OFF, 8);
	x->wr_id = 2;
	ibv_wr_atomic_cmp_swp(x, amr->rkey, (uintptr_t)sides[B].buf + TGT_OFF, 15, 99);
	ibv_wr_set_sge(x, sides[A].mr->lkey, (uintptr_t)sides[A].buf + RES_OFF + 8, 8);
	assert_int_equal(ibv_wr_complete(x), 0);
	expect_atomic_wc(1, IBV_WC_FETCH_ADD);
	expect_atomic_wc(2, IBV_WC_COMP_SWAP);
	assert_int_equal(result(0), 10);
	assert_int_equal(result(1), 15);
	assert_int_equal(*target(TGT_OFF), 99);
}

/* ============ Duplicates: answered from the saved result (IBA 9.7.5.1) ============ */

static enum verdict keep_first_atomic(const struct seen *s)
{
	return s->dst == B && s->opc == IBA_OPC_FETCH_ADD && nkept == 0 ? KEEP : PASS;
}

static void test_atomic_duplicate_not_executed_twice(void **state)
{
	unsigned int i, j;

	(void)state;
	up_atomic(&def_opts);
	*target(TGT_OFF) = 1000;
	filter = keep_first_atomic;
	post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 1, 0, 0, 1);
	expect_atomic_wc(1, IBV_WC_FETCH_ADD);
	post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 1, 0, 1, 2);
	expect_atomic_wc(2, IBV_WC_FETCH_ADD);
	assert_int_equal(nkept, 1);
	/* The first request again, as the network may deliver it late. */
	replay(0);
	settle(5);
	assert_int_equal(*target(TGT_OFF), 1002);            /* executed once */
	assert_int_equal(count(0, A, IBA_OPC_ATOMIC_ACKNOWLEDGE, 100, false), 2);
	i = nth(0, A, IBA_OPC_ATOMIC_ACKNOWLEDGE, 0);
	j = nth(0, A, IBA_OPC_ATOMIC_ACKNOWLEDGE, 2);
	assert_int_equal(plog[j].psn, 100);
	assert_int_equal(plog[j].atomic_ack, plog[i].atomic_ack); /* the saved 1000 */
	assert_int_equal(plog[j].atomic_ack, 1000);
	expect_no_wc(A);                                      /* the stale answer is ignored */
	assert_int_equal(result(0), 1000);
	assert_int_equal(result(1), 1001);
	assert_int_equal(qp_state(A), IBV_QPS_RTS);
	assert_int_equal(qp_state(B), IBV_QPS_RTS);
}

static enum verdict keep_atomics(const struct seen *s)
{
	return s->dst == B && s->opc == IBA_OPC_FETCH_ADD && nkept < 4 ? KEEP : PASS;
}

/* Answers to duplicates queued at the responder are not new requests: a
 * new atomic behind max_dest_rd_atomic (4) of them is executed, not NAKed
 * as too many (which would take the QP to ERR). */
static void test_atomic_duplicates_do_not_use_resources(void **state)
{
	(void)state;
	up_atomic(&def_opts);
	*target(TGT_OFF) = 0;
	filter = keep_atomics;
	for (unsigned int i = 0; i < 4; i++) {
		post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 1, 0, i, 10 + i);
		expect_atomic_wc(10 + i, IBV_WC_FETCH_ADD);
	}
	filter = NULL;
	assert_int_equal(nkept, 4);
	/* The four again, late, and a new one right behind them: one pass. */
	for (unsigned int i = 0; i < 4; i++)
		replay(i);
	post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 1, 0, 4, 20);
	expect_atomic_wc(20, IBV_WC_FETCH_ADD);
	assert_int_equal(result(4), 4);
	assert_int_equal(*target(TGT_OFF), 5);
	assert_int_equal(qp_state(B), IBV_QPS_RTS);
}

static unsigned int acks_dropped;

static enum verdict drop_first_atomic_ack(const struct seen *s)
{
	if (s->dst == A && s->opc == IBA_OPC_ATOMIC_ACKNOWLEDGE && acks_dropped == 0) {
		acks_dropped++;
		return DROP;
	}
	return PASS;
}

/* The answer is lost: the requester times out and resends; the responder
 * answers the resent request from the saved result. */
static void test_atomic_lost_response(void **state)
{
	struct opts o = def_opts;

	(void)state;
	o.timeout = 10; /* 4 ms */
	up_atomic(&o);
	*target(TGT_OFF) = 7;
	acks_dropped = 0;
	filter = drop_first_atomic_ack;
	post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 3, 0, 0, 1);
	expect_atomic_wc(1, IBV_WC_FETCH_ADD);
	assert_int_equal(acks_dropped, 1);
	assert_true(count(0, B, IBA_OPC_FETCH_ADD, 100, false) >= 2); /* resent */
	assert_int_equal(result(0), 7);
	assert_int_equal(*target(TGT_OFF), 10);
}

/* ============ max_rd_atomic: READs and atomics outstanding together ============ */

static enum verdict hold_responses(const struct seen *s)
{
	return s->dst == A ? DROP : PASS;
}

static void test_atomic_max_rd_atomic(void **state)
{
	uint32_t psns[16];
	unsigned int n = 0;

	(void)state;
	up_atomic(&def_opts); /* max_rd_atomic 4, ACK timeout 1 s */
	*target(TGT_OFF) = 0;
	filter = hold_responses;
	post_send(A, IBV_WR_RDMA_READ, 16384, 64, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 100);
	for (unsigned int k = 0; k < 6; k++)
		post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, TGT_OFF, 1, 0, k, k);
	settle(100);
	/* One READ and three atomics on the wire, not more. */
	for (unsigned int i = 0; i < nlog; i++) {
		bool seen_before = false;

		if (plog[i].dst != B || !is_req(plog[i].opc))
			continue;
		for (unsigned int k = 0; k < n; k++)
			seen_before |= psns[k] == plog[i].psn;
		if (!seen_before && n < 16)
			psns[n++] = plog[i].psn;
	}
	assert_int_equal(n, 4);
	assert_int_equal(*target(TGT_OFF), 3);
	/* Let the responses through: the timeout resends, duplicates answer
	 * from saved results, and the rest follow; each executed once. */
	filter = NULL;
	expect_wc(A, 100, IBV_WC_SUCCESS);
	for (unsigned int k = 0; k < 6; k++)
		expect_atomic_wc(k, IBV_WC_FETCH_ADD);
	assert_int_equal(*target(TGT_OFF), 6);
	for (unsigned int k = 0; k < 6; k++)
		assert_int_equal(result(k), k);
}

/* ============ A shared counter under faults: several QPs and the CPU ============ */

#define NQP    3
#define NADD   150                 /* fetch-adds per QP */
#define NCPU   100                 /* fetch-adds by the CPU on the same counter */
#define NALL   (NQP * NADD + NCPU)

static struct ibv_qp *xqp[NDEV][NQP];

static int down_counter(void **state)
{
	for (unsigned int s = 0; s < NDEV; s++)
		for (unsigned int q = 0; q < NQP; q++) {
			if (xqp[s][q])
				assert_int_equal(sib_hca_ops.destroy_qp(xqp[s][q]), 0);
			xqp[s][q] = NULL;
		}
	return down_atomic(state);
}

static void test_atomic_counter_under_faults(void **state)
{
	struct opts o = def_opts;
	static uint8_t seen_orig[NALL];
	unsigned int cpu = 0;
	unsigned int posted[NQP] = { 0 }, done_q[NQP] = { 0 }, done = 0;
	uint64_t faults[3] = { 0 };
	struct ibv_qp_init_attr qa = { 0 };
	uint64_t end;
	struct ibv_wc wc;

	(void)state;
	o.timeout = 10; /* 4 ms */
	o.faults = "seed=11,loss=0.03,dup=0.03,reorder=0.03,corrupt=0.02";
	up_atomic(&o);
	*target(TGT_OFF) = 0;
	memset(seen_orig, 0, sizeof(seen_orig));
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	for (unsigned int s = 0; s < NDEV; s++)
		for (unsigned int q = 0; q < NQP; q++) {
			qa.send_cq = qa.recv_cq = sides[s].cq;
			xqp[s][q] = sib_hca_ops.create_qp(sides[s].pd, &qa);
			assert_non_null(xqp[s][q]);
		}
	for (unsigned int q = 0; q < NQP; q++) {
		connect_pair(A, xqp[A][q], xqp[B][q], &o, 0xfffff0 + q, 500 * q, ACC_ALL);
		connect_pair(B, xqp[B][q], xqp[A][q], &o, 500 * q, 0xfffff0 + q, ACC_ALL);
	}
	/* Each QP keeps up to 4 fetch-adds of 1 in flight on the same
	 * counter; every completion's original value is a distinct count. */
	end = now_ms() + 60000;
	while (done < NQP * NADD || cpu < NCPU) {
		/* The CPU adds too, while the engine threads execute remote ones. */
		if (cpu < NCPU && (done % 4 == 0 || done == NQP * NADD)) {
			uint64_t v = __atomic_fetch_add(target(TGT_OFF), 1, __ATOMIC_SEQ_CST);

			assert_true(v < NALL && !seen_orig[v]);
			seen_orig[v] = 1;
			cpu++;
		}
		for (unsigned int q = 0; q < NQP; q++)
			while (posted[q] < NADD && posted[q] - done_q[q] < 4 &&
			       post_atomic_on(xqp[A][q], A, IBV_WR_ATOMIC_FETCH_AND_ADD,
					      (uintptr_t)sides[B].buf + TGT_OFF, amr->rkey, 1, 0,
					      q * NADD + posted[q], 8, q * NADD + posted[q]) == 0)
				posted[q]++;
		pump();
		drive(B);
		while (sib_hca_ops.poll_cq(sides[A].cq, 1, &wc) == 1) {
			uint64_t v = result((unsigned int)wc.wr_id);

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.opcode, IBV_WC_FETCH_ADD);
			assert_true(v < NALL);
			assert_int_equal(seen_orig[v], 0);
			seen_orig[v] = 1;
			done_q[wc.wr_id / NADD]++;
			done++;
		}
		if (now_ms() > end)
			fail_msg("stuck: %u of %u done, counter %llu", done, NQP * NADD,
				 (unsigned long long)*target(TGT_OFF));
	}
	settle(20);
	expect_no_wc(A);
	for (unsigned int d = 0; d < NDEV; d++) {
		const struct sib_link_stats *st = (void *)((char *)inbox_mem[d] + SIB_LINK_STATS_OFF);

		for (unsigned int c = SIB_LC_LOSS; c <= SIB_LC_REORDER; c++)
			faults[c - SIB_LC_LOSS] += atomic_load(&st->c[c]);
	}
	print_message("loss=%llu dup=%llu reorder=%llu\n", (unsigned long long)faults[0],
		      (unsigned long long)faults[1], (unsigned long long)faults[2]);
	assert_true(faults[0] > 0 && faults[1] > 0 && faults[2] > 0);
	assert_int_equal(*target(TGT_OFF), NALL);
	for (unsigned int v = 0; v < NALL; v++)
		assert_int_equal(seen_orig[v], 1);
}

/* ============ The pure pieces ============ */

static void test_atomic_apply(void **state)
{
	uint64_t t = 5;

	(void)state;
	assert_int_equal(sib_atomic_apply(IBA_OPC_FETCH_ADD, &t, UINT64_MAX, 0), 5);
	assert_int_equal(t, 4); /* wraps modulo 2^64 */
	assert_int_equal(sib_atomic_apply(IBA_OPC_COMPARE_SWAP, &t, 9, 3), 4);
	assert_int_equal(t, 4);
	assert_int_equal(sib_atomic_apply(IBA_OPC_COMPARE_SWAP, &t, 9, 4), 4);
	assert_int_equal(t, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_atomic_headers_on_the_wire),
		cmocka_unit_test(test_atomic_apply),
		cmocka_unit_test_teardown(test_atomic_ops, down_atomic),
		cmocka_unit_test_teardown(test_atomic_misaligned, down_atomic),
		cmocka_unit_test_teardown(test_atomic_mr_without_access, down_atomic),
		cmocka_unit_test_teardown(test_atomic_qp_without_access, down_atomic),
		cmocka_unit_test_teardown(test_atomic_bad_rkey, down_atomic),
		cmocka_unit_test_teardown(test_atomic_post_checks, down_atomic),
		cmocka_unit_test_teardown(test_atomic_wr_api, down_atomic),
		cmocka_unit_test_teardown(test_atomic_duplicates_do_not_use_resources, down_atomic),
		cmocka_unit_test_teardown(test_atomic_duplicate_not_executed_twice, down_atomic),
		cmocka_unit_test_teardown(test_atomic_lost_response, down_atomic),
		cmocka_unit_test_teardown(test_atomic_max_rd_atomic, down_atomic),
		cmocka_unit_test_teardown(test_atomic_counter_under_faults, down_counter),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
