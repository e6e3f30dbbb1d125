/* SPDX-License-Identifier: MIT */
/*
 * Conformance details through the built library against a private softibd
 * (issue 5 item 6): comp_vector checked against num_comp_vectors;
 * ibv_rereg_mr with rdma-core's return codes and errno, each flag's effect
 * on the wire, and a WRITE in flight across a rereg; device and port
 * capability flags that are true, with the P_Key violation counter that
 * one of them promises.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hca/hca.h"
#include "verbs_harness.h"

#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

/* ---- comp_vector ---- */

/* One vector per configured CPU (UCX 1.13 passes a CPU id); at or past it,
 * EINVAL as the kernel's ib_uverbs_create_cq gives. */
static void test_comp_vector(void **state)
{
	struct ibv_context *ctx = ibv_open_device(find_device("softib0"));
	struct ibv_cq_init_attr_ex ax = { .cqe = 16 };
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	int n;

	assert_non_null(ctx);
	n = ctx->num_comp_vectors;
	assert_int_equal(n, sysconf(_SC_NPROCESSORS_CONF));
	cq = ibv_create_cq(ctx, 16, NULL, NULL, n - 1);
	assert_non_null(cq);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	for (int v = 0; v < 2; v++) {
		errno = 0;
		assert_null(ibv_create_cq(ctx, 16, NULL, NULL, v ? -1 : n));
		assert_int_equal(errno, EINVAL);
	}
	ax.comp_vector = (uint32_t)n - 1;
	cqx = ibv_create_cq_ex(ctx, &ax);
	assert_non_null(cqx);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	ax.comp_vector = (uint32_t)n;
	errno = 0;
	assert_null(ibv_create_cq_ex(ctx, &ax));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* ---- ibv_rereg_mr ---- */

static void expect_rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t len,
			 int access, int want_rc, int want_errno)
{
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, flags, pd, addr, len, access), want_rc);
	assert_int_equal(errno, want_errno);
}

/* An RDMA WRITE of len bytes from e[0]'s buffer to raddr/rkey; its status. */
static enum ibv_wc_status write_to(struct pair *p, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)p->e[0].buf, len, p->e[0].mr->lkey };
	struct ibv_wc wc;

	assert_int_equal(post_send(&p->e[0], IBV_WR_RDMA_WRITE, 9, &sge, 1, IBV_SEND_SIGNALED,
				   raddr, rkey, 0), 0);
	poll_one(p->e[0].cq, &wc, 5000);
	return wc.status;
}

/* A connected pair, and an MR on softib1 (4 KiB at *b, local and remote
 * write) that a first WRITE reaches. */
static struct ibv_mr *pair_with_mr(struct pair *p, uint8_t **b)
{
	struct ibv_mr *mr;

	pair_open(p, 1, NULL, NULL);
	*b = p->e[1].buf + 65536;
	mr = ibv_reg_mr(p->e[1].pd, *b, 4096, RW);
	assert_non_null(mr);
	assert_int_equal(write_to(p, (uintptr_t)*b, mr->rkey, 64), IBV_WC_SUCCESS);
	return mr;
}

/* libibverbs' own checks (IBV_REREG_MR_ERR_INPUT, EINVAL), the kernel's
 * (IBV_REREG_MR_ERR_CMD, errno its error), the MR unchanged after each;
 * CHANGE_PD moves the PD's use count. */
static void test_rereg_inputs(void **state)
{
	struct end e, o;
	struct ibv_pd *pd2;
	struct ibv_mr *mr;
	uint32_t lkey;

	end_open(&e, "softib0", 1, 0);
	end_open(&o, "softib1", 1, 0);
	mr = ibv_reg_mr(e.pd, e.buf, 4096, RW);
	assert_non_null(mr);
	lkey = mr->lkey;

	expect_rereg(mr, 1 << 3, NULL, NULL, 0, 0, IBV_REREG_MR_ERR_INPUT, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 64, 0, IBV_REREG_MR_ERR_INPUT, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, e.buf, 0, 0, IBV_REREG_MR_ERR_INPUT, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_PD, e.pd, NULL, 0, IBV_ACCESS_LOCAL_WRITE,
		     IBV_REREG_MR_ERR_INPUT, EINVAL);
	/* What the kernel refuses: no flags, bad access, no ODP, a foreign
	 * PD, a range that wraps. */
	expect_rereg(mr, 0, NULL, NULL, 0, 0, IBV_REREG_MR_ERR_CMD, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE,
		     IBV_REREG_MR_ERR_CMD, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 1 << 30, IBV_REREG_MR_ERR_CMD, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, IBV_REREG_MR_ERR_CMD, EOPNOTSUPP);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_PD, o.pd, NULL, 0, 0, IBV_REREG_MR_ERR_CMD, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0, IBV_REREG_MR_ERR_CMD, EINVAL);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, (void *)(uintptr_t)-4096, 8192, 0,
		     IBV_REREG_MR_ERR_CMD, EINVAL);
	assert_ptr_equal(mr->addr, e.buf);
	assert_int_equal(mr->length, 4096);
	assert_ptr_equal(mr->pd, e.pd);
	assert_int_equal(mr->lkey, lkey);

	/* CHANGE_PD: the MR now keeps the new PD, not the old, from going. */
	pd2 = ibv_alloc_pd(e.ctx);
	assert_non_null(pd2);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0, 0, 0);
	assert_ptr_equal(mr->pd, pd2);
	assert_int_equal(ibv_dealloc_pd(pd2), EBUSY);
	/* Back, with every flag at once. */
	expect_rereg(mr, IBV_REREG_MR_FLAGS_SUPPORTED, e.pd, e.buf + 8192, 100, IBV_ACCESS_LOCAL_WRITE, 0, 0);
	assert_ptr_equal(mr->pd, e.pd);
	assert_ptr_equal(mr->addr, e.buf + 8192);
	assert_int_equal(mr->length, 100);
	/* Keys stay (as rxe, and mlx5 when it rewrites the mkey in place). */
	assert_int_equal(mr->lkey, lkey);
	assert_int_equal(mr->rkey, lkey);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	end_close(&o);
	end_close(&e);
}

/* CHANGE_TRANSLATION: the R_Key now opens the new range only; the data of
 * a WRITE lands there, the old range is closed, and the local side sees
 * the new range through the same L_Key. */
static void test_rereg_translation(void **state)
{
	struct pair p;
	struct ibv_mr *mr;
	uint8_t *old, *new;
	struct ibv_sge sge;
	struct ibv_wc wc;

	pair_open(&p, 1, NULL, NULL);
	old = p.e[1].buf + 65536;
	new = p.e[1].buf + 3 * 65536;
	mr = ibv_reg_mr(p.e[1].pd, old, 4096, RW);
	assert_non_null(mr);
	memset(p.e[0].buf, 0xa5, 4096);
	assert_int_equal(write_to(&p, (uintptr_t)old, mr->rkey, 64), IBV_WC_SUCCESS);
	assert_int_equal(old[0], 0xa5);
	memset(old, 0, 4096);

	expect_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, new, 8192, 0, 0, 0);
	assert_ptr_equal(mr->addr, new);
	assert_int_equal(mr->length, 8192);
	memset(p.e[0].buf, 0x3c, 8192);
	assert_int_equal(write_to(&p, (uintptr_t)new, mr->rkey, 8192), IBV_WC_SUCCESS);
	assert_memory_equal(new, p.e[0].buf, 8192);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(old[i], 0);

	/* Locally: a SEND from the new range with the same L_Key. */
	post_recv(&p.e[0], 1, 0, 64);
	sge = (struct ibv_sge){ (uintptr_t)new, 64, mr->lkey };
	assert_int_equal(post_send(&p.e[1], IBV_WR_SEND, 2, &sge, 1, IBV_SEND_SIGNALED, 0, 0, 0), 0);
	poll_one(p.e[1].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	/* The old range is closed. */
	assert_int_equal(write_to(&p, (uintptr_t)old, mr->rkey, 64), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(old[0], 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	pair_close(&p);
}

/* CHANGE_ACCESS: REMOTE_READ granted, REMOTE_WRITE taken away. */
static void test_rereg_access(void **state)
{
	struct pair p;
	struct ibv_mr *mr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint8_t *b;

	mr = pair_with_mr(&p, &b);

	expect_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0, 0);
	memset(b, 0x77, 64);
	sge = (struct ibv_sge){ (uintptr_t)p.e[0].buf + 4096, 64, p.e[0].mr->lkey };
	assert_int_equal(post_send(&p.e[0], IBV_WR_RDMA_READ, 3, &sge, 1, IBV_SEND_SIGNALED,
				   (uintptr_t)b, mr->rkey, 0), 0);
	poll_one(p.e[0].cq, &wc, 5000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(p.e[0].buf + 4096, b, 64);

	memset(p.e[0].buf, 0x11, 64);
	assert_int_equal(write_to(&p, (uintptr_t)b, mr->rkey, 64), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(b[0], 0x77);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	pair_close(&p);
}

/* An RC QP of end e on pd, on e's CQ. */
static struct ibv_qp *rc_qp(struct end *e, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = e->cq, .recv_cq = e->cq,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	assert_non_null(qp);
	return qp;
}

/* CHANGE_PD: QPs of the old PD fail the PD check, QPs of the new one pass;
 * the use count moves with the MR. */
static void test_rereg_pd(void **state)
{
	struct pair p;
	struct ibv_pd *pd2;
	struct ibv_mr *mr;
	uint8_t *b;

	mr = pair_with_mr(&p, &b);
	pd2 = ibv_alloc_pd(p.e[1].ctx);
	assert_non_null(pd2);
	expect_rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0, 0, 0);
	assert_int_equal(ibv_dealloc_pd(pd2), EBUSY);
	memset(b, 0, 64);
	memset(p.e[0].buf, 0x22, 64);
	assert_int_equal(write_to(&p, (uintptr_t)b, mr->rkey, 64), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(b[0], 0);

	/* The control: new QPs, softib1's on pd2, get through with the same R_Key. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ibv_destroy_qp(p.e[i].qp), 0);
		p.e[i].qp = rc_qp(&p.e[i], i ? pd2 : p.e[i].pd);
	}
	qp_connect(&p.e[0], &p.e[1], &default_opts);
	qp_connect(&p.e[1], &p.e[0], &default_opts);
	assert_int_equal(write_to(&p, (uintptr_t)b, mr->rkey, 64), IBV_WC_SUCCESS);
	assert_int_equal(b[0], 0x22);

	assert_int_equal(ibv_destroy_qp(p.e[1].qp), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	p.e[1].qp = rc_qp(&p.e[1], p.e[1].pd);
	pair_close(&p);
}

/*
 * A multi-packet WRITE in flight across a rereg: its first packet lands in
 * the old range, then the MR moves; the next packet must not be written
 * anywhere (old range, or new range at the old offset): the responder
 * forgot its cached MR and NAKs with an R_Key violation.  The packets are
 * injected from the peer's path with the expected PSNs.
 */
static void test_rereg_write_in_flight(void **state)
{
	struct pair p;
	struct inbox_map m;
	struct iba_pkt h = { 0 };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *old, *new, payload[1024];
	uint64_t end;

	pair_open(&p, 1, NULL, NULL);
	old = p.e[1].buf + 65536;
	new = p.e[1].buf + 3 * 65536;
	mr = ibv_reg_mr(p.e[1].pd, old, 8192, RW);
	assert_non_null(mr);
	inbox_map_peer(&m, p.e[0].ctx, p.e[1].qp->qp_num);
	assert_int_equal(ibv_query_qp(p.e[1].qp, &qa, IBV_QP_RQ_PSN, &qia), 0);
	memset(payload, 0x5e, sizeof(payload));

	h.lrh.lnh = IBA_LNH_LOCAL;
	h.lrh.dlid = p.e[1].lid;
	h.lrh.slid = p.e[0].lid;
	h.bth.opcode = IBA_OPC_RDMA_WRITE_FIRST;
	h.bth.pkey = 0xffff;
	h.bth.dqpn = p.e[1].qp->qp_num;
	h.bth.psn = qa.rq_psn;
	h.reth.va = (uintptr_t)old;
	h.reth.rkey = mr->rkey;
	h.reth.dmalen = 2048;
	inject(&m, &h, payload, sizeof(payload));
	end = now_ms() + 5000;
	while (old[0] != 0x5e) {
		ibv_poll_cq(p.e[1].cq, 1, &wc);
		if (now_ms() > end)
			fail_msg("the first packet never landed");
	}
	expect_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, new, 8192, 0, 0, 0);
	h.bth.opcode = IBA_OPC_RDMA_WRITE_LAST;
	h.bth.psn = iba_psn_add(qa.rq_psn, 1);
	inject(&m, &h, payload, sizeof(payload));
	end = now_ms() + 5000;
	while (qp_state(p.e[1].qp) != IBV_QPS_ERR) {
		ibv_poll_cq(p.e[1].cq, 1, &wc);
		if (now_ms() > end)
			fail_msg("the responder took the packet after the rereg");
	}
	for (int i = 1024; i < 8192; i++)
		assert_int_equal(old[i], 0);
	for (int i = 0; i < 8192; i++)
		assert_int_equal(new[i], 0);
	inbox_unmap(&m);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	pair_close(&p);
}

/* ---- capability flags and the counters they promise ---- */

static void test_caps_and_bad_pkey_counter(void **state)
{
	struct pair p;
	struct ibv_device_attr da;
	struct ibv_port_attr pa0, pa;
	struct inbox_map m;
	struct iba_pkt h = { 0 };
	struct ibv_wc wc;
	struct sib_context *c1;
	uint64_t drops0, end;

	pair_open(&p, 1, NULL, NULL);
	assert_int_equal(ibv_query_device(p.e[1].ctx, &da), 0);
	assert_true(da.device_cap_flags & IBV_DEVICE_BAD_PKEY_CNTR);
	assert_true(da.device_cap_flags & IBV_DEVICE_BAD_QKEY_CNTR);
	assert_int_equal(ibv_query_port(p.e[1].ctx, 1, &pa0), 0);
	assert_false(pa0.port_cap_flags & IBV_PORT_CM_SUP);
	assert_true(pa0.port_cap_flags & IBV_PORT_SYS_IMAGE_GUID_SUP);

	c1 = to_sctx(p.e[1].ctx);
	drops0 = sib_rx_drop_count(c1, SIB_RX_DROP_PKEY);
	inbox_map(&m, p.e[1].qp->qp_num);
	h.lrh.lnh = IBA_LNH_LOCAL;
	h.lrh.dlid = p.e[1].lid;
	h.lrh.slid = p.e[0].lid;
	h.bth.opcode = IBA_OPC_SEND_ONLY;
	h.bth.pkey = 0x8123; /* a full member of a partition the port is not in */
	h.bth.dqpn = p.e[1].qp->qp_num;
	inject(&m, &h, "key", 3);
	end = now_ms() + 5000;
	while (sib_rx_drop_count(c1, SIB_RX_DROP_PKEY) == drops0) {
		assert_int_equal(ibv_poll_cq(p.e[1].cq, 1, &wc), 0);
		if (now_ms() > end)
			fail_msg("the packet with a wrong P_Key was not dropped");
	}
	assert_int_equal(ibv_query_port(p.e[1].ctx, 1, &pa), 0);
	assert_int_equal(pa.bad_pkey_cntr, pa0.bad_pkey_cntr + 1);
	assert_int_equal(pa.qkey_viol_cntr, pa0.qkey_viol_cntr);
	/* Counted on the port that dropped it only. */
	assert_int_equal(ibv_query_port(p.e[0].ctx, 1, &pa), 0);
	assert_int_equal(pa.bad_pkey_cntr, 0);
	inbox_unmap(&m);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comp_vector),
		cmocka_unit_test(test_rereg_inputs),
		cmocka_unit_test(test_rereg_translation),
		cmocka_unit_test(test_rereg_access),
		cmocka_unit_test(test_rereg_pd),
		cmocka_unit_test(test_rereg_write_in_flight),
		cmocka_unit_test(test_caps_and_bad_pkey_counter),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
