/* SPDX-License-Identifier: MIT */
/*
 * Unreliable Connected service (IBA 9.7.4.1.4 and the UC rules of ch. 9,
 * 9.9.3 responder classes D and E, 10.3.1 SQE): where UC differs from RC.  The
 * requester completes a WQE once its last packet is on the wire (no ACK,
 * no retry); the responder never ACKs or NAKs, drops a message whose
 * packets it does not take in order, and resynchronises on the next
 * FIRST/ONLY.  resp.c and req.c call here from one branch each; the rest
 * of their pipeline (lengths, keys, placement, completion) is shared.
 * Must not send anything.  Engine context only (progress_lock held).
 */
#include "hca/transport.h"

/*
 * Give up the message in progress (IBA 9.9.3 class D): nothing of it
 * completes.  The receive WQE it was filling stays at the head of the RQ
 * and is used again, from offset 0, by the next SEND (what the dropped
 * packets wrote into its buffers is undefined, as IBA allows).  An RDMA
 * WRITE's target MR reference is dropped.  `rest`: also drop the
 * message's later packets, until a FIRST/ONLY.
 */
void sib_uc_drop_msg(struct sib_qp *qp, bool rest)
{
	struct sib_resp *r = &qp->resp;

	r->in_send = r->in_write = false;
	r->have_rwqe = false;
	r->offset = 0;
	r->remaining = 0;
	if (r->mr) {
		r->mr = NULL;
		sib_objtab_put(&qp->ctx->mrs, r->mr_h);
	}
	r->uc_drop = rest;
	qp->ctx->uc_dropped_msgs++;
}

bool sib_uc_check_psn(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	struct sib_resp *r = &qp->resp;
	bool start = pkt->op->flags & (IBA_OP_FIRST | IBA_OP_ONLY);

	if (pkt->bth.psn == r->epsn && !r->uc_drop)
		return true;
	if (!start) {
		/* A packet was lost (or comes late, or twice): the message it
		 * belongs to is gone; so is the one in progress. */
		if (r->in_send || r->in_write || !r->uc_drop)
			sib_uc_drop_msg(qp, true);
		return false;
	}
	/* A FIRST/ONLY starts a new message whatever came before: adopt
	 * its PSN.  A message still in progress lost its end. */
	if (r->in_send || r->in_write)
		sib_uc_drop_msg(qp, false);
	r->uc_drop = false;
	r->epsn = pkt->bth.psn;
	return true;
}

bool sib_uc_check_op_seq(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	struct sib_resp *r = &qp->resp;
	uint32_t f = pkt->op->flags;

	if (f & (IBA_OP_FIRST | IBA_OP_ONLY)) {
		/* In sequence but inside a message: that one lost its end
		 * (class D); this one starts afresh. */
		if (r->in_send || r->in_write)
			sib_uc_drop_msg(qp, false);
		return true;
	}
	if (((f & IBA_OP_SEND) && r->in_send) || ((f & IBA_OP_WRITE) && r->in_write))
		return true;
	/* A MIDDLE/LAST outside its kind of message. */
	sib_uc_drop_msg(qp, true);
	return false;
}

void sib_uc_error(struct sib_qp *qp, enum sib_err_class ec)
{
	const struct sib_err_info *e = sib_err_info(ec);

	switch (ec) {
	case SIB_EC_LOC_LEN:
	case SIB_EC_LOC_PROT:
	case SIB_EC_REM_OP:
		/* The receive WQE itself cannot take the message (too short,
		 * or its buffers fail their L_Key check): it completes with
		 * the error and the QP goes to ERR (class A), silently. */
		qp->resp.err_status = e->resp_status;
		if (e->next_state == IBV_QPS_ERR)
			sib_qp_enter_error(qp);
		break;
	default:
		/* PSN, opcode sequence, opcode not enabled, no receive WQE,
		 * bad length, R_Key violation: the message is dropped
		 * silently and the QP goes on (classes D and E, no SRQ). */
		sib_uc_drop_msg(qp, true);
		break;
	}
}

void sib_uc_wqe_sent(struct sib_qp *qp)
{
	/* UC WQEs are sent in order and none waits for a response: the one
	 * just sent is the oldest (a local error stops the requester). */
	if (qp->sq_tail == qp->req.wqe)
		sib_sq_complete(qp, IBV_WC_SUCCESS);
	qp->comp.psn = qp->req.psn; /* nothing is outstanding */
}

void sib_uc_flush_sq(struct sib_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);

	while (qp->sq_tail != head) {
		const struct sib_swqe *w = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];

		sib_sq_complete(qp, w->started && w->status != IBV_WC_SUCCESS ? w->status
									       : IBV_WC_WR_FLUSH_ERR);
	}
	qp->req.wqe = qp->sq_tail;
	qp->req.offset = 0;
	qp->req.local_err = false;
	qp->comp.psn = qp->req.psn;
}

void sib_uc_enter_sqe(struct sib_qp *qp)
{
	/* IBA 10.3.1 (C10-38): a UC send WQE that fails takes the send
	 * queue to SQE, not the QP to ERR; the receive queue goes on and
	 * SQE -> RTS resumes.  The failed WQE completes with its error,
	 * later ones (and those posted while in SQE) with a flush error. */
	qp->state = IBV_QPS_SQE;
	/* not ibv.qp_base.state: the application sees it by ibv_query_qp (hca.h) */
	sib_uc_flush_sq(qp);
}
