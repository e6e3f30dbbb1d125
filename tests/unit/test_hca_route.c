/* SPDX-License-Identifier: MIT */
/*
 * The HCA's route cache over the loopback fabric (hca_loop.h), whose host
 * answers routes as softibd's SIB_CTL_ROUTE would on a fabric without
 * switches: a path is asked once per context and per route_gen (not per
 * packet, not per retransmission, not per UD QP), a dropped route loses
 * packets on the wire and counts them as the port's PortXmitDiscards, a
 * route_gen bump re-asks and traffic resumes; and the per-port data
 * counters (IBA 16.1.3.5: LRH..ICRC in 4-byte words, packets by DLID).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sib_shm.h"
#include "hca/hca.h"
#include "hca/provider.h"
#include "hca/ud.h"
#include "hca_loop.h"
#include "iba/iba.h"

#define QKEY 0x22222222u

static struct sib_link_stats *stats(unsigned int side)
{
	return (struct sib_link_stats *)((char *)inbox_mem[side] + SIB_LINK_STATS_OFF);
}

static uint64_t pc(unsigned int side, enum sib_link_port_counter c)
{
	return atomic_load(&stats(side)->port[0][c]);
}

static void bump_gen(void)
{
	atomic_fetch_add(&sib_fabric->route_gen, 1);
}

/* Packets the pump moved to device dst since up(). */
static unsigned int pkts_to(unsigned int dst)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < nlog && i < LOG_MAX; i++)
		n += plog[i].dst == dst;
	return n;
}

static void send_one(uint64_t id)
{
	post_recv(B, 0, 64, id);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, id);
	expect_wc(A, id, IBV_WC_SUCCESS);
	expect_wc(B, id, IBV_WC_SUCCESS);
}

static int route_down(void **state)
{
	route_block = 0;
	return down(state);
}

/* RC: each side asks its path once; a route_gen bump asks again once. */
static void test_rc_route_cached(void **state)
{
	unsigned int acks;

	(void)state;
	route_calls = 0;
	up(&def_opts);
	for (uint64_t i = 0; i < 10; i++)
		send_one(i);
	/* A -> B's LID, B -> A's (the ACKs), both asked at RTR */
	assert_int_equal(route_calls, 2);
	/* The data counters: 10 SENDs of LRH 8 + BTH 12 + 64 + ICRC 4 bytes
	 * = 22 words each; ACKs LRH 8 + BTH 12 + AETH 4 + ICRC 4 = 7 words. */
	assert_int_equal(pkts_to(B), 10);
	assert_int_equal(pc(A, SIB_LP_UCAST_XMIT), 10);
	assert_int_equal(pc(A, SIB_LP_XMIT_DATA), 10 * 22);
	assert_int_equal(pc(B, SIB_LP_UCAST_RCV), 10);
	assert_int_equal(pc(B, SIB_LP_RCV_DATA), 10 * 22);
	acks = pkts_to(A);
	assert_true(acks >= 1);
	assert_int_equal(pc(B, SIB_LP_UCAST_XMIT), acks);
	assert_int_equal(pc(B, SIB_LP_XMIT_DATA), 7 * acks);
	assert_int_equal(pc(A, SIB_LP_UCAST_RCV), acks);
	assert_int_equal(pc(A, SIB_LP_MCAST_XMIT), 0);
	assert_int_equal(pc(A, SIB_LP_XMIT_DISCARDS), 0);

	bump_gen();
	send_one(10);
	assert_int_equal(route_calls, 4);
	send_one(11);
	assert_int_equal(route_calls, 4);
}

/* A route the tables drop: nothing on the wire, counted as discards,
 * asked once however often the requester retransmits; once the tables
 * lead there again (route_gen moves), the retransmission completes. */
static void test_rc_route_drop_and_back(void **state)
{
	struct opts o = def_opts;
	struct sib_context *ctx;
	uint64_t disc;

	(void)state;
	o.timeout = 12; /* 16 ms */
	o.retry_cnt = 7;
	up(&o);
	send_one(1);
	route_calls = 0;
	nlog = 0;
	route_block = sides[B].lid;
	bump_gen();
	post_recv(B, 0, 64, 2);
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 2);
	/* the first send and a retransmission, by count, not by time: a
	 * loaded machine that stretched a fixed wait to more than the 7
	 * retries' ~130 ms would see RETRY_EXC_ERR here */
	for (uint64_t end = now_ms() + 5000; pc(A, SIB_LP_XMIT_DISCARDS) < 2 && now_ms() < end;)
		settle(1);
	expect_no_wc(A);
	assert_int_equal(pkts_to(B), 0);
	assert_int_equal(route_calls, 1);
	disc = pc(A, SIB_LP_XMIT_DISCARDS);
	assert_true(disc >= 2); /* the first send and a retransmission */
	assert_int_equal(atomic_load(&stats(A)->c[SIB_LC_NO_ROUTE]), disc);
	ctx = to_sctx(sides[A].ctx);
	assert_int_equal(ctx->route_drops, disc);

	route_block = 0;
	bump_gen();
	expect_wc(A, 2, IBV_WC_SUCCESS);
	expect_wc(B, 2, IBV_WC_SUCCESS);
	assert_true(pkts_to(B) >= 1);
	assert_int_equal(route_calls, 3); /* A once more, and B for its ACK */
}

/* A route dropped for good: the requester runs out of retries. */
static void test_rc_route_drop_retry_exceeded(void **state)
{
	struct opts o = def_opts;

	(void)state;
	o.timeout = 10; /* 4 ms */
	o.retry_cnt = 2;
	up(&o);
	route_block = sides[B].lid;
	bump_gen();
	post_send(A, IBV_WR_SEND, 0, 64, 0, 0, 3);
	expect_wc(A, 3, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(pkts_to(B), 0);
	assert_int_equal(pc(A, SIB_LP_XMIT_DISCARDS), 3); /* the send and 2 retries */
}

static void ud_post(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t dqpn, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)sides[A].buf, .length = 32, .lkey = sides[A].mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(sib_hca_ops.post_send(qp, &wr, &bad), 0);
}

/* UD: a QP sending many datagrams, and a second QP of the same context,
 * ask once (the context's cache); a blocked route loses datagrams, each
 * counted, without asking again. */
static void test_ud_route_per_context(void **state)
{
	struct ibv_ah_attr at = { .dlid = sides[B].lid, .port_num = 1 };
	struct ibv_qp *ua, *ua2, *ub;
	struct ibv_ah *ah;

	(void)state;
	up(&def_opts);
	ua = ud_qp_create(A, QKEY, 0);
	ua2 = ud_qp_create(A, QKEY, 0);
	ub = ud_qp_create(B, QKEY, 0);
	at.dlid = sides[B].lid;
	ah = sib_hca_ops.create_ah(sides[A].pd, &at);
	assert_non_null(ah);
	bump_gen(); /* the RC QPs of up() asked for this path at their RTR */
	route_calls = 0;
	for (uint64_t i = 0; i < 20; i++) {
		post_recv_qp(ub, B, 4096 + i * 128, 128, 100 + i);
		ud_post(i & 1 ? ua2 : ua, ah, ub->qp_num, i);
		expect_wc(A, i, IBV_WC_SUCCESS);
		expect_wc(B, 100 + i, IBV_WC_SUCCESS);
	}
	assert_int_equal(route_calls, 1);
	assert_int_equal(pc(A, SIB_LP_UCAST_XMIT), 20);

	route_block = sides[B].lid;
	bump_gen();
	for (uint64_t i = 0; i < 5; i++) {
		ud_post(ua, ah, ub->qp_num, 50 + i);
		expect_wc(A, 50 + i, IBV_WC_SUCCESS); /* on the wire, then lost */
	}
	settle(10);
	expect_no_wc(B);
	assert_int_equal(route_calls, 2);
	assert_int_equal(pc(A, SIB_LP_XMIT_DISCARDS), 5);
	assert_int_equal(pc(A, SIB_LP_UCAST_XMIT), 20);
	assert_int_equal(sib_hca_ops.destroy_ah(ah), 0);
	assert_int_equal(sib_hca_ops.destroy_qp(ua), 0);
	assert_int_equal(sib_hca_ops.destroy_qp(ua2), 0);
	assert_int_equal(sib_hca_ops.destroy_qp(ub), 0);
}

/* Answer what the link asked (progress_lock held, as the engine thread
 * would without it): the asks are taken in the same hold that made them,
 * so the engine thread never answers them twice. */
static void answer_asks(struct sib_context *ctx)
{
	struct sib_link_asks a;

	sib_link_asks_take(&ctx->link, &a);
	pthread_mutex_unlock(&ctx->progress_lock);
	sib_link_asks_answer(&ctx->link, &a);
	pthread_mutex_lock(&ctx->progress_lock);
	sib_link_asks_apply(&ctx->link, &a);
}

static uint32_t members_now(struct sib_qp *qp, uint16_t mlid, struct sib_shm_mcast_member *m)
{
	uint32_t n;

	pthread_mutex_lock(&qp->ctx->progress_lock);
	while ((n = sib_mcast_members_routed(qp, mlid, m)) == UINT32_MAX)
		answer_asks(qp->ctx);
	pthread_mutex_unlock(&qp->ctx->progress_lock);
	return n;
}

static void route_now(struct sib_context *ctx, uint16_t lid)
{
	pthread_mutex_lock(&ctx->progress_lock);
	if (lid >= SIB_MCAST_LID_MIN) {
		while (!sib_link_mroute(&ctx->link, 1, lid))
			answer_asks(ctx);
	} else {
		while (!sib_link_route(&ctx->link, 1, lid))
			answer_asks(ctx);
	}
	pthread_mutex_unlock(&ctx->progress_lock);
}

/* A map of a live context that failed is asked again after a while (the
 * link's negative entry expires), not on every packet and not never. */
static void test_map_failure_retried(void **state)
{
	struct sib_context *ctx;
	struct sib_link_dest *d = NULL;
	enum sib_link_verdict v;

	(void)state;
	up(&def_opts);
	ctx = to_sctx(sides[A].ctx);
	map_calls = 0;
	map_fail = 1;
	pthread_mutex_lock(&ctx->progress_lock);
	assert_int_equal(sib_link_dest_get(&ctx->link, C, 1, &d), SIB_LINK_PENDING);
	answer_asks(ctx);
	for (int i = 0; i < 10; i++)
		assert_int_equal(sib_link_dest_get(&ctx->link, C, 1, &d), SIB_LINK_UNREACHABLE);
	pthread_mutex_unlock(&ctx->progress_lock);
	assert_int_equal(map_calls, 1);
	usleep(150000); /* past SIB_LINK_MAP_RETRY_NS */
	pthread_mutex_lock(&ctx->progress_lock);
	while ((v = sib_link_dest_get(&ctx->link, C, 1, &d)) == SIB_LINK_PENDING)
		answer_asks(ctx);
	assert_int_equal(v, SIB_LINK_OK);
	assert_non_null(d->base);
	sib_link_dest_put(d);
	pthread_mutex_unlock(&ctx->progress_lock);
	assert_int_equal(map_calls, 2);
}

/* Multicast fan-out: the members of a group (the map's list) less those
 * the MFTs do not reach from the sender's port; asked once per route_gen. */
static void test_mcast_members_routed(void **state)
{
	const uint16_t mlid = 0xC010;
	struct sib_shm_mcast_member m[SIB_MAX_MCAST_QP_ATTACH];
	struct sib_shm_mcast_grp *g = &sib_fabric->mcast[0];
	struct sib_qp *qp;

	(void)state;
	up(&def_opts);
	qp = to_sqp(sides[A].qp);
	g->mlid = mlid;
	g->nmembers = 2;
	g->members[0].inbox = A;
	g->members[0].gen = 1;
	g->members[1].inbox = B;
	g->members[1].gen = 1;
	atomic_store(&sib_fabric->mlid_grp[mlid - SIB_MCAST_LID_MIN], 1);
	route_calls = 0;
	assert_int_equal(members_now(qp, mlid, m), 2);
	assert_int_equal(members_now(qp, mlid, m), 2);
	assert_int_equal(route_calls, 1);
	route_block = mlid; /* the MFTs reach nobody */
	assert_int_equal(members_now(qp, mlid, m), 2); /* cached */
	bump_gen();
	assert_int_equal(members_now(qp, mlid, m), 0);
	assert_int_equal(route_calls, 2);
	route_block = 0;
	bump_gen();
	assert_int_equal(members_now(qp, mlid, m), 2);
	assert_int_equal(m[0].inbox, A);
	assert_int_equal(m[1].inbox, B);
	atomic_store(&sib_fabric->mlid_grp[mlid - SIB_MCAST_LID_MIN], 0);
	memset(g, 0, sizeof(*g));
}

/* LIDs 64 apart (2 and 66) and MLIDs 16 apart: a sender alternating
 * between them asks once per LID, not once per packet. */
static void test_route_no_conflict_miss(void **state)
{
	struct sib_context *ctx;

	(void)state;
	up(&def_opts);
	ctx = to_sctx(sides[A].ctx);
	bump_gen(); /* the RC QPs of up() asked for LID 2 at their RTR */
	route_calls = 0;
	for (unsigned int i = 0; i < 20; i++) {
		route_now(ctx, i & 1 ? 66 : 2);
		route_now(ctx, i & 1 ? 2 + 0x8000 : 2 + 0x4000);
	}
	assert_int_equal(route_calls, 4);
	route_calls = 0;
	for (unsigned int i = 0; i < 20; i++)
		route_now(ctx, i & 1 ? 0xC010 : 0xC020);
	assert_int_equal(route_calls, 2);
	bump_gen();
	route_now(ctx, 66);
	route_now(ctx, 0xC010);
	assert_int_equal(route_calls, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_rc_route_cached, route_down),
		cmocka_unit_test_teardown(test_rc_route_drop_and_back, route_down),
		cmocka_unit_test_teardown(test_rc_route_drop_retry_exceeded, route_down),
		cmocka_unit_test_teardown(test_ud_route_per_context, route_down),
		cmocka_unit_test_teardown(test_mcast_members_routed, route_down),
		cmocka_unit_test_teardown(test_route_no_conflict_miss, route_down),
		cmocka_unit_test_teardown(test_map_failure_retried, route_down),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
