/* SPDX-License-Identifier: MIT */
/*
 * Inline SENDs whose gather list has zero-length pieces at address NULL,
 * found by UCX: ud_verbs posts a zero-byte active message (MPI_Barrier's
 * empty messages under Open MPI's pml ucx) as an inline SEND of its header
 * SGE and a payload SGE { .addr = 0, .length = 0 }.  A zero-length SGE
 * names no memory (its address and key are never used), so the SEND is
 * the other pieces' bytes; before the fix swqe_fill() (and the ibv_wr_*
 * inline setter) passed the NULL address to memcpy, undefined behaviour
 * that UBSan aborts on.  Over RC and UD, through ibv_post_send and
 * ibv_wr_set_inline_data(_list): NULL pieces first, between and last, a
 * message made only of them, and the received bytes and byte_len checked.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_harness.h"

#define QKEY    0x1234u
#define SLOT    256
#define NRECV   16
#define WAIT_MS 5000

/* The gather lists sent: n pieces, a piece of length 0 at address NULL. */
static const struct glist {
	uint32_t n;
	uint32_t len[4];
} lists[] = {
	{ 2, { 8, 0 } },         /* UCX ud_verbs: header, then an empty payload */
	{ 2, { 0, 8 } },
	{ 3, { 5, 0, 11 } },
	{ 1, { 0 } },            /* a zero-byte message */
	{ 3, { 0, 0, 0 } },
	{ 4, { 0, 3, 0, 60 } },
};
#define NLISTS (sizeof(lists) / sizeof(lists[0]))

static void run(enum ibv_qp_type type, bool wr_api)
{
	struct end s, r;
	struct ibv_ah *ah = NULL;
	struct ibv_qp_ex *qx;
	uint32_t grh = type == IBV_QPT_UD ? 40 : 0;
	uint8_t src[4][64];

	end_open_ex(&s, "softib0", type, 16, NRECV, 4, 1, 64, (size_t)NRECV * SLOT);
	end_open_ex(&r, "softib1", type, 16, NRECV, 4, 1, 64, (size_t)NRECV * SLOT);
	end_to_rts(&s, &r, QKEY);
	end_to_rts(&r, &s, QKEY);
	if (type == IBV_QPT_UD) {
		struct ibv_ah_attr aa = { .dlid = r.lid, .port_num = 1 };

		ah = ibv_create_ah(s.pd, &aa);
		assert_non_null(ah);
	}
	for (uint32_t k = 0; k < NLISTS; k++) {
		struct ibv_sge sge = { .addr = (uintptr_t)r.buf + (size_t)k * SLOT, .length = SLOT,
				       .lkey = r.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1 }, *badr;

		memset(r.buf + (size_t)k * SLOT, 0xee, SLOT);
		assert_int_equal(ibv_post_recv(r.qp, &wr, &badr), 0);
	}
	qx = ibv_qp_to_qp_ex(s.qp);
	for (uint32_t k = 0; k < NLISTS; k++) {
		struct ibv_sge sg[4];
		struct ibv_data_buf db[4];
		struct ibv_wc wc;
		uint32_t n = lists[k].n, len = 0;

		for (uint32_t i = 0; i < n; i++) {
			uint32_t l = lists[k].len[i];
			void *a = l ? src[i] : NULL;

			for (uint32_t j = 0; j < l; j++)
				src[i][j] = (uint8_t)(k * 61 + i * 17 + j + 1);
			sg[i] = (struct ibv_sge){ .addr = (uintptr_t)a, .length = l, .lkey = 0 };
			db[i] = (struct ibv_data_buf){ .addr = a, .length = l };
			len += l;
		}
		if (wr_api) {
			ibv_wr_start(qx);
			qx->wr_id = k;
			qx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
			ibv_wr_send(qx);
			if (ah)
				ibv_wr_set_ud_addr(qx, ah, r.qp->qp_num, QKEY);
			if (n == 1)
				ibv_wr_set_inline_data(qx, db[0].addr, db[0].length);
			else
				ibv_wr_set_inline_data_list(qx, n, db);
			assert_int_equal(ibv_wr_complete(qx), 0);
		} else {
			struct ibv_send_wr wr = { .wr_id = k, .sg_list = sg, .num_sge = (int)n,
						  .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE }, *badw;

			if (ah) {
				wr.wr.ud.ah = ah;
				wr.wr.ud.remote_qpn = r.qp->qp_num;
				wr.wr.ud.remote_qkey = QKEY;
			}
			assert_int_equal(ibv_post_send(s.qp, &wr, &badw), 0);
		}
		/* inline: the gather buffers are free once posted */
		memset(src, 0x55, sizeof(src));
		poll_one(s.cq, &wc, WAIT_MS);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, k);
		poll_one(r.cq, &wc, WAIT_MS);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, k);
		assert_int_equal(wc.byte_len, len + grh);

		const uint8_t *p = r.buf + (size_t)k * SLOT + grh;

		for (uint32_t i = 0; i < n; i++)
			for (uint32_t j = 0; j < lists[k].len[i]; j++)
				assert_int_equal(*p++, (uint8_t)(k * 61 + i * 17 + j + 1));
		assert_int_equal(*p, 0xee); /* nothing past the message */
	}
	if (ah)
		assert_int_equal(ibv_destroy_ah(ah), 0);
	end_close(&s);
	end_close(&r);
}

static void test_rc_post_send(void **st) { (void)st; run(IBV_QPT_RC, false); }
static void test_rc_wr_api(void **st) { (void)st; run(IBV_QPT_RC, true); }
static void test_ud_post_send(void **st) { (void)st; run(IBV_QPT_UD, false); }
static void test_ud_wr_api(void **st) { (void)st; run(IBV_QPT_UD, true); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rc_post_send),
		cmocka_unit_test(test_rc_wr_api),
		cmocka_unit_test(test_ud_post_send),
		cmocka_unit_test(test_ud_wr_api),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
