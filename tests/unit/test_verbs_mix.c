/* SPDX-License-Identifier: MIT */
/*
 * Issue 14's reproduction, kept as a regression test: a 16-entry send
 * queue with selective signaling where every third SEND is inline (8 bytes)
 * and the others are 609 bytes from an MR.  Before the fix, a non-inline
 * SEND in a slot whose previous WR was inline sent the old inline bytes
 * (struct sib_swqe's inline_data survived the post).  Every message's bytes
 * are checked, over RC and UD, through ibv_post_send and the ibv_wr_* API.
 * The randomized traffic test (tests/traffic/) covers the general case;
 * the bugs it found have their own test here.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_harness.h"

#define NMSG    200
#define SQ      16
#define BIG     609
#define SMALL   8
#define SLOT    1024                  /* receive buffer stride */
#define QKEY    0x1234u
#define WAIT_MS 5000

/* Message k's byte i: differs between messages and between positions. */
static uint8_t pattern(int k, size_t i)
{
	return (uint8_t)(k * 131 + i * 7 + 1);
}

static void run(enum ibv_qp_type type, bool wr_api)
{
	struct end s, r;
	struct ibv_ah *ah = NULL;
	struct ibv_qp_ex *qx;
	uint32_t grh = type == IBV_QPT_UD ? 40 : 0;
	int outstanding = 0, got = 0, bad = 0;
	uint8_t inl[SMALL];

	end_open_ex(&s, "softib0", type, SQ, NMSG, 1, 0, 2 * NMSG, (size_t)NMSG * SLOT);
	end_open_ex(&r, "softib1", type, SQ, NMSG, 1, 0, 2 * NMSG, (size_t)NMSG * SLOT);
	end_to_rts(&s, &r, QKEY);
	end_to_rts(&r, &s, QKEY);
	if (type == IBV_QPT_UD) {
		struct ibv_ah_attr aa = { .dlid = r.lid, .port_num = 1 };

		ah = ibv_create_ah(s.pd, &aa);
		assert_non_null(ah);
	}
	for (int k = 0; k < NMSG; k++) {
		struct ibv_sge sge = { .addr = (uintptr_t)r.buf + (size_t)k * SLOT, .length = SLOT,
				       .lkey = r.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1 }, *badr;

		assert_int_equal(ibv_post_recv(r.qp, &wr, &badr), 0);
	}
	qx = ibv_qp_to_qp_ex(s.qp);
	for (int k = 0; k < NMSG; k++) {
		bool inline_ = k % 3 == 0;
		uint32_t len = inline_ ? SMALL : BIG;
		uint8_t *src = inline_ ? inl : s.buf + (size_t)k * SLOT;
		int flags = (k % 4 == 3 || k == NMSG - 1) ? IBV_SEND_SIGNALED : 0;
		struct ibv_wc wc;

		for (uint32_t i = 0; i < len; i++)
			src[i] = pattern(k, i);
		if (inline_)
			flags |= IBV_SEND_INLINE;
		/* A full queue: wait for a signaled completion (every 4th). */
		while (outstanding >= SQ - 1) {
			poll_one(s.cq, &wc, WAIT_MS);
			if (wc.qp_num == s.qp->qp_num) {
				assert_int_equal(wc.status, IBV_WC_SUCCESS);
				outstanding -= (int)wc.wr_id;
			}
		}
		/* wr_id: how many WRs this completion retires */
		uint64_t retire = (uint64_t)(k % 4 == 3 ? 4 : k % 4 + 1);
		if (wr_api) {
			ibv_wr_start(qx);
			qx->wr_id = retire;
			qx->wr_flags = (unsigned int)flags;
			ibv_wr_send(qx);
			if (ah)
				ibv_wr_set_ud_addr(qx, ah, r.qp->qp_num, QKEY);
			if (inline_)
				ibv_wr_set_inline_data(qx, src, len);
			else
				ibv_wr_set_sge(qx, s.mr->lkey, (uintptr_t)src, len);
			assert_int_equal(ibv_wr_complete(qx), 0);
		} else {
			struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = s.mr->lkey };
			struct ibv_send_wr wr = { .wr_id = retire, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND, .send_flags = (unsigned int)flags }, *badw;

			if (ah) {
				wr.wr.ud.ah = ah;
				wr.wr.ud.remote_qpn = r.qp->qp_num;
				wr.wr.ud.remote_qkey = QKEY;
			}
			assert_int_equal(ibv_post_send(s.qp, &wr, &badw), 0);
		}
		if (inline_)
			memset(inl, 0xee, sizeof(inl)); /* inline: the buffer is free at once */
		outstanding++;
	}
	while (got < NMSG) {
		struct ibv_wc wc;

		poll_one(r.cq, &wc, WAIT_MS);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.qp_num, r.qp->qp_num);
		int k = (int)wc.wr_id;
		uint32_t len = k % 3 == 0 ? SMALL : BIG;
		const uint8_t *p = r.buf + (size_t)k * SLOT + grh;

		assert_int_equal(k, got); /* in order */
		assert_int_equal(wc.byte_len, len + grh);
		for (uint32_t i = 0; i < len; i++)
			if (p[i] != pattern(k, i)) {
				bad++;
				break;
			}
		got++;
	}
	if (bad)
		fail_msg("%d of %d messages carry wrong bytes", bad, NMSG);
	if (ah)
		assert_int_equal(ibv_destroy_ah(ah), 0);
	end_close(&s);
	end_close(&r);
}

/*
 * IBV_SEND_FENCE (IBA 10.8.3.3): a WRITE posted after a READ of the same
 * bytes, fenced, must not change them before the READ has read them.  The
 * READ goes as packets (faults configured, all at zero: no direct
 * placement), posted in one list with the WRITE, so that without the fence
 * both requests reach the responder together and the WRITE executes before
 * the READ's response is read from memory.  Found by the traffic test: the
 * fence was ignored and the READ returned the WRITE's bytes.
 */
static void test_fence_write_after_read(void **st)
{
	const uint32_t len = 64;
	struct pair p;
	struct ibv_wc wc;

	(void)st;
	setenv("SOFTIB_FAULTS", "seed=1", 1);
	pair_open(&p, 0, NULL, NULL);
	unsetenv("SOFTIB_FAULTS");
	for (int round = 0; round < 2000; round++) {
		uint8_t old = (uint8_t)(0x10 + round), new = (uint8_t)(0x80 + round);
		struct ibv_sge rs = { .addr = (uintptr_t)p.e[0].buf, .length = len, .lkey = p.e[0].mr->lkey };
		struct ibv_sge ws = { .addr = (uintptr_t)p.e[0].buf + len, .length = len, .lkey = p.e[0].mr->lkey };
		struct ibv_send_wr w2 = { .wr_id = 2, .sg_list = &ws, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE };
		struct ibv_send_wr w1 = { .wr_id = 1, .next = &w2, .sg_list = &rs, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED }, *bad;

		memset(p.e[1].buf, old, len);             /* what the READ must see */
		memset(p.e[0].buf, 0, len);
		memset(p.e[0].buf + len, new, len);       /* what the fenced WRITE brings */
		w1.wr.rdma.remote_addr = w2.wr.rdma.remote_addr = (uintptr_t)p.e[1].buf;
		w1.wr.rdma.rkey = w2.wr.rdma.rkey = p.e[1].mr->rkey;
		assert_int_equal(ibv_post_send(p.e[0].qp, &w1, &bad), 0);
		for (uint64_t want = 1; want <= 2; want++) {
			poll_one(p.e[0].cq, &wc, WAIT_MS);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, want);
		}
		for (uint32_t i = 0; i < len; i++)
			if (p.e[0].buf[i] != old)
				fail_msg("round %d: READ byte %u is 0x%02x, want 0x%02x (the fenced WRITE's 0x%02x?)",
					 round, i, p.e[0].buf[i], old, new);
		for (uint32_t i = 0; i < len; i++)
			if (p.e[1].buf[i] != new)
				fail_msg("round %d: target byte %u is 0x%02x after the WRITE", round, i, p.e[1].buf[i]);
	}
	pair_close(&p);
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
		cmocka_unit_test(test_fence_write_after_read),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
