/* SPDX-License-Identifier: MIT */
/*
 * The traffic test's fabric (traffic.h): three contexts (softib0, softib1
 * and a second context on softib0), each with a PD, a completion channel,
 * CQs of both kinds, two MRs over one memory area, and the endpoints and
 * receive queues of the transports asked for, connected through the verbs
 * API.  The shapes (path MTU, queue depths, signaling, message sizes,
 * which CQ) are drawn from the seed.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "traffic.h"

#define MEM_SIZE   (96u << 20)
#define ARENA_SIZE (1u << 20)
#define TGT_SIZE   (64u << 10)
#define CQ_DEPTH   8192

static const char *const dev_name[TR_MAX_CTX] = { "softib0", "softib1", "softib0" };

#define CHECK(cond, ...)                                                                          \
	do {                                                                                      \
		if (!(cond))                                                                      \
			tr_fail(w, __VA_ARGS__);                                                  \
	} while (0)

static void *mem_take(struct tr_world *w, int c, size_t len)
{
	struct tr_ctx *x = &w->ctx[c];
	size_t off = (x->mem_used + 63) & ~(size_t)63;

	CHECK(off + len <= x->mem_size, "setup: context %d memory exhausted", c);
	x->mem_used = off + len;
	return x->mem + off;
}

uint32_t tr_lkey(struct tr_world *w, int ctx, struct tr_rng *r)
{
	return w->ctx[ctx].mr[tr_rng_below(r, 2)]->lkey;
}

static struct ibv_device *find_dev(struct tr_world *w, const char *name)
{
	static struct ibv_device **list;
	int n;

	if (!list)
		list = ibv_get_device_list(&n);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	tr_fail(w, "device %s not found", name);
}

static void ctx_open(struct tr_world *w, int c)
{
	struct tr_ctx *x = &w->ctx[c];
	struct ibv_port_attr pa;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;

	x->ctx = ibv_open_device(find_dev(w, dev_name[c]));
	CHECK(x->ctx, "ibv_open_device(%s): %s", dev_name[c], strerror(errno));
	x->pd = ibv_alloc_pd(x->ctx);
	CHECK(x->pd, "ibv_alloc_pd: %s", strerror(errno));
	x->ch = ibv_create_comp_channel(x->ctx);
	CHECK(x->ch, "ibv_create_comp_channel: %s", strerror(errno));
	CHECK(!ibv_query_port(x->ctx, 1, &pa), "ibv_query_port");
	x->lid = pa.lid;
	CHECK(!ibv_query_gid(x->ctx, 1, 0, &x->gid0), "ibv_query_gid");
	/* CQ 0: plain with events; 1: extended with events; 2: plain, polled only. */
	x->ncq = 3;
	for (int i = 0; i < x->ncq; i++) {
		struct tr_cq *q = &x->cq[i];

		q->ctx = c;
		q->ch = i < 2 ? x->ch : NULL;
		if (i == 1) {
			struct ibv_cq_init_attr_ex ca = {
				.cqe = CQ_DEPTH, .channel = q->ch,
				.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
					    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
					    IBV_WC_EX_WITH_DLID_PATH_BITS,
			};

			q->cqx = ibv_create_cq_ex(x->ctx, &ca);
			CHECK(q->cqx, "ibv_create_cq_ex: %s", strerror(errno));
			q->cq = ibv_cq_ex_to_cq(q->cqx);
		} else {
			q->cq = ibv_create_cq(x->ctx, CQ_DEPTH, NULL, q->ch, 0);
			CHECK(q->cq, "ibv_create_cq: %s", strerror(errno));
		}
	}
	x->mem_size = MEM_SIZE;
	x->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(x->mem != MAP_FAILED, "mmap: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		x->mr[i] = ibv_reg_mr(x->pd, x->mem, MEM_SIZE, access);
		CHECK(x->mr[i], "ibv_reg_mr: %s", strerror(errno));
	}
}

static struct tr_cq *pick_cq(struct tr_world *w, int c, struct tr_rng *r)
{
	return &w->ctx[c].cq[tr_rng_below(r, (uint32_t)w->ctx[c].ncq)];
}

static const uint32_t mtus[] = { 256, 512, 1024, 2048, 4096 };

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

/* A receive queue on context c: the QP's own (qp set later) or an SRQ. */
static struct tr_rq *rq_new(struct tr_world *w, int c, struct tr_rng *r, uint32_t cap, bool srq,
			    struct ibv_xrcd *xrcd)
{
	struct tr_rq *q = &w->rq[w->nrq];
	static const uint32_t depths[] = { 4, 8, 16, 32, 64 };

	CHECK(w->nrq < TR_MAX_RQ, "setup: too many receive queues");
	q->id = w->nrq++;
	q->ctx = c;
	q->cq = pick_cq(w, c, r);
	q->depth = depths[tr_rng_below(r, 5)];
	q->max_sge = (const uint32_t[]){ 1, 2, 3, 4, TR_MAX_SGE }[tr_rng_below(r, 5)];
	q->cap = cap;
	/* Room for the SGEs' gaps and a tail beyond the capacity. */
	q->slot_size = (cap + 64u * TR_MAX_SGE + 256u + 63u) & ~63u;
	q->rwqe = calloc(q->depth, sizeof(*q->rwqe));
	tr_rng_seed(&q->rng, w->o.seed, 0x100 + (uint64_t)q->id);
	bool own_mrs = tr_rng_pct(r, 40);
	struct tr_rng lr; /* its own stream: the other draws stay those of older seeds */

	tr_rng_seed(&lr, w->o.seed, 0x300 + (uint64_t)q->id);
	if (own_mrs && tr_rng_pct(&lr, 50)) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);

		q->late_len = ((size_t)q->depth * q->slot_size + page - 1) & ~(page - 1);
		q->late_map = mmap(NULL, q->late_len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(q->late_map != MAP_FAILED, "mmap: %s", strerror(errno));
		q->slots = q->late_map;
	} else {
		q->slots = mem_take(w, c, (size_t)q->depth * q->slot_size);
	}
	if (own_mrs) {
		q->slot_mr = calloc(q->depth, sizeof(*q->slot_mr));
		for (uint32_t i = 0; i < q->depth; i++) {
			q->slot_mr[i] = ibv_reg_mr(w->ctx[c].pd, q->slots + (size_t)i * q->slot_size,
						   q->slot_size - TR_LOOSE, IBV_ACCESS_LOCAL_WRITE);
			CHECK(q->slot_mr[i], "ibv_reg_mr(slot): %s", strerror(errno));
		}
	}
	if (srq) {
		struct ibv_srq_init_attr_ex sa = {
			.attr = { .max_wr = q->depth, .max_sge = q->max_sge },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_BASIC,
			.pd = w->ctx[c].pd,
			.cq = q->cq->cq,
		};

		if (xrcd) {
			sa.srq_type = IBV_SRQT_XRC;
			sa.xrcd = xrcd;
			sa.comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
		}
		q->srq = ibv_create_srq_ex(w->ctx[c].ctx, &sa);
		CHECK(q->srq, "ibv_create_srq_ex: %s", strerror(errno));
		if (xrcd)
			CHECK(!ibv_get_srq_num(q->srq, &q->srqn), "ibv_get_srq_num");
	}
	return q;
}

static uint64_t send_ops(enum tr_kind k)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

	if (k == TR_UD)
		return ops;
	ops |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	if (k == TR_UC)
		return ops;
	ops |= IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	if (k == TR_RC)
		ops |= IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV;
	return ops;
}

static struct tr_ep *ep_new(struct tr_world *w, enum tr_kind kind, int c, struct tr_rng *r,
			    struct tr_rq *rq)
{
	struct tr_ep *e = &w->ep[w->nep];
	static const uint32_t depths[] = { 2, 4, 8, 16, 32, 64 };
	struct ibv_qp_init_attr_ex ia = { 0 };

	CHECK(w->nep < TR_MAX_EP, "setup: too many endpoints");
	e->id = w->nep++;
	e->kind = kind;
	e->ctx = c;
	e->peer = -1;
	e->rq = rq ? rq->id : -1;
	e->scq = pick_cq(w, c, r);
	e->sq_depth = depths[tr_rng_below(r, 6)];
	e->sig_all = tr_rng_pct(r, 15);
	e->max_sge = (const uint32_t[]){ 1, 2, 3, 4, TR_MAX_SGE }[tr_rng_below(r, 5)];
	e->mtu = kind == TR_UD ? 4096 : mtus[tr_rng_below(r, 5)];
	e->rnr = kind == TR_RC && tr_rng_pct(r, 50);
	e->no_wr_api = tr_rng_pct(r, 10);
	e->arena_size = ARENA_SIZE;
	e->arena = mem_take(w, c, ARENA_SIZE);
	e->sq = calloc(e->sq_depth, sizeof(*e->sq));
	tr_rng_seed(&e->rng, w->o.seed, 0x200 + (uint64_t)e->id);
	tr_rng_seed(&e->krng, w->o.seed, 0x300 + (uint64_t)e->id);

	ia.qp_type = kind == TR_RC ? IBV_QPT_RC : kind == TR_UC ? IBV_QPT_UC :
		     kind == TR_UD ? IBV_QPT_UD : IBV_QPT_XRC_SEND;
	ia.send_cq = e->scq->cq;
	ia.recv_cq = rq ? rq->cq->cq : e->scq->cq;
	ia.srq = rq ? rq->srq : NULL;
	ia.cap.max_send_wr = e->sq_depth;
	ia.cap.max_send_sge = e->max_sge;
	ia.cap.max_inline_data = TR_MAX_INLINE;
	if (rq && !rq->srq) {
		ia.cap.max_recv_wr = rq->depth;
		ia.cap.max_recv_sge = rq->max_sge;
	}
	ia.sq_sig_all = e->sig_all;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.pd = w->ctx[c].pd;
	ia.send_ops_flags = send_ops(kind);
	e->qp = ibv_create_qp_ex(w->ctx[c].ctx, &ia);
	CHECK(e->qp, "ibv_create_qp_ex(%s): %s", kind == TR_RC ? "RC" : kind == TR_UC ? "UC" :
	      kind == TR_UD ? "UD" : "XRC_SEND", strerror(errno));
	e->qx = ibv_qp_to_qp_ex(e->qp);
	if (rq && !rq->srq)
		rq->qp = e->qp;
	return e;
}

static void modify(struct tr_world *w, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int rc = ibv_modify_qp(qp, a, mask);

	CHECK(!rc, "ibv_modify_qp(%s) of QP 0x%x: %s", what, qp->qp_num, strerror(rc));
}

/* RESET to RTS (RTR only for an XRC_RECV QP) towards a peer QP at ctx pc. */
static void connect_qp(struct tr_world *w, struct ibv_qp *qp, enum tr_kind k, uint32_t mtu,
		       uint32_t dqpn, int pc, struct tr_rng *r, bool recv_only, bool global, uint32_t sq_psn,
		       uint32_t rq_psn, uint8_t max_rd, uint8_t max_dest_rd)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (k == TR_UD) {
		a.qkey = TR_QKEY;
		modify(w, qp, &a, mask | IBV_QP_QKEY, "INIT");
		a.qp_state = IBV_QPS_RTR;
		modify(w, qp, &a, IBV_QP_STATE, "RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = sq_psn;
		modify(w, qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
		return;
	}
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
			    (k == TR_UC ? 0 : IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	modify(w, qp, &a, mask | IBV_QP_ACCESS_FLAGS, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu_enum(mtu);
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.ah_attr.dlid = w->ctx[pc].lid;
	a.ah_attr.port_num = 1;
	if (global) { /* a GRH on the path, as pyverbs' tests connect */
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.grh.dgid = w->ctx[pc].gid0;
	}
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (k != TR_UC) {
		a.max_dest_rd_atomic = max_dest_rd;
		a.min_rnr_timer = (uint8_t)(1 + tr_rng_below(r, 3)); /* 0.01 to 0.03 ms */
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	modify(w, qp, &a, mask, "RTR");
	if (recv_only)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (k != TR_UC) {
		/* 14: 67 ms before a retransmission, 0.5 s before retry exceeded */
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7; /* retry for ever: RNR here is on purpose */
		a.max_rd_atomic = max_rd;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	modify(w, qp, &a, mask, "RTS");
}

static uint32_t msg_max(struct tr_rng *r, enum tr_kind k, uint32_t mtu)
{
	static const uint32_t caps[] = { 3 * 256, 9000, 16384, 65536 };

	uint32_t c = caps[tr_rng_below(r, 4)];

	if (k == TR_UD)
		return mtu;
	return c > 3 * mtu ? c : 3 * mtu;
}

/* Two connected RC or UC endpoints on contexts a and b, each receiving on
 * its own RQ, or on srq_b at b's side when given. */
static void pair_new(struct tr_world *w, enum tr_kind k, int a, int b, struct tr_rng *r, struct tr_rq *srq_b)
{
	uint32_t cap = 65536;                  /* the largest message either may send */
	struct tr_rq *ra = rq_new(w, a, r, cap, false, NULL);
	struct tr_rq *rb = srq_b ? srq_b : rq_new(w, b, r, cap, false, NULL);
	struct tr_ep *ea = ep_new(w, k, a, r, ra);
	struct tr_ep *eb = ep_new(w, k, b, r, rb);
	uint32_t mtu = ea->mtu;                /* one path MTU for both directions */
	bool global = tr_rng_pct(r, 30);       /* and a GRH both ways or neither */

	eb->mtu = mtu;
	ea->peer = eb->id;
	eb->peer = ea->id;
	ea->peer_ctx = b;
	eb->peer_ctx = a;
	ea->max_len = msg_max(r, k, mtu);
	eb->max_len = msg_max(r, k, mtu);
	/* PSNs anywhere in the 24-bit space, so that they wrap in long runs */
	uint32_t psn_a = tr_rng_next(r) & 0xffffff, psn_b = tr_rng_next(r) & 0xffffff;

	/* A requester keeps at most as many READs and atomics outstanding
	 * as its responder has resources for (else: NAK invalid request). */
	uint8_t dest_a = (uint8_t)(1 + tr_rng_below(r, 16)), dest_b = (uint8_t)(1 + tr_rng_below(r, 16));
	uint8_t rd_a = (uint8_t)(1 + tr_rng_below(r, dest_b)), rd_b = (uint8_t)(1 + tr_rng_below(r, dest_a));

	connect_qp(w, ea->qp, k, mtu, eb->qp->qp_num, b, r, false, global, psn_a, psn_b, rd_a, dest_a);
	connect_qp(w, eb->qp, k, mtu, ea->qp->qp_num, a, r, false, global, psn_b, psn_a, rd_b, dest_b);
	ea->global = eb->global = global;
	ea->max_rd = rd_a;
	ea->max_dest_rd = dest_a;
	eb->max_rd = rd_b;
	eb->max_dest_rd = dest_b;
}

static void target_new(struct tr_world *w, struct tr_ep *e, int pc)
{
	e->tgt_size = TGT_SIZE;
	e->tgt_mem = mem_take(w, pc, TGT_SIZE);
	e->tgt_model = malloc(TGT_SIZE);
	tr_rng_fill(&e->rng, e->tgt_model, TGT_SIZE);
	memcpy(e->tgt_mem, e->tgt_model, TGT_SIZE);
	e->tgt_rkey[0] = w->ctx[pc].mr[0]->rkey;
	e->tgt_rkey[1] = w->ctx[pc].mr[1]->rkey;
}

static void ud_setup(struct tr_world *w, struct tr_rng *r, int first, bool srq)
{
	for (int i = first; i < w->nep; i++) {
		struct tr_ep *s = &w->ep[i];

		if (s->kind != TR_UD)
			continue;
		for (int j = first; j < w->nep; j++) {
			struct tr_ep *d = &w->ep[j];
			struct ibv_ah_attr aa = { .dlid = w->ctx[d->ctx].lid, .port_num = 1 };

			if (d->kind != TR_UD)
				continue;
			if (tr_rng_pct(r, 30)) {
				aa.is_global = 1;
				aa.grh.hop_limit = 1;
				aa.grh.dgid = w->ctx[d->ctx].gid0;
			}
			s->ah[j] = ibv_create_ah(w->ctx[s->ctx].pd, &aa);
			CHECK(s->ah[j], "ibv_create_ah: %s", strerror(errno));
			s->ah_global[j] = aa.is_global;
		}
	}
	(void)srq;
}

void tr_world_open(struct tr_world *w)
{
	struct tr_rng r;
	unsigned int t = w->o.transports;

	tr_rng_seed(&r, w->o.seed, 1);
	w->nctx = TR_MAX_CTX;
	for (int c = 0; c < w->nctx; c++)
		ctx_open(w, c);
	if (t & TR_T_RC) {
		pair_new(w, TR_RC, 0, 1, &r, NULL);
		pair_new(w, TR_RC, 0, 2, &r, NULL);   /* two contexts of one device */
		pair_new(w, TR_RC, 1, 1, &r, NULL);   /* loopback in one context */
	}
	if (t & TR_T_UC) {
		pair_new(w, TR_UC, 0, 1, &r, NULL);
		pair_new(w, TR_UC, 2, 1, &r, NULL);
	}
	if (t & TR_T_SRQ) {
		struct tr_rq *s = rq_new(w, 1, &r, 65536, true, NULL);

		pair_new(w, TR_RC, 0, 1, &r, s);       /* two QPs of softib1 on one SRQ */
		pair_new(w, TR_RC, 2, 1, &r, s);
	}
	if (t & (TR_T_UD | TR_T_SRQ)) {
		int first = w->nep;

		if (t & TR_T_UD)
			for (int c = 0; c < w->nctx; c++)
				ep_new(w, TR_UD, c, &r, rq_new(w, c, &r, TR_UD_GRH + 4096, false, NULL));
		if (t & TR_T_SRQ)
			ep_new(w, TR_UD, 1, &r, rq_new(w, 1, &r, TR_UD_GRH + 4096, true, NULL));
		for (int i = first; i < w->nep; i++) {
			w->ep[i].max_len = w->ep[i].mtu;
			connect_qp(w, w->ep[i].qp, TR_UD, 0, 0, 0, &r, false, false, tr_rng_next(&r) & 0xffffff, 0,
				   0, 0);
		}
		ud_setup(w, &r, first, t & TR_T_SRQ);
	}
	if (t & TR_T_XRC) {
		/* softib1 holds the domain, two XRC SRQs and one XRC_RECV QP per
		 * XRC_SEND QP (on contexts 0 and 2). */
		struct tr_ctx *x = &w->ctx[1];
		struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
						 .fd = -1, .oflags = O_CREAT };
		int srqs[2];

		x->xrcd = ibv_open_xrcd(x->ctx, &xa);
		CHECK(x->xrcd, "ibv_open_xrcd: %s", strerror(errno));
		for (int i = 0; i < 2; i++)
			srqs[i] = rq_new(w, 1, &r, 65536, true, x->xrcd)->id;
		for (int s = 0; s < 2; s++) {
			int c = s ? 2 : 0;
			struct tr_ep *e = ep_new(w, TR_XRC, c, &r, NULL);
			struct ibv_qp_init_attr_ex ta = {
				.qp_type = IBV_QPT_XRC_RECV,
				.comp_mask = IBV_QP_INIT_ATTR_XRCD,
				.xrcd = x->xrcd,
			};

			e->tgt = ibv_create_qp_ex(x->ctx, &ta);
			CHECK(e->tgt, "ibv_create_qp_ex(XRC_RECV): %s", strerror(errno));
			e->peer_ctx = 1;
			e->max_len = msg_max(&r, TR_XRC, e->mtu);
			e->nxrc_rq = 2;
			e->xrc_rq[0] = srqs[0];
			e->xrc_rq[1] = srqs[1];
			bool global = tr_rng_pct(&r, 30);
			uint32_t psn = tr_rng_next(&r) & 0xffffff;

			uint8_t dest = (uint8_t)(1 + tr_rng_below(&r, 16)), rd = (uint8_t)(1 + tr_rng_below(&r, dest));

			connect_qp(w, e->tgt, TR_XRC, e->mtu, e->qp->qp_num, c, &r, true, global, 0, psn, 0, dest);
			connect_qp(w, e->qp, TR_XRC, e->mtu, e->tgt->qp_num, 1, &r, false, global, psn, 0, rd, 1);
		}
	}
	for (int i = 0; i < w->nep; i++) {
		struct tr_ep *e = &w->ep[i];

		if (e->kind != TR_UD)
			target_new(w, e, e->peer_ctx);
		/* RC: a window over the target, in the peer's PD; one in three of type 1 */
		if (e->kind == TR_RC) {
			e->mw.mw = ibv_alloc_mw(w->ctx[e->peer_ctx].pd, i % 3 == 2 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
			CHECK(e->mw.mw, "ibv_alloc_mw: %s", strerror(errno));
			e->mw.rkey = e->mw.mw->rkey;
			e->has_mw = true;
		}
		if (w->o.verbose)
			fprintf(stderr, "traffic: ep %d %s ctx %d qpn 0x%x mtu %u sq %u sig_all %d max_len %u rnr %d rq %d\n",
				i, e->kind == TR_RC ? "RC" : e->kind == TR_UC ? "UC" : e->kind == TR_UD ? "UD" : "XRC",
				e->ctx, e->qp->qp_num, e->mtu, e->sq_depth, e->sig_all, e->max_len, e->rnr, e->rq);
	}
	for (int i = 0; i < w->nrq; i++) {
		struct tr_rq *q = &w->rq[i];

		/* Under faults, UC and UD lose messages (IBA allows it). */
		for (int j = 0; j < w->nep; j++)
			if (w->ep[j].rq == i && (w->ep[j].kind == TR_UC || w->ep[j].kind == TR_UD))
				q->lossy = w->o.faults;
		memset(q->slots, TR_CANARY, (size_t)q->depth * q->slot_size);
	}
}

void tr_rq_late_reg(struct tr_world *w, struct tr_rq *q)
{
	if (!q->late_map || q->late_mr)
		return;
	q->late_mr = ibv_reg_mr(w->ctx[q->ctx].pd, q->late_map, q->late_len,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(q->late_mr, "ibv_reg_mr(late): %s", strerror(errno));
	w->late_regs++;
}

void tr_pair_reconnect(struct tr_world *w, struct tr_ep *a, struct tr_ep *b, struct tr_rng *r)
{
	uint32_t psn_a = tr_rng_next(r) & 0xffffff, psn_b = tr_rng_next(r) & 0xffffff;
	enum tr_kind k = a->kind;

	connect_qp(w, a->qp, k, a->mtu, b->qp->qp_num, b->ctx, r, false, a->global, psn_a, psn_b, a->max_rd,
		   a->max_dest_rd);
	connect_qp(w, b->qp, k, b->mtu, a->qp->qp_num, a->ctx, r, false, b->global, psn_b, psn_a, b->max_rd,
		   b->max_dest_rd);
}

struct tr_ep *tr_ep_by_qpn(struct tr_world *w, uint32_t qpn)
{
	for (int i = 0; i < w->nep; i++)
		if (w->ep[i].qp->qp_num == qpn)
			return &w->ep[i];
	return NULL;
}

struct tr_ep *tr_ep_by_tgt_qpn(struct tr_world *w, uint32_t qpn)
{
	for (int i = 0; i < w->nep; i++)
		if (w->ep[i].tgt && w->ep[i].tgt->qp_num == qpn)
			return &w->ep[i];
	return NULL;
}

void tr_world_close(struct tr_world *w)
{
	for (int i = 0; i < w->nep; i++) {
		struct tr_ep *e = &w->ep[i];

		for (int j = 0; j < w->nep; j++)
			if (e->ah[j])
				CHECK(!ibv_destroy_ah(e->ah[j]), "ibv_destroy_ah");
		if (e->has_mw)
			CHECK(!ibv_dealloc_mw(e->mw.mw), "ibv_dealloc_mw");
		CHECK(!ibv_destroy_qp(e->qp), "ibv_destroy_qp");
		if (e->tgt)
			CHECK(!ibv_destroy_qp(e->tgt), "ibv_destroy_qp(XRC_RECV)");
		free(e->sq);
		free(e->tgt_model);
	}
	for (int i = 0; i < w->nrq; i++) {
		struct tr_rq *q = &w->rq[i];

		if (q->srq)
			CHECK(!ibv_destroy_srq(q->srq), "ibv_destroy_srq");
		for (uint32_t s = 0; q->slot_mr && s < q->depth; s++)
			CHECK(!ibv_dereg_mr(q->slot_mr[s]), "ibv_dereg_mr(slot)");
		free(q->slot_mr);
		if (q->late_mr)
			CHECK(!ibv_dereg_mr(q->late_mr), "ibv_dereg_mr(late)");
		if (q->late_map)
			munmap(q->late_map, q->late_len);
		for (int s = 0; s < TR_MAX_EP; s++) {
			for (struct tr_msg *m = q->from[s].head, *n; m; m = n) {
				n = m->next;
				free(m->data);
				free(m);
			}
			for (uint32_t i = 0; i < q->from[s].ndone && i < 16; i++) {
				free(q->from[s].done[i]->data);
				free(q->from[s].done[i]);
			}
		}
		free(q->rwqe);
	}
	for (int c = 0; c < w->nctx; c++) {
		struct tr_ctx *x = &w->ctx[c];

		if (x->xrcd)
			CHECK(!ibv_close_xrcd(x->xrcd), "ibv_close_xrcd");
		for (int i = 0; i < 2; i++)
			CHECK(!ibv_dereg_mr(x->mr[i]), "ibv_dereg_mr");
		for (int i = 0; i < x->ncq; i++)
			CHECK(!ibv_destroy_cq(x->cq[i].cq), "ibv_destroy_cq");
		CHECK(!ibv_destroy_comp_channel(x->ch), "ibv_destroy_comp_channel");
		CHECK(!ibv_dealloc_pd(x->pd), "ibv_dealloc_pd");
		CHECK(!ibv_close_device(x->ctx), "ibv_close_device");
		munmap(x->mem, x->mem_size);
	}
}
