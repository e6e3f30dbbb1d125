/* SPDX-License-Identifier: MIT */
/*
 * The HCA's transport stages over a loopback link, with no verbs library
 * and no softibd: two device contexts on a fabric map and two inbox rings
 * in this process's memory, driven through the provider API (provider.h)
 * only.  Two RC QPs are connected and move a SEND, an RDMA WRITE and an
 * RDMA READ; completions and data are checked.  Links sib_hca and lower.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/sib_shm.h"
#include "hca/provider.h"
#include "link/ring.h"

#define NDEV 2
#define BUF  8192
#define QKEY 0

static struct sib_ring rings[NDEV];
static void *inbox_mem[NDEV];
static uint32_t next_handle = 1, next_qpn = 16;
static uint32_t qpn_of_handle[256];

/* ---- the host: what softibd would do ---- */

static int host_obj_create(uint32_t dev_handle, enum sib_obj_type type, uint32_t qp_type,
			   uint32_t *handle, uint32_t *qpn)
{
	*handle = next_handle++;
	if (type == SIB_OBJ_QP) {
		*qpn = next_qpn++;
		qpn_of_handle[*handle & 255] = *qpn;
		/* The QPN now routes to the creating context's inbox. */
		atomic_store(&sib_fabric->qp_owner[*qpn], SIB_QPO_MAKE(dev_handle, 1, dev_handle));
	}
	return 0;
}

static void host_obj_destroy(uint32_t handle)
{
	uint32_t qpn = qpn_of_handle[handle & 255];

	if (qpn)
		atomic_store(&sib_fabric->qp_owner[qpn], 0);
	qpn_of_handle[handle & 255] = 0;
}

static struct sib_ring *host_peer_ring(uint32_t inbox, uint32_t gen)
{
	return inbox < NDEV && gen == 1 ? &rings[inbox] : NULL;
}

static const struct sib_hca_host host = {
	.obj_create = host_obj_create,
	.obj_destroy = host_obj_destroy,
	.peer_ring = host_peer_ring,
};

/* ---- one side of the connection ---- */

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	uint16_t lid;
};

static struct side sides[NDEV];
static struct ibv_device *devices[NDEV]; /* never freed (as the library's) */

static void fabric_setup(void)
{
	sib_fabric = calloc(1, sizeof(*sib_fabric));
	assert_non_null(sib_fabric);
	sib_fabric->magic = SIB_SHM_MAGIC;
	sib_fabric->num_devices = NDEV;
	for (unsigned int i = 0; i < NDEV; i++) {
		struct sib_shm_device *d = &sib_fabric->devs[i];
		struct sib_shm_port *p = &d->ports[0];

		snprintf(d->name, sizeof(d->name), "loop%u", i);
		d->node_guid = 0x1000 + i;
		d->num_ports = 1;
		atomic_store(&d->gen, 1); /* registered (docs/events.md) */
		p->port_guid = 0x2000 + i;
		p->gid_prefix = 0xfe80000000000000ull;
		p->lid = (uint16_t)(1 + i);
		p->state = IBV_PORT_ACTIVE;
		p->max_mtu = p->active_mtu = IBV_MTU_4096;
		p->pkey[0] = 0xffff;
		atomic_store(&sib_fabric->lid_map[p->lid], SIB_LIDM_MAKE(i, 1));
		atomic_store(&sib_fabric->inboxes[i].gen, 1);
		inbox_mem[i] = calloc(1, SIB_INBOX_BYTES);
		assert_non_null(inbox_mem[i]);
		sib_ring_attach(&rings[i], inbox_mem[i]);
		sides[i].lid = p->lid;
	}
	sib_hca_set_host(&host);
}

static int setup(void **state)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;

	fabric_setup();
	for (unsigned int i = 0; i < NDEV; i++) {
		struct side *s = &sides[i];
		struct sib_hca_attach at = { .dev_handle = i, .inbox_idx = i, .inbox_gen = 1,
					     .inbox_base = inbox_mem[i] };
		struct ibv_device *dev = devices[i] ? devices[i] : sib_hca_device_ops.alloc_device(i, 1);
		struct ibv_qp_init_attr qa = { 0 };

		assert_non_null(dev);
		devices[i] = dev;
		s->ctx = sib_hca_device_ops.alloc_context(dev, &at);
		assert_non_null(s->ctx);
		s->pd = ops->alloc_pd(s->ctx);
		assert_non_null(s->pd);
		s->buf = calloc(1, BUF);
		assert_non_null(s->buf);
		s->mr = ops->reg_mr(s->pd, s->buf, BUF, (uintptr_t)s->buf,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		assert_non_null(s->mr);
		s->cq = ops->create_cq(s->ctx, 64, NULL, 0);
		assert_non_null(s->cq);
		qa.send_cq = qa.recv_cq = s->cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		s->qp = ops->create_qp(s->pd, &qa);
		assert_non_null(s->qp);
	}
	/* RESET -> INIT -> RTR -> RTS, each QP to the other (IBA 10.3.1). */
	for (unsigned int i = 0; i < NDEV; i++) {
		struct side *s = &sides[i], *peer = &sides[1 - i];
		struct ibv_qp_attr a = { 0 };

		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		assert_int_equal(ops->modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = peer->qp->qp_num;
		a.rq_psn = 100 + 1 - i;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.dlid = peer->lid;
		a.ah_attr.port_num = 1;
		assert_int_equal(ops->modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = 100 + i;
		a.max_rd_atomic = 1;
		assert_int_equal(ops->modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
						IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						IBV_QP_MAX_QP_RD_ATOMIC), 0);
	}
	return 0;
}

static int teardown(void **state)
{
	const struct sib_hca_ops *ops = &sib_hca_ops;

	for (unsigned int i = 0; i < NDEV; i++) {
		struct side *s = &sides[i];

		assert_int_equal(ops->destroy_qp(s->qp), 0);
		assert_int_equal(ops->destroy_cq(s->cq), 0);
		assert_int_equal(ops->dereg_mr(s->mr), 0);
		assert_int_equal(ops->dealloc_pd(s->pd), 0);
		ops->free_context(s->ctx);
		free(s->buf);
	}
	for (unsigned int i = 0; i < NDEV; i++)
		free(inbox_mem[i]);
	free(sib_fabric);
	sib_fabric = NULL;
	return 0;
}

/* Poll side s's CQ (which also drives its engine) for one completion. */
static struct ibv_wc poll_one(struct side *s)
{
	struct timespec t0, t;
	struct ibv_wc wc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = sib_hca_ops.poll_cq(s->cq, 1, &wc);

		assert_true(n >= 0);
		if (n == 1)
			return wc;
		/* Drive the peer too: nobody else polls it. */
		(void)sib_hca_ops.poll_cq(sides[s == &sides[0]].cq, 0, &wc);
		clock_gettime(CLOCK_MONOTONIC, &t);
		assert_true(t.tv_sec - t0.tv_sec < 10); /* bounded wait */
	}
}

static void post_send(struct side *s, enum ibv_wr_opcode op, uint64_t off, uint32_t len,
		      uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(sib_hca_ops.post_send(s->qp, &wr, &bad), 0);
}

static void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void test_send(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_sge sge = { .addr = (uintptr_t)b->buf, .length = 4096, .lkey = b->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
	struct ibv_wc wc;

	memset(b->buf, 0, BUF);
	fill(a->buf, 3000, 1);
	assert_int_equal(sib_hca_ops.post_recv(b->qp, &rwr, &bad), 0);
	post_send(a, IBV_WR_SEND, 0, 3000, 0, 0, 1);  /* 3 packets at MTU 1024 */
	wc = poll_one(a);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(wc.wr_id, 1);
	wc = poll_one(b);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(wc.qp_num, b->qp->qp_num);
	assert_memory_equal(a->buf, b->buf, 3000);
}

static void test_rdma_write(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_wc wc;

	memset(b->buf, 0, BUF);
	fill(a->buf, 5000, 3);
	post_send(a, IBV_WR_RDMA_WRITE, 0, 5000, (uintptr_t)b->buf + 100, b->mr->rkey, 2);
	wc = poll_one(a);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(wc.wr_id, 2);
	assert_memory_equal(a->buf, b->buf + 100, 5000);
	/* No receive completion for a WRITE without immediate. */
	assert_int_equal(sib_hca_ops.poll_cq(b->cq, 1, &wc), 0);
}

static void test_rdma_read(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_wc wc;

	memset(a->buf, 0, BUF);
	fill(b->buf, 6000, 9);
	post_send(a, IBV_WR_RDMA_READ, 1000, 6000, (uintptr_t)b->buf, b->mr->rkey, 3);
	wc = poll_one(a);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.byte_len, 6000);
	assert_memory_equal(a->buf + 1000, b->buf, 6000);
}

static void test_bad_rkey(void **state)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_wc wc;

	/* A key byte that does not match: the responder NAKs (IBA 9.7.5.2.x),
	 * the requester completes with a remote access error. */
	post_send(a, IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)b->buf, b->mr->rkey ^ 0x1, 4);
	wc = poll_one(a);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send),
		cmocka_unit_test(test_rdma_write),
		cmocka_unit_test(test_rdma_read),
		cmocka_unit_test(test_bad_rkey),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
