/* SPDX-License-Identifier: MIT */
/*
 * Completions against the model (traffic.h).  A send queue completes in
 * post order (IBA 10.8.5): a signaled completion retires every older
 * unsignaled WR, and each retired READ or atomic must have brought back
 * what the model computed at post.  A receive completion names its WQE by
 * wr_id (receive queue, slot); its message is the oldest outstanding one
 * from the same source to that queue (sources are told apart by QPN,
 * source QPN or XRC target QP), whose bytes must lie scattered over the
 * WQE's SGEs with every other byte of the slot untouched.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traffic.h"

static const char *wc_op_name(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

static enum ibv_wc_opcode send_wc_op(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
	case IBV_WR_BIND_MW: return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV: return IBV_WC_LOCAL_INV;
	default: return IBV_WC_SEND;
	}
}

/* Compare n bytes at got with want; describe the first difference. */
static void bytes_equal(const struct tr_world *w, const uint8_t *got, const uint8_t *want, size_t n,
			const char *what, int id, uint64_t seq)
{
	if (!memcmp(got, want, n))
		return;
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			size_t bad = 0;

			for (size_t j = i; j < n; j++)
				bad += got[j] != want[j];
			tr_fail(w, "%s (endpoint %d, WR %llu): byte %zu of %zu is 0x%02x, want 0x%02x (%zu bytes differ)",
				what, id, (unsigned long long)seq, i, n, got[i], want[i], bad);
		}
}

static void all_equal(const struct tr_world *w, const uint8_t *p, uint8_t v, size_t n, const char *what,
		      int id, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			tr_fail(w, "%s (endpoint %d, WR %llu): byte %zu of %zu is 0x%02x, want it untouched (0x%02x)",
				what, id, (unsigned long long)seq, i, n, p[i], v);
}

/* The WR at the send queue's tail has completed (by itself or as an
 * unsignaled WR before a signaled one): check what it brought back. */
void tr_retire(struct tr_world *w, struct tr_ep *e)
{
	struct tr_wr *wr = &e->sq[e->retired % e->sq_depth];

	if (wr->status == IBV_WC_SUCCESS && (wr->op == IBV_WR_RDMA_READ || wr->op == IBV_WR_ATOMIC_CMP_AND_SWP ||
					     wr->op == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
		uint32_t off = 0;

		for (int i = 0; i < wr->nsge; i++) {
			const uint8_t *p = (const uint8_t *)(uintptr_t)wr->sge[i].addr;

			if (!p)
				continue; /* an empty SGE at address 0 */
			if (memcmp(p, wr->expect + off, wr->sge[i].length)) {
				fprintf(stderr, "traffic: endpoint %d's WRs from the failing one:\n", e->id);
				tr_print_sq(e);
			}
			bytes_equal(w, p, wr->expect + off, wr->sge[i].length,
				    wr->op == IBV_WR_RDMA_READ ? "RDMA READ data" : "atomic original value",
				    e->id, wr->seq);
			/* nothing written past the SGE (the next gap or SGE is ours) */
			if (i + 1 < wr->nsge && wr->sge[i + 1].addr &&
			    wr->sge[i + 1].addr > wr->sge[i].addr + wr->sge[i].length)
				all_equal(w, p + wr->sge[i].length, TR_SINK,
					  wr->sge[i + 1].addr - wr->sge[i].addr - wr->sge[i].length,
					  "gap between READ/atomic SGEs", e->id, wr->seq);
			off += wr->sge[i].length;
			w->bytes_checked += wr->sge[i].length;
		}
	}
	tr_mw_retired(w, e, wr);
	if (!(wr->seq & TR_WRID_EXTRA))
		w->last_progress_ms = tr_now_ms(); /* the streams moved (windows' churn does not count) */
	free(wr->expect);
	wr->expect = NULL;
	if (!wr->inline_ && wr->arena_end)
		e->arena_tail = wr->arena_end;
	e->retired++;
}

static void check_send(struct tr_world *w, const struct ibv_wc *wc)
{
	struct tr_ep *e = tr_ep_by_qpn(w, wc->qp_num);
	struct tr_wr *wr;

	if (!e)
		tr_fail(w, "send completion for QPN 0x%x, which sends nothing", wc->qp_num);
	/* Unsignaled WRs before the signaled one completed with it. */
	for (;;) {
		if (e->retired == e->posted)
			tr_fail(w, "endpoint %d: send completion wr_id %llu with no WR outstanding", e->id,
				(unsigned long long)wc->wr_id);
		wr = &e->sq[e->retired % e->sq_depth];
		if (wr->signaled)
			break;
		tr_retire(w, e);
	}
	if (wc->wr_id != wr->seq)
		tr_fail(w, "endpoint %d: send completion wr_id 0x%llx, want 0x%llx (the oldest signaled WR)", e->id,
			(unsigned long long)wc->wr_id, (unsigned long long)wr->seq);
	if (wc->opcode != send_wc_op(wr->op))
		tr_fail(w, "endpoint %d WR %llu: completion opcode %s, want %s", e->id,
			(unsigned long long)wr->seq, wc_op_name(wc->opcode), wc_op_name(send_wc_op(wr->op)));
	if (wr->op == IBV_WR_RDMA_READ && wc->byte_len != wr->len)
		tr_fail(w, "endpoint %d WR %llu: READ byte_len %u, want %u", e->id,
			(unsigned long long)wr->seq, wc->byte_len, wr->len);
	if ((wr->op == IBV_WR_ATOMIC_CMP_AND_SWP || wr->op == IBV_WR_ATOMIC_FETCH_AND_ADD) && wc->byte_len != 8)
		tr_fail(w, "endpoint %d WR %llu: atomic byte_len %u, want 8", e->id,
			(unsigned long long)wr->seq, wc->byte_len);
	if (wc->wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV | IBV_WC_GRH))
		tr_fail(w, "endpoint %d WR %llu: send completion with wc_flags 0x%x", e->id,
			(unsigned long long)wr->seq, wc->wc_flags);
	tr_retire(w, e);
}

/* Does the received wc (WQE x) carry message m?  why says what differs. */
static bool msg_matches(struct tr_world *w, const struct ibv_wc *wc, const struct tr_rwqe *x,
			const struct tr_msg *m, bool ud, bool global, char *why, size_t whylen)
{
	uint32_t hdr = ud ? TR_UD_GRH : 0;
	bool imm = m->op == IBV_WR_SEND_WITH_IMM || m->op == IBV_WR_RDMA_WRITE_WITH_IMM;
	enum ibv_wc_opcode op = m->uc_write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	uint32_t want_flags = (imm ? IBV_WC_WITH_IMM : 0) | (m->inv ? IBV_WC_WITH_INV : 0) |
			      (global ? IBV_WC_GRH : 0);
	uint32_t off = 0, moff = 0;

	(void)w;
	if (wc->opcode != op) {
		snprintf(why, whylen, "opcode %s, want %s", wc_op_name(wc->opcode), wc_op_name(op));
		return false;
	}
	if (wc->byte_len != m->len + hdr) {
		snprintf(why, whylen, "byte_len %u, want %u", wc->byte_len, m->len + hdr);
		return false;
	}
	if ((wc->wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV | IBV_WC_GRH)) != want_flags) {
		snprintf(why, whylen, "wc_flags 0x%x, want 0x%x", wc->wc_flags, want_flags);
		return false;
	}
	if (imm && wc->imm_data != m->imm_be) {
		snprintf(why, whylen, "imm_data 0x%08x, want 0x%08x", be32toh(wc->imm_data), be32toh(m->imm_be));
		return false;
	}
	if (m->inv && wc->invalidated_rkey != m->imm_be) {
		snprintf(why, whylen, "invalidated_rkey 0x%08x, want 0x%08x", wc->invalidated_rkey, m->imm_be);
		return false;
	}
	if (m->uc_write)
		return true;
	/* The payload, scattered after the GRH area. */
	for (int i = 0; i < x->nsge && moff < m->len; i++) {
		const uint8_t *p = (const uint8_t *)(uintptr_t)x->sge[i].addr;
		uint32_t l = x->sge[i].length;

		for (uint32_t j = 0; j < l && moff < m->len; j++, off++) {
			if (off < hdr)
				continue;
			if (p[j] != m->data[moff]) {
				snprintf(why, whylen, "payload byte %u is 0x%02x, want 0x%02x", moff, p[j],
					 m->data[moff]);
				return false;
			}
			moff++;
		}
	}
	return true;
}

/* Copy n bytes at offset off of the WQE's scatter list into out. */
static void gather(const struct tr_rwqe *x, uint32_t off, uint8_t *out, uint32_t n)
{
	uint32_t pos = 0;

	for (int i = 0; i < x->nsge && n; i++) {
		const uint8_t *p = (const uint8_t *)(uintptr_t)x->sge[i].addr;

		for (uint32_t j = 0; j < x->sge[i].length && n; j++, pos++)
			if (pos >= off) {
				*out++ = p[j];
				n--;
			}
	}
}

/* A UD datagram that came with a GRH: the 40 bytes before the payload are
 * that GRH (IBA 8.3; the first 40 bytes of the receive buffer, ibv_post_recv(3)). */
static void check_grh(struct tr_world *w, const struct tr_rwqe *x, const struct tr_ep *src, const struct tr_ep *dst)
{
	uint8_t g[TR_UD_GRH];

	gather(x, 0, g, sizeof(g));
	if (g[0] >> 4 != 6 || g[6] != 0x1b)
		tr_fail(w, "UD GRH from endpoint %d: IPVer %u NxtHdr 0x%02x, want 6 and 0x1b", src->id, g[0] >> 4, g[6]);
	if (memcmp(g + 8, w->ctx[src->ctx].gid0.raw, 16) || memcmp(g + 24, w->ctx[dst->ctx].gid0.raw, 16))
		tr_fail(w, "UD GRH from endpoint %d to %d: SGID or DGID is not the ports' GID 0", src->id, dst->id);
}

void tr_slot_release(struct tr_rq *q, uint32_t slot)
{
	memset(q->slots + (size_t)slot * q->slot_size, TR_CANARY, q->slot_size);
	q->rwqe[slot].busy = false;
	q->posted--;
}

/* Every byte of the slot outside the message (gaps, the tail of the last
 * SGE, past the end) is still the canary. */
static void slot_untouched(struct tr_world *w, struct tr_rq *q, uint32_t slot, uint32_t written,
			   const struct tr_msg *m)
{
	const struct tr_rwqe *x = &q->rwqe[slot];
	uint8_t *base = q->slots + (size_t)slot * q->slot_size;
	uint8_t *p = base;
	uint32_t left = written;

	for (int i = 0; i < x->nsge; i++) {
		uint8_t *s = (uint8_t *)(uintptr_t)x->sge[i].addr;
		uint32_t l = x->sge[i].length, used = left < l ? left : l;

		all_equal(w, p, TR_CANARY, (size_t)(s - p), "receive slot gap before an SGE", m->src_ep, m->seq);
		all_equal(w, s + used, TR_CANARY, l - used, "receive SGE past the message", m->src_ep, m->seq);
		left -= used;
		p = s + l;
	}
	all_equal(w, p, TR_CANARY, (size_t)(base + q->slot_size - p), "receive slot past its SGEs", m->src_ep,
		  m->seq);
}

static void msg_free(struct tr_msg *m)
{
	free(m->data);
	free(m);
}

/* The endpoint that sent what wc received on q, and (UD) whether it sent
 * with a GRH; *dst is the receiving endpoint (NULL: an XRC target QP). */
static struct tr_ep *recv_source(struct tr_world *w, const struct tr_rq *q, const struct ibv_wc *wc,
				 struct tr_ep **dst, bool *global)
{
	struct tr_ep *src;

	*global = false;
	*dst = tr_ep_by_qpn(w, wc->qp_num);
	if (!*dst) {
		src = tr_ep_by_tgt_qpn(w, wc->qp_num);
		if (!src)
			tr_fail(w, "receive completion on rq %d for QPN 0x%x, which is none of ours", q->id,
				wc->qp_num);
		return src;
	}
	if ((*dst)->rq != q->id)
		tr_fail(w, "receive completion of rq %d names QPN 0x%x, which receives on rq %d", q->id,
			wc->qp_num, (*dst)->rq);
	if ((*dst)->kind != TR_UD)
		return &w->ep[(*dst)->peer];
	src = tr_ep_by_qpn(w, wc->src_qp);
	if (!src || src->kind != TR_UD)
		tr_fail(w, "UD receive from source QPN 0x%x: no UD endpoint", wc->src_qp);
	if (wc->slid != w->ctx[src->ctx].lid || wc->pkey_index != 0 || wc->sl != 0)
		tr_fail(w, "UD receive from endpoint %d: slid %u pkey_index %u sl %u, want %u 0 0", src->id,
			wc->slid, wc->pkey_index, wc->sl, w->ctx[src->ctx].lid);
	*global = src->ah_global[(*dst)->id];
	return src;
}

/* m (after prev in f, pos places from its head) has been received into
 * q's slot: take it off the FIFO and account for it.  A lossy queue keeps
 * it for the duplicates that may follow, and forgets what is overdue: a
 * message more than TR_REORDER places older than one that arrived is lost
 * (UC keeps order; UD is reordered by a fault a place or two at the most). */
static void recv_done(struct tr_world *w, struct tr_cq *cq, struct tr_rq *q, uint32_t slot, struct tr_fifo *f,
		      struct tr_msg *m, struct tr_msg *prev, uint32_t pos, uint32_t qp_num)
{
	if (prev)
		prev->next = m->next;
	else
		f->head = m->next;
	if (f->tail == m)
		f->tail = prev;
	f->n--;
	w->bytes_checked += m->len;
	w->messages++;
	w->last_progress_ms = tr_now_ms();
	q->received++;
	if (q->reserved)
		q->reserved--;
	tr_slot_release(q, slot);
	if (m->inv) /* the window is free at its owner: it may be bound again */
		w->ep[m->src_ep].mw.state = TR_MW_FREE;
	if (cq->armed == 2 && cq->must_event == false && m->solicited) {
		cq->must_event = true;
		cq->must_event_since_ms = tr_now_ms();
		snprintf(cq->must_event_why, sizeof(cq->must_event_why),
			 "a solicited %s from endpoint %d (WR %llu) to QPN 0x%x", m->uc_write ? "WRITE_WITH_IMM" : "SEND",
			 m->src_ep, (unsigned long long)m->seq, qp_num);
	}
	if (q->lossy) {
		uint32_t k = f->ndone++ % 16;

		if (f->ndone > 16)
			msg_free(f->done[k]);
		f->done[k] = m;
	} else {
		msg_free(m);
	}
	while (q->lossy && pos > TR_REORDER) {
		struct tr_msg *o = f->head;

		f->head = o->next;
		if (!f->head)
			f->tail = NULL;
		f->n--;
		q->lost++;
		if (q->reserved)
			q->reserved--;
		msg_free(o);
		pos--;
	}
}

static void check_recv(struct tr_world *w, struct tr_cq *cq, const struct ibv_wc *wc)
{
	uint32_t qid = (uint32_t)(wc->wr_id >> 32) & 0x3fffffffu, slot = (uint32_t)wc->wr_id;
	struct tr_rq *q;
	struct tr_ep *dst, *src;
	struct tr_rwqe *x;
	struct tr_fifo *f;
	struct tr_msg *m, *prev = NULL;
	bool ud, global;
	char why[160] = "";
	uint32_t pos = 0;                  /* lossy queues: where in the FIFO m was */

	if (qid >= (uint32_t)w->nrq || slot >= w->rq[qid].depth || !w->rq[qid].rwqe[slot].busy)
		tr_fail(w, "receive completion with wr_id 0x%llx: no such receive WQE outstanding",
			(unsigned long long)wc->wr_id);
	q = &w->rq[qid];
	x = &q->rwqe[slot];
	if (q->cq != cq)
		tr_fail(w, "receive queue %d's completion came on another CQ", q->id);
	src = recv_source(w, q, wc, &dst, &global);
	ud = src->kind == TR_UD;
	f = &q->from[src->id];
	m = f->head;
	if (!m && !q->lossy)
		tr_fail(w, "rq %d: a message from endpoint %d that was never sent (byte_len %u)", q->id, src->id,
			wc->byte_len);
	if (!q->lossy) {
		if (!msg_matches(w, wc, x, m, ud, global, why, sizeof(why)))
			tr_fail(w, "rq %d: message from endpoint %d WR %llu (%s, %u bytes): %s", q->id, src->id,
				(unsigned long long)m->seq,
				m->uc_write ? "RDMA_WRITE_WITH_IMM" : m->op == IBV_WR_SEND ? "SEND" : "SEND_WITH_IMM",
				m->len, why);
	} else {
		/* UC and UD under faults: any outstanding message of the
		 * source may be this one (loss, duplication, reordering). */
		for (; m; prev = m, m = m->next, pos++)
			if (msg_matches(w, wc, x, m, ud, global, why, sizeof(why)))
				break;
		if (!m) {
			/* A duplicated datagram repeats one delivered lately
			 * (UD has no duplicate detection, IBA 9.8.3). */
			for (uint32_t i = 0; i < f->ndone && i < 16; i++)
				if (msg_matches(w, wc, x, f->done[i], ud, global, why, sizeof(why))) {
					q->dups++;
					tr_slot_release(q, slot);
					return;
				}
			tr_fail(w, "rq %d: a message from endpoint %d matches none of its %u outstanding (%s)", q->id,
				src->id, f->n, why);
		}
	}
	if (global)
		check_grh(w, x, src, dst);
	if (!q->lossy || src->kind == TR_UD)
		slot_untouched(w, q, slot, m->uc_write ? 0 : m->len + (ud ? TR_UD_GRH : 0), m);
	recv_done(w, cq, q, slot, f, m, prev, pos, wc->qp_num);
}

static void print_wc(const char *what, const struct ibv_wc *wc)
{
	fprintf(stderr, "traffic: %s: wr_id 0x%llx QPN 0x%x status %s (%d) opcode %s byte_len %u\n", what,
		(unsigned long long)wc->wr_id, wc->qp_num, ibv_wc_status_str(wc->status), wc->status,
		wc->status == IBV_WC_SUCCESS ? wc_op_name(wc->opcode) : "-", wc->byte_len);
}

static const char *wr_op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_SEND_WITH_INV: return "SEND_WITH_INV";
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "ATOMIC_FETCH_AND_ADD";
	case IBV_WR_BIND_MW: return "BIND_MW";
	case IBV_WR_LOCAL_INV: return "LOCAL_INV";
	default: return "?";
	}
}

void tr_print_wr(const struct tr_ep *e, const struct tr_wr *wr)
{
	fprintf(stderr, "traffic:   endpoint %d WR %llu: %s len %u, %d SGEs (", e->id, (unsigned long long)wr->seq,
		wr_op_name(wr->op), wr->len, wr->nsge);
	for (int i = 0; i < wr->nsge; i++)
		fprintf(stderr, "%s%u", i ? " " : "", wr->sge[i].length);
	fprintf(stderr, ")%s%s%s%s, %s, remote offset %llu rkey 0x%x, dst rq %d\n", wr->inline_ ? " inline" : "",
		wr->signaled ? " signaled" : "", wr->fence ? " fence" : "", wr->solicited ? " solicited" : "",
		wr->wr_api ? "ibv_wr_*" : "ibv_post_send", (unsigned long long)wr->roff, wr->rkey, wr->dst_rq);
}

/* The endpoint's outstanding WRs. */
void tr_print_sq(const struct tr_ep *e)
{
	for (uint64_t s = e->retired; s < e->posted; s++)
		tr_print_wr(e, &e->sq[s % e->sq_depth]);
}

bool tr_episode_wc(struct tr_world *w, const struct ibv_wc *wc)
{
	struct tr_ep *e = tr_ep_by_qpn(w, wc->qp_num);

	if (!e || !e->in_err)
		return false;
	if ((wc->wr_id & TR_WRID_RECV) && !(wc->wr_id & TR_WRID_EXTRA)) {
		/* a receive WQE of the QP, flushed */
		uint32_t qid = (uint32_t)(wc->wr_id >> 32) & 0x3fffffffu, slot = (uint32_t)wc->wr_id;
		struct tr_rq *q;

		if (wc->status != IBV_WC_WR_FLUSH_ERR || qid != (uint32_t)e->rq || slot >= w->rq[qid].depth ||
		    !w->rq[qid].rwqe[slot].busy)
			return false;
		q = &w->rq[qid];
		tr_slot_release(q, slot);
		e->flushed++;
		return true;
	}
	/* the send queue: every WR completes, in order, with its status */
	if (e->retired == e->posted)
		return false;
	struct tr_wr *wr = &e->sq[e->retired % e->sq_depth];

	/* Under faults the NAK may be lost: the requester retries into a
	 * responder in ERR, which answers nothing (IBA 10.3.1). */
	bool st_ok = wc->status == wr->status || (w->o.faults && wr->status == IBV_WC_REM_ACCESS_ERR &&
						   wc->status == IBV_WC_RETRY_EXC_ERR);

	if (wc->wr_id != wr->seq || !st_ok) {
		fprintf(stderr, "traffic: endpoint %d's error episode: wr_id 0x%llx status %s, want 0x%llx %s\n",
			e->id, (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
			(unsigned long long)wr->seq, ibv_wc_status_str(wr->status));
		return false;
	}
	if (wr->status != IBV_WC_WR_FLUSH_ERR)
		e->bad_seen = true;
	else
		e->flushed++;
	tr_retire(w, e);
	return true;
}

/* An error completion: show every other error completion queued now
 * (the first cause is often on another CQ), then fail. */
static _Noreturn void error_wc(struct tr_world *w, const struct ibv_wc *wc)
{
	int shown = 0;

	print_wc("error completion", wc);
	if (!(wc->opcode & IBV_WC_RECV) || wc->status != IBV_WC_SUCCESS) {
		struct tr_ep *e = tr_ep_by_qpn(w, wc->qp_num);

		if (e && e->retired < e->posted)
			tr_print_sq(e);
	}
	for (int c = 0; c < w->nctx; c++)
		for (int i = 0; i < w->ctx[c].ncq; i++) {
			struct ibv_wc x;

			while (shown < 16 && ibv_poll_cq(w->ctx[c].cq[i].cq, 1, &x) == 1)
				if (x.status != IBV_WC_SUCCESS && x.status != IBV_WC_WR_FLUSH_ERR) {
					print_wc("also", &x);
					shown++;
				}
		}
	tr_fail(w, "completion wr_id 0x%llx on QPN 0x%x: status %s (%d), vendor_err 0x%x",
		(unsigned long long)wc->wr_id, wc->qp_num, ibv_wc_status_str(wc->status), wc->status,
		wc->vendor_err);
}

/* One completion of cq. */
static void check_wc(struct tr_world *w, struct tr_cq *cq, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS && !tr_episode_wc(w, wc))
		error_wc(w, wc);
	if (wc->status != IBV_WC_SUCCESS) {
		w->completions++;
		return;
	}
	w->completions++;
	if (cq->armed == 1 && !cq->must_event) {
		cq->must_event = true;
		cq->must_event_since_ms = tr_now_ms();
		snprintf(cq->must_event_why, sizeof(cq->must_event_why), "wr_id 0x%llx on QPN 0x%x",
			 (unsigned long long)wc->wr_id, wc->qp_num);
	}
	if (wc->opcode & IBV_WC_RECV)
		check_recv(w, cq, wc);
	else
		check_send(w, wc);
}

/* The current entry of an extended CQ poll, as a struct ibv_wc. */
static void cqx_read(struct ibv_cq_ex *c, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = c->wr_id;
	wc->status = c->status;
	wc->opcode = ibv_wc_read_opcode(c);
	wc->vendor_err = ibv_wc_read_vendor_err(c);
	wc->byte_len = ibv_wc_read_byte_len(c);
	wc->qp_num = ibv_wc_read_qp_num(c);
	wc->src_qp = ibv_wc_read_src_qp(c);
	wc->wc_flags = ibv_wc_read_wc_flags(c);
	wc->slid = ibv_wc_read_slid(c);
	wc->sl = ibv_wc_read_sl(c);
	wc->dlid_path_bits = ibv_wc_read_dlid_path_bits(c);
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		wc->imm_data = ibv_wc_read_imm_data(c);
	if (wc->wc_flags & IBV_WC_WITH_INV)
		wc->invalidated_rkey = ibv_wc_read_invalidated_rkey(c);
}

int tr_cq_poll(struct tr_world *w, struct tr_cq *cq, struct tr_rng *r)
{
	struct ibv_wc wc[16];
	int max = 1 + (int)tr_rng_below(r, 16), n = 0;

	if (cq->cqx && tr_rng_pct(r, 50)) {
		struct ibv_poll_cq_attr pa = { 0 };
		int rc = ibv_start_poll(cq->cqx, &pa);

		if (rc == ENOENT)
			return 0;
		if (rc)
			tr_fail(w, "ibv_start_poll: %d", rc);
		for (;;) {
			cqx_read(cq->cqx, &wc[n++]);
			if (n == max || ibv_next_poll(cq->cqx))
				break;
		}
		ibv_end_poll(cq->cqx);
	} else {
		n = ibv_poll_cq(cq->cq, max, wc);
		if (n < 0)
			tr_fail(w, "ibv_poll_cq: %d", n);
	}
	for (int i = 0; i < n; i++)
		check_wc(w, cq, &wc[i]);
	return n;
}

void tr_ep_check_target(struct tr_world *w, struct tr_ep *e)
{
	if (e->kind == TR_UD || e->tgt_unknown || e->posted != e->retired)
		return;
	/* UC completes a WRITE when sent: only the stream's last WR, a SEND,
	 * received says that every WRITE before it has landed. */
	if (e->kind == TR_UC && (!tr_ep_done_posting(w, e) || w->rq[w->ep[e->peer].rq].from[e->id].n))
		return;
	bytes_equal(w, e->tgt_mem, e->tgt_model, e->tgt_size, "target region (RDMA WRITE/atomic results)", e->id,
		    e->retired);
	w->bytes_checked += e->tgt_size;
	e->checked_tgt_at = e->retired;
}
