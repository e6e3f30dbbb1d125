/* SPDX-License-Identifier: MIT */
/*
 * The drop-in libibverbs against a private softibd: verbs misuse gets
 * rdma-core's errno, and the RC transport's success and error paths
 * (SEND/WRITE/READ, inline, unsignaled, REM_ACCESS, LOC_PROT, RNR, retry
 * exceeded, flush, completion channel, backpressure), malformed packets
 * dropped and counted, and no CPU used by idle contexts.  One process
 * holds both ends (softib0 and softib1); packets still cross the inboxes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "common/ctl.h"
#include "common/sib_ctl.h"
#include "common/sib_shm.h"
#include "hca/hca.h"
#include "link/ring.h"
#include "iba/iba.h"

#include "verbs_harness.h"

/* ---- verbs misuse: rdma-core's errno ---- */

static void test_misuse_errno(void **state)
{
	struct end e;
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_mr *mr;
	struct ibv_sge sge;
	uint8_t buf[64];

	end_open(&e, "softib0", 1, 0);

	/* reg_mr: remote write or atomic needs local write (ib_check_mr_access). */
	errno = 0;
	assert_null(ibv_reg_mr(e.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr(e.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EINVAL);
	mr = ibv_reg_mr(e.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_int_equal(mr->lkey, mr->rkey);

	/* PD and CQ in use. */
	assert_int_equal(ibv_dealloc_pd(e.pd), EBUSY);
	assert_int_equal(ibv_destroy_cq(e.cq), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);

	/* Illegal transitions and masks: EINVAL, QP unchanged. */
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), EINVAL);
	assert_int_equal(qp_state(e.qp), IBV_QPS_RESET);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	assert_int_equal(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EINVAL);
	assert_int_equal(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PKEY_INDEX | IBV_QP_AV), EINVAL);
	a.port_num = 9;
	assert_int_equal(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PKEY_INDEX), EINVAL);
	assert_int_equal(qp_state(e.qp), IBV_QPS_RESET);
	a.port_num = 1;
	assert_int_equal(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PKEY_INDEX), 0);
	assert_int_equal(qp_state(e.qp), IBV_QPS_INIT);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), EINVAL);

	/* Posting a send before RTS: EINVAL with *bad_wr set. */
	sge.addr = (uintptr_t)e.buf;
	sge.length = 8;
	sge.lkey = e.mr->lkey;
	assert_int_equal(post_send(&e, IBV_WR_SEND, 1, &sge, 1, IBV_SEND_SIGNALED, 0, 0, 0), EINVAL);

	/* Bad QP capabilities; unsupported types. */
	ia.send_cq = ia.recv_cq = e.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 1;
	ia.cap.max_send_sge = 1000;
	errno = 0;
	assert_null(ibv_create_qp(e.pd, &ia));
	assert_int_equal(errno, EINVAL);
	ia.cap.max_send_sge = 1;
	ia.send_cq = NULL;
	errno = 0;
	assert_null(ibv_create_qp(e.pd, &ia));
	assert_int_equal(errno, EINVAL);

	/* Queries out of range. */
	assert_int_equal(ibv_query_port(e.ctx, 2, &pa), EINVAL);
	/* 128 entries as a real port's: 1..127 empty, 128 out of range. */
	assert_int_equal(ibv_query_gid(e.ctx, 1, 128, &gid), -1);
	assert_int_equal(ibv_query_gid(e.ctx, 1, 5, &gid), 0);
	for (unsigned int i = 0; i < sizeof(gid.raw); i++)
		assert_int_equal(gid.raw[i], 0);
	assert_int_equal(ibv_query_gid(e.ctx, 1, 0, &gid), 0);
	assert_int_equal(gid.raw[0], 0xfe);
	assert_int_equal(gid.raw[1], 0x80);
	errno = 0;
	assert_null(ibv_create_cq(e.ctx, 0, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	end_close(&e);
}

/* ---- data movement ---- */

static void test_send_recv_multi_sge_imm(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge[3];
	uint32_t len = 10000; /* 10 packets at MTU 1024 */

	pair_open(&p, 0, NULL, NULL);
	for (uint32_t i = 0; i < len; i++)
		p.e[0].buf[i] = (uint8_t)(i * 7);
	post_recv(&p.e[1], 77, 100000, 20000);
	sge[0] = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 3000, p.e[0].mr->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)p.e[0].buf + 3000, 1, p.e[0].mr->lkey };
	sge[2] = (struct ibv_sge){ (uintptr_t)p.e[0].buf + 3001, len - 3001, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND_WITH_IMM, 5, sge, 3, IBV_SEND_SIGNALED, 0, 0, 0xabcd), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, len);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xabcd);
	assert_int_equal(wc.qp_num, p.e[1].qp->qp_num);
	assert_int_equal(wc.src_qp, p.e[0].qp->qp_num);
	assert_int_equal(wc.slid, p.e[0].lid);
	assert_memory_equal(p.e[1].buf + 100000, p.e[0].buf, len);
	pair_close(&p);
}

static void test_inline_unsignaled(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	char msg[64];

	pair_open(&p, 0, NULL, NULL);
	for (int i = 0; i < 8; i++)
		post_recv(&p.e[1], 100 + i, (uint32_t)i * 64, 64);
	for (int i = 0; i < 8; i++) {
		snprintf(msg, sizeof(msg), "inline message %d", i);
		sge = (struct ibv_sge){ (uintptr_t)msg, (uint32_t)strlen(msg) + 1, 0 /* ignored */ };
		assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, (uint64_t)i, &sge, 1,
					   IBV_SEND_INLINE | (i == 7 ? IBV_SEND_SIGNALED : 0), 0, 0, 0), 0);
		memset(msg, 0, sizeof(msg)); /* inline: the data was copied at post time */
	}
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7); /* the unsignaled ones left no completion */
	for (int i = 0; i < 8; i++) {
		poll_one(p.e[1].cq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100 + (uint64_t)i);
		snprintf(msg, sizeof(msg), "inline message %d", i);
		assert_string_equal((char *)p.e[1].buf + i * 64, msg);
	}
	expect_no_completion(p.e[0].cq, 20);
	pair_close(&p);
}

static void test_rdma_write_read(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	uint32_t len = 300000;

	pair_open(&p, 1, NULL, NULL);
	for (uint32_t i = 0; i < len; i++)
		p.e[0].buf[i] = (uint8_t)(i ^ (i >> 8));
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, len, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_WRITE, 1, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf + 4096, p.e[1].mr->rkey, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_memory_equal(p.e[1].buf + 4096, p.e[0].buf, len);
	expect_no_completion(p.e[1].cq, 10); /* a plain WRITE consumes no receive */

	/* READ it back into another place. */
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf + 1000000, len, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_READ, 2, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf + 4096, p.e[1].mr->rkey, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.byte_len, len);
	assert_memory_equal(p.e[0].buf + 1000000, p.e[0].buf, len);

	/* WRITE_WITH_IMM consumes a receive and reports the length. */
	post_recv(&p.e[1], 9, 0, 0);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 5000, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_WRITE_WITH_IMM, 3, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf + 2000000, p.e[1].mr->rkey, 42), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.byte_len, 5000);
	assert_int_equal(be32toh(wc.imm_data), 42);
	assert_memory_equal(p.e[1].buf + 2000000, p.e[0].buf, 5000);
	pair_close(&p);
}

/* Many packets in flight: the peer inbox (1024 slots) fills and drains. */
static void test_backpressure_large(void **state)
{
	struct conn_opts o = default_opts;
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	uint32_t len = 3u << 20; /* 12288 packets at MTU 256 */

	o.mtu = IBV_MTU_256;
	pair_open(&p, 1, &o, &o);
	for (uint32_t i = 0; i < len; i++)
		p.e[0].buf[i] = (uint8_t)(i * 13 + 1);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, len, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_WRITE, 1, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf, p.e[1].mr->rkey, 0), 0);
	poll_one(p.e[0].cq, &wc, 20000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(p.e[1].buf, p.e[0].buf, len);
	memset(p.e[0].buf, 0, len);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, len, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_READ, 2, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf, p.e[1].mr->rkey, 0), 0);
	poll_one(p.e[0].cq, &wc, 20000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(p.e[1].buf, p.e[0].buf, len);
	pair_close(&p);
}

/* ---- error paths ---- */

static void test_remote_access_error(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;

	pair_open(&p, 1, NULL, NULL);
	post_recv(&p.e[1], 50, 0, 64);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	/* Out of the MR's bounds. */
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_WRITE, 1, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf + BUF_SIZE - 32, p.e[1].mr->rkey, 0), 0);
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(p.e[0].qp), IBV_QPS_ERR);
	/* The responder moved to ERR too and flushed its receive. */
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 50);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(p.e[1].qp), IBV_QPS_ERR);
	pair_close(&p);

	/* A bad R_Key, and a READ from an MR without REMOTE_READ. */
	pair_open(&p, 1, NULL, NULL);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_WRITE, 3, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf, p.e[1].mr->rkey ^ 0x100, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	pair_close(&p);

	pair_open(&p, 1, NULL, NULL);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	struct ibv_mr *ro = ibv_reg_mr(p.e[1].pd, p.e[1].buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(ro);
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_READ, 4, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf, ro->rkey, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(ibv_dereg_mr(ro), 0);
	pair_close(&p);
}

static void test_local_protection_error(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;

	pair_open(&p, 1, NULL, NULL);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey + 1 };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 1, &sge, 1, 0, 0, 0, 0), 0);
	sge.lkey = p.e[0].mr->lkey;
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(qp_state(p.e[0].qp), IBV_QPS_ERR);
	/* Posting in ERR is allowed and completes with a flush. */
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 3, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

static void test_rnr(void **state)
{
	struct conn_opts o = default_opts;
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;

	/* No receive posted, rnr_retry 2: RNR retry exceeded. */
	o.rnr_retry = 2;
	pair_open(&p, 1, &o, NULL);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 1, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	pair_close(&p);

	/* rnr_retry 7 retries forever: a receive posted later is used. */
	pair_open(&p, 1, NULL, NULL);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	memcpy(p.e[0].buf, "late receive", 13);
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
	expect_no_completion(p.e[0].cq, 30);
	post_recv(&p.e[1], 8, 0, 64);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal((char *)p.e[1].buf, "late receive");
	pair_close(&p);
}

static void test_retry_exceeded(void **state)
{
	struct conn_opts o = default_opts;
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	uint64_t t0;

	/* Connected to a QPN nobody owns: every packet is lost. */
	o.force_dest_qpn = SIB_MAX_QPN - 7;
	o.timeout = 8;    /* 1 ms */
	o.retry_cnt = 3;
	pair_open(&p, 1, &o, NULL);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	t0 = now_ms();
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 1, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	assert_true(now_ms() - t0 >= 3); /* (retry_cnt + 1) timeouts of ~1 ms */
	assert_int_equal(qp_state(p.e[0].qp), IBV_QPS_ERR);
	pair_close(&p);
}

static void test_flush_on_error_and_reset(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	pair_open(&p, 1, NULL, NULL);
	for (int i = 0; i < 5; i++)
		post_recv(&p.e[1], 200 + (uint64_t)i, 0, 64);
	assert_int_equal(ibv_modify_qp(p.e[1].qp, &a, IBV_QP_STATE), 0);
	for (int i = 0; i < 5; i++) {
		poll_one(p.e[1].cq, &wc, 5000);
		assert_int_equal(wc.wr_id, 200 + (uint64_t)i);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	}
	/* RESET empties the queues without completions. */
	a.qp_state = IBV_QPS_RESET;
	post_recv(&p.e[0], 300, 0, 64);
	assert_int_equal(ibv_modify_qp(p.e[0].qp, &a, IBV_QP_STATE), 0);
	expect_no_completion(p.e[0].cq, 10);
	assert_int_equal(qp_state(p.e[0].qp), IBV_QPS_RESET);
	pair_close(&p);
}

static void test_completion_channel(void **state)
{
	struct pair p;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct pollfd pfd;

	pair_open(&p, 1, NULL, NULL);
	ch = ibv_create_comp_channel(p.e[1].ctx);
	assert_non_null(ch);
	cq = ibv_create_cq(p.e[1].ctx, 16, (void *)0x1234, ch, 0);
	assert_non_null(cq);
	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
	assert_int_equal(errno, EAGAIN);

	/* A second QP on softib1 whose receive CQ is the channel's CQ. */
	struct ibv_qp_init_attr ia = {
		.send_cq = p.e[1].cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct end e2 = p.e[1];
	e2.qp = ibv_create_qp(p.e[1].pd, &ia);
	assert_non_null(e2.qp);
	struct ibv_qp *orig = p.e[0].qp;
	struct ibv_qp_init_attr ia0 = {
		.send_cq = p.e[0].cq, .recv_cq = p.e[0].cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct end e0 = p.e[0];
	e0.qp = ibv_create_qp(p.e[0].pd, &ia0);
	assert_non_null(e0.qp);
	qp_connect(&e0, &e2, &default_opts);
	qp_connect(&e2, &e0, &default_opts);
	post_recv(&e2, 61, 0, 64);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	assert_int_equal(post_send(&e0, IBV_WR_SEND, 60, &sge, 1, IBV_SEND_SIGNALED, 0, 0, 0), 0);

	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, cq);
	assert_ptr_equal(ev_ctx, (void *)0x1234);
	ibv_ack_cq_events(ev_cq, 1);
	poll_one(cq, &wc, 1000);
	assert_int_equal(wc.wr_id, 61);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 60);

	assert_int_equal(ibv_destroy_qp(e0.qp), 0);
	assert_int_equal(ibv_destroy_qp(e2.qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	(void)orig;
	pair_close(&p);
}


/* A SEND right behind a READ: its ACK must not overtake the READ's
 * responses (timeout 0: a lost ACK would hang, not retry). */
static void test_read_then_send_ordering(void **state)
{
	struct conn_opts o = default_opts;
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge rs, ss;

	o.timeout = 0;
	pair_open(&p, 1, &o, &o);
	for (int round = 0; round < 20; round++) {
		post_recv(&p.e[1], 500 + (uint64_t)round, 0, 64);
		rs = (struct ibv_sge){ (uintptr_t)p.e[0].buf + 8192, 20000, p.e[0].mr->lkey };
		ss = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
		assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_READ, 1, &rs, 1, 0,
					   (uintptr_t)p.e[1].buf + 65536, p.e[1].mr->rkey, 0), 0);
		assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &ss, 1, 0, 0, 0, 0), 0);
		poll_one(p.e[0].cq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 1);
		poll_one(p.e[0].cq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 2);
		poll_one(p.e[1].cq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	pair_close(&p);
}

/* A good WQE ahead of a failing one completes first (IBA 10.8.3.3). */
static void test_local_error_completes_in_order(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge good, bad;

	pair_open(&p, 1, NULL, NULL);
	post_recv(&p.e[1], 1, 0, 64);
	good = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	bad = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey ^ 0x300 };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 1, &good, 1, 0, 0, 0, 0), 0);
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &bad, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	pair_close(&p);
}

/* ibv_wr_* batches on two QPs may interleave; posting inside an
 * ibv_start_poll batch must not deadlock. */
static void test_wr_api_and_cq_ex(void **state)
{
	struct end a, b;
	struct ibv_cq_init_attr_ex cqa = { .cqe = 64, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cqx;
	struct ibv_qp *q2a, *q2b;
	struct ibv_qp_ex *x1, *x2;
	struct ibv_wc wc;
	struct end a2, b2;

	end_open(&a, "softib0", 1, 0);
	end_open(&b, "softib1", 1, 0);
	cqx = ibv_create_cq_ex(a.ctx, &cqa);
	assert_non_null(cqx);
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cqx);
	qa.pd = a.pd;
	ibv_destroy_qp(a.qp);
	a.qp = ibv_create_qp_ex(a.ctx, &qa);
	assert_non_null(a.qp);
	q2a = ibv_create_qp_ex(a.ctx, &qa);
	assert_non_null(q2a);
	struct ibv_qp_init_attr ib = {
		.send_cq = b.cq, .recv_cq = b.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	q2b = ibv_create_qp(b.pd, &ib);
	assert_non_null(q2b);
	a2 = a;
	a2.qp = q2a;
	b2 = b;
	b2.qp = q2b;
	qp_connect(&a, &b, &default_opts);
	qp_connect(&b, &a, &default_opts);
	qp_connect(&a2, &b2, &default_opts);
	qp_connect(&b2, &a2, &default_opts);
	x1 = ibv_qp_to_qp_ex(a.qp);
	x2 = ibv_qp_to_qp_ex(q2a);
	assert_non_null(x1);
	assert_non_null(x2);
	assert_null(ibv_qp_to_qp_ex(b.qp)); /* created without the extension */

	memcpy(a.buf, "via qp one", 11);
	memcpy(a.buf + 100, "via qp two", 11);
	post_recv(&b, 1, 0, 64);
	post_recv(&b2, 2, 100, 64);
	ibv_wr_start(x1);
	ibv_wr_start(x2);
	x1->wr_id = 11;
	ibv_wr_send(x1);
	x2->wr_id = 22;
	ibv_wr_send(x2);
	ibv_wr_set_sge(x1, a.mr->lkey, (uintptr_t)a.buf, 11);
	ibv_wr_set_sge(x2, a.mr->lkey, (uintptr_t)a.buf + 100, 11);
	x1->wr_id = 12;
	ibv_wr_rdma_write(x1, b.mr->rkey, (uintptr_t)b.buf + 1000);
	ibv_wr_set_sge(x1, a.mr->lkey, (uintptr_t)a.buf, 11);
	assert_int_equal(ibv_wr_complete(x2), 0);
	assert_int_equal(ibv_wr_complete(x1), 0);

	/* Three completions; post another send while inside the poll batch. */
	int got = 0;
	uint64_t end = now_ms() + 5000;
	while (got < 3) {
		if (ibv_start_poll(cqx, &pa) == 0) {
			do {
				assert_int_equal(cqx->status, IBV_WC_SUCCESS);
				got++;
				if (got == 1) {
					ibv_wr_start(x1);
					x1->wr_id = 13;
					ibv_wr_rdma_write(x1, b.mr->rkey, (uintptr_t)b.buf + 2000);
					ibv_wr_set_sge(x1, a.mr->lkey, (uintptr_t)a.buf, 11);
					assert_int_equal(ibv_wr_complete(x1), 0);
				}
			} while (ibv_next_poll(cqx) == 0);
			ibv_end_poll(cqx);
		}
		assert_true(now_ms() < end);
	}
	poll_one(b.cq, &wc, 5000);
	poll_one(b.cq, &wc, 5000);
	assert_string_equal((char *)b.buf, "via qp one");
	assert_string_equal((char *)b.buf + 100, "via qp two");
	while (got < 4) {
		if (ibv_start_poll(cqx, &pa) == 0) {
			got++;
			ibv_end_poll(cqx);
		}
		assert_true(now_ms() < end);
	}
	assert_string_equal((char *)b.buf + 1000, "via qp one");
	assert_string_equal((char *)b.buf + 2000, "via qp one");

	assert_int_equal(ibv_destroy_qp(q2a), 0);
	assert_int_equal(ibv_destroy_qp(q2b), 0);
	assert_int_equal(ibv_destroy_qp(a.qp), 0);
	a.qp = ibv_create_qp(a.pd, &(struct ibv_qp_init_attr){ .send_cq = a.cq, .recv_cq = a.cq,
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
		.max_recv_sge = 1 } });
	assert_non_null(a.qp);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	end_close(&a);
	end_close(&b);
}

/* RTS -> SQD with en_sqd_async_notify raises IBV_EVENT_SQ_DRAINED. */
static void test_sqd_drained_event(void **state)
{
	struct pair p;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	struct ibv_async_event ev;
	struct pollfd pfd;

	pair_open(&p, 1, NULL, NULL);
	assert_int_equal(ibv_modify_qp(p.e[0].qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	pfd.fd = p.e[0].ctx->async_fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_async_event(p.e[0].ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SQ_DRAINED);
	assert_ptr_equal(ev.element.qp, p.e[0].qp);
	ibv_ack_async_event(&ev);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(p.e[0].qp, &a, IBV_QP_STATE), 0);
	pair_close(&p);
}


/* Solicited-only arming fires on a solicited completion, not before. */
static void test_notify_solicited(void **state)
{
	struct pair p;
	struct ibv_comp_channel *ch;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct pollfd pfd;

	pair_open(&p, 1, NULL, NULL);
	/* Rebuild softib1's QP on a CQ with a channel. */
	ch = ibv_create_comp_channel(p.e[1].ctx);
	assert_non_null(ch);
	struct ibv_cq *cq = ibv_create_cq(p.e[1].ctx, 16, NULL, ch, 0);
	assert_non_null(cq);
	assert_int_equal(ibv_destroy_qp(p.e[1].qp), 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	p.e[1].qp = ibv_create_qp(p.e[1].pd, &ia);
	assert_non_null(p.e[1].qp);
	assert_int_equal(ibv_destroy_qp(p.e[0].qp), 0);
	ia.send_cq = ia.recv_cq = p.e[0].cq;
	p.e[0].qp = ibv_create_qp(p.e[0].pd, &ia);
	assert_non_null(p.e[0].qp);
	qp_connect(&p.e[0], &p.e[1], &default_opts);
	qp_connect(&p.e[1], &p.e[0], &default_opts);
	post_recv(&p.e[1], 1, 0, 64);
	post_recv(&p.e[1], 2, 64, 64);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	assert_int_equal(ibv_req_notify_cq(cq, 1), 0);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 16, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 10, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(poll(&pfd, 1, 50), 0); /* not solicited: no event */
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 11, &sge, 1, IBV_SEND_SOLICITED, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, cq);
	ibv_ack_cq_events(cq, 1);
	poll_one(cq, &wc, 1000);
	assert_int_equal(wc.wr_id, 1);
	poll_one(cq, &wc, 1000);
	assert_int_equal(wc.wr_id, 2);

	/* Resize keeps queued completions, refuses to shrink below them. */
	post_recv(&p.e[1], 3, 0, 64);
	post_recv(&p.e[1], 4, 0, 64);
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 12, &sge, 1, 0, 0, 0, 0), 0);
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 13, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(ibv_resize_cq(cq, 200), 0);
	assert_true(cq->cqe >= 200);
	poll_one(cq, &wc, 1000);
	assert_int_equal(wc.wr_id, 3);
	poll_one(cq, &wc, 1000);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(ibv_resize_cq(cq, 0), EINVAL);

	/* An event written but never read (rc_pingpong -e ends like this)
	 * must not hold up ibv_destroy_cq, nor surface after it. */
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	post_recv(&p.e[1], 5, 0, 64);
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 14, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	poll_one(cq, &wc, 5000);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(poll(&pfd, 1, 5000), 1); /* the event is in the pipe */

	assert_int_equal(ibv_destroy_qp(p.e[1].qp), 0);
	p.e[1].qp = ibv_create_qp(p.e[1].pd, &(struct ibv_qp_init_attr){ .send_cq = p.e[1].cq,
		.recv_cq = p.e[1].cq, .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1,
		.max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } });
	assert_non_null(p.e[1].qp);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	fcntl(ch->fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1); /* dropped */
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	pair_close(&p);
}

/* An R_Key of another PD opens nothing (IBA 10.6.3.2: key, PD, access, bounds). */
static void test_rkey_other_pd(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;

	pair_open(&p, 1, NULL, NULL);
	pd2 = ibv_alloc_pd(p.e[1].ctx);
	assert_non_null(pd2);
	mr2 = ibv_reg_mr(pd2, p.e[1].buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr2);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_WRITE, 1, &sge, 1, 0,
				   (uintptr_t)p.e[1].buf, mr2->rkey, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(ibv_dereg_mr(mr2), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	pair_close(&p);
}


/* A retry timer set by post_send while the engine thread sleeps must still
 * fire when the application then sleeps in poll() on the channel fd (as
 * epoll-driven programs do) instead of in ibv_get_cq_event. */
static void test_timer_fires_while_app_sleeps(void **state)
{
	struct conn_opts o = default_opts;
	struct end a, b;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct pollfd pfd;

	end_open(&a, "softib0", 1, 0);
	end_open(&b, "softib1", 1, 0);
	ch = ibv_create_comp_channel(a.ctx);
	assert_non_null(ch);
	cq = ibv_create_cq(a.ctx, 16, NULL, ch, 0);
	assert_non_null(cq);
	assert_int_equal(ibv_destroy_qp(a.qp), 0);
	a.qp = ibv_create_qp(a.pd, &(struct ibv_qp_init_attr){ .send_cq = cq, .recv_cq = cq,
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
		.max_send_sge = 1, .max_recv_sge = 1 } });
	assert_non_null(a.qp);
	o.force_dest_qpn = SIB_MAX_QPN - 9; /* nobody: every packet is lost */
	o.timeout = 8;
	o.retry_cnt = 2;
	qp_connect(&a, &b, &o);
	nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL); /* engine asleep */
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	sge = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey };
	assert_int_equal(post_send(&a, IBV_WR_SEND, 1, &sge, 1, 0, 0, 0, 0), 0);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	ibv_ack_cq_events(ev_cq, 1);
	poll_one(cq, &wc, 1000);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);

	assert_int_equal(ibv_destroy_qp(a.qp), 0);
	a.qp = ibv_create_qp(a.pd, &(struct ibv_qp_init_attr){ .send_cq = a.cq, .recv_cq = a.cq,
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1, .max_recv_wr = 1,
		.max_send_sge = 1, .max_recv_sge = 1 } });
	assert_non_null(a.qp);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	end_close(&a);
	end_close(&b);
}

/* ---- malformed, misrouted and forged packets: dropped, counted, nothing lost ---- */

static void test_malformed_packets(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	struct inbox_map m;
	_Atomic uint64_t *dropped; /* the receiver's drop count, in its page */
	uint64_t dropped0;

	pair_open(&p, 1, NULL, NULL);
	inbox_map(&m, p.e[1].qp->qp_num);
	dropped = &m.tx->db.hdr->dropped;
	dropped0 = atomic_load(dropped);

	/* A valid SEND_ONLY to softib1's QP, built by hand, then broken copies. */
	struct iba_pkt h = { 0 };
	uint8_t good[256];
	size_t hl, len;

	h.lrh.lnh = IBA_LNH_LOCAL;
	h.lrh.dlid = p.e[1].lid;
	h.lrh.slid = p.e[0].lid;
	h.bth.opcode = IBA_OPC_SEND_ONLY;
	h.bth.pkey = 0xffff;
	h.bth.dqpn = p.e[1].qp->qp_num;
	h.bth.psn = 0x654321; /* far from the expected PSN: would be NAKed if it were valid */
	hl = iba_build_headers(good, &h);
	memcpy(good + hl, "hello", 5);
	len = iba_finish(good, hl, 5, 0);
	good[len] = good[len + 1] = 0;
	len += 2;

	struct { const char *what; size_t len; void (*mangle)(uint8_t *); } cases[] = {
		{ "truncated", 10, NULL },
		{ "bad ICRC", len, NULL },
		{ "random bytes", len, NULL },
		{ "oversized length", SIB_SLOT_DATA_BYTES + 100, NULL },
	};
	int ncases = (int)(sizeof(cases) / sizeof(cases[0]));
	for (int i = 0; i < ncases; i++) {
		struct sib_ring_slot *s = forge_slot(&m);

		memcpy(s->data, good, len);
		if (i == 1)
			s->data[hl + 1] ^= 0x40;              /* payload bit: ICRC no longer matches */
		if (i == 2)
			for (size_t j = 0; j < len; j++)
				s->data[j] = (uint8_t)rand();
		/* The bad ICRC says it was computed (SIB_SLOT_F_ICRC), so it
		 * is checked (docs/link.md). */
		forge_publish(&m, s, (uint32_t)cases[i].len, i == 1 ? SIB_SLOT_F_ICRC : 0);
	}
	/* A bad ICRC that is not flagged as computed is not checked: this
	 * packet, to an unknown QPN, is dropped for its QPN instead. */
	{
		struct sib_ring_slot *s = forge_slot(&m);
		struct iba_pkt hq = h;
		uint8_t bad[256];
		size_t bl, blen;

		hq.bth.dqpn = 0xabcdef;
		bl = iba_build_headers(bad, &hq);
		memcpy(bad + bl, "hello", 5);
		blen = iba_finish(bad, bl, 5, 0);
		bad[blen - 1] ^= 0x5a; /* the ICRC's last byte */
		bad[blen] = bad[blen + 1] = 0;
		memcpy(s->data, bad, blen + 2);
		forge_publish(&m, s, (uint32_t)blen + 2, 0);
		ncases++;
	}
	/* Valid packets, but misrouted: wrong DLID, unknown QPN. */
	for (int i = 0; i < 2; i++) {
		h.lrh.dlid = i == 0 ? p.e[0].lid : p.e[1].lid;
		h.bth.dqpn = i == 0 ? p.e[1].qp->qp_num : 0xabcdef;
		inject(&m, &h, "hello", 5);
	}
	/* A slot state no honest sender writes (its own ring: it can only
	 * spoil what it sends itself): dropped and counted there. */
	atomic_store(&m.tx->r.slots[m.tx->tail % SIB_PAIR_SLOTS].state,
		     SIB_SLOT_STATE(sib_pair_turn(m.tx->tail) + 5, 0));

	/* All dropped and counted; the QP still works. */
	uint64_t end = now_ms() + 5000;
	while (atomic_load(dropped) < dropped0 + (uint64_t)ncases + 2 || !atomic_load(&m.tx->r.hdr->dropped)) {
		struct ibv_wc tmp;

		ibv_poll_cq(p.e[1].cq, 1, &tmp);
		if (now_ms() > end)
			fail_msg("dropped %llu, want %llu",
				 (unsigned long long)(atomic_load(dropped) - dropped0),
				 (unsigned long long)ncases + 2);
	}
	post_recv(&p.e[1], 1, 0, 64);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 64, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(qp_state(p.e[1].qp), IBV_QPS_RTS);
	assert_int_equal(atomic_load(&m.tx->r.hdr->dropped), 1);

	assert_int_equal(sib_rx_drop_count(to_sctx(p.e[1].ctx), SIB_RX_DROP_CRC), 1);
	assert_int_equal(sib_rx_drop_count(to_sctx(p.e[1].ctx), SIB_RX_DROP_DLID), 1);
	assert_int_equal(sib_rx_drop_count(to_sctx(p.e[1].ctx), SIB_RX_DROP_QPN), 2);
	inbox_unmap(&m);
	pair_close(&p);
}

/*
 * A connected QP takes packets from its peer only (DESIGN principle 6,
 * docs/threat-model.md): a third context of the same uid, with its own
 * pair ring into the receiver, forges a SEND with the right DLID, QPN,
 * P_Key and the expected PSN, from the peer's SLID and SGID (what it could
 * learn), from other SLIDs, with wrong GRHs, and an ACK into the
 * requester: every one is dropped as foreign (the ring names its sender,
 * softibd says who that is), and the real connection goes on.  Before pair
 * rings the perfect forgery was taken (issue 15).
 */
static void forged_from_non_peer(bool global)
{
	struct conn_opts o = default_opts;
	struct pair p;
	struct inbox_map m, m0;
	struct iba_pkt h = { 0 };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;
	struct ibv_sge sge;
	union ibv_gid g0, g1;
	struct sib_context *c0, *c1;
	uint64_t foreign0, foreign1, end;
	int n = 0;

	o.global = global;
	pair_open(&p, 1, &o, &o);
	c0 = to_sctx(p.e[0].ctx);
	c1 = to_sctx(p.e[1].ctx);
	foreign0 = sib_rx_drop_count(c0, SIB_RX_DROP_FOREIGN);
	foreign1 = sib_rx_drop_count(c1, SIB_RX_DROP_FOREIGN);
	inbox_map(&m, p.e[1].qp->qp_num);
	inbox_map(&m0, p.e[0].qp->qp_num);
	assert_int_equal(ibv_query_gid(p.e[0].ctx, 1, 0, &g0), 0);
	assert_int_equal(ibv_query_gid(p.e[1].ctx, 1, 0, &g1), 0);
	assert_int_equal(ibv_query_qp(p.e[1].qp, &qa, IBV_QP_RQ_PSN, &qia), 0);
	post_recv(&p.e[1], 7, 0, 64);

	/* The peer's packet, exactly as softib0 would send it. */
	h.lrh.lnh = global ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL;
	h.lrh.dlid = p.e[1].lid;
	h.lrh.slid = p.e[0].lid;
	h.grh.ipver = IBA_GRH_IPVER;
	h.grh.nxthdr = IBA_GRH_NXTHDR_IBA;
	h.grh.hoplmt = 1;
	memcpy(h.grh.sgid, g0.raw, 16);
	memcpy(h.grh.dgid, g1.raw, 16);
	h.bth.opcode = IBA_OPC_SEND_ONLY;
	h.bth.pkey = 0xffff;
	h.bth.dqpn = p.e[1].qp->qp_num;
	h.bth.psn = qa.rq_psn;
	h.bth.ackreq = 1;
	inject(&m, &h, "forged", 6);
	n++;
	/* From another real port (softib1's own LID), and from nowhere. */
	struct iba_pkt f = h;
	f.lrh.slid = p.e[1].lid;
	inject(&m, &f, "forged", 6);
	f.lrh.slid = 0x1234;
	inject(&m, &f, "forged", 6);
	n += 2;
	/* The GRH: another SGID, or its presence not as the path says. */
	f = h;
	f.grh.sgid[15] ^= 0x5a;
	f.lrh.lnh = IBA_LNH_GLOBAL;
	inject(&m, &f, "forged", 6);
	n++;
	/* An ACK of everything into the requester. */
	f = h;
	f.lrh.dlid = p.e[0].lid;
	f.lrh.slid = p.e[1].lid;
	memcpy(f.grh.sgid, g1.raw, 16);
	memcpy(f.grh.dgid, g0.raw, 16);
	f.bth.opcode = IBA_OPC_ACKNOWLEDGE;
	f.bth.dqpn = p.e[0].qp->qp_num;
	f.bth.ackreq = 0;
	f.aeth.syndrome = 0x1f;
	f.aeth.msn = 100;
	inject(&m0, &f, "", 0);
	end = now_ms() + 5000;
	while (sib_rx_drop_count(c1, SIB_RX_DROP_FOREIGN) < foreign1 + (uint64_t)n ||
	       sib_rx_drop_count(c0, SIB_RX_DROP_FOREIGN) < foreign0 + 1) {
		assert_int_equal(ibv_poll_cq(p.e[1].cq, 1, &wc), 0); /* nothing delivered */
		if (now_ms() > end)
			fail_msg("foreign drops %llu at the responder (want %d), %llu at the requester",
				 (unsigned long long)(sib_rx_drop_count(c1, SIB_RX_DROP_FOREIGN) - foreign1), n,
				 (unsigned long long)(sib_rx_drop_count(c0, SIB_RX_DROP_FOREIGN) - foreign0));
	}
	expect_no_completion(p.e[1].cq, 20);
	expect_no_completion(p.e[0].cq, 20);

	/* The real connection carries on, and the receive got the real data. */
	memcpy(p.e[0].buf, "real", 4);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 4, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 4);
	assert_memory_equal(p.e[1].buf, "real", 4);
	assert_int_equal(qp_state(p.e[0].qp), IBV_QPS_RTS);
	assert_int_equal(qp_state(p.e[1].qp), IBV_QPS_RTS);
	assert_int_equal(sib_rx_drop_count(c1, SIB_RX_DROP_FOREIGN), foreign1 + (uint64_t)n);
	assert_int_equal(sib_rx_drop_count(c0, SIB_RX_DROP_FOREIGN), foreign0 + 1);

	inbox_unmap(&m0);
	inbox_unmap(&m);
	pair_close(&p);
}

static void test_forged_non_peer_lid(void **state)
{
	forged_from_non_peer(false);
}

static void test_forged_non_peer_global(void **state)
{
	forged_from_non_peer(true);
}

/* Key bytes are unpredictable: the first R_Key of fresh contexts differs
 * (8 all equal: 2^-56 by chance), and successive keys are no sequence. */
static void test_keys_unpredictable(void **state)
{
	uint8_t first[8], seq[16];
	uint8_t buf[64];
	int same = 0, step1 = 0;

	for (int i = 0; i < 8; i++) {
		struct ibv_context *ctx = ibv_open_device(find_device("softib0"));
		struct ibv_pd *pd;
		struct ibv_mr *mr;

		assert_non_null(ctx);
		pd = ibv_alloc_pd(ctx);
		assert_non_null(pd);
		mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		assert_non_null(mr);
		first[i] = mr->rkey & 0xff;
		if (i == 0) {
			for (int j = 0; j < 16; j++) {
				struct ibv_mr *m2 = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

				assert_non_null(m2);
				seq[j] = m2->lkey & 0xff;
				assert_int_equal(ibv_dereg_mr(m2), 0);
			}
		}
		assert_int_equal(ibv_dereg_mr(mr), 0);
		assert_int_equal(ibv_dealloc_pd(pd), 0);
		assert_int_equal(ibv_close_device(ctx), 0);
	}
	for (int i = 1; i < 8; i++)
		same += first[i] == first[0];
	for (int j = 1; j < 16; j++)
		step1 += (uint8_t)(seq[j - 1] + 1) == seq[j];
	assert_true(same < 7);
	assert_true(step1 < 8);
}

/*
 * The responder's error states, one row each: a request from the peer's
 * path that breaks one rule.  Class B (PSN ahead, duplicate) leaves the QP
 * working; the others NAK and move it to ERR, and the receive WQE in use
 * completes with the class's status (transport.c's table), or flushes.
 */
struct resp_case {
	const char *what;
	uint8_t opcode;
	int32_t psn_delta;             /* from the expected PSN */
	uint32_t paylen;
	bool first_before;             /* a full SEND_FIRST goes first (at ePSN) */
	uint32_t dmalen;               /* RETH / AtomicETH */
	uint32_t rwqe_len;
	bool rwqe_bad_lkey;
	enum ibv_qp_state state;       /* the responder QP afterwards */
	int status;                    /* its RWQE's completion; -1: untouched */
};

static const struct resp_case resp_cases[] = {
	{ "PSN ahead (class B)", IBA_OPC_SEND_ONLY, 5, 8, false, 0, 64, false, IBV_QPS_RTS, -1 },
	{ "duplicate (C9-105)", IBA_OPC_SEND_ONLY, -1, 8, false, 0, 64, false, IBV_QPS_RTS, -1 },
	{ "MIDDLE without FIRST", IBA_OPC_SEND_MIDDLE, 0, 1024, false, 0, 4096, false, IBV_QPS_ERR,
	  IBV_WC_WR_FLUSH_ERR },
	{ "ONLY inside a message", IBA_OPC_SEND_ONLY, 1, 8, true, 0, 4096, false, IBV_QPS_ERR,
	  IBV_WC_REM_INV_REQ_ERR },
	{ "FIRST shorter than the MTU", IBA_OPC_SEND_FIRST, 0, 10, false, 0, 4096, false, IBV_QPS_ERR,
	  IBV_WC_REM_INV_REQ_ERR },
	{ "SEND longer than the RWQE", IBA_OPC_SEND_ONLY, 0, 100, false, 0, 64, false, IBV_QPS_ERR,
	  IBV_WC_LOC_LEN_ERR },
	{ "atomic (not enabled)", IBA_OPC_COMPARE_SWAP, 0, 0, false, 8, 64, false, IBV_QPS_ERR,
	  IBV_WC_WR_FLUSH_ERR },
	{ "READ DMALen over the limit", IBA_OPC_RDMA_READ_REQUEST, 0, 0, false, 0x80000000u, 64, false,
	  IBV_QPS_ERR, IBV_WC_WR_FLUSH_ERR },
	{ "RWQE with a bad L_Key", IBA_OPC_SEND_ONLY, 0, 8, false, 0, 64, true, IBV_QPS_ERR,
	  IBV_WC_LOC_PROT_ERR },
};

static void test_responder_errors(void **state)
{
	static uint8_t payload[1024];

	for (size_t i = 0; i < sizeof(resp_cases) / sizeof(resp_cases[0]); i++) {
		const struct resp_case *c = &resp_cases[i];
		struct ibv_sge rsge, sge;
		struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &rsge, .num_sge = 1 }, *bad;
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qia;
		struct iba_pkt h = { 0 };
		struct inbox_map m;
		struct ibv_wc wc;
		struct pair p;

		pair_open(&p, 1, NULL, NULL);
		inbox_map_peer(&m, p.e[0].ctx, p.e[1].qp->qp_num);
		rsge = (struct ibv_sge){ (uintptr_t)p.e[1].buf, c->rwqe_len,
					 p.e[1].mr->lkey ^ (c->rwqe_bad_lkey ? 0x5a : 0) };
		assert_int_equal(ibv_post_recv(p.e[1].qp, &rwr, &bad), 0);
		assert_int_equal(ibv_query_qp(p.e[1].qp, &qa, IBV_QP_RQ_PSN, &qia), 0);
		h.lrh.lnh = IBA_LNH_LOCAL;
		h.lrh.dlid = p.e[1].lid;
		h.lrh.slid = p.e[0].lid;
		h.bth.pkey = 0xffff;
		h.bth.dqpn = p.e[1].qp->qp_num;
		h.bth.ackreq = 1;
		if (c->first_before) {
			h.bth.opcode = IBA_OPC_SEND_FIRST;
			h.bth.psn = qa.rq_psn;
			inject(&m, &h, payload, 1024);
		}
		h.bth.opcode = c->opcode;
		h.bth.psn = (qa.rq_psn + (uint32_t)c->psn_delta) & IBA_PSN_MASK;
		h.reth.va = (uintptr_t)p.e[1].buf;
		h.reth.rkey = p.e[1].mr->rkey;
		h.reth.dmalen = c->dmalen;
		h.atomic.va = (uintptr_t)p.e[1].buf;
		h.atomic.rkey = p.e[1].mr->rkey;
		inject(&m, &h, payload, c->paylen);

		if (c->status < 0) {
			expect_no_completion(p.e[1].cq, 50);
			/* The RWQE is still there for the real sender. */
			sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf, 16, p.e[0].mr->lkey };
			assert_int_equal(post_send(&p.e[0], IBV_WR_SEND, 2, &sge, 1, 0, 0, 0, 0), 0);
			poll_one(p.e[0].cq, &wc, 5000);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
		}
		poll_one(p.e[1].cq, &wc, 5000);
		if (wc.wr_id != 9 || (int)wc.status != (c->status < 0 ? IBV_WC_SUCCESS : c->status))
			fail_msg("%s: RWQE wr_id %llu status %s", c->what, (unsigned long long)wc.wr_id,
				 ibv_wc_status_str(wc.status));
		if (qp_state(p.e[1].qp) != c->state)
			fail_msg("%s: responder QP in state %d", c->what, qp_state(p.e[1].qp));
		assert_int_equal(qp_state(p.e[0].qp), IBV_QPS_RTS);
		inbox_unmap(&m);
		pair_close(&p);
	}
}

/* Idle contexts with connected QPs sleep: no measurable CPU. */
/* CPU seconds this process uses while its main thread sleeps `ms`. */
static double cpu_used_sleeping(long ms)
{
	struct timespec t0, t1;
	struct timespec nap = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	nanosleep(&nap, NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

static void test_idle_uses_no_cpu(void **state)
{
	struct pair p;
	double used;

	pair_open(&p, 1, NULL, NULL);
	post_recv(&p.e[0], 1, 0, 64);
	post_recv(&p.e[1], 1, 0, 64);
	nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	used = cpu_used_sleeping(500);
	/* Two engine threads spinning would use ~1 s of CPU here. */
	if (used > 0.05)
		fail_msg("idle contexts used %.3f s of CPU in 0.5 s", used);
	pair_close(&p);
}

/*
 * Engines that have just served traffic spin a bounded time (at most
 * 50 us, engine.c) and then sleep: right after a burst of WRITEs and READs
 * served by each side's engine (the other side polls), the idle contexts
 * use next to no CPU.  An engine that kept spinning would use ~0.35-0.5 s
 * here (checked by hand with the bounds removed); on a machine with no
 * spare CPU the engines do not spin at all and the bound holds trivially.
 */
static void test_idle_after_burst(void **state)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_sge sge;
	double used;

	pair_open(&p, 1, NULL, NULL);
	for (int i = 0; i < 2000; i++) {
		struct end *src = &p.e[i & 1], *dst = &p.e[!(i & 1)];
		enum ibv_wr_opcode op = i & 2 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;

		sge = (struct ibv_sge){ (uintptr_t)src->buf + 8 * (i & 63), 8, src->mr->lkey };
		assert_int_equal(post_send(src, op, (uint64_t)i, &sge, 1, 0,
					   (uintptr_t)dst->buf + 4096 + 8 * (i & 63), dst->mr->rkey, 0), 0);
		poll_one(src->cq, &wc, 5000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		/* The engine asks whether a CPU is spare at most every 1 ms:
		 * give it a fresh look for the last few WRITEs. */
		if (i >= 1990)
			nanosleep(&(struct timespec){ .tv_nsec = 2 * 1000 * 1000 }, NULL);
	}
	used = cpu_used_sleeping(500);
	if (used > 0.05)
		fail_msg("contexts used %.3f s of CPU in the 0.5 s after a burst", used);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_misuse_errno),
		cmocka_unit_test(test_send_recv_multi_sge_imm),
		cmocka_unit_test(test_inline_unsignaled),
		cmocka_unit_test(test_rdma_write_read),
		cmocka_unit_test(test_backpressure_large),
		cmocka_unit_test(test_remote_access_error),
		cmocka_unit_test(test_local_protection_error),
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_retry_exceeded),
		cmocka_unit_test(test_flush_on_error_and_reset),
		cmocka_unit_test(test_completion_channel),
		cmocka_unit_test(test_read_then_send_ordering),
		cmocka_unit_test(test_local_error_completes_in_order),
		cmocka_unit_test(test_wr_api_and_cq_ex),
		cmocka_unit_test(test_sqd_drained_event),
		cmocka_unit_test(test_notify_solicited),
		cmocka_unit_test(test_rkey_other_pd),
		cmocka_unit_test(test_timer_fires_while_app_sleeps),
		cmocka_unit_test(test_malformed_packets),
		cmocka_unit_test(test_forged_non_peer_lid),
		cmocka_unit_test(test_responder_errors),
		cmocka_unit_test(test_forged_non_peer_global),
		cmocka_unit_test(test_keys_unpredictable),
		cmocka_unit_test(test_idle_uses_no_cpu),
		cmocka_unit_test(test_idle_after_burst),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
