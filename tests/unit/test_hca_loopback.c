/* SPDX-License-Identifier: MIT */
/*
 * The HCA's RC transport stages (IBA vol. 1 ch. 9) over the loopback
 * fabric of hca_loop.h (no verbs library, no softibd).  Per stage:
 * segmentation at the path MTU, AckReq and ACK coalescing, the
 * responder's duplicates (C9-105), PSN sequence NAK and rewind, RNR NAK
 * and rnr_retry, ACK timeout and retry_cnt, R_Key/access/bounds NAKs,
 * flush in ERR, a transfer under the link's fault wrapper
 * (SOFTIB_FAULTS), and the engine thread sleeping (little CPU) while a
 * long fault delay fills the wrapper's queue.
 */
#include <endian.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sib_shm.h"
#include "hca/hca.h"
#include "hca/provider.h"
#include "iba/iba.h"
#include "hca_loop.h"
#include "link/link.h"
#include "stream_fill.h"

/* ================= Requester: segmentation (IBA 9.7.4, 9.5) ================= */

static void test_segmentation(void **state)
{
	struct opts o = def_opts;
	unsigned int i, mark;

	(void)state;
	o.psn = 0xfffffe; /* the 24-bit PSN wraps inside the first message */
	up(&o);

	/* SEND of 3000 bytes at MTU 1024: FIRST, MIDDLE, LAST; AckReq on the last. */
	fill(sides[A].buf, 3000, 1);
	post_recv(B, 0, 4096, 7);
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 7, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf, 3000);
	assert_int_equal(count(0, B, -1, 0, true), 3);
	i = nth(0, B, -1, 0);
	expect_pkt(i, IBA_OPC_SEND_FIRST, 0xfffffe, 1024, false);
	expect_pkt(nth(0, B, -1, 1), IBA_OPC_SEND_MIDDLE, 0xffffff, 1024, false);
	expect_pkt(nth(0, B, -1, 2), IBA_OPC_SEND_LAST, 0, 952, true);
	/* One ACK, for the last PSN, MSN 1. */
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true), 1);
	i = nth(0, A, IBA_OPC_ACKNOWLEDGE, 0);
	assert_int_equal(plog[i].psn, 0);
	assert_int_equal(plog[i].syn & IBA_AETH_TYPE_MASK, IBA_AETH_ACK);
	assert_int_equal(plog[i].msn, 1);

	/* RDMA WRITE of 5000: RETH (VA, R_Key, DMALen = the whole message)
	 * only on FIRST; MIDDLE x3; LAST of 904. */
	mark = nlog;
	fill(sides[A].buf, 5000, 3);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 5000, (uintptr_t)sides[B].buf + 100, sides[B].mr->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf + 100, 5000);
	assert_int_equal(count(mark, B, -1, 0, true), 5);
	i = nth(mark, B, -1, 0);
	expect_pkt(i, IBA_OPC_RDMA_WRITE_FIRST, 1, 1024, false);
	assert_int_equal(plog[i].va, (uintptr_t)sides[B].buf + 100);
	assert_int_equal(plog[i].rkey, sides[B].mr->rkey);
	assert_int_equal(plog[i].dmalen, 5000);
	for (unsigned int k = 1; k < 4; k++)
		expect_pkt(nth(mark, B, -1, k), IBA_OPC_RDMA_WRITE_MIDDLE, 1 + k, 1024, false);
	expect_pkt(nth(mark, B, -1, 4), IBA_OPC_RDMA_WRITE_LAST, 5, 904, true);
	expect_no_wc(B); /* a WRITE without immediate consumes no receive */

	/* RDMA READ of 6000: one request with DMALen 6000 that reserves one
	 * PSN per response packet; six responses FIRST, MIDDLE x4, LAST. */
	mark = nlog;
	fill(sides[B].buf, 6000, 9);
	post_send(A, IBV_WR_RDMA_READ, 8192, 6000, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf + 8192, sides[B].buf, 6000);
	assert_int_equal(count(mark, B, -1, 0, true), 1);
	i = nth(mark, B, -1, 0);
	expect_pkt(i, IBA_OPC_RDMA_READ_REQUEST, 6, 0, true);
	assert_int_equal(plog[i].dmalen, 6000);
	expect_pkt(nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_FIRST, 0), IBA_OPC_RDMA_READ_RESPONSE_FIRST,
		   6, 1024, false);
	for (unsigned int k = 0; k < 4; k++)
		expect_pkt(nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_MIDDLE, k),
			   IBA_OPC_RDMA_READ_RESPONSE_MIDDLE, 7 + k, 1024, false);
	expect_pkt(nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_LAST, 0), IBA_OPC_RDMA_READ_RESPONSE_LAST,
		   11, 880, false);

	/* The next message starts after the READ's PSNs; one MTU is ONLY,
	 * and so is an empty SEND. */
	mark = nlog;
	post_recv(B, 0, 4096, 8);
	post_recv(B, 0, 4096, 9);
	post_send(A, IBV_WR_SEND, 0, 1024, 0, 0, 4);
	post_send(A, IBV_WR_SEND, 0, 0, 0, 0, 5);
	expect_wc(A, 4, IBV_WC_SUCCESS);
	expect_wc(A, 5, IBV_WC_SUCCESS);
	expect_wc(B, 8, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
	expect_pkt(nth(mark, B, -1, 0), IBA_OPC_SEND_ONLY, 12, 1024, true);
	expect_pkt(nth(mark, B, -1, 1), IBA_OPC_SEND_ONLY, 13, 0, true);
}

/* ================= ACKs: AckReq and coalescing (IBA 9.7.5.1.1) ================= */

static unsigned int acks_to_drop;

static enum verdict drop_some_acks(const struct seen *s)
{
	if (s->dst == A && is_ack_of_type(s, IBA_AETH_ACK) && acks_to_drop) {
		acks_to_drop--;
		return DROP;
	}
	return PASS;
}

static void test_ack_coalescing(void **state)
{
	unsigned int asked = 0, last_ackreq = 0, n, mark;

	(void)state;
	up(&def_opts);

	/* A 40-packet WRITE: AckReq on the last packet and at least every 32;
	 * the responder ACKs only those, each with its PSN. */
	post_send(A, IBV_WR_RDMA_WRITE, 0, 40 * 1024, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	n = count(0, B, -1, 0, true);
	assert_int_equal(n, 40);
	for (unsigned int k = 0; k < n; k++) {
		const struct seen *e = &plog[nth(0, B, -1, k)];

		assert_int_equal(e->psn, iba_psn_add(def_opts.psn, k));
		if (e->ackreq) {
			assert_true(k + 1 - last_ackreq <= 32);
			last_ackreq = k + 1;
			assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, e->psn, false), 1);
			asked++;
		}
	}
	assert_int_equal(last_ackreq, 40);
	assert_true(asked >= 2 && asked < 40);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true), asked);

	/* Four SENDs whose first three ACKs are lost: the fourth ACK covers
	 * them all (ACKs are cumulative), in order, with no retransmission;
	 * its MSN counts the four messages. */
	mark = nlog;
	for (unsigned int k = 0; k < 4; k++)
		post_recv(B, k * 256, 256, 10 + k);
	acks_to_drop = 3;
	filter = drop_some_acks;
	for (unsigned int k = 0; k < 4; k++)
		post_send(A, IBV_WR_SEND, k * 256, 100, 0, 0, 20 + k);
	for (unsigned int k = 0; k < 4; k++)
		expect_wc(A, 20 + k, IBV_WC_SUCCESS);
	for (unsigned int k = 0; k < 4; k++)
		expect_wc(B, 10 + k, IBV_WC_SUCCESS);
	assert_int_equal(acks_to_drop, 0);
	assert_int_equal(count(mark, B, -1, 0, true), 4); /* nothing sent twice */
	n = nth(mark, A, IBA_OPC_ACKNOWLEDGE, 3);
	assert_int_equal(plog[n].psn, iba_psn_add(def_opts.psn, 40 + 3));
	assert_int_equal(plog[n].msn, 1 + 4);
}

/* ================= AckReq policy (IBA 9.7.5.1, 9.7.6) ================= */

/* Post n 8-byte WRITEs from side A in one list (the engine sees them
 * whole); WR k (1-based) has wr_id base + k and is signaled if k is in
 * the bitmask `signaled`; its remote target is B's buf + 8k. */
static void post_write_list(unsigned int n, uint64_t signaled, uint64_t base, unsigned int ok_lkeys)
{
	struct ibv_send_wr wr[64], *bad = NULL;
	struct ibv_sge sge[64];

	assert_true(n >= 1 && n <= 64);
	for (unsigned int k = 1; k <= n; k++) {
		sge[k - 1] = (struct ibv_sge){ .addr = (uintptr_t)sides[A].buf + 8 * k, .length = 8,
					       .lkey = k <= ok_lkeys ? sides[A].mr->lkey : 0xbad00 };
		wr[k - 1] = (struct ibv_send_wr){
			.wr_id = base + k, .sg_list = &sge[k - 1], .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = (signaled >> k) & 1 ? IBV_SEND_SIGNALED : 0,
			.next = k < n ? &wr[k] : NULL,
		};
		wr[k - 1].wr.rdma.remote_addr = (uintptr_t)sides[B].buf + 8 * k;
		wr[k - 1].wr.rdma.rkey = sides[B].mr->rkey;
	}
	assert_int_equal(sib_hca_ops.post_send(sides[A].qp, wr, &bad), 0);
}

/* The ACK (to A) for PSN psn has been seen, within ms. */
static bool wait_ack(uint32_t psn, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		if (count(0, A, IBA_OPC_ACKNOWLEDGE, psn, false))
			return true;
		settle(1);
	}
	return false;
}

static void test_ackreq_policy(void **state)
{
	uint32_t psn0 = def_opts.psn;
	unsigned int mark, i;

	(void)state;
	up(&def_opts);

	/* 40 WRITEs, only the 5th signaled: AckReq on the 5th and 32 PSNs
	 * later (37th), nowhere else; the 40th, an unsignaled tail, is sent
	 * again with AckReq SIB_ACKREQ_DELAY_NS later (long before the 1 s
	 * ACK timeout).  The responder ACKs exactly the PSNs that ask. */
	fill(sides[A].buf, 8 * 41, 5);
	post_write_list(40, 1ull << 5, 100, 64);
	expect_wc(A, 105, IBV_WC_SUCCESS);
	assert_true(wait_ack(iba_psn_add(psn0, 39), 500));
	assert_int_equal(count(0, B, -1, 0, true), 41);
	for (unsigned int k = 1; k <= 40; k++) {
		const struct seen *e = &plog[nth(0, B, -1, k - 1)];
		bool want = k == 5 || k == 37;

		assert_int_equal(e->psn, iba_psn_add(psn0, k - 1));
		assert_int_equal(e->ackreq, want);
		assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, e->psn, false), want || k == 40 ? 1 : 0);
	}
	i = nth(0, B, -1, 40);
	assert_int_equal(plog[i].psn, iba_psn_add(psn0, 39));
	assert_true(plog[i].ackreq);
	assert_memory_equal(sides[A].buf + 8, sides[B].buf + 8, 8 * 40);
	expect_no_wc(A); /* only the signaled one completes with a CQE */

	/* An unsignaled tail of three WRITEs, then idle: the third is sent
	 * again with AckReq and ACKed within 300 ms (not after the ACK
	 * timeout); a signaled WRITE after it carries AckReq itself and
	 * completes (so did the three, in order). */
	mark = nlog;
	post_write_list(3, 0, 200, 64);
	assert_true(wait_ack(iba_psn_add(psn0, 42), 300));
	assert_int_equal(count(mark, B, -1, 0, true), 4);
	for (unsigned int k = 0; k < 3; k++)
		assert_false(plog[nth(mark, B, -1, k)].ackreq);
	i = nth(mark, B, -1, 3);
	assert_int_equal(plog[i].psn, iba_psn_add(psn0, 42));
	assert_true(plog[i].ackreq);
	post_write_list(1, 1ull << 1, 300, 64);
	expect_wc(A, 301, IBV_WC_SUCCESS);
	i = nth(mark, B, -1, 4);
	assert_int_equal(plog[i].psn, iba_psn_add(psn0, 43));
	assert_true(plog[i].ackreq);
	settle(50);
	assert_int_equal(count(mark, B, -1, 0, true), 5); /* nothing more asked */
	expect_no_wc(A);
}

/* A WQE that fails its local key check behind an unsignaled WRITE sent
 * without AckReq: the WRITE must be acknowledged before the error can
 * complete (in order, IBA 10.8.3.3).  With an infinite ACK timeout
 * (timeout 0) only the requester asking again (the WRITE resent with
 * AckReq, ACKed as a duplicate, C9-105) gets there. */
static void test_ackreq_before_local_error(void **state)
{
	struct opts o = def_opts;

	(void)state;
	o.timeout = 0;
	up(&o);
	post_write_list(2, 1ull << 2, 400, 1);
	expect_wc(A, 402, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	/* The good WRITE went twice: without AckReq, then asking for it. */
	assert_int_equal(count(0, B, -1, 0, true), 2);
	assert_false(plog[nth(0, B, -1, 0)].ackreq);
	assert_true(plog[nth(0, B, -1, 1)].ackreq);
	assert_int_equal(plog[nth(0, B, -1, 1)].psn, o.psn);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, o.psn, false), 1);
}

/* ================= Responder: duplicates (C9-105) ================= */

static enum verdict keep_first_request(const struct seen *s)
{
	return s->dst == B && is_req(s->opc) && nkept == 0 ? KEEP : PASS;
}

static void test_duplicate_send(void **state)
{
	unsigned int mark;

	(void)state;
	up(&def_opts);
	filter = keep_first_request;
	fill(sides[A].buf, 100, 5);
	post_recv(B, 0, 256, 1);
	post_recv(B, 256, 256, 2);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 11);
	expect_wc(A, 11, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_int_equal(nkept, 1);

	/* The same SEND again: ACKed with its PSN, not placed again, and
	 * receive 2 stays posted. */
	mark = nlog;
	replay(0);
	settle(50);
	expect_no_wc(B);
	expect_no_wc(A);
	assert_int_equal(count(mark, A, IBA_OPC_ACKNOWLEDGE, def_opts.psn, false), 1);
	assert_true(is_ack_of_type(&plog[nth(mark, A, IBA_OPC_ACKNOWLEDGE, 0)], IBA_AETH_ACK));

	/* The responder carries on: the next SEND takes receive 2. */
	fill(sides[A].buf, 100, 6);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 12);
	expect_wc(A, 12, IBV_WC_SUCCESS);
	expect_wc(B, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 256, sides[A].buf, 100);
}

static void test_duplicate_write(void **state)
{
	unsigned int mark;
	uint8_t zero[64] = { 0 };

	(void)state;
	up(&def_opts);
	filter = keep_first_request;
	fill(sides[A].buf, 64, 7);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)sides[B].buf + 512, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 512, sides[A].buf, 64);

	/* Replayed after the target changed: ACKed, not written again. */
	memset(sides[B].buf + 512, 0, 64);
	mark = nlog;
	replay(0);
	settle(50);
	assert_memory_equal(sides[B].buf + 512, zero, 64);
	assert_int_equal(count(mark, A, IBA_OPC_ACKNOWLEDGE, def_opts.psn, false), 1);
	expect_no_wc(A);

	/* WRITE with immediate consumes a receive once, not twice. */
	nkept = 0;
	post_recv(B, 0, 0, 3);
	post_recv(B, 0, 0, 4);
	post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 64, (uintptr_t)sides[B].buf + 1024,
		  sides[B].mr->rkey, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(B, 3, IBV_WC_SUCCESS);
	replay(0);
	settle(50);
	expect_no_wc(B);
	expect_no_wc(A);
}

static void test_duplicate_read(void **state)
{
	uint8_t before[3000];
	unsigned int mark, i;

	(void)state;
	up(&def_opts);
	filter = keep_first_request;
	fill(sides[B].buf, 3000, 21);
	post_send(A, IBV_WR_RDMA_READ, 0, 3000, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf, 3000);
	memcpy(before, sides[A].buf, sizeof(before));

	/* A duplicate READ is read again, from memory as it is now, with the
	 * same PSNs; the requester, which has it complete, ignores them. */
	fill(sides[B].buf, 3000, 99);
	mark = nlog;
	replay(0);
	settle(50);
	expect_no_wc(A);
	expect_no_wc(B);
	i = nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_FIRST, 0);
	assert_int_equal(plog[i].psn, def_opts.psn);
	assert_int_equal(plog[i].head, sides[B].buf[0]);
	i = nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_MIDDLE, 0);
	assert_int_equal(plog[i].psn, def_opts.psn + 1);
	assert_int_equal(plog[i].head, sides[B].buf[1024]);
	i = nth(mark, A, IBA_OPC_RDMA_READ_RESPONSE_LAST, 0);
	assert_int_equal(plog[i].psn, def_opts.psn + 2);
	assert_int_equal(plog[i].paylen, 3000 - 2048);
	assert_memory_equal(sides[A].buf, before, sizeof(before));
}

/* ================= PSN sequence error (IBA 9.7.5.2.1, 9.9.2.1) ================= */

static uint32_t drop_psn;
static bool dropped_once;

static enum verdict drop_psn_once(const struct seen *s)
{
	if (s->dst == B && is_req(s->opc) && s->psn == drop_psn && !dropped_once) {
		dropped_once = true;
		return DROP;
	}
	return PASS;
}

/* A SEND of len bytes A -> B whose packet `psn` is lost once: it still
 * arrives whole, once. */
static void send_losing_psn(uint32_t len, uint32_t psn)
{
	drop_psn = psn;
	dropped_once = false;
	filter = drop_psn_once;
	fill(sides[A].buf, len, (uint8_t)psn);
	post_recv(B, 0, 8192, 1);
	post_send(A, IBV_WR_SEND, 0, len, 0, 0, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf, sides[A].buf, len);
	settle(20);
	expect_no_wc(B);
	assert_true(dropped_once);
}

static void test_psn_sequence_nak(void **state)
{
	uint32_t p = def_opts.psn;
	unsigned int nak, k;

	(void)state;
	up(&def_opts);
	send_losing_psn(5000, p + 1);

	/* Three packets arrived ahead of the hole: one NAK, with the
	 * expected PSN. */
	assert_true(dropped_once);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true) -
			 count(0, A, IBA_OPC_ACKNOWLEDGE, p + 4, false), 1);
	nak = nth(0, A, IBA_OPC_ACKNOWLEDGE, 0);
	assert_int_equal(plog[nak].syn, IBA_AETH_NAK | IBA_NAK_PSN_SEQ);
	assert_int_equal(plog[nak].psn, p + 1);
	/* The requester rewinds to it: go-back-N from the NAKed PSN, with
	 * the opcodes of those positions in the message. */
	expect_pkt(nth(nak, B, -1, 0), IBA_OPC_SEND_MIDDLE, p + 1, 1024, false);
	for (k = 1; k < 3; k++)
		expect_pkt(nth(nak, B, -1, k), IBA_OPC_SEND_MIDDLE, p + 1 + k, 1024, false);
	expect_pkt(nth(nak, B, -1, 3), IBA_OPC_SEND_LAST, p + 4, 904, true);
	assert_int_equal(count(0, B, -1, p, false), 1); /* PSNs before the hole once */
}

/* ================= RNR NAK and rnr_retry (IBA 9.7.5.2.8, 9.9.2.2) ================= */

static void test_rnr_retry_exceeded(void **state)
{
	struct opts o = def_opts;
	unsigned int i;

	(void)state;
	o.rnr_retry = 2;
	o.min_rnr_timer = 1; /* 0.01 ms */
	up(&o);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 1);
	post_send(A, IBV_WR_SEND, 0, 100, 0, 0, 2);
	expect_wc(A, 1, IBV_WC_RNR_RETRY_EXC_ERR);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	/* The first try and rnr_retry more, each answered by an RNR NAK
	 * carrying the responder's min_rnr_timer. */
	assert_int_equal(count(0, B, IBA_OPC_SEND_ONLY, o.psn, false), 3);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, o.psn, false), 3);
	for (unsigned int k = 0; k < 3; k++) {
		i = nth(0, A, IBA_OPC_ACKNOWLEDGE, k);
		assert_int_equal(plog[i].syn, IBA_AETH_RNR_NAK | 1);
	}
	/* The responder is not in error: class B. */
	assert_int_equal(qp_state(B), IBV_QPS_RTS);
}

static void test_rnr_then_receive(void **state)
{
	struct opts o = def_opts;
	uint64_t end;

	(void)state;
	o.rnr_retry = 7;        /* retry forever */
	o.min_rnr_timer = 14;   /* 1.28 ms */
	up(&o);
	fill(sides[A].buf, 2000, 44);
	post_send(A, IBV_WR_SEND, 0, 2000, 0, 0, 1);
	end = now_ms() + WAIT_MS;
	while (!count(0, A, IBA_OPC_ACKNOWLEDGE, o.psn, false)) {
		pump();
		drive(A);
		drive(B);
		if (now_ms() > end)
			fail_msg("no RNR NAK");
	}
	assert_true(is_ack_of_type(&plog[nth(0, A, IBA_OPC_ACKNOWLEDGE, 0)], IBA_AETH_RNR_NAK));
	post_recv(B, 0, 4096, 9);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf, sides[A].buf, 2000);
	assert_true(count(0, B, IBA_OPC_SEND_FIRST, o.psn, false) >= 2); /* sent again */
	settle(10);
	expect_no_wc(B);
}

/* ================= ACK timeout and retry_cnt (IBA 9.7.6.1, C9-140) ================= */

static enum verdict drop_to_b(const struct seen *s)
{
	return s->dst == B ? DROP : PASS;
}

static void test_ack_timeout_retransmits(void **state)
{
	struct opts o = def_opts;
	unsigned int second;

	(void)state;
	o.timeout = 12; /* 16 ms: a second timeout during the resend would
			   interleave another one (a loaded machine) */
	up(&o);
	/* The LAST packet is lost: nothing after it shows a hole, so only the
	 * ACK timeout recovers, resending from the oldest unacknowledged PSN. */
	send_losing_psn(3000, o.psn + 2);
	second = nth(0, B, -1, 3);
	expect_pkt(second, IBA_OPC_SEND_FIRST, o.psn, 1024, false);
	expect_pkt(nth(second, B, -1, 1), IBA_OPC_SEND_MIDDLE, o.psn + 1, 1024, false);
	expect_pkt(nth(second, B, -1, 2), IBA_OPC_SEND_LAST, o.psn + 2, 952, true);
}

/* ================= A lost READ response (IBA 9.7.5.1.3) ================= */

static bool read_resp_dropped, send_dropped;

/* Drop the READ's response once and, when asked, the first SEND packet
 * (PSN + 1) once, so that the responder NAKs its sequence. */
static enum verdict drop_read_resp(const struct seen *s)
{
	if (s->dst == A && s->opc == IBA_OPC_RDMA_READ_RESPONSE_ONLY && !read_resp_dropped) {
		read_resp_dropped = true;
		return DROP;
	}
	if (s->dst == B && is_req(s->opc) && s->psn == def_opts.psn + 1 && drop_psn && !send_dropped) {
		send_dropped = true;
		return DROP;
	}
	return PASS;
}

/*
 * A READ whose response is lost, then two SENDs: the ACK (or, with the
 * first SEND lost too, the PSN sequence NAK) for a request after the READ
 * says the response will not come, and the READ is asked again at once,
 * not after the ACK timeout (1 s here).  Before, a NAK rewound past the
 * READ, which only the timer then recovered; under steady loss, NAK after
 * NAK without progress ran the QP out of retries (found by the traffic
 * soak under faults).
 */
static void read_then_sends(bool lose_send)
{
	uint64_t timeouts;

	up(&def_opts);
	read_resp_dropped = send_dropped = false;
	drop_psn = lose_send;
	filter = drop_read_resp;
	fill(sides[B].buf, 512, 7);
	post_recv(B, 4096, 256, 10);
	post_recv(B, 8192, 256, 11);
	timeouts = to_sctx(sides[A].ctx)->ack_timeouts;
	post_send(A, IBV_WR_RDMA_READ, 0, 512, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 1);
	post_send(A, IBV_WR_SEND, 1024, 100, 0, 0, 2);
	post_send(A, IBV_WR_SEND, 2048, 100, 0, 0, 3);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	expect_wc(B, 10, IBV_WC_SUCCESS);
	expect_wc(B, 11, IBV_WC_SUCCESS);
	assert_true(read_resp_dropped);
	assert_int_equal(send_dropped, lose_send);
	assert_memory_equal(sides[A].buf, sides[B].buf, 512);
	assert_int_equal(count(0, B, IBA_OPC_RDMA_READ_REQUEST, def_opts.psn, false), 2);
	assert_int_equal(to_sctx(sides[A].ctx)->ack_timeouts, timeouts); /* no timeout needed */
	drop_psn = 0;
}

static void test_read_response_lost_ack(void **state)
{
	(void)state;
	read_then_sends(false);
}

static void test_read_response_lost_nak(void **state)
{
	(void)state;
	read_then_sends(true);
}

static void test_retry_exceeded(void **state)
{
	struct opts o = def_opts;

	(void)state;
	o.timeout = 8;
	o.retry_cnt = 3;
	up(&o);
	filter = drop_to_b;
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 1);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 2);
	expect_wc(A, 1, IBV_WC_RETRY_EXC_ERR);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	/* The first transmission and retry_cnt retries. */
	assert_int_equal(count(0, B, IBA_OPC_SEND_ONLY, o.psn, false), 1 + 3);
}

/*
 * A peer whose engine is starved of CPU takes nothing from our ring for
 * longer than timeout * (retry_cnt + 1): that is not a lossy wire, and
 * the requester waits (up to SIB_STARVED_TIMEOUTS timeouts in a row)
 * without spending its retries, then completes when the peer runs again.
 * Before, such a starvation (a loaded CI machine, 238 ms without the
 * engine thread) failed the QP with RETRY_EXC_ERR.
 */
static void test_starved_peer_not_a_retry(void **state)
{
	struct opts o = def_opts;
	struct sib_context *a;
	uint64_t t0;

	(void)state;
	o.timeout = 10; /* 4.2 ms: 16 of them outlast the hold by far */
	o.retry_cnt = 1;
	up(&o);
	a = to_sctx(sides[A].ctx);
	post_recv(B, 0, 64, 9);
	wire_hold[B] = true;  /* B takes nothing: A's ring to it backs up */
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 1);
	/* A's timers run: more than retry_cnt + 1 timeouts, by count (a
	 * loaded machine may give a fixed wall-clock wait fewer of them) */
	t0 = now_ms();
	while (a->ack_timeouts_starved < 3 && now_ms() - t0 < 5000)
		settle(1);
	{
		struct ibv_wc wc;

		if (sib_hca_ops.poll_cq(sides[A].cq, 1, &wc) == 1)
			fail_msg("completion (status %d) while the peer was starved: %llu timeouts forgiven, "
				 "%llu counted", wc.status, (unsigned long long)a->ack_timeouts_starved,
				 (unsigned long long)a->ack_timeouts);
	}
	wire_hold[B] = false;
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
	assert_true(a->ack_timeouts_starved >= 2);
	assert_int_equal(a->ack_timeouts, 0);
}

/*
 * The path check, behind the sender check: a SEND from the peer's own
 * context (its pair ring) but with an SLID that is not its port's, or
 * with a GRH the path does not have, is dropped and counted (slid, sgid),
 * and the connection carries on.  (A third context's packets are dropped
 * earlier, as foreign: test_verbs forged_from_non_peer.)
 */
static void inject_send(unsigned int dst, uint16_t slid, bool grh)
{
	uint8_t pkt[256];
	struct iba_pkt h = { 0 };
	size_t hl, len;

	h.lrh.dlid = sides[dst].lid;
	h.lrh.slid = slid;
	h.lrh.lnh = grh ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL;
	h.grh.ipver = IBA_GRH_IPVER;
	h.grh.nxthdr = IBA_GRH_NXTHDR_IBA;
	h.grh.hoplmt = 1;
	h.bth.opcode = IBA_OPC_SEND_ONLY;
	h.bth.pkey = 0xffff;
	h.bth.dqpn = sides[dst].qp->qp_num;
	h.bth.psn = def_opts.psn; /* the PSN B expects next */
	h.bth.ackreq = 1;
	if (grh) {
		uint64_t pfx = htobe64(0xfe80000000000000ull), g;

		g = htobe64(0x2000 + dst);
		memcpy(h.grh.dgid, &pfx, 8);
		memcpy(h.grh.dgid + 8, &g, 8);
		g = htobe64(0x2000 + (dst == A ? B : A));
		memcpy(h.grh.sgid, &pfx, 8);
		memcpy(h.grh.sgid + 8, &g, 8);
	}
	hl = iba_build_headers(pkt, &h);
	memset(pkt + hl, 0x5a, 16);
	len = iba_finish(pkt, hl, 16, 0);
	pkt[len] = pkt[len + 1] = 0;
	inject(dst, pkt, (uint32_t)len + 2, 0); /* from the peer's context */
}

static void test_path_check_from_peer(void **state)
{
	struct sib_context *b;
	uint64_t end;

	(void)state;
	up(&def_opts);
	b = to_sctx(sides[B].ctx);
	post_recv(B, 0, 64, 9);
	inject_send(B, 0x1234, false);     /* an SLID of no port */
	inject_send(B, sides[A].lid, true); /* a GRH on a local path */
	end = now_ms() + WAIT_MS;
	while ((sib_rx_drop_count(b, SIB_RX_DROP_SLID) < 1 || sib_rx_drop_count(b, SIB_RX_DROP_SGID) < 1) &&
	       now_ms() < end)
		settle(1);
	assert_int_equal(sib_rx_drop_count(b, SIB_RX_DROP_SLID), 1);
	assert_int_equal(sib_rx_drop_count(b, SIB_RX_DROP_SGID), 1);
	assert_int_equal(sib_rx_drop_count(b, SIB_RX_DROP_FOREIGN), 0);
	expect_no_wc(B);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 9, IBV_WC_SUCCESS);
}

/* ================= R_Key, access and bounds (IBA 9.7.5.2.4, C9-88) ================= */

enum access_case { BAD_RKEY, OUT_OF_BOUNDS, WRITE_NO_ACCESS, READ_NO_ACCESS };
static enum access_case access_cases[] = { BAD_RKEY, OUT_OF_BOUNDS, WRITE_NO_ACCESS, READ_NO_ACCESS };

static void remote_access_case(enum access_case c)
{
	static const uint8_t zero[63];
	struct side *b;
	uint8_t *target = NULL;
	unsigned int nak;

	up(&def_opts);
	b = &sides[B];
	fill(sides[A].buf, 64, 77);
	switch (c) {
	case BAD_RKEY:     /* a key byte that does not match */
		target = b->buf;
		post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)target, b->mr->rkey ^ 0x1, 1);
		break;
	case OUT_OF_BOUNDS: /* the last byte past the MR */
		target = b->buf + BUF - 63;
		post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)target, b->mr->rkey, 1);
		break;
	case WRITE_NO_ACCESS: /* an MR without remote write */
		target = b->buf2 + 2048;
		post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)target, b->mr_ro->rkey, 1);
		break;
	case READ_NO_ACCESS: /* an MR without remote read */
		post_send(A, IBV_WR_RDMA_READ, 0, 64, (uintptr_t)b->buf2, b->mr_local->rkey, 1);
		break;
	}
	post_send(A, IBV_WR_SEND, 0, 8, 0, 0, 2);
	expect_wc(A, 1, IBV_WC_REM_ACCESS_ERR);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	nak = nth(0, A, IBA_OPC_ACKNOWLEDGE, 0);
	assert_int_equal(plog[nak].syn, IBA_AETH_NAK | IBA_NAK_REM_ACCESS);
	assert_int_equal(plog[nak].psn, def_opts.psn);
	/* Class C: both QPs end in ERR (IBA 9.9.3.1.3). */
	assert_int_equal(qp_state(A), IBV_QPS_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
	if (target) /* nothing was written */
		assert_memory_equal(target, zero, sizeof(zero));
}

/* One case per test (cmocka prestate): each needs a fresh connection. */
static void test_rem_access(void **state)
{
	remote_access_case(*(const enum access_case *)*state);
}

/* ================= Flush in ERR (IBA 10.3.1, 11.4.2.1) ================= */

static void test_flush_on_error(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;

	(void)state;
	up(&def_opts);
	/* Receives outstanding when the QP goes to ERR are flushed in order. */
	for (unsigned int k = 0; k < 3; k++)
		post_recv(B, k * 64, 64, 100 + k);
	assert_int_equal(sib_hca_ops.modify_qp(sides[B].qp, &a, IBV_QP_STATE), 0);
	for (unsigned int k = 0; k < 3; k++) {
		wc = poll_wc(B);
		assert_int_equal(wc.wr_id, 100 + k);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.qp_num, sides[B].qp->qp_num);
	}
	/* ... and so is one posted in ERR. */
	post_recv(B, 0, 64, 103);
	expect_wc(B, 103, IBV_WC_WR_FLUSH_ERR);

	/* Sends on the wire and not acknowledged are flushed too. */
	filter = drop_to_b;
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 200);
	post_send(A, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)sides[B].buf, sides[B].mr->rkey, 201);
	settle(5);
	expect_no_wc(A);
	assert_int_equal(sib_hca_ops.modify_qp(sides[A].qp, &a, IBV_QP_STATE), 0);
	expect_wc(A, 200, IBV_WC_WR_FLUSH_ERR);
	expect_wc(A, 201, IBV_WC_WR_FLUSH_ERR);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 202);
	expect_wc(A, 202, IBV_WC_WR_FLUSH_ERR);
	settle(5);
	expect_no_wc(A);
	expect_no_wc(B);
}

/* ================= Transfer under the link's fault wrapper ================= */

#define FMSG     3000u                 /* 3 packets at MTU 1024 */
#define FMSGS    400u
#define FWINDOW  16u
#define FWRITE   (256u * 1024)

static uint64_t link_counter(unsigned int d, enum sib_link_counter c)
{
	struct sib_link_stats *st = (void *)((char *)inbox_mem[d] + SIB_LINK_STATS_OFF);

	return atomic_load(&st->c[c]);
}

static void test_transfer_under_faults(void **state)
{
	struct opts o = def_opts;
	uint32_t sent = 0, completed = 0, received = 0, rq = 32;
	uint64_t end, loss = 0, dup = 0, reorder = 0, corrupt = 0, icrc = 0;
	uint8_t expect[FMSG];
	struct ibv_wc wc;

	(void)state;
	o.timeout = 10; /* 4 ms: losses recover quickly */
	o.psn = 0xffff00;
	o.faults = "seed=7,loss=0.02,dup=0.02,reorder=0.02,corrupt=0.02";
	up(&o);
	for (uint32_t k = 0; k < rq; k++)
		post_recv(B, k * FMSG, FMSG, k);

	/* SENDs A -> B, each checked on arrival: every one exactly once, in order. */
	end = now_ms() + 60000;
	while (received < FMSGS || completed < FMSGS) {
		while (sent < FMSGS && sent - completed < FWINDOW) {
			uint32_t off = 512 * 1024 + (sent % FWINDOW) * FMSG;

			stream_fill(sides[A].buf + off, FMSG, sent);
			post_send(A, IBV_WR_SEND, off, FMSG, 0, 0, sent++);
		}
		pump();
		if (sib_hca_ops.poll_cq(sides[A].cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, completed++);
		}
		if (sib_hca_ops.poll_cq(sides[B].cq, 1, &wc) == 1) {
			uint32_t slot = (uint32_t)wc.wr_id;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.byte_len, FMSG);
			assert_int_equal(slot, received % rq);
			stream_fill(expect, FMSG, received++);
			assert_memory_equal(sides[B].buf + slot * FMSG, expect, FMSG);
			memset(sides[B].buf + slot * FMSG, 0, FMSG);
			post_recv(B, slot * FMSG, FMSG, slot);
		}
		if (now_ms() > end)
			fail_msg("stuck: sent %u completed %u received %u", sent, completed, received);
	}

	/* A large RDMA WRITE B -> A and a READ back, byte for byte. */
	for (uint32_t i = 0; i < FWRITE; i += FMSG)
		stream_fill(sides[B].buf + i, i + FMSG <= FWRITE ? FMSG : FWRITE - i, 100000 + i);
	post_send(B, IBV_WR_RDMA_WRITE, 0, FWRITE, (uintptr_t)sides[A].buf, sides[A].mr->rkey, 1);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[A].buf, sides[B].buf, FWRITE);
	post_send(B, IBV_WR_RDMA_READ, FWRITE, FWRITE, (uintptr_t)sides[A].buf, sides[A].mr->rkey, 2);
	expect_wc(B, 2, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + FWRITE, sides[B].buf, FWRITE);
	settle(20); /* what the wrappers still hold (reordered) goes out */
	expect_no_wc(B);
	expect_no_wc(A);

	for (unsigned int d = 0; d < NDEV; d++) {
		loss += link_counter(d, SIB_LC_LOSS);
		dup += link_counter(d, SIB_LC_DUP);
		reorder += link_counter(d, SIB_LC_REORDER);
		corrupt += link_counter(d, SIB_LC_CORRUPT);
		icrc += link_counter(d, SIB_LC_RX_ICRC);
	}
	print_message("loss=%llu dup=%llu reorder=%llu corrupt=%llu icrc_drops=%llu\n",
		      (unsigned long long)loss, (unsigned long long)dup, (unsigned long long)reorder,
		      (unsigned long long)corrupt, (unsigned long long)icrc);
	assert_true(loss > 0 && dup > 0 && reorder > 0 && corrupt > 0);
	/* Each corrupted packet was dropped by the receiver's ICRC check (twice
	 * if it was also duplicated). */
	assert_true(icrc >= corrupt && icrc <= corrupt + dup);
}

/* Nanoseconds of CPU the thread has used. */
static uint64_t thread_cpu_ns(pthread_t t)
{
	struct timespec ts;
	clockid_t cid;

	assert_int_equal(pthread_getcpuclockid(t, &cid), 0);
	assert_int_equal(clock_gettime(cid, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A long delay fills the fault wrapper's queue: the requester is refused
 * room until the first held packet is due.  The engine thread then sleeps
 * until that due time (its deadline is far off and it uses little CPU)
 * instead of polling every 50 us, and the message arrives afterwards. */
static void test_delay_engine_sleeps(void **state)
{
	struct opts o = def_opts;
	struct sib_context *c;
	uint64_t end, cpu0, w0, cpu, wall, posted;
	unsigned int samples = 0;

	(void)state;
	o.faults = "delay_us=200000";
	up(&o);
	c = to_sctx(sides[A].ctx);
	fill(sides[A].buf, 100 * 1024, 5);
	post_recv(B, 0, 128 * 1024, 1);
	posted = sib_now_ns();
	post_send(A, IBV_WR_SEND, 0, 100 * 1024, 0, 0, 1); /* 100 packets, the queue holds 64 */
	end = now_ms() + WAIT_MS;
	while (!link_counter(A, SIB_LC_TX_FULL)) {
		if (now_ms() > end)
			fail_msg("the fault queue never filled");
		usleep(1000);
	}
	cpu0 = thread_cpu_ns(c->eng.thread);
	w0 = sib_now_ns();
	/* Until shortly before the first packet is due (posted + 200 ms). */
	while (samples < 10 && sib_now_ns() < posted + 150000000ull) {
		uint64_t deadline, now;

		usleep(10000);
		deadline = atomic_load(&c->eng.next_deadline);
		now = sib_now_ns();
		if (now >= posted + 180000000ull)
			break; /* slept too long: a deadline may be near now */
		if (deadline && deadline < now + 10000000ull)
			fail_msg("engine deadline %lld us away, while the queue waits for a 200 ms delay",
				 (long long)(deadline - now) / 1000);
		samples++;
	}
	assert_true(samples > 0);
	cpu = thread_cpu_ns(c->eng.thread) - cpu0;
	wall = sib_now_ns() - w0;
	print_message("engine thread: %llu us CPU in %llu us\n", (unsigned long long)cpu / 1000,
		      (unsigned long long)wall / 1000);
	assert_true(cpu * 10 < wall * 3);
	/* After the delay, every packet goes. */
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf, sides[A].buf, 100 * 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_segmentation, down),
		cmocka_unit_test_teardown(test_ack_coalescing, down),
		cmocka_unit_test_teardown(test_ackreq_policy, down),
		cmocka_unit_test_teardown(test_ackreq_before_local_error, down),
		cmocka_unit_test_teardown(test_duplicate_send, down),
		cmocka_unit_test_teardown(test_duplicate_write, down),
		cmocka_unit_test_teardown(test_duplicate_read, down),
		cmocka_unit_test_teardown(test_psn_sequence_nak, down),
		cmocka_unit_test_teardown(test_rnr_retry_exceeded, down),
		cmocka_unit_test_teardown(test_rnr_then_receive, down),
		cmocka_unit_test_teardown(test_ack_timeout_retransmits, down),
		cmocka_unit_test_teardown(test_read_response_lost_ack, down),
		cmocka_unit_test_teardown(test_read_response_lost_nak, down),
		cmocka_unit_test_teardown(test_retry_exceeded, down),
		cmocka_unit_test_teardown(test_starved_peer_not_a_retry, down),
		cmocka_unit_test_teardown(test_path_check_from_peer, down),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[0]),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[1]),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[2]),
		cmocka_unit_test_prestate_setup_teardown(test_rem_access, NULL, down, &access_cases[3]),
		cmocka_unit_test_teardown(test_flush_on_error, down),
		cmocka_unit_test_teardown(test_transfer_under_faults, down),
		cmocka_unit_test_teardown(test_delay_engine_sleeps, down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
