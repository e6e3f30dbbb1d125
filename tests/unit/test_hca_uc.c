/* SPDX-License-Identifier: MIT */
/*
 * The HCA's UC service (IBA 9.7.4.1.4, 9.9.3 classes D/E) over the
 * loopback fabric of hca_loop.h: UC opcodes and no AckReq on the wire,
 * the requester completing without any ACK, READ and atomics refused at
 * post, and the responder dropping a message silently when a packet is
 * lost, comes twice or out of order, finds no receive WQE or fails its
 * R_Key, then resynchronising on the next FIRST/ONLY; a SEND longer than
 * its receive WQE completes it in error.  Last, a stream under the link's
 * fault wrapper: messages arrive whole or not at all, never damaged.
 */
#include <endian.h>
#include <errno.h>
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
#include "iba/iba.h"
#include "hca_loop.h"
#include "stream_fill.h"

#define UC(op) (IBA_TRANSPORT_UC | IBA_OPC_##op)

static struct opts uc_opts(void)
{
	struct opts o = def_opts;

	o.qpt = IBV_QPT_UC;
	return o;
}

/* Nothing ever goes from the responder B back to A on UC. */
static void expect_nothing_to_a(void)
{
	assert_int_equal(count(0, A, 0, 0, true) + count(0, A, -1, 0, true), 0);
	for (unsigned int i = 0; i < nlog; i++)
		if (plog[i].dst == A)
			fail_msg("packet %u (opcode 0x%x) went back to the requester", i, plog[i].opc);
}

/* ================= the four operations ================= */

static void test_uc_operations(void **state)
{
	struct opts o = uc_opts();
	struct ibv_wc wc;
	unsigned int i;

	(void)state;
	o.psn = 0xfffffe; /* the PSN wraps inside the first message */
	up(&o);
	fill(sides[A].buf, 8192, 3);

	/* SEND of 3000 bytes at MTU 1024: UC FIRST, MIDDLE, LAST, no AckReq. */
	post_recv(B, 0, 4096, 7);
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(wc.wc_flags & IBV_WC_WITH_IMM, 0);
	assert_memory_equal(sides[A].buf, sides[B].buf, 3000);
	expect_pkt(nth(0, B, -1, 0), UC(SEND_FIRST), 0xfffffe, 1024, false);
	expect_pkt(nth(0, B, -1, 1), UC(SEND_MIDDLE), 0xffffff, 1024, false);
	expect_pkt(nth(0, B, -1, 2), UC(SEND_LAST), 0, 952, false);

	/* SEND_WITH_IMM, one packet. */
	post_recv(B, 4096, 4096, 8);
	post_send(A, IBV_WR_SEND_WITH_IMM, 100, 500, 0, 0, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 8);
	assert_int_equal(wc.byte_len, 500);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x1234);
	assert_memory_equal(sides[B].buf + 4096, sides[A].buf + 100, 500);
	i = nth(0, B, -1, 3);
	expect_pkt(i, UC(SEND_ONLY_WITH_IMMEDIATE), 1, 500, false);

	/* RDMA WRITE of 2048 bytes: no receive WQE used, no completion at B. */
	post_send(A, IBV_WR_RDMA_WRITE, 0, 2048, (uintptr_t)sides[B].buf + 65536, sides[B].mr->rkey, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	settle(5);
	expect_no_wc(B);
	assert_memory_equal(sides[B].buf + 65536, sides[A].buf, 2048);
	expect_pkt(nth(0, B, -1, 4), UC(RDMA_WRITE_FIRST), 2, 1024, false);
	expect_pkt(nth(0, B, -1, 5), UC(RDMA_WRITE_LAST), 3, 1024, false);

	/* RDMA WRITE_WITH_IMM: the data, then a receive completion with ImmDt. */
	post_recv(B, 8192, 16, 9);
	post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 4096, 1500, (uintptr_t)sides[B].buf + 131072,
		  sides[B].mr->rkey, 4);
	expect_wc(A, 4, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x1234);
	assert_memory_equal(sides[B].buf + 131072, sides[A].buf + 4096, 1500);
	expect_pkt(nth(0, B, -1, 6), UC(RDMA_WRITE_FIRST), 4, 1024, false);
	expect_pkt(nth(0, B, -1, 7), UC(RDMA_WRITE_LAST_WITH_IMMEDIATE), 5, 476, false);

	expect_nothing_to_a();
	assert_int_equal(qp_state(A), IBV_QPS_RTS);
	assert_int_equal(qp_state(B), IBV_QPS_RTS);
}

/* READ, atomics and SEND_WITH_INV do not exist on UC: EINVAL at post (rxe). */
static void test_uc_refused_opcodes(void **state)
{
	static const enum ibv_wr_opcode bad[] = { IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
						  IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV };
	struct opts o = uc_opts();

	(void)state;
	up(&o);
	for (unsigned int k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf, .length = 8,
				       .lkey = sides[A].mr->lkey };
		struct ibv_send_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1, .opcode = bad[k] },
				   *badwr = NULL;

		assert_int_equal(sib_hca_ops.post_send(sides[A].qp, &wr, &badwr), EINVAL);
		assert_ptr_equal(badwr, &wr);
	}
	settle(2);
	assert_int_equal(nlog, 0);
	expect_no_wc(A);
}

/* ibv_create_qp_ex: a UC QP cannot ask for READ in its send ops
 * (EOPNOTSUPP, as mlx5 for an op the QP type lacks); one that asks for
 * SEND and WRITE posts them with the ibv_wr_* API. */
static void test_uc_create_ex(void **state)
{
	struct opts o = uc_opts();
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct ibv_qp *qp;

	(void)state;
	up(&o);
	qa.qp_type = IBV_QPT_UC;
	qa.send_cq = qa.recv_cq = sides[A].cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.pd = sides[A].pd;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
	errno = 0;
	assert_null(sib_hca_ops.create_qp_ex(sides[A].ctx, &qa));
	assert_int_equal(errno, EOPNOTSUPP);
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	qp = sib_hca_ops.create_qp_ex(sides[A].ctx, &qa);
	assert_non_null(qp);
	assert_non_null(((struct ibv_qp_ex *)qp)->wr_send);
	assert_null(((struct ibv_qp_ex *)qp)->wr_rdma_read);
	/* Swap it in for A's QP and connect both again. */
	assert_int_equal(sib_hca_ops.destroy_qp(sides[A].qp), 0);
	sides[A].qp = qp;
	connect_qp(A, &o);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

		assert_int_equal(sib_hca_ops.modify_qp(sides[B].qp, &a, IBV_QP_STATE), 0);
		connect_qp(B, &o);
	}
	{
		struct ibv_qp_ex *x = (struct ibv_qp_ex *)qp;

		fill(sides[A].buf, 1500, 51);
		post_recv(B, 0, 4096, 120);
		x->wr_start(x);
		x->wr_id = 7;
		x->wr_flags = IBV_SEND_SIGNALED;
		x->wr_rdma_write_imm(x, sides[B].mr->rkey, (uintptr_t)sides[B].buf + 8192, htobe32(99));
		x->wr_set_sge(x, sides[A].mr->lkey, (uintptr_t)sides[A].buf, 1500);
		assert_int_equal(x->wr_complete(x), 0);
	}
	expect_wc(A, 7, IBV_WC_SUCCESS);
	expect_wc(B, 120, IBV_WC_SUCCESS);
	assert_memory_equal(sides[B].buf + 8192, sides[A].buf, 1500);
	expect_nothing_to_a();
}

/* ================= the responder's drops (class D/E) ================= */

static unsigned int drop_psn_set;
static uint32_t drop_psn;

static enum verdict drop_one(const struct seen *s)
{
	if (drop_psn_set && s->dst == B && is_req(s->opc) && s->psn == drop_psn) {
		drop_psn_set = 0;
		return DROP;
	}
	return PASS;
}

/* A message that lost packet `lost` (0-based) of three never completes;
 * the receive WQE it was filling takes the next message. */
static void lost_packet(unsigned int lost)
{
	struct opts o = uc_opts();
	struct ibv_wc wc;

	up(&o);
	filter = drop_one;
	drop_psn_set = 1;
	drop_psn = o.psn + lost;
	fill(sides[A].buf, 3000, 11);
	fill(sides[A].buf + 4096, 2500, 12);
	post_recv(B, 0, 4096, 70);
	post_recv(B, 4096, 4096, 71);
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS); /* on the wire: done, lost or not */
	settle(5);
	expect_no_wc(B);
	assert_int_equal(qp_state(B), IBV_QPS_RTS);

	/* The next message (3 packets, then 1) lands in the same WQE. */
	post_send(A, IBV_WR_SEND, 4096, 2500, 0, 0, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 70);
	assert_int_equal(wc.byte_len, 2500);
	assert_memory_equal(sides[B].buf, sides[A].buf + 4096, 2500);
	post_send(A, IBV_WR_SEND_WITH_IMM, 0, 10, 0, 0, 3);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 71);
	assert_int_equal(wc.byte_len, 10);
	expect_nothing_to_a();
	assert_true(to_sctx(sides[B].ctx)->uc_dropped_msgs >= 1);
}

static void test_uc_lost_first(void **state) { (void)state; lost_packet(0); }
static void test_uc_lost_middle(void **state) { (void)state; lost_packet(1); }
static void test_uc_lost_last(void **state) { (void)state; lost_packet(2); }

static unsigned int dup_armed, keep_armed;

/* Deliver the next MIDDLE to B twice (a duplicate on the wire). */
static enum verdict dup_middle(const struct seen *s)
{
	if (dup_armed && s->dst == B && (s->opc & 0x1f) == IBA_OPC_SEND_MIDDLE) {
		dup_armed = 0;
		return DUP;
	}
	return PASS;
}

/* Pass the next FIRST to B and keep a copy to replay late. */
static enum verdict keep_first(const struct seen *s)
{
	if (keep_armed && s->dst == B && (s->opc & 0x1f) == IBA_OPC_SEND_FIRST) {
		keep_armed = 0;
		return KEEP;
	}
	return PASS;
}

/* UC detects no duplicates: a MIDDLE that comes twice is out of sequence
 * and drops its message; the next message arrives whole in the same WQE. */
static void test_uc_duplicate_drops_message(void **state)
{
	struct opts o = uc_opts();
	struct ibv_wc wc;

	(void)state;
	up(&o);
	fill(sides[A].buf, 3000, 21);
	fill(sides[A].buf + 4096, 3000, 22);
	post_recv(B, 0, 4096, 80);
	dup_armed = 1;
	filter = dup_middle;
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	settle(5);
	assert_int_equal(count(0, B, -1, 0, true), 3);
	expect_no_wc(B);
	post_send(A, IBV_WR_SEND, 4096, 3000, 0, 0, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 80);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(sides[B].buf, sides[A].buf + 4096, 3000);
	expect_nothing_to_a();
}

/* A FIRST that comes again late starts a message (its PSN is adopted);
 * the next real FIRST drops that partial one and completes whole: the
 * stale bytes never reach a completion. */
static void test_uc_late_first_resyncs(void **state)
{
	struct opts o = uc_opts();
	struct ibv_wc wc;

	(void)state;
	up(&o);
	fill(sides[A].buf, 3000, 31);
	post_recv(B, 0, 4096, 90);
	post_recv(B, 4096, 4096, 91);
	keep_armed = 1;
	filter = keep_first;
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 90);
	assert_int_equal(nkept, 1);
	replay(0);
	settle(5);
	expect_no_wc(B); /* a message in progress, never finished */
	fill(sides[A].buf, 3000, 32);
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 2);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 91);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(sides[B].buf + 4096, sides[A].buf, 3000);
	expect_nothing_to_a();
}

/* No receive WQE: the SEND is dropped silently (no RNR NAK on UC); an
 * R_Key violation drops the WRITE silently; the QP goes on. */
static void test_uc_no_rwqe_and_bad_rkey(void **state)
{
	struct opts o = uc_opts();
	struct ibv_wc wc;

	(void)state;
	up(&o);
	fill(sides[A].buf, 4096, 41);
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	settle(5);
	expect_no_wc(B);
	/* WRITE_WITH_IMM to a bad R_Key, and to a read-only MR. */
	post_recv(B, 0, 4096, 100);
	post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 2000, (uintptr_t)sides[B].buf,
		  sides[B].mr->rkey ^ 0x80, 2);
	post_send(A, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 100, (uintptr_t)sides[B].buf2 + 2048,
		  sides[B].mr_ro->rkey, 3);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	settle(5);
	expect_no_wc(B);
	assert_int_equal(qp_state(B), IBV_QPS_RTS);
	/* Then everything works again. */
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 4);
	expect_wc(A, 4, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.wr_id, 100);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(sides[B].buf, sides[A].buf, 3000);
	expect_nothing_to_a();
}

/* A SEND longer than its receive WQE: the WQE completes with
 * IBV_WC_LOC_LEN_ERR and the QP enters ERR (the WQE itself cannot take
 * the message: class A at the responder), still without a NAK. */
static void test_uc_local_length(void **state)
{
	struct opts o = uc_opts();

	(void)state;
	up(&o);
	post_recv(B, 0, 1000, 110);
	post_recv(B, 4096, 4096, 111);
	post_send(A, IBV_WR_SEND, 0, 3000, 0, 0, 1);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	expect_wc(B, 110, IBV_WC_LOC_LEN_ERR);
	expect_wc(B, 111, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(B), IBV_QPS_ERR);
	assert_int_equal(qp_state(A), IBV_QPS_RTS);
	expect_nothing_to_a();
}

/* ================= under the link's fault wrapper ================= */

#define FN      600u                   /* messages */
#define FBATCH  16u
#define FSLOT   3072u                  /* up to 3 packets at MTU 1024 */
#define FRQ     64u

static uint32_t fmsg_len(uint32_t seq)
{
	return 1 + (seq * 977u) % FSLOT;
}

static uint8_t *write_slot(uint32_t seq)
{
	return sides[B].buf + 512 * 1024 + (seq % 64) * FSLOT;
}

/* One completion at B: a whole message, exactly as sent, or a failure. */
static void check_delivery(const struct ibv_wc *wc, uint32_t sent, uint8_t *seen)
{
	uint32_t seq = be32toh(wc->imm_data), len;
	uint8_t expect[FSLOT];
	const uint8_t *got;

	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_true(wc->wc_flags & IBV_WC_WITH_IMM);
	assert_true(seq < sent);
	len = fmsg_len(seq);
	assert_int_equal(wc->byte_len, len);
	if (seq & 1) {
		assert_int_equal(wc->opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		got = write_slot(seq);
	} else {
		assert_int_equal(wc->opcode, IBV_WC_RECV);
		got = sides[B].buf + (wc->wr_id % FRQ) * FSLOT;
	}
	stream_fill(expect, len, seq);
	assert_memory_equal(got, expect, len);
	if (seen[seq] < 255)
		seen[seq]++;
}

static void test_uc_under_faults(void **state)
{
	struct opts o = uc_opts();
	static uint8_t seen[FN];
	uint32_t sent = 0, done = 0, delivered = 0, twice = 0, next_rwqe = 0;
	uint64_t end = now_ms() + 60000;
	struct ibv_wc wc;

	(void)state;
	memset(seen, 0, sizeof(seen));
	o.faults = "seed=11,loss=0.04,dup=0.04,reorder=0.04,corrupt=0.02";
	up(&o);
	for (; next_rwqe < FRQ; next_rwqe++)
		post_recv(B, (next_rwqe % FRQ) * FSLOT, FSLOT, next_rwqe);
	while (sent < FN) {
		for (uint32_t k = 0; k < FBATCH && sent < FN; k++, sent++) {
			uint32_t off = 256 * 1024 + (sent % FBATCH) * FSLOT, len = fmsg_len(sent);
			struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf + off, .length = len,
					       .lkey = sides[A].mr->lkey };
			struct ibv_send_wr wr = { .wr_id = sent, .sg_list = &sge, .num_sge = 1,
						  .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;

			stream_fill(sides[A].buf + off, len, sent);
			wr.opcode = (sent & 1) ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM;
			wr.imm_data = htobe32(sent);
			wr.wr.rdma.remote_addr = (uintptr_t)write_slot(sent);
			wr.wr.rdma.rkey = sides[B].mr->rkey;
			assert_int_equal(sib_hca_ops.post_send(sides[A].qp, &wr, &bad), 0);
		}
		/* Every WQE completes at A, in order, lost or not. */
		while (done < sent) {
			wc = poll_wc(A);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, done++);
		}
		settle(10); /* what the wrappers hold (reordered, delayed) arrives */
		while (sib_hca_ops.poll_cq(sides[B].cq, 1, &wc) == 1) {
			check_delivery(&wc, sent, seen);
			delivered++;
			post_recv(B, (wc.wr_id % FRQ) * FSLOT, FSLOT, wc.wr_id + FRQ);
		}
		if (now_ms() > end)
			fail_msg("stuck: sent %u delivered %u", sent, delivered);
	}
	for (uint32_t i = 0; i < FN; i++)
		twice += seen[i] > 1;
	print_message("UC under faults: %u of %u messages delivered (%u twice: a duplicated ONLY), "
		      "%llu dropped by the responder\n", delivered, FN, twice,
		      (unsigned long long)to_sctx(sides[B].ctx)->uc_dropped_msgs);
	/* Losses dropped whole messages, the receiver kept working. */
	assert_true(to_sctx(sides[B].ctx)->uc_dropped_msgs > 0);
	assert_true(delivered < FN + twice);
	assert_true(delivered > FN * 3 / 4);
	assert_int_equal(qp_state(A), IBV_QPS_RTS);
	assert_int_equal(qp_state(B), IBV_QPS_RTS);
	expect_nothing_to_a();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_uc_operations, down),
		cmocka_unit_test_teardown(test_uc_refused_opcodes, down),
		cmocka_unit_test_teardown(test_uc_create_ex, down),
		cmocka_unit_test_teardown(test_uc_lost_first, down),
		cmocka_unit_test_teardown(test_uc_lost_middle, down),
		cmocka_unit_test_teardown(test_uc_lost_last, down),
		cmocka_unit_test_teardown(test_uc_duplicate_drops_message, down),
		cmocka_unit_test_teardown(test_uc_late_first_resyncs, down),
		cmocka_unit_test_teardown(test_uc_no_rwqe_and_bad_rkey, down),
		cmocka_unit_test_teardown(test_uc_local_length, down),
		cmocka_unit_test_teardown(test_uc_under_faults, down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
