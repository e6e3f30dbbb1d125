/* SPDX-License-Identifier: MIT */
/*
 * Error episodes of the traffic test (traffic.h): an RC pair stops posting
 * and drains (its windows invalidated), then one endpoint posts a READ with
 * a bad R_Key followed by 0 to 3 zero-length WRITEs.  IBA 9.9 class C: the
 * READ completes with IBV_WC_REM_ACCESS_ERR, the WRITEs and every receive
 * WQE of both QPs with IBV_WC_WR_FLUSH_ERR (both QPs are in ERR).  Some of
 * those flushes are polled, then both QPs go to RESET, which takes the rest
 * out of the CQs (a completion of theirs polled later fails the run, as
 * mlx5_cq_clean does it), and the pair is connected again and resumes its
 * streams, on CQs that other QPs share all along.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "traffic.h"

bool tr_episode_start(struct tr_world *w, struct tr_ep *e)
{
	struct tr_ep *b;

	if (e->kind != TR_RC || e->episode || e->quiesce)
		return false;
	b = &w->ep[e->peer];
	/* SRQs are not flushed by a QP's error (IBA 10.2.9.5): own RQs only */
	if (b->quiesce || w->rq[e->rq].srq || w->rq[b->rq].srq)
		return false;
	if (tr_ep_done_posting(w, e) && tr_ep_done_posting(w, b))
		return false;
	e->episode = TR_EP_QUIESCE;
	e->quiesce = b->quiesce = true;
	return true;
}

static bool drained(struct tr_world *w, struct tr_ep *e, struct tr_ep *b, struct tr_rng *r)
{
	/* windows: invalidated first, since a type 2 window lives on a QP */
	for (int i = 0; i < 2; i++) {
		struct tr_ep *x = i ? b : e;

		if (x->mw.state == TR_MW_BOUND)
			x->mw.state = TR_MW_DRAINING;
		if (x->mw.state == TR_MW_DRAINING)
			tr_mw_step(w, x, r);
	}
	/* An unsignaled WR last: a signaled zero-length WRITE completes it. */
	for (int i = 0; i < 2; i++) {
		struct tr_ep *x = i ? b : e;

		if (x->posted != x->retired && !x->sq[(x->posted - 1) % x->sq_depth].signaled) {
			struct tr_wr wr;

			memset(&wr, 0, sizeof(wr));
			wr.op = IBV_WR_RDMA_WRITE;
			wr.rkey = x->tgt_rkey[0];
			wr.dst_rq = wr.dst_ep = wr.mw_of = -1;
			tr_post_extra(w, x, &wr, r);
		}
	}
	return e->posted == e->retired && b->posted == b->retired && !w->rq[b->rq].from[e->id].n &&
	       !w->rq[e->rq].from[b->id].n && e->mw.state == TR_MW_FREE && b->mw.state == TR_MW_FREE;
}

static void post_bad(struct tr_world *w, struct tr_ep *e, struct tr_rng *r)
{
	struct tr_wr wr;
	uint32_t k = tr_rng_below(r, 4);

	memset(&wr, 0, sizeof(wr));
	wr.op = IBV_WR_RDMA_READ;
	wr.len = 8;
	wr.nsge = 1;
	wr.sge[0].length = 8;
	wr.sge[0].lkey = tr_lkey(w, e->ctx, r);
	wr.rkey = e->tgt_rkey[0] ^ 0x5a; /* the MR's index, a wrong key byte */
	wr.dst_rq = wr.dst_ep = wr.mw_of = -1;
	wr.status = IBV_WC_REM_ACCESS_ERR;
	if (!tr_post_extra(w, e, &wr, r))
		tr_fail(w, "endpoint %d's error episode: could not post the bad READ", e->id);
	for (uint32_t i = 0; i < k && e->posted - e->retired < e->sq_depth; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.op = IBV_WR_RDMA_WRITE; /* zero-length: no bytes either way */
		wr.rkey = e->tgt_rkey[1];
		wr.dst_rq = wr.dst_ep = wr.mw_of = -1;
		wr.status = IBV_WC_WR_FLUSH_ERR;
		if (!tr_post_extra(w, e, &wr, r))
			break;
	}
}

static void reset(struct tr_world *w, struct tr_ep *x)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct tr_rq *q = &w->rq[x->rq];
	int rc = ibv_modify_qp(x->qp, &a, IBV_QP_STATE);

	if (rc)
		tr_fail(w, "endpoint %d: modify to RESET: %s", x->id, strerror(rc));
	/* What was not polled is gone with the QP's completions: only the
	 * episode's own WRs, none of which brings data back (drained first). */
	while (x->retired != x->posted)
		tr_retire(w, x);
	for (uint32_t s = 0; s < q->depth; s++)
		if (q->rwqe[s].busy)
			tr_slot_release(q, s);
	q->reserved = 0;
	x->in_err = false;
}

void tr_episode_step(struct tr_world *w, struct tr_ep *e, struct tr_rng *r)
{
	struct tr_ep *b = &w->ep[e->peer];

	switch (e->episode) {
	case TR_EP_QUIESCE:
		if (!drained(w, e, b, r))
			return;
		e->in_err = b->in_err = true;
		e->bad_seen = false;
		post_bad(w, e, r);
		e->episode = TR_EP_ERRORING;
		return;
	case TR_EP_ERRORING:
		/* Reset once the bad READ's error came, now or after some more
		 * flushes were polled. */
		if (!e->bad_seen || tr_rng_pct(r, 50))
			return;
		reset(w, e);
		reset(w, b);
		tr_pair_reconnect(w, e, b, r);
		e->quiesce = b->quiesce = false;
		e->episode = TR_EP_NONE;
		e->episodes++;
		w->episodes++;
		w->last_progress_ms = tr_now_ms();
		return;
	default:
		return;
	}
}
