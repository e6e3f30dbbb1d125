/* SPDX-License-Identifier: MIT */
/*
 * SRQs and XRC in the software HCA (srq.c, xrc_fwd.c; IBA vol 1 ch. 10,
 * the XRC annex; docs/srq.md): the part of a QP only QPs that receive
 * from an SRQ carry (qp->xrc, allocated at create_qp for a QP created on
 * an SRQ and for XRC_RECV), a context's forwarded messages (ctx->xfwd,
 * made with its first XRC SRQ), the receive WQE source of a QP (its RQ or
 * an SRQ: sib_rwqe_*), and the engine's and create_qp's side of SRQs, XRC
 * domains and XRC forwarding.  The SRQ and XRCD verbs are in hca.h
 * (the provider's ops table).  Engine context (progress_lock held) unless
 * a function says otherwise.
 */
#ifndef SIB_HCA_SRQ_H
#define SIB_HCA_SRQ_H

#include "hca/hca.h"

/*
 * XRC forwarding (xrc_fwd.c).  sib_xfwd_tx, in an XRC_RECV QP: the packet
 * being handled names an XRC SRQ of another context of this device (raw:
 * its bytes, set by the demux for one packet); in_msg/msg_srqn: the SEND
 * message under way is forwarded, to that SRQ; ring: the cached target
 * inbox (a reference).  The target context's side is struct sib_xfwd_msg.
 */
struct sib_xfwd_tx {
	const uint8_t *raw;
	uint32_t len, flags;           /* bytes in the slot, SIB_SLOT_F_* to send */
	uint32_t inbox;                /* target context's inbox */
	bool in_msg;
	uint32_t msg_srqn;
	struct sib_link_dest *dest;    /* the target's context (a reference) ... */
	uint32_t dest_inbox, dest_gen; /* ... for this inbox and generation; NULL: gone */
};

/* XRC forwarding (xrc_fwd.c), in the target context: a message being
 * placed, by TGT QPN (owner: its qp_owner word at FIRST); ctx->xfwd holds
 * SIB_XFWD_MSGS of them. */
#define SIB_XFWD_MSGS 64               /* messages placed at once, per context */
struct sib_xfwd_msg {
	bool used, active;             /* active: a WQE is held for the message */
	bool seen;                     /* psn is valid: a message was started */
	uint32_t qpn, srqn;
	uint64_t owner;
	uint64_t srq_h;                /* the SRQ's table handle (index, generation) */
	uint32_t psn;                  /* next PSN expected */
	uint32_t offset;               /* bytes placed */
	struct sib_rwqe wqe;
};

/*
 * The SRQ part of a QP (qp->xrc; NULL for a QP with its own receive
 * queue).  wqe: a WQE taken from an SRQ, copied here until its message
 * completes (qp->wqe_srq says from where).  XRC_RECV only: srq, the SRQ
 * the XRCETH of the packet being handled names (set by the demux for one
 * packet, a reference srq_h); xrcd and xrcd_num, the QP's XRC domain and
 * softibd's number of it; fwd, XRC forwarding (xrc_fwd.c).
 */
struct sib_qp_xrc {
	struct sib_rwqe wqe;
	struct sib_srq *srq;
	uint64_t srq_h;
	struct sib_xrcd *xrcd;
	uint32_t xrcd_num;
	struct sib_xfwd_tx fwd;
};

/* Take the oldest WQE of srq into *out (engine context); false if it is
 * empty.  Raises SRQ_LIMIT_REACHED once when the count drops below an
 * armed limit (ibv_modify_srq(3), IBA's SRQ limit), and disarms it. */
bool sib_srq_take(struct sib_srq *srq, struct sib_rwqe *out);
/* Fill a receive WQE from a WR whose num_sge was checked (RQ and SRQ). */
void sib_rwqe_fill(struct sib_rwqe *r, const struct ibv_recv_wr *wr);
/* A QP on an SRQ entered ERR: IBV_EVENT_QP_LAST_WQE_REACHED (IBA 10.3.1,
 * 11.6.3: no more WQEs will be taken from the SRQ for it). */
void sib_srq_qp_error(struct sib_qp *qp);
/* The SRQ behind an async record; counts the delivery.  NULL if gone. */
struct sib_srq *sib_srq_async_deliver(struct sib_context *ctx, uint32_t id, uint32_t gen);
/* XRC_RECV: the SRQ numbered srqn of this context, if it is an XRC SRQ
 * of the QP's domain: a reference into qp->xrc->srq (for one packet).
 * False: drop the packet (no such SRQ, or another domain's). */
bool sib_xrc_srq_resolve(struct sib_qp *qp, uint32_t srqn);
/*
 * XRC forwarding (xrc_fwd.c; docs/srq.md).  sib_xfwd_target: the XRCETH of
 * the request at buf (len bytes, SIB_RX_* flags) names an XRC SRQ of
 * another live context of this device: the packet is forwarded (set in
 * qp->xrc->fwd for this packet, true) rather than dropped.  sib_xfwd_recv: the
 * target's demux for a packet flagged SIB_RX_XRC_FWD (already decoded and
 * ICRC-checked): SIB_RX_DELIVERED or the drop cause.  sib_xfwd_release:
 * drop the QP's cached target inbox.  Engine context.
 */
bool sib_xfwd_target(struct sib_qp *qp, uint32_t srqn, const uint8_t *buf, uint32_t len,
		     unsigned int flags);
enum sib_rx_drop sib_xfwd_recv(struct sib_context *ctx, const struct iba_pkt *pkt, unsigned int flags);
void sib_xfwd_release(struct sib_qp *qp);
/* The context's table of forwarded messages (ctx->xfwd): made at its first
 * XRC SRQ (0 or ENOMEM; any thread, slow path), freed with the context. */
int sib_xfwd_ctx_init(struct sib_context *ctx);
void sib_xfwd_ctx_fini(struct sib_context *ctx);
void sib_xrc_srq_release(struct sib_qp *qp);
/* create_qp's SRQ and XRC rules (0 or EINVAL), then, once the QP is
 * built, attach it (usecnt, capabilities, the domain) and detach it at
 * destroy. */
int sib_qp_check_srq_xrc(struct sib_context *ctx, const struct ibv_qp_init_attr_ex *attr);
void sib_qp_attach_srq_xrc(struct sib_qp *qp, struct ibv_qp_init_attr_ex *attr);
void sib_qp_detach_srq_xrc(struct sib_qp *qp);
/* Register an XRC_RECV QP with softibd in attr->xrcd's domain (the host's
 * xrc_tgt_create): *handle, *qpn; 0 or errno (EOPNOTSUPP: no XRC host). */
int sib_qp_create_xrc_tgt(struct sib_context *ctx, const struct ibv_qp_init_attr_ex *attr,
			  uint32_t *handle, uint32_t *qpn);

/*
 * The receive WQE source of a QP (IBA ch. 10, SRQ): its own receive queue, or
 * an SRQ (the QP's, or for XRC_RECV the one the XRCETH names).  take: the
 * message being started has a WQE (an RQ's stays at rq_tail until it is
 * done; an SRQ's is copied into the QP now, since other QPs take from the
 * same SRQ meanwhile); pending: one is taken or queued; cur: that WQE;
 * cq: where it completes; done: it completed (or was flushed).  Engine
 * context.
 */
static inline bool sib_rwqe_take(struct sib_qp *qp)
{
	struct sib_qp_xrc *x = qp->xrc;
	struct sib_srq *srq = qp->srq ? qp->srq : x ? x->srq : NULL;

	if (!srq)
		return atomic_load_explicit(&qp->rq_head, memory_order_acquire) != qp->rq_tail;
	if (qp->wqe_srq)
		return true;
	if (!sib_srq_take(srq, &x->wqe))
		return false;
	if (srq == x->srq) { /* keep the XRC SRQ (and its CQ) until done: a
				second reference on the one the demux holds,
				which a destroy meanwhile cannot fail */
		sib_objtab_hold(&qp->ctx->srqs, x->srq_h);
		qp->wqe_srq_h = x->srq_h;
	}
	qp->wqe_srq = srq;
	return true;
}

static inline bool sib_rwqe_pending(const struct sib_qp *qp)
{
	if (qp->srq || qp->wqe_srq || qp->ibv.qp_base.qp_type == IBV_QPT_XRC_RECV)
		return qp->wqe_srq != NULL;
	return atomic_load_explicit(&qp->rq_head, memory_order_acquire) != qp->rq_tail;
}

static inline struct sib_rwqe *sib_rwqe_cur(struct sib_qp *qp)
{
	return qp->wqe_srq ? &qp->xrc->wqe : &qp->rq[qp->rq_tail & (qp->rq_size - 1)];
}

static inline struct sib_cq *sib_rwqe_cq(struct sib_qp *qp)
{
	if (qp->wqe_srq && qp->wqe_srq->cq)
		return to_scq(qp->wqe_srq->cq); /* XRC: the SRQ's CQ */
	return to_scq(qp->ibv.qp_base.recv_cq);
}

static inline void sib_rwqe_done(struct sib_qp *qp)
{
	if (!qp->wqe_srq) {
		__atomic_store_n(&qp->rq_tail, qp->rq_tail + 1, __ATOMIC_RELEASE);
		return;
	}
	if (qp->wqe_srq != qp->srq)
		sib_objtab_put(&qp->ctx->srqs, qp->wqe_srq_h);
	qp->wqe_srq = NULL;
}

/* The PD the responder checks keys against: an XRC_RECV QP has none and
 * uses the XRC SRQ's (XRC annex: the target SRQ's PD). */
static inline uint32_t sib_resp_pd(const struct sib_qp *qp)
{
	if (qp->xrc && qp->xrc->srq)
		return qp->xrc->srq->ibv.pd->handle;
	/* An XRC_RECV QP with no SRQ named for this packet has no PD: a
	 * handle no object has (softibd's are generation << 16 | index with
	 * generations from 1), so every key check fails. */
	return qp->ibv.qp_base.pd ? qp->ibv.qp_base.pd->handle : 0;
}

/*
 * XRC forwarding, the responder's side (xrc_fwd.c): sib_xfwd_pkt, the
 * packet being handled goes to another context's SRQ; sib_xfwd_check, for
 * a SEND packet: 1 forwarded, 0 placed here, -1 a message that mixes both
 * or changes SRQ (invalid request); sib_xfwd_send: put it on the link
 * toward that context, false if its inbox is full (nothing sent: the
 * packet is not accepted, the requester sends it again).
 */
static inline bool sib_xfwd_pkt(const struct sib_qp *qp)
{
	return qp->xrc && qp->xrc->fwd.raw != NULL;
}
int sib_xfwd_check(struct sib_qp *qp, const struct iba_pkt *pkt);
bool sib_xfwd_send(struct sib_qp *qp);

#endif
