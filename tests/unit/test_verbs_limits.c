/* SPDX-License-Identifier: MIT */
/*
 * The limits ibv_query_device reports are what a context can create
 * (issue 14 item 6, hca.h "Limits", docs/transport.md "Limits"), through
 * the built library against a private softibd: every max_* equals the one
 * constant the HCA enforces; PDs, MRs, CQs, SRQs, QPs, AHs and MWs are
 * created in a fresh context up to max_* and the next one fails with
 * ENOMEM (QPs: the last QP_TAIL of them, the budget they share filled with
 * PDs first, see test_qp_limit);
 * max_cqe, max_qp_wr, max_sge, max_srq_wr, max_srq_sge and max_qp_rd_atom
 * are taken and one more refused (EINVAL); atomic_cap is IBV_ATOMIC_HCA.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hca/hca.h"
#include "hca/mw.h"
#include "verbs_harness.h"

struct lim {
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static void lim_open(struct lim *l)
{
	memset(l, 0, sizeof(*l));
	l->ctx = ibv_open_device(find_device("softib0"));
	assert_non_null(l->ctx);
	assert_int_equal(ibv_query_device(l->ctx, &l->da), 0);
}

static void lim_close(struct lim *l)
{
	if (l->cq)
		assert_int_equal(ibv_destroy_cq(l->cq), 0);
	if (l->pd)
		assert_int_equal(ibv_dealloc_pd(l->pd), 0);
	assert_int_equal(ibv_close_device(l->ctx), 0);
}

/* Every max_* is the constant the code enforces, read from one place. */
static void test_reported(void **state)
{
	struct lim l;

	(void)state;
	lim_open(&l);
	assert_int_equal(l.da.max_pd, SIB_LIM_PD);
	assert_int_equal(l.da.max_pd, 65535);
	assert_int_equal(l.da.max_mr, SIB_LIM_MR);
	assert_int_equal(l.da.max_mr, 65534); /* was 1,048,575: ENOMEM at 65,534 */
	assert_int_equal(l.da.max_cq, SIB_LIM_CQ);
	assert_int_equal(l.da.max_srq, SIB_LIM_SRQ);
	assert_int_equal(l.da.max_qp, SIB_LIM_QP);
	assert_int_equal(l.da.max_ah, SIB_MAX_AH);
	assert_int_equal(l.da.max_mw, SIB_MW_MAX - 1);
	assert_int_equal(l.da.max_qp_wr, SIB_MAX_QP_WR);
	assert_int_equal(l.da.max_cqe, SIB_MAX_CQE);
	assert_int_equal(l.da.max_sge, SIB_MAX_SGE);
	assert_int_equal(l.da.max_sge_rd, SIB_MAX_SGE);
	assert_int_equal(l.da.max_srq_wr, SIB_MAX_SRQ_WR);
	assert_int_equal(l.da.max_srq_sge, SIB_MAX_SGE);
	assert_int_equal(l.da.max_qp_rd_atom, SIB_MAX_RD_ATOMIC);
	assert_int_equal(l.da.max_res_rd_atom, SIB_MAX_RD_ATOMIC * SIB_LIM_QP);
	/* CPU atomics on the target memory: at least as strong as HCA
	 * (docs/transport.md "Atomics"), the value UCX takes */
	assert_int_equal(l.da.atomic_cap, IBV_ATOMIC_HCA);
	lim_close(&l);
}

/* The next object past a limit: NULL with ENOMEM. */
#define EXPECT_ENOMEM(call)                       \
	do {                                      \
		errno = 0;                        \
		assert_null(call);                \
		assert_int_equal(errno, ENOMEM);  \
	} while (0)

/* One kind of object up to its limit: how to make the i-th (in l, whose
 * PD is allocated first when pd is set) and destroy it, and which
 * attribute of ibv_query_device is its max (an int). */
struct kind {
	const char *what, *max_name;
	size_t max_off;
	bool pd;
	void *(*make)(struct lim *l, int i);
	int (*undo)(void *o);
};

static void *make_pd(struct lim *l, int i) { (void)i; return ibv_alloc_pd(l->ctx); }
static int undo_pd(void *o) { return ibv_dealloc_pd(o); }
static void *make_mr(struct lim *l, int i)
{
	static char buf[64];

	(void)i;
	return ibv_reg_mr(l->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
}
static int undo_mr(void *o) { return ibv_dereg_mr(o); }
static void *make_cq(struct lim *l, int i) { (void)i; return ibv_create_cq(l->ctx, 1, NULL, NULL, 0); }
static int undo_cq(void *o) { return ibv_destroy_cq(o); }
static void *make_srq(struct lim *l, int i)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };

	(void)i;
	return ibv_create_srq(l->pd, &sa);
}
static int undo_srq(void *o) { return ibv_destroy_srq(o); }
static void *make_ah(struct lim *l, int i)
{
	struct ibv_ah_attr aa = { .dlid = 1, .port_num = 1 };

	(void)i;
	return ibv_create_ah(l->pd, &aa);
}
static int undo_ah(void *o) { return ibv_destroy_ah(o); }
/* Both window types, alternating; the one past the limit is a type 1. */
static void *make_mw(struct lim *l, int i) { return ibv_alloc_mw(l->pd, i & 1 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1); }
static int undo_mw(void *o) { return ibv_dealloc_mw(o); }

#define KIND(w, m, p, k) { w, #m, offsetof(struct ibv_device_attr, m), p, make_##k, undo_##k }
static const struct kind k_pd = KIND("PD", max_pd, false, pd), k_mr = KIND("MR", max_mr, true, mr),
	k_cq = KIND("CQ", max_cq, false, cq), k_srq = KIND("SRQ", max_srq, true, srq),
	k_ah = KIND("AH", max_ah, true, ah), k_mw = KIND("MW", max_mw, true, mw);

/* A fresh context makes max of the kind (state), the next one is NULL
 * with ENOMEM (made as the first was), then all are destroyed. */
static void test_limit(void **state)
{
	const struct kind *k = *state;
	struct lim l;
	void **v;
	int max;

	lim_open(&l);
	if (k->pd) {
		l.pd = ibv_alloc_pd(l.ctx);
		assert_non_null(l.pd);
	}
	max = *(const int *)((const char *)&l.da + k->max_off);
	v = calloc((size_t)max, sizeof(*v));
	assert_non_null(v);
	for (int i = 0; i < max; i++) {
		v[i] = k->make(&l, i);
		if (!v[i])
			fail_msg("%s %d of %s %d: %s", k->what, i + 1, k->max_name, max, strerror(errno));
	}
	EXPECT_ENOMEM(k->make(&l, 0));
	for (int i = 0; i < max; i++)
		assert_int_equal(k->undo(v[i]), 0);
	free(v);
	lim_close(&l);
}

/*
 * QPs are not cheap to create by the 65,000 (the engine visits every QP of
 * a context on each pass), so the budget they share is filled with PDs
 * first: with max_qp - QP_TAIL of them, exactly QP_TAIL QPs are created and
 * the next is ENOMEM, which is where max_qp QPs alone end.
 */
#define QP_TAIL 64
static void test_qp_limit(void **state)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *v[QP_TAIL];
	struct ibv_pd **fill;
	struct lim l;
	int nfill;

	(void)state;
	lim_open(&l);
	l.pd = ibv_alloc_pd(l.ctx);
	l.cq = ibv_create_cq(l.ctx, 1, NULL, NULL, 0);
	assert_non_null(l.pd);
	assert_non_null(l.cq);
	qa.send_cq = qa.recv_cq = l.cq;
	nfill = l.da.max_qp - QP_TAIL;
	fill = calloc((size_t)nfill, sizeof(*fill));
	assert_non_null(fill);
	for (int i = 0; i < nfill; i++)
		assert_non_null(fill[i] = ibv_alloc_pd(l.ctx));
	for (int i = 0; i < QP_TAIL; i++) {
		v[i] = ibv_create_qp(l.pd, &qa);
		if (!v[i])
			fail_msg("QP %d of max_qp %d: %s", nfill + i + 1, l.da.max_qp, strerror(errno));
	}
	EXPECT_ENOMEM(ibv_create_qp(l.pd, &qa));
	for (int i = 0; i < QP_TAIL; i++)
		assert_int_equal(ibv_destroy_qp(v[i]), 0);
	for (int i = 0; i < nfill; i++)
		assert_int_equal(ibv_dealloc_pd(fill[i]), 0);
	free(fill);
	lim_close(&l);
}

/* Per-object limits: the maximum is taken, one more is EINVAL. */
static void test_object_sizes(void **state)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC };
	struct ibv_srq_init_attr sa = { 0 };
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct lim l;

	(void)state;
	lim_open(&l);
	l.pd = ibv_alloc_pd(l.ctx);
	assert_non_null(l.pd);
	cq = ibv_create_cq(l.ctx, l.da.max_cqe, NULL, NULL, 0);
	assert_non_null(cq);
	assert_true(cq->cqe >= l.da.max_cqe);
	errno = 0;
	assert_null(ibv_create_cq(l.ctx, l.da.max_cqe + 1, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);

	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = (uint32_t)l.da.max_qp_wr;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = (uint32_t)l.da.max_sge;
	qp = ibv_create_qp(l.pd, &qa);
	assert_non_null(qp);
	assert_true(qa.cap.max_send_wr >= (uint32_t)l.da.max_qp_wr);
	assert_true(qa.cap.max_send_sge >= (uint32_t)l.da.max_sge);
	at.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	at.max_rd_atomic = (uint8_t)l.da.max_qp_rd_atom;
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_MAX_QP_RD_ATOMIC), EINVAL); /* INIT: not here */
	assert_int_equal(ibv_destroy_qp(qp), 0);
	for (int k = 0; k < 2; k++) {
		qa.cap.max_send_wr = qa.cap.max_recv_wr = (uint32_t)l.da.max_qp_wr + (k == 0);
		qa.cap.max_send_sge = qa.cap.max_recv_sge = (uint32_t)l.da.max_sge + (k == 1);
		errno = 0;
		assert_null(ibv_create_qp(l.pd, &qa));
		assert_int_equal(errno, EINVAL);
	}

	sa.attr.max_wr = (uint32_t)l.da.max_srq_wr;
	sa.attr.max_sge = (uint32_t)l.da.max_srq_sge;
	srq = ibv_create_srq(l.pd, &sa);
	assert_non_null(srq);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	for (int k = 0; k < 2; k++) {
		sa.attr.max_wr = (uint32_t)l.da.max_srq_wr + (k == 0);
		sa.attr.max_sge = (uint32_t)l.da.max_srq_sge + (k == 1);
		errno = 0;
		assert_null(ibv_create_srq(l.pd, &sa));
		assert_int_equal(errno, EINVAL);
	}
	assert_int_equal(ibv_destroy_cq(cq), 0);
	lim_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reported),
		{ "test_pd_limit", test_limit, NULL, NULL, (void *)&k_pd },
		{ "test_mr_limit", test_limit, NULL, NULL, (void *)&k_mr },
		{ "test_cq_limit", test_limit, NULL, NULL, (void *)&k_cq },
		{ "test_srq_limit", test_limit, NULL, NULL, (void *)&k_srq },
		cmocka_unit_test(test_qp_limit),
		{ "test_ah_limit", test_limit, NULL, NULL, (void *)&k_ah },
		{ "test_mw_limit", test_limit, NULL, NULL, (void *)&k_mw },
		cmocka_unit_test(test_object_sizes),
	};

	return cmocka_run_group_tests(tests, start_daemon, stop_daemon);
}
