/* SPDX-License-Identifier: MIT */
/*
 * What an endpoint posts next (traffic.h): each WR is drawn from the
 * endpoint's own stream (opcode, length across MTU boundaries, inline or
 * not, 0 to max_send_sge SGEs with gaps and zero lengths, keys, immediate,
 * signaled, fenced, solicited, the post list it belongs to and the post
 * API), so the WRs of a seed are the same on every run.  A WR waits,
 * unchanged, until it can go: room in the send queue and the local arena,
 * and a receive WQE promised at its destination unless the endpoint sends
 * into RNR on purpose.  At post the model takes its effect: the message a
 * receive queue must deliver, the target region's new bytes, the bytes a
 * READ must bring back and the original value an atomic must return.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "traffic.h"

#define BATCH_MAX 8

static const enum ibv_wr_opcode ops_rc[] = {
	IBV_WR_SEND, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
	IBV_WR_ATOMIC_FETCH_AND_ADD,
};
static const enum ibv_wr_opcode ops_uc[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
};
static const enum ibv_wr_opcode ops_ud[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM };

static bool is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_SEND_WITH_INV;
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static bool consumes_rwqe(enum ibv_wr_opcode op)
{
	return is_send(op) || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* A message length: empty, small, at a multiple of the MTU +-1, or any. */
static uint32_t draw_len(struct tr_rng *r, const struct tr_ep *e)
{
	uint32_t len;

	switch (tr_rng_below(r, 10)) {
	case 0:
		return 0;
	case 1: case 2: case 3:
		len = 1 + tr_rng_below(r, 64);
		break;
	case 4: case 5: case 6: {
		uint32_t k = 1 + tr_rng_below(r, 3);

		len = k * e->mtu + tr_rng_below(r, 3) - 1;
		break;
	}
	default:
		len = tr_rng_below(r, e->max_len + 1);
	}
	return len > e->max_len ? e->max_len : len;
}

#define SGE_NULL UINT64_MAX /* gen_next's mark: an empty SGE at address 0 */

/* Split len bytes over n SGEs (zero lengths allowed), gaps between them. */
static void draw_sges(struct tr_rng *r, struct tr_wr *wr, uint32_t len, int n)
{
	uint32_t left = len;

	wr->nsge = n;
	for (int i = 0; i < n; i++) {
		uint32_t l = i == n - 1 ? left : (tr_rng_pct(r, 20) ? 0 : tr_rng_below(r, left + 1));

		wr->sge[i].length = l;
		wr->sge[i].addr = tr_rng_below(r, 3) ? 0 : 1 + tr_rng_below(r, 64); /* the gap before it */
		/* An empty SGE at address 0 and any key, as UCX posts them. */
		if (!l && tr_rng_pct(r, 30))
			wr->sge[i].addr = SGE_NULL;
		left -= l;
	}
}

/* Draw the endpoint's next WR (its content only: where it lives in the
 * arena is decided at post). */
static void gen_next(struct tr_world *w, struct tr_ep *e)
{
	struct tr_rng *r = &e->rng;
	struct tr_wr *wr = &e->next;
	const enum ibv_wr_opcode *ops = e->kind == TR_UC ? ops_uc : e->kind == TR_UD ? ops_ud : ops_rc;
	uint32_t nops = e->kind == TR_UC ? 4 : e->kind == TR_UD ? 2 : (uint32_t)(sizeof(ops_rc) / sizeof(ops_rc[0]));
	uint32_t nsge;

	free(wr->expect);
	memset(wr, 0, sizeof(*wr));
	wr->seq = e->next_seq++;
	wr->op = ops[tr_rng_below(r, nops)];
	/* UC's last WR is a SEND: its arrival says every WRITE before it
	 * landed (UC completes a WRITE at the requester when it is sent). */
	if (e->kind == TR_UC && wr->seq + 1 == w->o.ops)
		wr->op = IBV_WR_SEND;
	wr->len = is_atomic(wr->op) ? 8 : draw_len(r, e);
	wr->inline_ = !is_atomic(wr->op) && wr->op != IBV_WR_RDMA_READ && wr->len <= TR_MAX_INLINE &&
		      tr_rng_pct(r, 35);
	/* Mostly 1 to 4 SGEs, now and then up to the QP's max_send_sge. */
	nsge = 1 + tr_rng_below(r, e->max_sge < 4 ? e->max_sge : 4);
	if (tr_rng_pct(r, 15))
		nsge = 1 + tr_rng_below(r, e->max_sge);
	if (is_atomic(wr->op))
		draw_sges(r, wr, 8, nsge < 2 ? (int)nsge : 2);
	else if (wr->len == 0)
		draw_sges(r, wr, 0, (int)tr_rng_below(r, 2));
	else
		draw_sges(r, wr, wr->len, (int)nsge);
	/* lkeys: either MR of the context (the arena is in both) */
	for (int i = 0; i < wr->nsge; i++)
		wr->sge[i].lkey = tr_lkey(w, e->ctx, r);
	wr->signaled = e->sig_all || tr_rng_pct(r, 40);
	wr->fence = tr_rng_pct(r, 10);
	wr->solicited = consumes_rwqe(wr->op) && tr_rng_pct(r, 20);
	wr->wr_api = !e->no_wr_api && tr_rng_pct(r, 50);
	wr->imm_be = (uint32_t)tr_rng_next(r);
	wr->rkey = e->tgt_rkey[tr_rng_below(r, 2)];
	if (is_atomic(wr->op)) {
		wr->roff = 8u * tr_rng_below(r, (uint32_t)(e->tgt_size / 8));
		/* A compare that sometimes matches: the model knows the value at post. */
		wr->compare_add = tr_rng_next(r);
		wr->swap = tr_rng_next(r);
	} else if (e->kind != TR_UD) {
		wr->roff = tr_rng_below(r, (uint32_t)(e->tgt_size - wr->len + 1));
	}
	wr->dst_rq = -1;
	wr->dst_ep = -1;
	if (e->kind == TR_UD) {
		/* any UD endpoint, this one included */
		int n = 0, pick;

		for (int i = 0; i < w->nep; i++)
			n += e->ah[i] != NULL;
		pick = (int)tr_rng_below(r, (uint32_t)n);
		for (int i = 0; i < w->nep; i++)
			if (e->ah[i] && pick-- == 0)
				wr->dst_ep = i;
		wr->dst_rq = w->ep[wr->dst_ep].rq;
	} else if (e->kind == TR_XRC) {
		wr->dst_rq = e->xrc_rq[tr_rng_below(r, (uint32_t)e->nxrc_rq)];
	} else if (consumes_rwqe(wr->op)) {
		wr->dst_rq = w->ep[e->peer].rq;
	}
	if (!consumes_rwqe(wr->op) && e->kind != TR_XRC)
		wr->dst_rq = -1;
	/* The payload (SENDs and WRITEs) or the operands, drawn now. */
	if (!is_atomic(wr->op) && wr->op != IBV_WR_RDMA_READ && wr->len) {
		wr->expect = malloc(wr->len);
		tr_rng_fill(r, wr->expect, wr->len);
	}
	e->have_next = true;
}

bool tr_ep_done_posting(const struct tr_world *w, const struct tr_ep *e)
{
	return e->stream_posted >= w->o.ops;
}

static size_t arena_need(const struct tr_wr *wr)
{
	size_t n = 0;

	if (wr->inline_)
		return 0;
	for (int i = 0; i < wr->nsge; i++)
		n += (wr->sge[i].addr == SGE_NULL ? 0 : wr->sge[i].addr) + wr->sge[i].length;
	return n + 8;
}

/* Can wr go now?  Room in the SQ (counting `extra` WRs already in the
 * list being built), the arena, and at its destination. */
static bool can_post(struct tr_world *w, struct tr_ep *e, const struct tr_wr *wr, uint32_t extra,
		     size_t arena_head)
{
	size_t need = arena_need(wr);

	if (e->posted + extra - e->retired >= e->sq_depth)
		return false;
	if (need) {
		size_t at = arena_head % e->arena_size;

		if (at + need > e->arena_size)
			arena_head += e->arena_size - at;
		if (arena_head + need - e->arena_tail > e->arena_size)
			return false;
	}
	if (wr->dst_rq >= 0 && consumes_rwqe(wr->op)) {
		struct tr_rq *q = &w->rq[wr->dst_rq];

		if (q->lossy)
			return q->posted > 0;
		if (!e->rnr && q->posted <= q->reserved)
			return false;
	}
	return true;
}

/* wr's effect on the model: the target region it writes, the READ or
 * atomic result it must bring back, the message its receiver must get. */
static void model_apply(struct tr_world *w, struct tr_ep *e, struct tr_wr *wr)
{
	if (wr->op == IBV_WR_RDMA_WRITE || wr->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		if (wr->len)
			memcpy(e->tgt_model + wr->roff, wr->expect, wr->len);
		if (e->kind == TR_UC && w->o.faults)
			e->tgt_unknown = true;
	} else if (wr->op == IBV_WR_RDMA_READ) {
		wr->expect = malloc(wr->len ? wr->len : 1);
		memcpy(wr->expect, e->tgt_model + wr->roff, wr->len);
	} else if (is_atomic(wr->op)) {
		uint64_t orig, nv;

		memcpy(&orig, e->tgt_model + wr->roff, 8);
		if (wr->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			nv = orig + wr->compare_add;
		else
			nv = orig == wr->compare_add ? wr->swap : orig;
		memcpy(e->tgt_model + wr->roff, &nv, 8);
		wr->expect = malloc(8);
		memcpy(wr->expect, &orig, 8);
	}
	if (wr->dst_rq >= 0 && consumes_rwqe(wr->op)) {
		struct tr_rq *q = &w->rq[wr->dst_rq];
		struct tr_msg *m = calloc(1, sizeof(*m));
		struct tr_fifo *f = &q->from[e->id];

		m->src_ep = e->id;
		m->seq = wr->seq;
		m->op = wr->op;
		m->len = wr->len;
		m->imm_be = wr->imm_be;
		m->solicited = wr->solicited;
		m->uc_write = wr->op == IBV_WR_RDMA_WRITE_WITH_IMM;
		m->inv = wr->op == IBV_WR_SEND_WITH_INV;
		if (!m->uc_write && wr->len) {
			m->data = malloc(wr->len);
			memcpy(m->data, wr->expect, wr->len);
		}
		if (f->tail)
			f->tail->next = m;
		else
			f->head = m;
		f->tail = m;
		f->n++;
		q->reserved++;
	}
}

/* Give wr its place: arena addresses (sources filled, sinks marked),
 * inline data in the scratch buffer, and apply its model effect. */
static void place(struct tr_world *w, struct tr_ep *e, struct tr_wr *wr, uint8_t *scratch)
{
	size_t need = arena_need(wr);
	uint8_t *base;
	uint32_t off = 0;

	if (need) {
		size_t at = e->arena_head % e->arena_size;

		if (at + need > e->arena_size)
			e->arena_head += e->arena_size - at;
		base = e->arena + e->arena_head % e->arena_size;
		e->arena_head += need;
	} else {
		base = scratch;
	}
	wr->arena_end = e->arena_head;
	if (need && (wr->op == IBV_WR_RDMA_READ || is_atomic(wr->op)))
		memset(base, TR_SINK, need); /* sinks and the gaps between them */
	for (int i = 0; i < wr->nsge; i++) {
		if (wr->sge[i].addr == SGE_NULL) {
			wr->sge[i].addr = 0;
			wr->sge[i].lkey = 0;
			continue;
		}
		base += wr->sge[i].addr; /* the gap drawn in gen_next */
		wr->sge[i].addr = (uintptr_t)base;
		if (wr->op == IBV_WR_RDMA_READ || is_atomic(wr->op))
			memset(base, TR_SINK, wr->sge[i].length);
		else if (wr->sge[i].length)
			memcpy(base, wr->expect + off, wr->sge[i].length);
		off += wr->sge[i].length;
		base += wr->sge[i].length;
	}
	/* A bound window names the target as well as the MR does. */
	if (e->has_mw && e->mw.state == TR_MW_BOUND && (wr->op == IBV_WR_RDMA_WRITE ||
	    wr->op == IBV_WR_RDMA_WRITE_WITH_IMM || wr->op == IBV_WR_RDMA_READ || is_atomic(wr->op)) &&
	    tr_rng_pct(&e->krng, 50)) {
		wr->rkey = e->mw.rkey;
		wr->uses_mw = true;
		e->mw.users++;
		e->mw.uses++;
	}
	/* IBA's relaxed ordering (9.5): a WRITE or an atomic after a READ of
	 * the same QP may change the memory before the READ's responses are
	 * read from it, unless it is fenced (IBV_SEND_FENCE waits for prior
	 * READs and atomics).  A WR that writes bytes an earlier READ, still
	 * possibly outstanding (one of the last sq_depth WRs), reads is fenced,
	 * and the model stays exact.  (Only the sequence decides: replayable.) */
	if (!(wr->seq & TR_WRID_EXTRA) && e->kind != TR_UD && wr->op != IBV_WR_RDMA_READ && !is_send(wr->op) &&
	    wr->len) {
		for (uint32_t k = 1; k <= e->sq_depth && k <= wr->seq; k++) {
			const __typeof__(e->hist[0]) *h = &e->hist[(wr->seq - k) % 64];

			if (h->read && h->roff < wr->roff + wr->len && wr->roff < h->roff + h->len)
				wr->fence = true;
		}
	}
	if (!(wr->seq & TR_WRID_EXTRA)) {
		e->hist[wr->seq % 64].read = wr->op == IBV_WR_RDMA_READ;
		e->hist[wr->seq % 64].roff = wr->roff;
		e->hist[wr->seq % 64].len = wr->len;
	}
	model_apply(w, e, wr);
	e->stats_op[wr->op & 15]++;
}

/* A window's access: the remote rights the WRs through it need, and now
 * and then IBV_ACCESS_LOCAL_WRITE and IBV_ACCESS_MW_BIND, which binds
 * accept and ignore (rxe's RXE_ACCESS_SUPPORTED_MW, mlx5). */
static unsigned int bind_access(const struct tr_wr *wr)
{
	return IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
	       ((wr->seq >> 1) & 1 ? IBV_ACCESS_LOCAL_WRITE : 0) |
	       ((wr->seq >> 2) & 1 ? IBV_ACCESS_MW_BIND : 0);
}

static unsigned int wr_flags(const struct tr_wr *wr)
{
	return (wr->signaled ? IBV_SEND_SIGNALED : 0) | (wr->inline_ ? IBV_SEND_INLINE : 0) |
	       (wr->fence ? IBV_SEND_FENCE : 0) | (wr->solicited ? IBV_SEND_SOLICITED : 0);
}

static void post_list(struct tr_world *w, struct tr_ep *e, struct tr_wr *list, int n)
{
	struct ibv_send_wr sw[BATCH_MAX], *bad = NULL;
	int rc;

	memset(sw, 0, sizeof(sw));
	for (int i = 0; i < n; i++) {
		struct tr_wr *wr = &list[i];
		struct ibv_send_wr *s = &sw[i];

		s->wr_id = wr->seq;
		s->next = i + 1 < n ? &sw[i + 1] : NULL;
		s->sg_list = wr->nsge ? wr->sge : NULL;
		s->num_sge = wr->nsge;
		s->opcode = wr->op;
		s->send_flags = wr_flags(wr);
		s->imm_data = wr->imm_be;
		if (wr->op == IBV_WR_BIND_MW) {
			const struct tr_ep *u = &w->ep[wr->mw_of];

			s->sg_list = NULL;
			s->num_sge = 0;
			s->bind_mw.mw = u->mw.mw;
			s->bind_mw.rkey = u->mw.rkey;
			s->bind_mw.bind_info.mr = w->ctx[e->ctx].mr[wr->seq & 1];
			s->bind_mw.bind_info.addr = (uintptr_t)u->tgt_mem;
			s->bind_mw.bind_info.length = u->tgt_size;
			s->bind_mw.bind_info.mw_access_flags = bind_access(wr);
		} else if (wr->op == IBV_WR_LOCAL_INV) {
			s->sg_list = NULL;
			s->num_sge = 0;
			s->invalidate_rkey = w->ep[wr->mw_of].mw.rkey;
		} else if (wr->op == IBV_WR_SEND_WITH_INV) {
			s->invalidate_rkey = wr->imm_be;
		} else if (is_atomic(wr->op)) {
			s->wr.atomic.remote_addr = (uintptr_t)e->tgt_mem + wr->roff;
			s->wr.atomic.rkey = wr->rkey;
			s->wr.atomic.compare_add = wr->compare_add;
			s->wr.atomic.swap = wr->swap;
		} else if (e->kind == TR_UD) {
			s->wr.ud.ah = e->ah[wr->dst_ep];
			s->wr.ud.remote_qpn = w->ep[wr->dst_ep].qp->qp_num;
			s->wr.ud.remote_qkey = TR_QKEY;
		} else {
			s->wr.rdma.remote_addr = (uintptr_t)e->tgt_mem + wr->roff;
			s->wr.rdma.rkey = wr->rkey;
		}
		if (e->kind == TR_XRC)
			s->qp_type.xrc.remote_srqn = w->rq[wr->dst_rq].srqn;
	}
	rc = ibv_post_send(e->qp, sw, &bad);
	if (rc)
		tr_fail(w, "ep %d: ibv_post_send of %d WRs (first seq %llu): %s, bad_wr %ld", e->id, n,
			(unsigned long long)list[0].seq, strerror(rc), bad ? (long)(bad - sw) : -1L);
}

static void post_wr_api(struct tr_world *w, struct tr_ep *e, struct tr_wr *list, int n)
{
	struct ibv_qp_ex *qx = e->qx;
	int rc;

	ibv_wr_start(qx);
	for (int i = 0; i < n; i++) {
		struct tr_wr *wr = &list[i];
		uint64_t raddr = (uintptr_t)e->tgt_mem + wr->roff;

		qx->wr_id = wr->seq;
		qx->wr_flags = wr_flags(wr);
		if (wr->op == IBV_WR_BIND_MW || wr->op == IBV_WR_LOCAL_INV) {
			const struct tr_ep *u = &w->ep[wr->mw_of];

			if (wr->op == IBV_WR_LOCAL_INV) {
				ibv_wr_local_inv(qx, u->mw.rkey);
			} else {
				struct ibv_mw_bind_info bi = {
					.mr = w->ctx[e->ctx].mr[wr->seq & 1], .addr = (uintptr_t)u->tgt_mem,
					.length = u->tgt_size,
					.mw_access_flags = bind_access(wr),
				};

				ibv_wr_bind_mw(qx, u->mw.mw, u->mw.rkey, &bi);
			}
			continue;
		}
		switch (wr->op) {
		case IBV_WR_SEND_WITH_INV: ibv_wr_send_inv(qx, wr->imm_be); break;
		case IBV_WR_SEND: ibv_wr_send(qx); break;
		case IBV_WR_SEND_WITH_IMM: ibv_wr_send_imm(qx, wr->imm_be); break;
		case IBV_WR_RDMA_WRITE: ibv_wr_rdma_write(qx, wr->rkey, raddr); break;
		case IBV_WR_RDMA_WRITE_WITH_IMM: ibv_wr_rdma_write_imm(qx, wr->rkey, raddr, wr->imm_be); break;
		case IBV_WR_RDMA_READ: ibv_wr_rdma_read(qx, wr->rkey, raddr); break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(qx, wr->rkey, raddr, wr->compare_add, wr->swap);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD: ibv_wr_atomic_fetch_add(qx, wr->rkey, raddr, wr->compare_add); break;
		default: tr_fail(w, "gen: opcode %d", wr->op);
		}
		if (e->kind == TR_UD)
			ibv_wr_set_ud_addr(qx, e->ah[wr->dst_ep], w->ep[wr->dst_ep].qp->qp_num, TR_QKEY);
		if (e->kind == TR_XRC)
			ibv_wr_set_xrc_srqn(qx, w->rq[wr->dst_rq].srqn);
		if (wr->inline_) {
			struct ibv_data_buf b[TR_MAX_SGE];

			for (int j = 0; j < wr->nsge; j++) {
				b[j].addr = (void *)(uintptr_t)wr->sge[j].addr;
				b[j].length = wr->sge[j].length;
			}
			if (wr->nsge == 1 && (wr->seq & 1))
				ibv_wr_set_inline_data(qx, b[0].addr, b[0].length);
			else
				ibv_wr_set_inline_data_list(qx, (size_t)wr->nsge, b);
		} else if (wr->nsge == 1 && (wr->seq & 1)) {
			ibv_wr_set_sge(qx, wr->sge[0].lkey, wr->sge[0].addr, wr->sge[0].length);
		} else {
			ibv_wr_set_sge_list(qx, (size_t)wr->nsge, wr->sge);
		}
	}
	rc = ibv_wr_complete(qx);
	if (rc)
		tr_fail(w, "ep %d: ibv_wr_complete of %d WRs (first seq %llu): %s", e->id, n,
			(unsigned long long)list[0].seq, strerror(rc));
}

bool tr_ep_post(struct tr_world *w, struct tr_ep *e)
{
	static uint8_t scratch[BATCH_MAX][TR_MAX_INLINE + 64 * TR_MAX_SGE + 64];
	struct tr_wr list[BATCH_MAX];
	int n = 0;

	if (tr_ep_done_posting(w, e) || e->quiesce)
		return false;
	if (!e->batch_left) {
		e->batch_left = 1 + tr_rng_below(&e->rng, tr_rng_pct(&e->rng, 50) ? 1 : BATCH_MAX);
		e->batch_wr_api = !e->no_wr_api && tr_rng_pct(&e->rng, 50);
	}
	while (e->batch_left && e->stream_posted + (uint64_t)n < w->o.ops) {
		struct tr_wr *wr;

		if (!e->have_next)
			gen_next(w, e);
		wr = &e->next;
		/* No send queue full of unsignaled WRs; the last WR is signaled. */
		if (e->unsignaled_run + 1 >= e->sq_depth || e->stream_posted + (uint64_t)n + 1 == w->o.ops)
			wr->signaled = true;
		wr->mw_of = -1;
		if (!can_post(w, e, wr, (uint32_t)n, e->arena_head))
			break;
		place(w, e, wr, scratch[n]);
		e->unsignaled_run = wr->signaled ? 0 : e->unsignaled_run + 1;
		list[n++] = *wr;
		memset(wr, 0, sizeof(*wr)); /* expect moved to the list */
		e->have_next = false;
		e->batch_left--;
	}
	if (!n)
		return false;
	if (e->batch_wr_api)
		post_wr_api(w, e, list, n);
	else
		post_list(w, e, list, n);
	/* Inline data is the provider's once posted: scribble over ours. */
	for (int i = 0; i < n; i++)
		if (list[i].inline_)
			memset(scratch[i], 0xEE, sizeof(scratch[i]));
	for (int i = 0; i < n; i++) {
		list[i].wr_api = e->batch_wr_api;
		e->sq[(e->posted + (uint64_t)i) % e->sq_depth] = list[i];
	}
	e->posted += (uint64_t)n;
	e->stream_posted += (uint64_t)n;
	if (!e->batch_left)
		e->batch_wr_api = false;
	return true;
}

/* One WR outside the stream (a window's bind or invalidation, an error
 * episode's), signaled, through either API. */
bool tr_post_extra(struct tr_world *w, struct tr_ep *p, struct tr_wr *wr, struct tr_rng *r)
{
	static uint8_t scratch[TR_MAX_INLINE + 64 * TR_MAX_SGE + 64];
	static uint64_t extra_id;

	wr->signaled = true;
	wr->seq = TR_WRID_EXTRA | extra_id;
	wr->wr_api = !p->no_wr_api && tr_rng_pct(r, 50);
	if (!can_post(w, p, wr, 0, p->arena_head))
		return false;
	extra_id++;
	place(w, p, wr, scratch);
	if (wr->wr_api)
		post_wr_api(w, p, wr, 1);
	else
		post_list(w, p, wr, 1);
	memset(scratch, 0xEE, sizeof(scratch));
	p->sq[p->posted % p->sq_depth] = *wr;
	p->posted++;
	p->unsignaled_run = 0;
	w->extra_wrs++;
	return true;
}

/* The Bind verb on e's type 1 window over its target region: the provider
 * posts it on the peer's QP (ibv_bind_mw(3)); unbind: a zero-length bind.
 * False if the peer's send queue is full. */
static bool bind_type1(struct tr_world *w, struct tr_ep *e, struct tr_rng *r, bool unbind)
{
	struct tr_ep *peer = &w->ep[e->peer];
	struct ibv_mw_bind b = {
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = w->ctx[peer->ctx].mr[tr_rng_below(r, 2)], .addr = (uintptr_t)e->tgt_mem,
			       .length = unbind ? 0 : e->tgt_size,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						  IBV_ACCESS_REMOTE_ATOMIC |
						  (tr_rng_pct(r, 30) ? IBV_ACCESS_LOCAL_WRITE : 0) },
	};
	struct tr_wr wr = { .op = IBV_WR_BIND_MW, .signaled = true, .mw_of = e->id, .mw_unbind = unbind,
			    .dst_rq = -1, .dst_ep = -1 };
	int rc;

	if (peer->posted - peer->retired >= peer->sq_depth)
		return false;
	wr.seq = TR_WRID_EXTRA | (0x4000000000000000ull + w->extra_wrs);
	b.wr_id = wr.seq;
	rc = ibv_bind_mw(peer->qp, e->mw.mw, &b);
	if (rc)
		tr_fail(w, "ibv_bind_mw (type 1%s, endpoint %d's window): %s", unbind ? " unbind" : "", e->id,
			strerror(rc));
	e->mw.rkey = e->mw.mw->rkey;
	peer->sq[peer->posted % peer->sq_depth] = wr;
	peer->posted++;
	peer->unsignaled_run = 0;
	w->extra_wrs++;
	return true;
}

bool tr_mw_step(struct tr_world *w, struct tr_ep *e, struct tr_rng *r)
{
	struct tr_mw *mw = &e->mw;
	struct tr_ep *peer;
	struct tr_wr wr;

	if (!e->has_mw)
		return false;
	peer = &w->ep[e->peer];
	if (mw->state == TR_MW_FREE && (e->quiesce || peer->quiesce))
		return false; /* an error episode is on: no new binding */
	memset(&wr, 0, sizeof(wr));
	wr.dst_rq = -1;
	wr.dst_ep = -1;
	wr.mw_of = e->id;
	switch (mw->state) {
	case TR_MW_FREE:
		if (mw->mw->type == IBV_MW_TYPE_1) {
			if (!bind_type1(w, e, r, false))
				return false;
		} else {
			uint32_t old = mw->rkey;

			mw->rkey = ibv_inc_rkey(old);
			wr.op = IBV_WR_BIND_MW;
			if (!tr_post_extra(w, peer, &wr, r)) {
				mw->rkey = old;
				return false;
			}
		}
		mw->state = TR_MW_BINDING;
		mw->binds++;
		return true;
	case TR_MW_BOUND:
		if (!tr_rng_pct(r, 10))
			return false; /* bound for a while: WRs name it */
		if (mw->mw->type == IBV_MW_TYPE_2 && tr_rng_pct(r, 50)) {
			/* SEND_WITH_INV from the endpoint: fenced, so that the
			 * READs and atomics through the window finish first. */
			wr.op = IBV_WR_SEND_WITH_INV;
			wr.imm_be = mw->rkey;
			wr.fence = true;
			wr.mw_of = -1;
			wr.dst_rq = peer->rq;
			wr.len = tr_rng_below(r, 300);
			wr.inline_ = wr.len <= TR_MAX_INLINE && tr_rng_pct(r, 30);
			if (wr.len) {
				wr.nsge = 1;
				wr.sge[0].length = wr.len;
				wr.sge[0].lkey = tr_lkey(w, e->ctx, r);
				wr.expect = malloc(wr.len);
				tr_rng_fill(r, wr.expect, wr.len);
			}
			if (!tr_post_extra(w, e, &wr, r)) {
				free(wr.expect);
				return false;
			}
			mw->state = TR_MW_INVALIDATING;
			mw->remote_invs++;
			return true;
		}
		mw->state = TR_MW_DRAINING; /* the endpoint names it no more */
		return true;
	case TR_MW_DRAINING:
		if (mw->users)
			return false;
		if (mw->mw->type == IBV_MW_TYPE_1) {
			if (!bind_type1(w, e, r, true)) /* a zero-length bind unbinds it */
				return false;
		} else {
			wr.op = IBV_WR_LOCAL_INV;
			if (!tr_post_extra(w, peer, &wr, r))
				return false;
		}
		mw->state = TR_MW_INVALIDATING;
		mw->local_invs++;
		return true;
	default:
		return false;
	}
}

void tr_mw_retired(struct tr_world *w, struct tr_ep *e, struct tr_wr *wr)
{
	if (wr->uses_mw && e->mw.users)
		e->mw.users--;
	if (wr->mw_of < 0)
		return;
	if (wr->op == IBV_WR_BIND_MW && !wr->mw_unbind)
		w->ep[wr->mw_of].mw.state = TR_MW_BOUND;
	else if (wr->op == IBV_WR_LOCAL_INV || wr->mw_unbind)
		w->ep[wr->mw_of].mw.state = TR_MW_FREE;
}

bool tr_rq_refill(struct tr_world *w, struct tr_rq *q, uint32_t max)
{
	struct ibv_recv_wr rw[16], *bad = NULL;
	int n = 0, rc;

	if (tr_now_ms() < q->starve_until_ms)
		return false;
	for (uint32_t slot = 0; slot < q->depth && (uint32_t)n < max && n < 16; slot++) {
		struct tr_rwqe *x = &q->rwqe[slot];
		uint8_t *p = q->slots + (size_t)slot * q->slot_size;
		uint32_t left = q->cap, nsge;

		if (x->busy)
			continue;
		/* Scatter the capacity over 1..max_sge SGEs, gaps between,
		 * zero-length SGEs among them; the last takes the rest plus a
		 * random tail. */
		nsge = 1 + tr_rng_below(&q->rng, q->max_sge);
		x->nsge = (int)nsge;
		x->cap = 0;
		for (uint32_t i = 0; i < nsge; i++) {
			uint32_t l = i == nsge - 1 ? left + tr_rng_below(&q->rng, 128) :
				     (tr_rng_pct(&q->rng, 20) ? 0 : tr_rng_below(&q->rng, left + 1));

			p += tr_rng_below(&q->rng, 3) ? 0 : 1 + tr_rng_below(&q->rng, 63);
			x->sge[i].addr = (uintptr_t)p;
			x->sge[i].lkey = tr_lkey(w, q->ctx, &q->rng);
			if (q->slot_mr) {
				/* the slot's own MR; the last SGE ends past it */
				uint8_t *mr_end = q->slots + (size_t)(slot + 1) * q->slot_size - TR_LOOSE;

				x->sge[i].lkey = q->slot_mr[slot]->lkey;
				if (i == nsge - 1)
					l = (uint32_t)(mr_end - p) + 1 + tr_rng_below(&q->rng, TR_LOOSE - 1);
			}
			x->sge[i].length = l;
			x->cap += l;
			p += l;
			left -= l < left ? l : left;
		}
		if (p > q->slots + (size_t)(slot + 1) * q->slot_size)
			tr_fail(w, "rq %d: slot overflow", q->id);
		x->busy = true;
		memset(&rw[n], 0, sizeof(rw[n]));
		rw[n].wr_id = TR_WRID_RECV | ((uint64_t)q->id << 32) | slot;
		rw[n].sg_list = x->sge;
		rw[n].num_sge = x->nsge;
		rw[n].next = NULL;
		if (n)
			rw[n - 1].next = &rw[n];
		n++;
	}
	if (!n)
		return false;
	rc = q->srq ? ibv_post_srq_recv(q->srq, rw, &bad) : ibv_post_recv(q->qp, rw, &bad);
	if (rc)
		tr_fail(w, "rq %d: posting %d receive WRs: %s", q->id, n, strerror(rc));
	q->posted += (uint32_t)n;
	return true;
}
