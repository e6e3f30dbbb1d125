/* SPDX-License-Identifier: MIT */
/*
 * XRC forwarding between the contexts of one device (the XRC annex: a TGT
 * QP and the XRC SRQs belong to the domain, not to a process).  A request
 * reaches the inbox of the process that owns the XRC_RECV QP; when its
 * XRCETH names an XRC SRQ of another process, that QP's responder keeps
 * the transport (PSN, ACK/NAK, MSN) and passes the packet on, unchanged,
 * into the SRQ owner's inbox through the link (a second hop a capture
 * shows), flagged SIB_SLOT_F_XRC_FWD; the owner places it and completes.
 * Must not: place data of another process, or trust a flagged packet (it
 * is checked as hostile: XRC SEND, our XRC SRQ, a TGT QPN owned by a live
 * context of this device that softibd's map shows as an XRC_RECV QP of
 * that SRQ's domain, never a domain the sender states).  Engine context
 * only (the context's progress_lock): the placement table is the engine's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hca/srq.h"
#include "hca/transport.h"

/* ---- the TGT QP's owner: forwarding ---- */

bool sib_xfwd_target(struct sib_qp *qp, uint32_t srqn, const uint8_t *buf, uint32_t len,
		     unsigned int flags)
{
	struct sib_context *ctx = qp->ctx;
	uint32_t inbox = srqn >> 16, gen;

	if (inbox == ctx->inbox_idx || inbox >= SIB_MAX_INBOXES || !qp->xrc || !qp->xrc->xrcd)
		return false;
	gen = sib_link_inbox_gen(inbox);
	if (!(gen & 1) || sib_fabric->inboxes[inbox].dev_index != ctx->dev->index)
		return false; /* not a live context of this device */
	qp->xrc->fwd.raw = buf;
	qp->xrc->fwd.len = len;
	qp->xrc->fwd.inbox = inbox;
	qp->xrc->fwd.flags = SIB_SLOT_F_XRC_FWD | ((flags & SIB_RX_VCRC) ? SIB_SLOT_F_VCRC : 0) |
			     ((flags & SIB_RX_ICRC) ? SIB_SLOT_F_ICRC : 0);
	return true;
}

int sib_xfwd_check(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	struct sib_xfwd_tx *x;
	bool fwd;

	if (!qp->xrc)
		return 0; /* no SRQ part: nothing is ever forwarded */
	x = &qp->xrc->fwd;
	fwd = x->raw != NULL;

	if (pkt->op->flags & (IBA_OP_FIRST | IBA_OP_ONLY)) {
		x->in_msg = fwd;
		x->msg_srqn = pkt->xrc_srqn;
		return fwd;
	}
	if (fwd != x->in_msg || (fwd && pkt->xrc_srqn != x->msg_srqn))
		return -1;
	return fwd;
}

bool sib_xfwd_send(struct sib_qp *qp)
{
	struct sib_context *ctx = qp->ctx;
	struct sib_xfwd_tx *x = &qp->xrc->fwd;
	uint8_t port = qp->port_num ? qp->port_num : 1;
	uint32_t gen = sib_link_inbox_gen(x->inbox);
	struct sib_link_tx lt;

	if (!sib_port_passes(ctx->dev->index, ctx->dev->gen, port)) {
		ctx->port_down_drops++; /* link down: lost on the wire */
		return true;
	}
	if (!x->dest || x->dest_inbox != x->inbox || x->dest_gen != gen) {
		/* The target's context, once per (inbox, generation); asked
		 * of softibd by the engine thread: on it, at once (the packet
		 * is in hand), elsewhere the packet is dropped as for a full
		 * wire and resent; a gone target stays NULL until its
		 * generation moves. */
		struct sib_link_dest *d;
		enum sib_link_verdict v = sib_link_dest_get(&ctx->link, x->inbox, gen, &d);

		if (v == SIB_LINK_PENDING && pthread_equal(pthread_self(), ctx->eng.thread)) {
			sib_engine_answer_now(ctx);
			v = sib_link_dest_get(&ctx->link, x->inbox, gen, &d);
		}
		if (v == SIB_LINK_PENDING)
			return false;
		sib_link_dest_put(x->dest);
		x->dest = d;
		x->dest_inbox = x->inbox;
		x->dest_gen = gen;
	}
	if (!x->dest) {
		ctx->tx_no_dest++; /* the SRQ's process is gone: lost */
		return true;
	}
	if (sib_link_reserve(&ctx->link, &x->dest->tx, port, &lt)) {
		ctx->tx_ring_full++;
		return false;
	}
	memcpy(lt.data, x->raw, x->len);
	if (sib_link_send(&ctx->link, &lt, x->len, x->flags))
		ctx->tx_no_dest++;
	return true;
}

void sib_xfwd_release(struct sib_qp *qp)
{
	struct sib_xfwd_tx *x = qp->xrc ? &qp->xrc->fwd : NULL;

	if (!x)
		return;
	sib_link_dest_put(x->dest);
	x->dest = NULL;
	x->dest_inbox = x->dest_gen = 0;
}

/* ---- the SRQ's owner: placement ---- */

int sib_xfwd_ctx_init(struct sib_context *ctx)
{
	struct sib_xfwd_msg *t, *none = NULL;

	if (atomic_load_explicit(&ctx->xfwd, memory_order_acquire))
		return 0;
	t = calloc(SIB_XFWD_MSGS, sizeof(*t));
	if (!t)
		return ENOMEM;
	if (!atomic_compare_exchange_strong_explicit(&ctx->xfwd, &none, t, memory_order_acq_rel,
						     memory_order_acquire))
		free(t); /* another thread's create_srq made it first */
	return 0;
}

void sib_xfwd_ctx_fini(struct sib_context *ctx)
{
	free(atomic_load_explicit(&ctx->xfwd, memory_order_relaxed));
	atomic_store_explicit(&ctx->xfwd, NULL, memory_order_relaxed);
}

/* Complete the message's WQE on the SRQ's CQ (srq held by the caller). */
static void msg_complete(struct sib_xfwd_msg *m, struct sib_srq *srq, const struct iba_pkt *pkt,
			 enum ibv_wc_status st)
{
	struct ibv_wc wc = {
		.wr_id = m->wqe.wr_id,
		.status = st,
		.opcode = IBV_WC_RECV,
		.byte_len = m->offset,
		.qp_num = m->qpn,      /* the TGT QP, as the XRC annex reports it */
		.src_qp = 0,           /* the requester's QPN is not in the packet */
		.slid = pkt ? pkt->lrh.slid : 0,
		.sl = pkt ? pkt->lrh.sl : 0,
	};

	if (st == IBV_WC_SUCCESS && (pkt->op->flags & IBA_OP_IMM)) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = pkt->immdt_be;
	}
	m->active = false;
	sib_cq_push(to_scq(srq->cq), &wc, st == IBV_WC_SUCCESS && pkt->bth.se);
}

/* A message that will not finish (its LAST was lost, its TGT QP is gone):
 * its WQE completes with `st` if its SRQ is still there; counted. */
static void msg_abort(struct sib_context *ctx, struct sib_xfwd_msg *m, enum ibv_wc_status st)
{
	uint64_t h;
	struct sib_srq *srq;

	if (!m->active)
		return;
	srq = sib_objtab_get_index(&ctx->srqs, SIB_OBJTAB_INDEX(m->srq_h), &h);
	if (srq && h == m->srq_h)
		msg_complete(m, srq, NULL, st);
	m->active = false;
	if (srq)
		sib_objtab_put(&ctx->srqs, h);
	__atomic_store_n(&ctx->rx_drop[SIB_RX_DROP_XRC_FWD_SEQ], ctx->rx_drop[SIB_RX_DROP_XRC_FWD_SEQ] + 1,
			 __ATOMIC_RELAXED);
}

/* The entry of TGT QPN qpn (owner word w), or a new one at FIRST/ONLY: a
 * free one, an idle one, or one whose QP is gone.  NULL: none. */
static struct sib_xfwd_msg *msg_find(struct sib_context *ctx, uint32_t qpn, uint64_t w, bool create)
{
	struct sib_xfwd_msg *tab = atomic_load_explicit(&ctx->xfwd, memory_order_acquire), *spare = NULL;

	for (unsigned int i = 0; tab && i < SIB_XFWD_MSGS; i++) {
		struct sib_xfwd_msg *m = &tab[i];

		if (m->used && m->qpn == qpn) {
			if (m->owner == w)
				return m;
			msg_abort(ctx, m, IBV_WC_WR_FLUSH_ERR); /* the QPN has a new QP */
			m->used = false;
		}
		if (!create || (spare && !spare->used))
			continue;
		if (!m->used || !m->active)
			spare = m;
		else if (sib_link_qpn_owner(m->qpn) != m->owner)
			spare = m; /* its TGT QP was destroyed mid-message */
	}
	if (!spare)
		return NULL;
	if (spare->used)
		msg_abort(ctx, spare, IBV_WC_WR_FLUSH_ERR);
	memset(spare, 0, offsetof(struct sib_xfwd_msg, wqe));
	spare->used = true;
	spare->qpn = qpn;
	spare->owner = w;
	return spare;
}

/* A flagged packet's claims: an XRC SEND to an XRC SRQ of this context,
 * for a TGT QPN owned by another live context of this device which
 * softibd published (qp_xrcd[], checked against the opener's XRCD handle
 * at creation) as an XRC_RECV QP of that SRQ's domain: the domain is never
 * the sender's word.  *srq gets the SRQ with a reference (*h). */
static enum sib_rx_drop fwd_check(struct sib_context *ctx, const struct iba_pkt *pkt, uint64_t *w,
				  struct sib_srq **srq, uint64_t *h)
{
	uint32_t f = pkt->op->flags, qpn = pkt->bth.dqpn, inbox, dom;

	*srq = NULL;
	if ((pkt->bth.opcode & IBA_TRANSPORT_MASK) != IBA_TRANSPORT_XRC || !(f & IBA_OP_REQ) ||
	    !(f & IBA_OP_SEND) || (f & IBA_OP_INV) || pkt->xrc_srqn >> 16 != ctx->inbox_idx ||
	    qpn >= SIB_MAX_QPN)
		return SIB_RX_DROP_XRC_FWD_FORGED;
	*w = sib_link_qpn_owner(qpn);
	inbox = SIB_QPO_INBOX(*w);
	if (!(*w & SIB_QPO_VALID) || SIB_QPO_DEV(*w) != ctx->dev->index || inbox >= SIB_MAX_INBOXES ||
	    inbox == ctx->inbox_idx || sib_link_inbox_gen(inbox) != SIB_QPO_GEN(*w))
		return SIB_RX_DROP_XRC_FWD_FORGED;
	/* The domain of the QP *w names: stored before the owner word, cleared
	 * after it; a second read of the owner rules out a QPN reused between. */
	dom = atomic_load_explicit(&sib_fabric->qp_xrcd[qpn], memory_order_acquire);
	if (!dom || sib_link_qpn_owner(qpn) != *w)
		return SIB_RX_DROP_XRC_FWD_FORGED; /* not an XRC_RECV QP */
	*srq = sib_objtab_get_index(&ctx->srqs, pkt->xrc_srqn & 0xffff, h);
	if (!*srq)
		return SIB_RX_DROP_XRC_SRQN;
	if ((*srq)->type != IBV_SRQT_XRC)
		return SIB_RX_DROP_XRC_SRQN;
	if ((*srq)->xrcd->num != dom)
		return SIB_RX_DROP_XRC_FWD_FORGED; /* a TGT QP of another domain */
	return SIB_RX_DELIVERED;
}

/* Place one packet of the message m in SRQ srq; complete at LAST/ONLY. */
static enum sib_rx_drop place(struct sib_context *ctx, struct sib_xfwd_msg *m, struct sib_srq *srq,
			      uint64_t h, const struct iba_pkt *pkt)
{
	uint32_t f = pkt->op->flags, pd = srq->ibv.pd->handle;

	if (f & (IBA_OP_FIRST | IBA_OP_ONLY)) {
		if (m->active)
			msg_abort(ctx, m, IBV_WC_WR_FLUSH_ERR); /* its LAST never came */
		m->psn = iba_psn_add(pkt->bth.psn, 1);
		m->seen = true;
		if (!sib_srq_take(srq, &m->wqe))
			return SIB_RX_DROP_XRC_FWD_NORWQE;
		m->active = true;
		m->srqn = pkt->xrc_srqn;
		m->srq_h = h;
		m->offset = 0;
	} else {
		if (m->active && m->srqn == pkt->xrc_srqn && m->srq_h == h &&
		    iba_psn_diff(pkt->bth.psn, m->psn) < 0)
			return SIB_RX_DROP_XRC_FWD_SEQ; /* a duplicate: the message goes on */
		if (!m->active || m->srqn != pkt->xrc_srqn || m->srq_h != h || pkt->bth.psn != m->psn) {
			msg_abort(ctx, m, IBV_WC_WR_FLUSH_ERR); /* lost on the way */
			return SIB_RX_DROP_XRC_FWD_SEQ;
		}
		m->psn = iba_psn_add(m->psn, 1);
	}
	if (pkt->paylen > m->wqe.length - m->offset) {
		msg_complete(m, srq, pkt, IBV_WC_LOC_LEN_ERR);
		return SIB_RX_DROP_XRC_FWD_LEN;
	}
	/* The bytes this packet writes, not the whole posted buffer (as the
	 * responder's own receive WQEs, resp.c): checked, then copied. */
	if (sib_sge_check_range(ctx, pd, m->wqe.sge, m->wqe.num_sge, m->offset, pkt->paylen,
				IBV_ACCESS_LOCAL_WRITE) != IBV_WC_SUCCESS ||
	    sib_sge_copy_in(ctx, pd, m->wqe.sge, m->wqe.num_sge, m->offset, pkt->payload,
			    pkt->paylen) != IBV_WC_SUCCESS) {
		msg_complete(m, srq, pkt, IBV_WC_LOC_PROT_ERR);
		return SIB_RX_DROP_XRC_FWD_LKEY;
	}
	m->offset += pkt->paylen;
	if (f & (IBA_OP_LAST | IBA_OP_ONLY))
		msg_complete(m, srq, pkt, IBV_WC_SUCCESS);
	return SIB_RX_DELIVERED;
}

enum sib_rx_drop sib_xfwd_recv(struct sib_context *ctx, const struct iba_pkt *pkt, unsigned int flags)
{
	bool first = pkt->op->flags & (IBA_OP_FIRST | IBA_OP_ONLY);
	struct sib_xfwd_msg *m;
	struct sib_srq *srq;
	enum sib_rx_drop why;
	uint64_t w = 0, h = 0;

	(void)flags; /* the slot's flags assert nothing checked here */
	why = fwd_check(ctx, pkt, &w, &srq, &h);
	if (why == SIB_RX_DELIVERED) {
		m = msg_find(ctx, pkt->bth.dqpn, w, first);
		if (!m)
			why = SIB_RX_DROP_XRC_FWD_SEQ; /* no message under way, or no room */
		else if (first && m->seen && iba_psn_diff(pkt->bth.psn, m->psn) < 0)
			why = SIB_RX_DROP_XRC_FWD_SEQ; /* a duplicate of one already placed */
		else
			why = place(ctx, m, srq, h, pkt);
	}
	if (srq)
		sib_objtab_put(&ctx->srqs, h);
	return why;
}
