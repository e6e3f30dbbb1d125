/* SPDX-License-Identifier: MIT */
/*
 * UD through the built library against a private softibd: address handle
 * errors and the GID table, ibv_init_ah_from_wc / ibv_create_ah_from_wc
 * answering a datagram, and multicast across two contexts (two devices):
 * fan-out once to every attached QP, the sender's own QP unless it was
 * created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, the attach/detach errors,
 * and membership ending with detach, destroy and the death of a process.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verbs_harness.h"

#define QKEY   0x11111111u
#define MLID   0xC001
#define LEN    100
#define WAIT   3000

static const union ibv_gid mgid = { .raw = { 0xff, 0x12, 0x40, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34 } };

/* A UD QP on e's PD and CQ, in RTS with Q_Key QKEY. */
static struct ibv_qp *ud_qp(struct end *e, uint32_t create_flags)
{
	struct ibv_qp_init_attr_ex ia = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
		.create_flags = create_flags,
		.pd = e->pd,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_qp *qp;

	ia.send_cq = ia.recv_cq = e->cq;
	qp = ibv_create_qp_ex(e->ctx, &ia);
	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	return qp;
}

/* A receive of 40 + LEN bytes at slot k of e's buffer (wr_id k). */
static void ud_post_recv(struct end *e, struct ibv_qp *qp, uint32_t k)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + k * 4096u, .length = 40 + LEN, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

static void ud_post_send(struct end *e, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn, uint8_t tag)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + (1u << 20), .length = LEN, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = tag, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	memset(e->buf + (1u << 20), tag, LEN);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	poll_one(e->cq, &wc, WAIT);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
}

static void end_gid(struct end *e, union ibv_gid *g)
{
	assert_int_equal(ibv_query_gid(e->ctx, 1, 0, g), 0);
}

static void test_ah_errors_and_attrs(void **state)
{
	struct ibv_ah_attr at = { .dlid = 1, .port_num = 2 };
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid g;
	struct ibv_ah *ah;
	struct end e;

	(void)state;
	end_open(&e, "softib0", 1, 0);
	errno = 0;
	assert_null(ibv_create_ah(e.pd, &at));
	assert_int_equal(errno, EINVAL);
	at.port_num = 1;
	at.is_global = 1;
	at.grh.sgid_index = 3;
	errno = 0;
	assert_null(ibv_create_ah(e.pd, &at));
	assert_int_equal(errno, EINVAL);
	at.grh.sgid_index = 0;
	ah = ibv_create_ah(e.pd, &at);
	assert_non_null(ah);
	assert_ptr_equal(ah->pd, e.pd);
	assert_ptr_equal(ah->context, e.ctx);
	assert_int_equal(ibv_destroy_ah(ah), 0);

	assert_int_equal(ibv_query_port(e.ctx, 1, &pa), 0);
	assert_int_equal(pa.gid_tbl_len, 128);
	assert_int_equal(ibv_query_gid(e.ctx, 1, 127, &g), 0);
	assert_int_equal(ibv_query_gid(e.ctx, 1, 128, &g), -1);
	assert_int_equal(ibv_query_device(e.ctx, &da), 0);
	assert_true(da.max_ah > 0);
	assert_int_equal(da.max_mcast_grp, SIB_MAX_MCAST_GRP);
	assert_int_equal(da.max_mcast_qp_attach, SIB_MAX_MCAST_QP_ATTACH);
	assert_true(da.max_total_mcast_qp_attach >= da.max_mcast_qp_attach);
	end_close(&e);
}

/* A datagram with a GRH, answered through ibv_create_ah_from_wc. */
static void test_reply_from_wc(void **state)
{
	struct end e[2];
	struct ibv_qp *q[2];
	struct ibv_ah_attr at = { .sl = 2, .port_num = 1, .is_global = 1 }, back;
	struct ibv_ah *ah, *reply;
	union ibv_gid g0, g1;
	struct ibv_wc wc;

	(void)state;
	end_open(&e[0], "softib0", 1, 0);
	end_open(&e[1], "softib1", 1, 0);
	q[0] = ud_qp(&e[0], 0);
	q[1] = ud_qp(&e[1], 0);
	end_gid(&e[0], &g0);
	end_gid(&e[1], &g1);
	at.dlid = e[1].lid;
	at.grh.dgid = g1;
	at.grh.hop_limit = 1;
	at.grh.flow_label = 0x777;
	ah = ibv_create_ah(e[0].pd, &at);
	assert_non_null(ah);
	ud_post_recv(&e[1], q[1], 0);
	ud_post_recv(&e[0], q[0], 1);
	ud_post_send(&e[0], q[0], ah, q[1]->qp_num, 0x5a);
	poll_one(e[1].cq, &wc, WAIT);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	assert_int_equal(wc.src_qp, q[0]->qp_num);

	assert_int_equal(ibv_init_ah_from_wc(e[1].ctx, 1, &wc, (struct ibv_grh *)e[1].buf, &back), 0);
	assert_int_equal(back.dlid, e[0].lid);
	assert_int_equal(back.sl, 2);
	assert_int_equal(back.port_num, 1);
	assert_int_equal(back.is_global, 1);
	assert_memory_equal(back.grh.dgid.raw, g0.raw, 16);
	assert_int_equal(back.grh.sgid_index, 0);
	assert_int_equal(back.grh.hop_limit, 0xff);
	assert_int_equal(back.grh.flow_label, 0x777);
	reply = ibv_create_ah_from_wc(e[1].pd, &wc, (struct ibv_grh *)e[1].buf, 1);
	assert_non_null(reply);
	ud_post_send(&e[1], q[1], reply, wc.src_qp, 0xa5);
	poll_one(e[0].cq, &wc, WAIT);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(e[0].buf[4096 + 40], 0xa5);

	/* Without a GRH the reply is local. */
	wc.wc_flags = 0;
	assert_int_equal(ibv_init_ah_from_wc(e[1].ctx, 1, &wc, NULL, &back), 0);
	assert_int_equal(back.is_global, 0);
	assert_int_equal(ibv_destroy_ah(reply), 0);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_destroy_qp(q[0]), 0);
	assert_int_equal(ibv_destroy_qp(q[1]), 0);
	end_close(&e[0]);
	end_close(&e[1]);
}

/* Completions on e's CQ within ms, counted per QP number (qpn[i] -> n[i]). */
static void count_recvs(struct end *e, const uint32_t *qpn, unsigned int *n, unsigned int nq, unsigned int ms,
			uint8_t tag)
{
	uint64_t end = now_ms() + ms;
	struct ibv_wc wc;

	while (now_ms() < end) {
		int r = ibv_poll_cq(e->cq, 1, &wc);

		assert_true(r >= 0);
		if (!r)
			continue;
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV);
		assert_int_equal(wc.byte_len, 40 + LEN);
		assert_true(wc.wc_flags & IBV_WC_GRH);
		assert_int_equal(e->buf[wc.wr_id * 4096 + 40], tag);
		assert_memory_equal(e->buf + wc.wr_id * 4096 + 24, mgid.raw, 16); /* GRH.DGID */
		for (unsigned int i = 0; i < nq; i++)
			if (qpn[i] == wc.qp_num)
				n[i]++;
	}
}

/* One datagram from `from` (on e[0]) to the group; n0/n1: what each QP
 * of e[0] (q0) and e[1] (q1) received within 300 ms. */
static void fan_out(struct end *e, struct ibv_qp *from, struct ibv_ah *ah, uint8_t tag, const uint32_t *q0,
		    unsigned int *n0, const uint32_t *q1, unsigned int *n1)
{
	ud_post_send(&e[0], from, ah, 0xffffff, tag);
	n0[0] = n0[1] = n1[0] = n1[1] = 0;
	count_recvs(&e[0], q0, n0, 2, 300, tag);
	count_recvs(&e[1], q1, n1, 2, 300, tag);
}

/* Members the fabric map lists for MLID (softibd's view). */
static unsigned int map_members(const struct sib_fabric_shm *fab)
{
	uint16_t slot = atomic_load(&fab->mlid_grp[MLID - SIB_MCAST_LID_MIN]);

	return slot ? fab->mcast[slot - 1].nmembers : 0;
}

static void test_multicast(void **state)
{
	struct end e[2];
	struct ibv_qp *s, *t, *a, *b;      /* s, t on softib0; a, b on softib1 */
	struct ibv_ah_attr at = { .dlid = MLID, .port_num = 1, .is_global = 1 };
	struct ibv_ah *ah, *ah2;
	struct inbox_map m;
	union ibv_gid bad = mgid;
	unsigned int n0[2], n1[2];
	uint32_t q0[2], q1[2];
	pid_t child;
	int st;

	(void)state;
	end_open(&e[0], "softib0", 1, 0);
	end_open(&e[1], "softib1", 1, 0);
	s = ud_qp(&e[0], 0);
	t = ud_qp(&e[0], IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	a = ud_qp(&e[1], 0);
	b = ud_qp(&e[1], 0);
	q0[0] = s->qp_num, q0[1] = t->qp_num, q1[0] = a->qp_num, q1[1] = b->qp_num;
	inbox_map(&m, s->qp_num);

	/* Misuse: not UD, not a multicast GID, not a multicast LID. */
	assert_int_equal(ibv_attach_mcast(e[0].qp, &mgid, MLID), EINVAL);
	bad.raw[0] = 0xfe;
	assert_int_equal(ibv_attach_mcast(s, &bad, MLID), EINVAL);
	assert_int_equal(ibv_attach_mcast(s, &mgid, 0x10), EINVAL);
	assert_int_equal(ibv_attach_mcast(s, &mgid, 0xffff), EINVAL);
	assert_int_equal(ibv_detach_mcast(s, &mgid, MLID), EINVAL); /* not attached */

	for (struct ibv_qp **qp = (struct ibv_qp *[]){ s, t, a, b, NULL }; *qp; qp++)
		assert_int_equal(ibv_attach_mcast(*qp, &mgid, MLID), 0);
	assert_int_equal(ibv_attach_mcast(a, &mgid, MLID), 0); /* twice: no change */
	/* One MLID per MGID and back. */
	assert_int_equal(ibv_attach_mcast(a, &mgid, MLID + 1), EINVAL);
	bad.raw[0] = 0xff;
	bad.raw[15] = 0x99;
	assert_int_equal(ibv_attach_mcast(a, &bad, MLID), EINVAL);
	assert_int_equal(map_members(m.fab), 2); /* two contexts */

	for (unsigned int k = 0; k < 8; k++) {
		ud_post_recv(&e[0], s, k);
		ud_post_recv(&e[0], t, 8 + k);
		ud_post_recv(&e[1], a, k);
		ud_post_recv(&e[1], b, 8 + k);
	}
	at.grh.dgid = mgid;
	ah = ibv_create_ah(e[0].pd, &at);
	assert_non_null(ah);

	/* From s (attached, loopback not blocked): s, t, a, b once each. */
	fan_out(e, s, ah, 1, q0, n0, q1, n1);
	assert_int_equal(n0[0], 1);
	assert_int_equal(n0[1], 1);
	assert_int_equal(n1[0], 1);
	assert_int_equal(n1[1], 1);

	/* From t (BLOCK_SELF_MCAST_LB): everyone but t. */
	fan_out(e, t, ah, 2, q0, n0, q1, n1);
	assert_int_equal(n0[0], 1);
	assert_int_equal(n0[1], 0);
	assert_int_equal(n1[0], 1);
	assert_int_equal(n1[1], 1);

	/* To the group's MLID with another DGID: nobody takes it. */
	at.grh.dgid = bad;
	ah2 = ibv_create_ah(e[0].pd, &at);
	assert_non_null(ah2);
	fan_out(e, s, ah2, 4, q0, n0, q1, n1);
	assert_int_equal(n0[0] + n0[1] + n1[0] + n1[1], 0);
	assert_int_equal(ibv_destroy_ah(ah2), 0);

	/* b detached, a destroyed without detaching: softib1 gets nothing. */
	assert_int_equal(ibv_detach_mcast(b, &mgid, MLID), 0);
	assert_int_equal(ibv_detach_mcast(b, &mgid, MLID), EINVAL);
	assert_int_equal(ibv_destroy_qp(a), 0);
	assert_int_equal(map_members(m.fab), 1);
	fan_out(e, t, ah, 3, q0, n0, q1, n1);
	assert_int_equal(n0[0], 1);
	assert_int_equal(n1[0] + n1[1], 0);

	/* A process that attaches and is killed: its membership goes with it. */
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		execl("/proc/self/exe", "test_verbs_ud", "attach-and-wait", (char *)NULL);
		_exit(127);
	}
	for (uint64_t end = now_ms() + 10000; map_members(m.fab) != 2;) {
		assert_int_equal(waitpid(child, &st, WNOHANG), 0); /* still there */
		assert_true(now_ms() < end);
	}
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, &st, 0), child);
	for (uint64_t end = now_ms() + WAIT; map_members(m.fab) != 1;)
		assert_true(now_ms() < end);

	/* The last members leave: the group is gone. */
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_detach_mcast(s, &mgid, MLID), 0);
	assert_int_equal(ibv_destroy_qp(t), 0);
	assert_int_equal(map_members(m.fab), 0);
	assert_int_equal(atomic_load(&m.fab->mlid_grp[MLID - SIB_MCAST_LID_MIN]), 0);
	inbox_unmap(&m);
	assert_int_equal(ibv_destroy_qp(s), 0);
	assert_int_equal(ibv_destroy_qp(b), 0);
	end_close(&e[0]);
	end_close(&e[1]);
}

/* The process test_multicast kills: a QP on softib1 attached, then wait. */
static int attach_and_wait(void)
{
	struct end c;
	struct ibv_qp *qp;

	end_open(&c, "softib1", 1, 0);
	qp = ud_qp(&c, 0);
	if (ibv_attach_mcast(qp, &mgid, MLID))
		return 1;
	for (int i = 0; i < 300; i++) /* 30 s at most: the test kills it */
		usleep(100000);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "attach-and-wait"))
		return attach_and_wait();

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ah_errors_and_attrs),
		cmocka_unit_test(test_reply_from_wc),
		cmocka_unit_test(test_multicast),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
