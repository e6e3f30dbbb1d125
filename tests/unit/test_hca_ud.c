/* SPDX-License-Identifier: MIT */
/*
 * UD over the loopback fabric (hca_loop.h), through the provider API:
 * address handles, DETH (Q_Key, source QPN) on every datagram, controlled
 * Q_Keys (IBA 10.2.5), the 40-byte GRH area of a UD receive buffer, the
 * MTU limit, the receive demux's Q_Key and no-RWQE drops, and datagrams
 * under loss and duplication: lost or delivered twice, never corrupted.
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

#include "common/sib_shm.h"
#include "hca/hca.h"
#include "hca/provider.h"
#include "hca_loop.h"
#include "iba/iba.h"

#define QKEY   0x11111111u
#define RBUF   0x80000u                /* B receives into buf + RBUF */

static struct ibv_qp *ud[NDEV];
static struct ibv_ah *ah[NDEV];        /* ah[s]: side s's AH to the other side */

static struct ibv_ah *make_ah(unsigned int s, bool global)
{
	struct ibv_ah_attr at = { 0 };
	struct ibv_ah *h;

	at.dlid = sides[1 - s].lid;
	at.sl = 3;
	at.port_num = 1;
	if (global) {
		uint64_t pfx = htobe64(0xfe80000000000000ull), guid = htobe64(0x2000 + (1 - s));

		at.is_global = 1;
		at.grh.hop_limit = 64;
		at.grh.traffic_class = 0x12;
		at.grh.flow_label = 0xabcde;
		memcpy(at.grh.dgid.raw, &pfx, 8);
		memcpy(at.grh.dgid.raw + 8, &guid, 8);
	}
	h = sib_hca_ops.create_ah(sides[s].pd, &at);
	assert_non_null(h);
	return h;
}

/* Both sides: the loopback pair plus a UD QP each (Q_Key QKEY) and AHs. */
static void ud_up(const char *faults, bool global)
{
	struct opts o = def_opts;

	o.faults = faults;
	up(&o);
	for (unsigned int s = 0; s < NDEV; s++) {
		ud[s] = ud_qp_create(s, QKEY, 0);
		ah[s] = make_ah(s, global);
	}
}

static int ud_down(void **state)
{
	for (unsigned int s = 0; s < NDEV; s++) {
		if (ud[s])
			assert_int_equal(sib_hca_ops.destroy_qp(ud[s]), 0);
		if (ah[s])
			assert_int_equal(sib_hca_ops.destroy_ah(ah[s]), 0);
		ud[s] = NULL;
		ah[s] = NULL;
	}
	return down(state);
}

static int ud_send(unsigned int s, enum ibv_wr_opcode op, uint64_t off, uint32_t len, uint32_t qkey,
		   uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[s].buf + off, .length = len,
			       .lkey = sides[s].mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;
	int rc;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(0x1234);
	wr.wr.ud.ah = ah[s];
	wr.wr.ud.remote_qpn = ud[1 - s]->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	rc = sib_hca_ops.post_send(ud[s], &wr, &bad);
	if (rc)
		assert_ptr_equal(bad, &wr);
	return rc;
}

static void ud_recv(unsigned int s, uint64_t off, uint32_t len, uint64_t wr_id)
{
	post_recv_qp(ud[s], s, off, len, wr_id);
}

static uint64_t drops(unsigned int s, enum sib_rx_drop why)
{
	return sib_rx_drop_count(to_sctx(sides[s].ctx), why);
}

/* The last datagram in the log. */
static const struct seen *last_ud(void)
{
	for (unsigned int i = nlog; i-- > 0;)
		if ((plog[i].opc & IBA_TRANSPORT_MASK) == IBA_TRANSPORT_UD)
			return &plog[i];
	fail_msg("no UD packet in the log");
	return NULL;
}

static void test_send_recv_deth(void **state)
{
	struct ibv_wc wc;
	const struct seen *e;

	(void)state;
	ud_up(NULL, false);
	fill(sides[A].buf, 1000, 5);
	memset(sides[B].buf + RBUF, 0xee, 2000);
	ud_recv(B, RBUF, 2000, 77);
	assert_int_equal(ud_send(A, IBV_WR_SEND_WITH_IMM, 0, 1000, QKEY, 1), 0);
	/* A UD send completes once on the wire, with nobody acknowledging. */
	wc = poll_wc(A);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	wc = poll_wc(B);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 40 + 1000);
	assert_int_equal(wc.src_qp, ud[A]->qp_num);
	assert_int_equal(wc.slid, sides[A].lid);
	assert_int_equal(wc.sl, 3);
	assert_int_equal(wc.pkey_index, 0);
	assert_int_equal(wc.dlid_path_bits, 0);
	assert_int_equal(wc.wc_flags, IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x1234);
	/* No GRH: the 40-byte area is left as it was; the payload follows it. */
	for (unsigned int i = 0; i < 40; i++)
		assert_int_equal(sides[B].buf[RBUF + i], 0xee);
	assert_memory_equal(sides[B].buf + RBUF + 40, sides[A].buf, 1000);
	/* On the wire: one UD SEND_ONLY_WITH_IMMEDIATE, DETH with the Q_Key
	 * and the source QPN, no GRH, nothing back (no ACK for UD). */
	e = last_ud();
	assert_int_equal(e->opc, IBA_TRANSPORT_UD | IBA_OPC_SEND_ONLY_WITH_IMMEDIATE);
	assert_int_equal(e->qkey, QKEY);
	assert_int_equal(e->src_qp, ud[A]->qp_num);
	assert_int_equal(e->dqpn, ud[B]->qp_num);
	assert_int_equal(e->psn, 7);
	assert_false(e->grh);
	assert_int_equal(count(0, A, -1, 0, true), 0);
	assert_int_equal(count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true), 0);
}

/* With a GRH: the first 40 bytes of the buffer are the packet's GRH. */
static void test_grh_area(void **state)
{
	struct ibv_grh grh;
	struct ibv_wc wc;

	(void)state;
	ud_up(NULL, true);
	fill(sides[A].buf, 64, 9);
	ud_recv(B, RBUF, 200, 1);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 64, QKEY, 2), 0);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wc_flags, IBV_WC_GRH);
	assert_int_equal(wc.byte_len, 40 + 64);
	assert_true(last_ud()->grh);
	memcpy(&grh, sides[B].buf + RBUF, sizeof(grh));
	assert_int_equal(be32toh(grh.version_tclass_flow) >> 28, 6);
	assert_int_equal((be32toh(grh.version_tclass_flow) >> 20) & 0xff, 0x12);
	assert_int_equal(be32toh(grh.version_tclass_flow) & 0xfffff, 0xabcde);
	assert_int_equal(grh.next_hdr, 0x1b);
	assert_int_equal(grh.hop_limit, 64);
	assert_int_equal(be64toh(grh.sgid.global.interface_id), 0x2000 + A);
	assert_int_equal(be64toh(grh.dgid.global.interface_id), 0x2000 + B);
	assert_int_equal(be64toh(grh.sgid.global.subnet_prefix), 0xfe80000000000000ull);
	assert_memory_equal(sides[B].buf + RBUF + 40, sides[A].buf, 64);
}

/* A wrong Q_Key is dropped at the demux and counted; the RWQE stays. */
static void test_qkey_mismatch(void **state)
{
	uint64_t q0;

	(void)state;
	ud_up(NULL, false);
	q0 = drops(B, SIB_RX_DROP_QKEY);
	ud_recv(B, RBUF, 200, 1);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 16, QKEY + 1, 2), 0);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	settle(50);
	expect_no_wc(B);
	assert_int_equal(drops(B, SIB_RX_DROP_QKEY), q0 + 1);
	assert_int_equal(last_ud()->qkey, QKEY + 1);
	/* The RWQE is still there for the next good datagram. */
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 16, QKEY, 3), 0);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
}

/* IBA 10.2.5: a WR Q_Key with the high bit set sends the QP's own Q_Key;
 * a QP cannot be given a controlled Q_Key without CAP_NET_RAW (EPERM, as
 * uverbs), and a host with no capable hook grants none (the granted case
 * goes through softibd: test_verbs_keys). */
static void test_controlled_qkey(void **state)
{
	struct ibv_qp_attr a = { 0 };
	uint64_t q0;

	(void)state;
	ud_up(NULL, false);
	ud_recv(B, RBUF, 200, 1);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 16, 0x80000000u, 2), 0);
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(B, 1, IBV_WC_SUCCESS);
	assert_int_equal(last_ud()->qkey, QKEY); /* A's own, which is B's too */

	/* A's Q_Key changed: the controlled send now carries it, and B drops it. */
	a.qkey = 0x22222222;
	assert_int_equal(sib_hca_ops.modify_qp(ud[A], &a, IBV_QP_QKEY), 0);
	q0 = drops(B, SIB_RX_DROP_QKEY);
	ud_recv(B, RBUF, 200, 3);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 16, 0xffffffffu, 4), 0);
	expect_wc(A, 4, IBV_WC_SUCCESS);
	settle(30);
	expect_no_wc(B);
	assert_int_equal(last_ud()->qkey, 0x22222222);
	assert_int_equal(drops(B, SIB_RX_DROP_QKEY), q0 + 1);

	a.qkey = 0x80000001u;
	assert_int_equal(sib_hca_ops.modify_qp(ud[A], &a, IBV_QP_QKEY), EPERM);
}

/* A datagram must fit the port's active MTU (4096 here): EINVAL at post. */
static void test_mtu_limit(void **state)
{
	struct ibv_send_wr wr = { 0 }, *bad = NULL;
	struct ibv_wc wc;

	(void)state;
	ud_up(NULL, false);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 4097, QKEY, 1), EINVAL);
	ud_recv(B, RBUF, 4096 + 40, 2);
	fill(sides[A].buf, 4096, 1);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 4096, QKEY, 3), 0);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	wc = poll_wc(B);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 4096 + 40);
	assert_memory_equal(sides[B].buf + RBUF + 40, sides[A].buf, 4096);
	/* A send WR without an AH is refused too. */
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.remote_qpn = ud[B]->qp_num;
	assert_int_equal(sib_hca_ops.post_send(ud[A], &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	/* RDMA is not a UD operation. */
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.ud.ah = ah[A];
	assert_int_equal(sib_hca_ops.post_send(ud[A], &wr, &bad), EINVAL);
}

/* No receive WQE: dropped silently and counted, no RNR NAK (UD). A receive
 * buffer too short: LOC_LEN_ERR, and the QP stays in RTS. */
static void test_no_rwqe_and_short_buffer(void **state)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	uint64_t n0;

	(void)state;
	ud_up(NULL, false);
	n0 = drops(B, SIB_RX_DROP_NO_RWQE);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 100, QKEY, 1), 0);
	expect_wc(A, 1, IBV_WC_SUCCESS);
	settle(30);
	assert_int_equal(drops(B, SIB_RX_DROP_NO_RWQE), n0 + 1);
	assert_int_equal(count(0, A, -1, 0, true) + count(0, A, IBA_OPC_ACKNOWLEDGE, 0, true), 0);
	expect_no_wc(B);

	ud_recv(B, RBUF, 40 + 99, 2);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 100, QKEY, 3), 0);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	expect_wc(B, 2, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(sib_hca_ops.query_qp(ud[B], &qa, IBV_QP_STATE, &ia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	ud_recv(B, RBUF, 40 + 100, 4);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 100, QKEY, 5), 0);
	expect_wc(A, 5, IBV_WC_SUCCESS);
	expect_wc(B, 4, IBV_WC_SUCCESS);
}

static enum ibv_qp_state ud_state(unsigned int s)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	assert_int_equal(sib_hca_ops.query_qp(ud[s], &qa, IBV_QP_STATE, &ia), 0);
	return qa.qp_state;
}

/* A local send error puts a UD QP in SQE (IBA 10.3.1): the WR fails, the
 * next ones flush, receives go on, and RTS again recovers it. */
static void test_send_error_sqe(void **state)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf, .length = 16, .lkey = 0x12345 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	(void)state;
	ud_up(NULL, false);
	wr.wr.ud.ah = ah[A];
	wr.wr.ud.remote_qpn = ud[B]->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(sib_hca_ops.post_send(ud[A], &wr, &bad), 0);
	expect_wc(A, 1, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(ud_state(A), IBV_QPS_SQE);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 16, QKEY, 2), 0);
	expect_wc(A, 2, IBV_WC_WR_FLUSH_ERR);
	/* The receive side still works in SQE. */
	ud_recv(A, RBUF, 200, 3);
	assert_int_equal(ud_send(B, IBV_WR_SEND, 0, 16, QKEY, 4), 0);
	expect_wc(B, 4, IBV_WC_SUCCESS);
	expect_wc(A, 3, IBV_WC_SUCCESS);
	/* SQE -> RTS: sending again. */
	assert_int_equal(sib_hca_ops.modify_qp(ud[A], &a, IBV_QP_STATE), 0);
	ud_recv(B, RBUF, 200, 5);
	assert_int_equal(ud_send(A, IBV_WR_SEND, 0, 16, QKEY, 6), 0);
	expect_wc(A, 6, IBV_WC_SUCCESS);
	expect_wc(B, 5, IBV_WC_SUCCESS);
}

/* AH errors: a port the device lacks, a GID index with no GID; UD QP
 * INIT needs the Q_Key (IBA 10.3.1 table). */
static void test_ah_and_qp_errors(void **state)
{
	struct ibv_ah_attr at = { .dlid = 2, .port_num = 2 };
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp *qp;

	(void)state;
	ud_up(NULL, false);
	errno = 0;
	assert_null(sib_hca_ops.create_ah(sides[A].pd, &at));
	assert_int_equal(errno, EINVAL);
	at.port_num = 0;
	assert_null(sib_hca_ops.create_ah(sides[A].pd, &at));
	at.port_num = 1;
	at.is_global = 1;
	at.grh.sgid_index = 1;
	errno = 0;
	assert_null(sib_hca_ops.create_ah(sides[A].pd, &at));
	assert_int_equal(errno, EINVAL);
	at.grh.sgid_index = 128;
	assert_null(sib_hca_ops.create_ah(sides[A].pd, &at));

	qa.send_cq = qa.recv_cq = sides[A].cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qp = sib_hca_ops.create_qp(sides[A].pd, &qa);
	assert_non_null(qp);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	assert_int_equal(sib_hca_ops.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
			 EINVAL);
	a.port_num = 3;
	assert_int_equal(sib_hca_ops.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY), EINVAL);
	assert_int_equal(sib_hca_ops.destroy_qp(qp), 0);
}

/* Datagrams under loss and duplication faults: each one arrives whole,
 * at most twice, or not at all. */
static void test_datagrams_under_faults(void **state)
{
	enum { N = 300, LEN = 512 };
	unsigned int got[N] = { 0 }, received = 0, posted = 0;
	uint64_t end;

	(void)state;
	ud_up("seed=11,loss=0.05,dup=0.05,corrupt=0.05", false);
	for (unsigned int i = 0; i < 60; i++, posted++)
		ud_recv(B, RBUF + (uint64_t)(posted % 64) * 1024, 40 + LEN, posted % 64);
	for (unsigned int i = 0; i < N; i++) {
		uint8_t *p = sides[A].buf + (uint64_t)(i % 32) * LEN;

		/* The message names itself and its content follows from that. */
		fill(p, LEN, (uint8_t)i);
		memcpy(p, &i, sizeof(i));
		assert_int_equal(ud_send(A, IBV_WR_SEND, (uint64_t)(i % 32) * LEN, LEN, QKEY, i), 0);
		expect_wc(A, i, IBV_WC_SUCCESS);
		/* Take what arrived, and keep RWQEs posted. */
		for (;;) {
			struct ibv_wc wc;
			int n;

			pump();
			drive(B);
			n = sib_hca_ops.poll_cq(sides[B].cq, 1, &wc);
			if (n != 1)
				break;
			uint8_t *m = sides[B].buf + RBUF + wc.wr_id * 1024 + 40;
			uint8_t want[LEN];
			unsigned int id;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.byte_len, 40 + LEN);
			memcpy(&id, m, sizeof(id));
			assert_true(id < N);
			fill(want, LEN, (uint8_t)id);
			memcpy(want, &id, sizeof(id));
			assert_memory_equal(m, want, LEN);
			got[id]++;
			received++;
			ud_recv(B, RBUF + (uint64_t)(posted % 64) * 1024, 40 + LEN, posted % 64);
			posted++;
		}
	}
	end = now_ms() + 200;
	while (now_ms() < end) {
		struct ibv_wc wc;

		pump();
		drive(B);
		if (sib_hca_ops.poll_cq(sides[B].cq, 1, &wc) == 1) {
			unsigned int id;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			memcpy(&id, sides[B].buf + RBUF + wc.wr_id * 1024 + 40, sizeof(id));
			assert_true(id < N);
			got[id]++;
			received++;
		}
	}
	unsigned int lost = 0, twice = 0;

	for (unsigned int i = 0; i < N; i++) {
		assert_true(got[i] <= 2);
		lost += got[i] == 0;
		twice += got[i] == 2;
	}
	/* 5% loss and 5% corruption (dropped by the ICRC): some lost, most
	 * not; 5% duplication: some twice. */
	assert_true(lost > 0 && lost < N / 3);
	assert_true(twice > 0);
	assert_true(drops(B, SIB_RX_DROP_CRC) > 0);
	print_message("%u datagrams: %u received, %u lost, %u twice\n", N, received, lost, twice);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_send_recv_deth, ud_down),
		cmocka_unit_test_teardown(test_grh_area, ud_down),
		cmocka_unit_test_teardown(test_qkey_mismatch, ud_down),
		cmocka_unit_test_teardown(test_controlled_qkey, ud_down),
		cmocka_unit_test_teardown(test_mtu_limit, ud_down),
		cmocka_unit_test_teardown(test_no_rwqe_and_short_buffer, ud_down),
		cmocka_unit_test_teardown(test_ah_and_qp_errors, ud_down),
		cmocka_unit_test_teardown(test_send_error_sqe, ud_down),
		cmocka_unit_test_teardown(test_datagrams_under_faults, ud_down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
