/* SPDX-License-Identifier: MIT */
/*
 * The HCA's transport tables on their own, without the verbs library:
 * WR validity per QP type and the [transport][WR opcode][position] packet
 * opcode table against the IBA opcode table (src/iba), the error-class
 * table (NAK, statuses, next state), and the key-byte generator.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hca/transport.h"
#include "hca/wr.h"

static const enum ibv_wr_opcode all_wr[] = {
	IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
	IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV,
	IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV, IBV_WR_TSO, IBV_WR_DRIVER1, IBV_WR_ATOMIC_WRITE,
};
#define N_WR (sizeof(all_wr) / sizeof(all_wr[0]))

static const uint32_t pos_flag[SIB_POS_COUNT] = {
	[SIB_POS_FIRST] = IBA_OP_FIRST, [SIB_POS_MIDDLE] = IBA_OP_MIDDLE,
	[SIB_POS_LAST] = IBA_OP_LAST, [SIB_POS_ONLY] = IBA_OP_ONLY,
};

static const enum ibv_qp_type tr_qpt[SIB_TR_COUNT] = {
	[SIB_TR_RC] = IBV_QPT_RC, [SIB_TR_UC] = IBV_QPT_UC, [SIB_TR_UD] = IBV_QPT_UD,
	[SIB_TR_XRC] = IBV_QPT_XRC_SEND,
};

/* Every packet the table names is a real opcode of that transport, at that
 * position, carrying the headers the WR needs; and a WR opcode that IBA
 * allows on a QP type has packets there. */
static void test_packet_opcodes(void **state)
{
	int valid = 0;

	(void)state;
	for (int tr = 0; tr < SIB_TR_COUNT; tr++) {
		assert_int_equal(sib_qpt_transport(tr_qpt[tr]), tr);
		for (size_t i = 0; i < N_WR; i++) {
			enum ibv_wr_opcode op = all_wr[i];
			const struct sib_wr_info *wi = sib_wr_info(op);
			int npos = 0;

			for (int pos = 0; pos < SIB_POS_COUNT; pos++) {
				int opc = sib_wr_pkt_opcode(tr, op, pos);
				const struct iba_opcode_info *oi;

				if (opc < 0)
					continue;
				npos++;
				valid++;
				oi = iba_opcode_info((uint8_t)opc);
				assert_non_null(oi->name);
				assert_int_equal(opc & IBA_TRANSPORT_MASK, sib_transport_prefix(tr));
				assert_true(oi->flags & IBA_OP_REQ);
				assert_true(oi->flags & pos_flag[pos]);
				assert_non_null(wi);
				assert_true(wi->qpts & SIB_QPT_BIT(tr_qpt[tr]));
				if ((wi->flags & SIB_WR_RETH) && (pos == SIB_POS_FIRST || pos == SIB_POS_ONLY))
					assert_true(oi->hdrs & IBA_HDR_RETH);
				if (pos == SIB_POS_MIDDLE || pos == SIB_POS_LAST)
					assert_false(oi->hdrs & IBA_HDR_RETH);
				if ((wi->flags & SIB_WR_IMM) && (pos == SIB_POS_LAST || pos == SIB_POS_ONLY))
					assert_true(oi->hdrs & IBA_HDR_IMMDT);
				if (!(wi->flags & SIB_WR_IMM))
					assert_false(oi->hdrs & IBA_HDR_IMMDT);
				if (wi->flags & SIB_WR_READ)
					assert_true(oi->flags & IBA_OP_READ);
				if (wi->flags & SIB_WR_SEND)
					assert_true(oi->flags & IBA_OP_SEND);
				if (wi->flags & SIB_WR_WRITE)
					assert_true(oi->flags & (IBA_OP_WRITE | IBA_OP_ATOMIC_WRITE));
				if (tr == SIB_TR_UD)
					assert_int_equal(pos, SIB_POS_ONLY);
			}
			/* IBA allows it on this QP type and it makes packets: then
			 * it has packets here (UD: ONLY, READ/atomics: ONLY). */
			if (wi && (wi->qpts & SIB_QPT_BIT(tr_qpt[tr])) && !(wi->flags & SIB_WR_LOCAL) &&
			    op != IBV_WR_TSO)
				assert_true(npos > 0);
		}
	}
	assert_true(valid > 40);
	/* UC has no READ, RC's SEND is four packets. */
	assert_int_equal(sib_wr_pkt_opcode(SIB_TR_UC, IBV_WR_RDMA_READ, SIB_POS_ONLY), -1);
	assert_int_equal(sib_wr_pkt_opcode(SIB_TR_RC, IBV_WR_SEND, SIB_POS_MIDDLE), IBA_OPC_SEND_MIDDLE);
	assert_int_equal(sib_wr_pkt_opcode(SIB_TR_UC, IBV_WR_RDMA_WRITE_WITH_IMM, SIB_POS_ONLY),
			 IBA_TRANSPORT_UC | IBA_OPC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
	assert_int_equal(sib_wr_pkt_opcode(SIB_TR_RC, IBV_WR_RDMA_READ, SIB_POS_FIRST), -1);
	assert_int_equal(sib_wr_pkt_opcode(SIB_TR_COUNT, IBV_WR_SEND, SIB_POS_ONLY), -1);
	assert_int_equal(sib_wr_pkt_opcode(SIB_TR_RC, (enum ibv_wr_opcode)200, SIB_POS_ONLY), -1);
}

/* post_send's check: what RC carries today, EINVAL for the rest. */
static void test_wr_check(void **state)
{
	(void)state;
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_SEND), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_SEND_WITH_IMM), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_RDMA_WRITE), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_RDMA_WRITE_WITH_IMM), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_RDMA_READ), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_UC, IBV_WR_RDMA_WRITE), 0);
	/* IBA forbids it on the QP type */
	assert_int_equal(sib_wr_check(IBV_QPT_UC, IBV_WR_RDMA_READ), EINVAL);
	assert_int_equal(sib_wr_check(IBV_QPT_UD, IBV_WR_RDMA_WRITE), EINVAL);
	assert_int_equal(sib_wr_check(IBV_QPT_XRC_RECV, IBV_WR_SEND), EINVAL);
	/* atomics on RC (and XRC), never UC or UD */
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_ATOMIC_CMP_AND_SWP), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_ATOMIC_FETCH_AND_ADD), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_UC, IBV_WR_ATOMIC_FETCH_AND_ADD), EINVAL);
	assert_int_equal(sib_wr_check(IBV_QPT_UD, IBV_WR_ATOMIC_CMP_AND_SWP), EINVAL);
	/* memory windows: local WRs on RC/UC, SEND_WITH_INV on RC only */
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_BIND_MW), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_UC, IBV_WR_LOCAL_INV), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_SEND_WITH_INV), 0);
	assert_int_equal(sib_wr_check(IBV_QPT_UC, IBV_WR_SEND_WITH_INV), EINVAL);
	assert_int_equal(sib_wr_check(IBV_QPT_UD, IBV_WR_BIND_MW), EINVAL);
	/* not implemented */
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_ATOMIC_WRITE), EINVAL);
	/* not a WR opcode */
	assert_int_equal(sib_wr_check(IBV_QPT_RC, IBV_WR_DRIVER1), EINVAL);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, (enum ibv_wr_opcode)13), EINVAL);
	assert_int_equal(sib_wr_check(IBV_QPT_RC, (enum ibv_wr_opcode)-1), EINVAL);
	assert_int_equal(sib_wr_check(IBV_QPT_DRIVER, IBV_WR_SEND), EINVAL);
}

/* Error classes: class B keeps the QP, the rest go to ERR; a NAK code maps
 * back to the status the requester reports (iba-transport.md 3). */
static void test_err_classes(void **state)
{
	static const struct { uint8_t code; enum ibv_wc_status st; } nak[] = {
		{ IBA_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR },
		{ IBA_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR },
		{ IBA_NAK_REM_OP, IBV_WC_REM_OP_ERR },
		{ IBA_NAK_INV_RD_REQ, IBV_WC_REM_INV_RD_REQ_ERR },
		{ 0x1f, IBV_WC_REM_OP_ERR }, /* reserved code */
	};

	(void)state;
	for (int ec = 0; ec < SIB_EC_COUNT; ec++) {
		const struct sib_err_info *e = sib_err_info(ec);

		assert_non_null(e->name);
		assert_true(e->iba_class >= 'A' && e->iba_class <= 'J');
		assert_true(e->req_status != IBV_WC_SUCCESS);
		if (e->iba_class == 'B') {
			assert_int_equal(e->next_state, IBV_QPS_UNKNOWN);
		} else {
			assert_int_equal(e->next_state, IBV_QPS_ERR);
			assert_int_equal(e->syndrome & IBA_AETH_TYPE_MASK, IBA_AETH_NAK);
			assert_true(e->resp_status != IBV_WC_SUCCESS);
			/* rows that share a NAK give the requester one status */
			assert_int_equal(sib_err_info(sib_err_from_nak(e->syndrome & 0x1f))->req_status,
					 e->req_status);
		}
	}
	assert_int_equal(sib_err_info(SIB_EC_RNR)->syndrome & IBA_AETH_TYPE_MASK, IBA_AETH_RNR_NAK);
	assert_int_equal(sib_err_info(SIB_EC_PSN_SEQ)->syndrome, IBA_AETH_NAK | IBA_NAK_PSN_SEQ);
	for (size_t i = 0; i < sizeof(nak) / sizeof(nak[0]); i++)
		assert_int_equal(sib_err_info(sib_err_from_nak(nak[i].code))->req_status, nak[i].st);
	assert_ptr_equal(sib_err_info(SIB_EC_COUNT), sib_err_info(SIB_EC_REM_OP));
}

/* Key bytes: two seeded generators differ, and one covers the byte range
 * without a fixed step. */
static void test_key_bytes(void **state)
{
	struct sib_context *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	unsigned int seen[256] = { 0 }, distinct = 0, same = 0, step1 = 0;
	uint8_t prev = 0;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(sib_key_seed(a), 0);
	assert_int_equal(sib_key_seed(b), 0);
	for (int i = 0; i < 4096; i++) {
		uint8_t k = sib_key_byte(a);

		if (k == sib_key_byte(b))
			same++;
		if (i && (uint8_t)(prev + 1) == k)
			step1++;
		if (!seen[k]++)
			distinct++;
		prev = k;
	}
	/* Expected: ~16 equal pairs, ~16 steps of one, all 256 values. */
	assert_true(same < 64);
	assert_true(step1 < 64);
	assert_true(distinct > 240);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_packet_opcodes),
		cmocka_unit_test(test_wr_check),
		cmocka_unit_test(test_err_classes),
		cmocka_unit_test(test_key_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
