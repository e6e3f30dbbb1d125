// SPDX-License-Identifier: MIT
/*
 * The victim of the kill storm (kill_storm.sh): a verbs client that never
 * stops on its own.  It opens a device, allocates a PD, registers MRs,
 * creates a CQ and a pair of RC QPs, connects them to each other through
 * INIT/RTR/RTS (IBA 10.3), posts receives and sends, polls, tears the pair
 * down and starts over, so that a SIGKILL at a random moment lands in any of
 * these steps.  Usage: storm_client DEVICE_INDEX.  Exits non-zero only if a
 * verb fails (the storm reports that); it never exits 0.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES 4096
#define MSGS      16

#define CHECK(cond, what) \
	do { \
		if (!(cond)) { \
			perror(what); \
			exit(2); \
		} \
	} while (0)

static void to_rts(struct ibv_qp *qp, uint16_t dlid, uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE,
	};

	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS), "modify INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = 1;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER), "modify RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 10;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
	      "modify RTS");
}

/* One round: a connected pair exchanges MSGS sends, then goes away. */
static void round_trip(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_mr *mr, uint16_t lid)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = MSGS, .max_recv_wr = MSGS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad_r;
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *bad_s;
	struct ibv_wc wc[8];
	struct ibv_qp *a, *b;
	int i, n, done = 0;

	a = ibv_create_qp(pd, &ia);
	CHECK(a, "create QP");
	b = ibv_create_qp(pd, &ia);
	CHECK(b, "create QP");
	to_rts(a, lid, b->qp_num);
	to_rts(b, lid, a->qp_num);
	for (i = 0; i < MSGS; i++) {
		CHECK(!ibv_post_recv(b, &rwr, &bad_r), "post recv");
		CHECK(!ibv_post_send(a, &swr, &bad_s), "post send");
	}
	while (done < 2 * MSGS) {
		n = ibv_poll_cq(cq, 8, wc);
		CHECK(n >= 0, "poll CQ");
		for (i = 0; i < n; i++)
			CHECK(wc[i].status == IBV_WC_SUCCESS, ibv_wc_status_str(wc[i].status));
		done += n;
	}
	CHECK(!ibv_destroy_qp(a), "destroy QP");
	CHECK(!ibv_destroy_qp(b), "destroy QP");
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	static char buf[BUF_BYTES];
	int n, idx = argc > 1 ? atoi(argv[1]) : 0;

	list = ibv_get_device_list(&n);
	CHECK(list && n > 0, "no devices");
	ctx = ibv_open_device(list[idx % n]);
	CHECK(ctx, "open device");
	CHECK(!ibv_query_port(ctx, 1, &pa), "query port");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc PD");
	cq = ibv_create_cq(ctx, 4 * MSGS, NULL, NULL, 0);
	CHECK(cq, "create CQ");
	for (unsigned long r = 0;; r++) {
		mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE);
		CHECK(mr, "reg MR");
		round_trip(pd, cq, mr, pa.lid);
		CHECK(!ibv_dereg_mr(mr), "dereg MR");
	}
}
