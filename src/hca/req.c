/* SPDX-License-Identifier: MIT */
/*
 * Requester (IBA 9.7.4, 9.5): turns send WQEs into request packets, as a
 * state machine (STYLE 6.4): one function per state returning the next.
 * Packet opcodes come from wr.c's [transport][WR opcode][position] table,
 * so RC and UC share this path.  Segments at the path MTU, assigns PSNs (a
 * READ reserves one PSN per response packet), sets AckReq where an ACK
 * is needed (want_ackreq: signaled WQEs, every SIB_ACKREQ_EVERY PSNs, the
 * last packet sent for now, READ/atomic requests),
 * keeps at most SIB_MAX_UNACKED_PSNS PSNs (SIB_MAX_UNACKED_PSNS_PLACED for
 * directly placed messages, direct.c) and max_rd_atomic READs
 * outstanding, and stops without losing anything when the wire is full.
 * Owns qp->req.  Engine context only (progress_lock held).
 */
#include <string.h>

#include "hca/atomic.h"
#include "hca/direct.h"
#include "hca/mw.h"
#include "hca/transport.h"
#include "hca/wr.h"

enum req_state {
	REQST_CHECK_QP,                /* does the QP send at all now? */
	REQST_NEXT_WQE,                /* a WQE posted and not yet fully sent? */
	REQST_CHECK_LIMITS,            /* SQD fence, PSN window, READ depth, IBV_SEND_FENCE */
	REQST_START_WQE,               /* PSNs and local key checks of a new WQE */
	REQST_LOCAL_OP,                /* BIND_MW or LOCAL_INV: carried out here, no packet */
	REQST_SEND_PACKET,             /* one packet of the WQE on the wire */
	REQST_WQE_SENT,                /* every packet of the WQE is out */
	/* Local errors (IBA 10.8.3.3, class "local" of 9.9.4): the WQE
	 * completes with the error once every earlier WQE has completed, and
	 * the QP goes to ERR (sib_comp_local_error); nothing more is sent. */
	REQST_ERR_LOC_PROT,            /* an SGE fails its L_Key check: LOC_PROT_ERR */
	REQST_ERR_LOC_QP_OP,           /* no packet exists for the WR on this transport */
	REQST_DONE,
	REQST_COUNT
};

static const char *const req_state_name[REQST_COUNT] = {
	[REQST_CHECK_QP] = "CHECK_QP",
	[REQST_NEXT_WQE] = "NEXT_WQE",
	[REQST_CHECK_LIMITS] = "CHECK_LIMITS",
	[REQST_START_WQE] = "START_WQE",
	[REQST_LOCAL_OP] = "LOCAL_OP",
	[REQST_SEND_PACKET] = "SEND_PACKET",
	[REQST_WQE_SENT] = "WQE_SENT",
	[REQST_ERR_LOC_PROT] = "ERR_LOC_PROT",
	[REQST_ERR_LOC_QP_OP] = "ERR_LOC_QP_OP",
	[REQST_DONE] = "DONE",
};

/* Name of a requester state, for traces. */
const char *sib_req_state_name(unsigned int st)
{
	return st < REQST_COUNT && req_state_name[st] ? req_state_name[st] : "unknown";
}

/* One pass of the requester. */
struct req_pass {
	struct sib_qp *qp;
	uint32_t head;                 /* sq_head seen at the start */
	struct sib_swqe *w;            /* the WQE at qp->req.wqe */
};

static void arm_retry_timer(struct sib_qp *qp)
{
	if (!qp->comp.retry_deadline && qp->timeout)
		qp->comp.retry_deadline = sib_deadline_ns(qp->ctx, sib_ack_timeout_ns(qp->timeout));
}

static enum req_state check_qp(struct req_pass *p)
{
	struct sib_qp *qp = p->qp;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return REQST_DONE;
	if (qp->comp.rnr_deadline || qp->req.local_err)
		return REQST_DONE; /* waiting out an RNR NAK, or a local error pending */
	p->head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	return REQST_NEXT_WQE;
}

static enum req_state next_wqe(struct req_pass *p)
{
	struct sib_qp *qp = p->qp;

	if (qp->req.wqe == p->head || qp->state == IBV_QPS_ERR)
		return REQST_DONE;
	p->w = &qp->sq[qp->req.wqe & (qp->sq_size - 1)];
	return qp->req.offset ? REQST_SEND_PACKET : REQST_CHECK_LIMITS;
}

/* Are max_rd_atomic READ/atomic requests outstanding (at least one may be)? */
static bool reads_full(const struct sib_qp *qp)
{
	return qp->req.reads_outstanding >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1u);
}

/*
 * IBV_SEND_FENCE (IBA 1.4 vol 1, 10.8.3.3; ibv_post_send(3)): the WQE does
 * not start while an earlier RDMA READ or atomic of the send queue has not
 * completed.  Without it a WRITE or atomic after a READ may change the
 * responder's memory before the READ's data is read (relaxed ordering,
 * IBA 9.5), and a SEND may carry a local buffer a READ still fills.
 */
static bool fenced(const struct sib_qp *qp, const struct sib_swqe *w)
{
	return (w->send_flags & IBV_SEND_FENCE) && qp->req.reads_outstanding;
}

/* Could this WQE be placed (try_place asks this first)?  Then its
 * PSNs cost no packets and the window is SIB_MAX_UNACKED_PSNS_PLACED. */
static bool may_place(const struct sib_qp *qp, const struct sib_swqe *w, const struct sib_wr_info *wi)
{
	return w->placed ||
	       (wi && (wi->flags & (SIB_WR_WRITE | SIB_WR_READ)) && w->length &&
		qp->ibv.qp_base.qp_type == IBV_QPT_RC && qp->dest.dest &&
		sib_link_can_place(&qp->ctx->link, qp->dest.dest) &&
		(!qp->req.pkt_unacked || iba_psn_diff(qp->comp.psn, qp->req.pkt_end) >= 0));
}

static bool resend_for_ack(struct sib_qp *qp);

static enum req_state check_limits(struct req_pass *p)
{
	struct sib_qp *qp = p->qp;
	const struct sib_wr_info *wi = sib_wr_info(p->w->opcode);

	if (qp->state == IBV_QPS_SQD && !p->w->started) /* SQD: finish what is in flight, */
		return resend_for_ack(qp) ? REQST_NEXT_WQE : REQST_DONE; /* start nothing new */
	if (iba_psn_diff(qp->req.psn, qp->comp.psn) >=
	    (may_place(qp, p->w, wi) ? SIB_MAX_UNACKED_PSNS_PLACED : SIB_MAX_UNACKED_PSNS))
		return REQST_DONE;
	if (wi && (wi->flags & (SIB_WR_READ | SIB_WR_ATOMIC)) && reads_full(qp))
		return REQST_DONE;
	if (fenced(qp, p->w))
		return REQST_DONE;
	return REQST_START_WQE;
}

static enum req_state start_wqe(struct req_pass *p)
{
	struct sib_qp *qp = p->qp;
	struct sib_swqe *w = p->w;
	const struct sib_wr_info *wi = sib_wr_info(w->opcode);
	enum ibv_wc_status st = IBV_WC_SUCCESS;

	if (wi && (wi->flags & SIB_WR_LOCAL))
		return REQST_LOCAL_OP;
	if (!w->inline_data)
		st = sib_sge_check(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge,
				   wi && (wi->flags & (SIB_WR_READ | SIB_WR_ATOMIC)) ? IBV_ACCESS_LOCAL_WRITE : 0);
	w->first_psn = qp->req.psn;
	w->npsn = sib_msg_npsn(w->length, qp->mtu);
	w->started = true;
	return st == IBV_WC_SUCCESS ? REQST_SEND_PACKET : REQST_ERR_LOC_PROT;
}

static enum sib_pos packet_pos(bool first, bool last)
{
	if (first)
		return last ? SIB_POS_ONLY : SIB_POS_FIRST;
	return last ? SIB_POS_LAST : SIB_POS_MIDDLE;
}

/*
 * Direct placement (direct.c, docs/transport.md): may this WQE's data move
 * through the peer's mapping now?  An RC WRITE (with or without immediate)
 * or READ, at its start, over a plain memory link, and no earlier request
 * of this QP that went as packets may still be unacknowledged: its packets
 * could otherwise land after this WRITE, or this READ read ahead of them.
 * A WQE placed once is sent as the placed packet again on a retry (its
 * data moved exactly once, in order with the other requests).
 */
static bool try_place(struct sib_qp *qp, struct sib_swqe *w, const struct sib_wr_info *wi)
{
	if (w->placed)
		return true;
	if (qp->req.offset || !may_place(qp, w, wi))
		return false;
	qp->req.pkt_unacked = false; /* acknowledged, if any were (may_place) */
	w->placed = sib_dx_place(qp, w, wi->flags & SIB_WR_READ);
	return w->placed;
}

/* Would check_limits stop the WQE w (not yet started) now, with the
 * requester's next PSN at `psn`?  (The packet window is used even for a
 * WQE that may be placed: erring towards an AckReq costs only an ACK.) */
static bool next_would_wait(const struct sib_qp *qp, const struct sib_swqe *w, uint32_t psn)
{
	const struct sib_wr_info *wi = sib_wr_info(w->opcode);

	if (!wi || (wi->flags & SIB_WR_LOCAL))
		return true; /* no packet of its own; it completes behind ours */
	if (iba_psn_diff(psn, qp->comp.psn) >= SIB_MAX_UNACKED_PSNS)
		return true;
	return ((wi->flags & (SIB_WR_READ | SIB_WR_ATOMIC)) && reads_full(qp)) || fenced(qp, w);
}

/*
 * AckReq policy (IBA 9.7.5.1: the requester chooses where AckReq goes; an
 * ACK for PSN n acknowledges every PSN before it, 9.7.6).  A packet that
 * covers `npsn` PSNs carries AckReq when it is:
 * - a READ or atomic request (answered anyway);
 * - the last packet of a signaled WQE (its CQE waits for the ACK);
 * - at least SIB_ACKREQ_EVERY PSNs after the last AckReq (the window
 *   keeps moving under a stream of unsignaled WQEs);
 * - the last packet before the requester stops although a later WQE is
 *   posted: the next one would wait for the window or the READ depth, or
 *   is local (mw.c), or the QP is not in RTS (SQD finishes what it
 *   started, 10.3.1);
 * - resent to ask for an ACK (resend_for_ack).
 * The last packet of an unsignaled WQE with nothing posted after it goes
 * without: the application, posting one WR at a time with the engine
 * keeping up, would otherwise ask for an ACK per message.  If nothing
 * with AckReq follows within SIB_ACKREQ_DELAY_NS, ask_for_tail_ack sends
 * it again with AckReq, so no WQE waits for the ACK timeout.
 * UC is never acknowledged.  Counts the PSNs since the last AckReq.
 */
static bool want_ackreq(struct req_pass *p, bool read, bool last, uint32_t npsn)
{
	struct sib_qp *qp = p->qp;
	bool want;

	if (sib_qp_is_uc(qp))
		return false;
	qp->req.psns_since_ackreq += npsn;
	want = read || qp->req.force_ackreq || qp->req.psns_since_ackreq >= SIB_ACKREQ_EVERY;
	if (!want && last) {
		uint32_t next = qp->req.wqe + 1;

		want = p->w->signaled || qp->state != IBV_QPS_RTS ||
		       (next != p->head && next_would_wait(qp, &qp->sq[next & (qp->sq_size - 1)],
							   iba_psn_add(qp->req.psn, npsn)));
	}
	if (want) {
		qp->req.psns_since_ackreq = 0;
		qp->req.force_ackreq = false;
	}
	return want;
}

/*
 * The requester stops short of a WQE (SQD, a local error) after packets
 * that went without AckReq: nothing later would ask for their ACK.  Send
 * the last of them again with AckReq (a retransmission, IBA 9.7.5.1; the
 * responder ACKs a duplicate that asks, C9-105).  True when it rewound:
 * the pass goes on at that packet.
 */
static bool resend_for_ack(struct sib_qp *qp)
{
	if (!qp->req.ack_owed)
		return false;
	qp->req.ack_owed = false;
	qp->req.ackreq_deadline = 0;
	if (iba_psn_diff(qp->req.owed_psn, qp->comp.psn) < 0)
		return false; /* acknowledged meanwhile */
	sib_req_rewind(qp, qp->req.owed_psn);
	qp->req.force_ackreq = true;
	return true;
}

static enum req_state send_packet(struct req_pass *p)
{
	struct sib_qp *qp = p->qp;
	struct sib_swqe *w = p->w;
	const struct sib_wr_info *wi = sib_wr_info(w->opcode);
	uint32_t off = qp->req.offset, left = w->length - off;
	bool read, last, ackreq, copy_failed = false, placed = false;
	uint32_t paylen, hdrs;
	struct sib_tx tx;
	int opc;

	if (!wi)
		return REQST_ERR_LOC_QP_OP;
	/* A READ or an atomic: one request, its response(s) complete it. */
	read = wi->flags & (SIB_WR_READ | SIB_WR_ATOMIC);
	last = read || left <= qp->mtu;
	paylen = read ? 0 : (last ? left : qp->mtu);
	opc = sib_wr_pkt_opcode(sib_qpt_transport(qp->ibv.qp_base.qp_type), w->opcode,
				read ? SIB_POS_ONLY : packet_pos(off == 0, last));
	if (opc < 0)
		return REQST_ERR_LOC_QP_OP;
	/* Keys are checked again for every packet: the application may have
	 * deregistered (and unmapped) the memory since the WQE started. */
	if (!w->inline_data && paylen &&
	    sib_sge_check(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge, 0) != IBV_WC_SUCCESS)
		return REQST_ERR_LOC_PROT;
	/* The copy comes before the slot is taken, so that the peer's
	 * consumer never waits on our slot while we copy; a full wire
	 * then leaves the WQE placed, and the next pass sends its packet.
	 * The QP's first packet resolves the peer here. */
	placed = off == 0 && qp->ibv.qp_base.qp_type == IBV_QPT_RC &&
		 (qp->dest.dest || sib_tx_dest(qp)) && try_place(qp, w, wi);
	/* Not placed after all: packets keep their own window (check_limits
	 * let the WQE start under the placed one); a later pass starts it
	 * again. */
	if (!placed && !w->placed && off == 0 &&
	    iba_psn_diff(qp->req.psn, qp->comp.psn) >= SIB_MAX_UNACKED_PSNS)
		return REQST_DONE;
	if (!sib_tx_begin(qp, &tx))
		return REQST_DONE; /* the wire is full: the next pass resumes here */
	/* A placed WQE (a retry) is never copied again nor sent as packets,
	 * and nothing is copied while we hold the peer's slot. */
	if (!placed && off == 0 && w->placed)
		placed = true;
	if (placed) {
		/* One packet without payload for the whole message. */
		last = true;
		paylen = 0;
		opc = sib_wr_pkt_opcode(sib_qpt_transport(qp->ibv.qp_base.qp_type), w->opcode, SIB_POS_ONLY);
		tx.sflags = SIB_SLOT_F_PLACED;
	}
	ackreq = want_ackreq(p, read, last, placed ? sib_msg_npsn(left, qp->mtu) : 1);
	if (tx.slot) {
		uint8_t *payload;

		hdrs = iba_opcode_info((uint8_t)opc)->hdrs;
		tx.h.bth.opcode = (uint8_t)opc;
		tx.h.bth.psn = qp->req.psn;
		tx.h.bth.ackreq = ackreq;
		tx.h.bth.se = last && (w->send_flags & IBV_SEND_SOLICITED) && (wi->flags & SIB_WR_SOLICIT);
		if (hdrs & IBA_HDR_RETH) {
			tx.h.reth.va = w->remote_addr + off;
			tx.h.reth.rkey = w->rkey;
			tx.h.reth.dmalen = left;
		}
		if (hdrs & IBA_HDR_IMMDT)
			tx.h.immdt_be = w->imm_be;
		if (hdrs & IBA_HDR_ATOMICETH)
			sib_atomic_fill_eth(&tx.h.atomic, w);
		if (hdrs & IBA_HDR_IETH)
			tx.h.ieth_rkey = w->inv_rkey;
		if (hdrs & IBA_HDR_XRCETH)
			tx.h.xrc_srqn = w->xrc_srqn;
		payload = sib_tx_headers(&tx);
		if (paylen && w->inline_data)
			memcpy(payload, w->inline_data + off, paylen);
		else if (paylen && sib_sge_copy_out(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge,
						    w->num_sge, off, payload, paylen) != IBV_WC_SUCCESS)
			copy_failed = true;
		sib_tx_end(qp, &tx, paylen);
	}
	/* Deregistered between check and copy: what left is garbage, and the
	 * WQE fails (the QP goes to ERR, the peer's message never completes). */
	if (copy_failed)
		return REQST_ERR_LOC_PROT;
	if (read || placed) {
		qp->req.psn = iba_psn_add(qp->req.psn, sib_msg_npsn(left, qp->mtu));
		qp->req.reads_outstanding += read;
		qp->req.offset = w->length;
	} else {
		qp->req.psn = iba_psn_add(qp->req.psn, 1);
		qp->req.offset += paylen;
	}
	qp->req.ackreq_deadline = 0; /* (re)started when the pass ends */
	if (ackreq || sib_qp_is_uc(qp)) {
		qp->req.ack_owed = false;
	} else {
		qp->req.ack_owed = true;
		qp->req.owed_psn = iba_psn_add(qp->req.psn, IBA_PSN_MASK); /* this packet's */
	}
	if (!placed) { /* direct placement waits until these are acknowledged */
		qp->req.pkt_end = qp->req.psn;
		qp->req.pkt_unacked = true;
	}
	arm_retry_timer(qp);
	return last ? REQST_WQE_SENT : REQST_SEND_PACKET;
}

static enum req_state wqe_sent(struct req_pass *p)
{
	p->w->state = SIB_SWQE_SENT;
	if (sib_qp_is_uc(p->qp)) /* no ACK to wait for (uc.c) */
		sib_uc_wqe_sent(p->qp);
	p->qp->req.offset = 0;
	p->qp->req.wqe++;
	return REQST_NEXT_WQE;
}

static enum req_state local_error(struct req_pass *p, enum ibv_wc_status st);

/* A local WQE (mw.c) in SQ order: carried out once (a rewind past it does
 * not run it again), it uses no PSN; at the head of the SQ it completes
 * now, else when the WQEs before it do (comp.c). */
static enum req_state local_op(struct req_pass *p)
{
	struct sib_qp *qp = p->qp;
	struct sib_swqe *w = p->w;
	bool head = qp->sq_tail == qp->req.wqe;

	if (!w->started) {
		enum ibv_wc_status st = sib_mw_local_wqe(qp, w);

		w->started = true;
		w->first_psn = qp->req.psn;
		w->npsn = 0;
		if (st != IBV_WC_SUCCESS)
			return local_error(p, st);
	}
	wqe_sent(p);
	if (head && w->state != SIB_SWQE_DONE) /* (UC completed it already) */
		sib_sq_complete(qp, IBV_WC_SUCCESS);
	return REQST_NEXT_WQE;
}

/* The WQE at req.wqe fails locally with `st` (see REQST_ERR_*). */
static enum req_state local_error(struct req_pass *p, enum ibv_wc_status st)
{
	const struct sib_wr_info *wi = sib_wr_info(p->w->opcode);

	/* The WQEs before it must complete first: ask for their ACK.  (Not
	 * for a local WQE, carried out once: the packet before one always
	 * carries AckReq, see want_ackreq.) */
	if (!(wi && (wi->flags & SIB_WR_LOCAL)) && resend_for_ack(p->qp))
		return REQST_NEXT_WQE;
	p->w->status = st;
	p->qp->req.local_err = true;
	p->qp->req.local_err_idx = p->qp->req.wqe;
	return REQST_DONE;
}

/*
 * The pass ends with packets sent without AckReq and no AckReq after them
 * (want_ackreq), and nothing more to send: SIB_ACKREQ_DELAY_NS after the
 * last of them, if the requester is free to send, ask for their ACK
 * (resend_for_ack).  True when it rewound: the pass goes on.
 */
static bool ask_for_tail_ack(struct sib_qp *qp)
{
	uint64_t now;

	if (!qp->req.ack_owed || (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) ||
	    qp->comp.rnr_deadline || qp->req.local_err)
		return false;
	/* More to send (a full peer inbox, the window): its packets go on,
	 * and a later one asks (want_ackreq). */
	if (qp->req.offset || qp->req.wqe != atomic_load_explicit(&qp->sq_head, memory_order_acquire)) {
		qp->req.ackreq_deadline = 0;
		return false;
	}
	now = sib_clock_ns(qp->ctx);
	if (!qp->req.ackreq_deadline) {
		qp->req.ackreq_deadline = sib_deadline_ns(qp->ctx, SIB_ACKREQ_DELAY_NS);
		return false;
	}
	return now >= qp->req.ackreq_deadline && resend_for_ack(qp);
}

void sib_req_run(struct sib_qp *qp)
{
	struct req_pass p = { .qp = qp };
	enum req_state st = REQST_CHECK_QP;

	for (;;) {
		SIB_STAGE_TRACE("req", p.qp, req_state_name[st]);
		switch (st) {
		case REQST_CHECK_QP:
			st = check_qp(&p);
			break;
		case REQST_NEXT_WQE:
			st = next_wqe(&p);
			break;
		case REQST_CHECK_LIMITS:
			st = check_limits(&p);
			break;
		case REQST_START_WQE:
			st = start_wqe(&p);
			break;
		case REQST_LOCAL_OP:
			st = local_op(&p);
			break;
		case REQST_SEND_PACKET:
			st = send_packet(&p);
			break;
		case REQST_WQE_SENT:
			st = wqe_sent(&p);
			break;
		case REQST_ERR_LOC_PROT:
			st = local_error(&p, IBV_WC_LOC_PROT_ERR);
			break;
		case REQST_ERR_LOC_QP_OP:
			st = local_error(&p, IBV_WC_LOC_QP_OP_ERR);
			break;
		case REQST_DONE:
		default:
			if (qp->req.ack_owed && ask_for_tail_ack(qp)) {
				st = REQST_CHECK_QP;
				break;
			}
			/* PSNs on the wire and nothing sent this pass (a fence,
			 * the READ depth, the window, or a NAK's rewind that
			 * stopped the timer): the ACK timer must run, or a lost
			 * response would never be noticed. */
			if (!qp->comp.rnr_deadline && qp->comp.psn != qp->req.psn &&
			    (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD) && !sib_sq_drained(qp))
				arm_retry_timer(qp);
			return;
		}
	}
}

void sib_req_rewind(struct sib_qp *qp, uint32_t psn)
{
	/* The WQEs that may hold psn: those sent, plus a partly sent one. */
	uint32_t end = qp->req.wqe + (qp->req.offset ? 1 : 0);

	for (uint32_t i = qp->sq_tail; i != end; i++) {
		struct sib_swqe *w = &qp->sq[i & (qp->sq_size - 1)];
		int32_t d;

		if (!w->started)
			break;
		d = iba_psn_diff(psn, w->first_psn);
		if (d < 0 && i == qp->sq_tail)
			d = 0; /* older than every WQE outstanding: resend from the oldest */
		if (d < 0 || (uint32_t)d >= w->npsn)
			continue;
		/* READs from here on will be requested again (a partly sent
		 * WQE at req.wqe was counted out by the rewind into it). */
		for (uint32_t j = i; j != qp->req.wqe; j++) {
			const struct sib_wr_info *wi = sib_wr_info(qp->sq[j & (qp->sq_size - 1)].opcode);

			if (wi && (wi->flags & (SIB_WR_READ | SIB_WR_ATOMIC)) && qp->req.reads_outstanding)
				qp->req.reads_outstanding--;
		}
		if (w->placed) /* one packet stands for all its PSNs */
			d = 0;
		qp->req.wqe = i;
		qp->req.offset = (uint32_t)d * qp->mtu;
		qp->req.psn = iba_psn_add(w->first_psn, (uint32_t)d);
		qp->req.psns_since_ackreq = 0;
		w->state = SIB_SWQE_POSTED;
		return;
	}
}
