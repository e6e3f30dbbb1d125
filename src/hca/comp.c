/* SPDX-License-Identifier: MIT */
/*
 * RC completer (IBA 9.7.5.1, 10.7.3): ACKs, NAKs and READ responses for
 * the requester.  Completes send WQEs strictly in order, places READ
 * response data, retries on PSN-sequence NAKs and ACK timeouts (retry_cnt),
 * waits out RNR NAKs (rnr_retry, 7 = forever), and moves the QP to ERR
 * with every outstanding WQE flushed when a retry budget runs out or the
 * responder reports a fatal error.  Engine context only.
 */
#include "hca/transport.h"

/* What the requester reports for a NAK code (iba-transport.md §3). */
static const enum ibv_wc_status nak_status[] = {
	[IBA_NAK_INV_REQ] = IBV_WC_REM_INV_REQ_ERR,
	[IBA_NAK_REM_ACCESS] = IBV_WC_REM_ACCESS_ERR,
	[IBA_NAK_REM_OP] = IBV_WC_REM_OP_ERR,
	[IBA_NAK_INV_RD_REQ] = IBV_WC_REM_INV_RD_REQ_ERR,
};

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return IBV_WC_SEND;
	}
}

void sib_sq_complete(struct sib_qp *qp, enum ibv_wc_status status)
{
	struct sib_swqe *w = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];
	/* Errors complete even unsignaled WRs (IBA 10.7.3.1). */
	bool cqe = w->signaled || status != IBV_WC_SUCCESS;
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = wc_opcode(w->opcode),
		.byte_len = status == IBV_WC_SUCCESS ? w->length : 0,
		.qp_num = qp->ibv.qp_base.qp_num,
	};

	w->state = SIB_SWQE_DONE;
	/* Free the slot before the application can see the completion: it
	 * may post again the moment it polls it (perftest keeps the SQ full). */
	__atomic_store_n(&qp->sq_tail, qp->sq_tail + 1, __ATOMIC_RELEASE);
	if (cqe)
		sib_cq_push(to_scq(qp->ibv.qp_base.send_cq), &wc, false);
}

static bool sq_outstanding(const struct sib_qp *qp)
{
	return qp->sq_tail != qp->sq_next || qp->req_offset;
}

static struct sib_swqe *sq_oldest(struct sib_qp *qp)
{
	return sq_outstanding(qp) ? &qp->sq[qp->sq_tail & (qp->sq_size - 1)] : NULL;
}

/* Complete SEND/WRITE WQEs whose last PSN is <= psn.  Stops at a READ,
 * which only its response completes. */
static void ack_upto(struct sib_qp *qp, uint32_t psn)
{
	struct sib_swqe *w;

	if (iba_psn_diff(psn, qp->acked_psn) > 0)
		qp->acked_psn = psn;

	while ((w = sq_oldest(qp)) && w->state == SIB_SWQE_SENT && w->opcode != IBV_WR_RDMA_READ &&
	       iba_psn_diff(iba_psn_add(w->first_psn, w->npsn - 1), psn) <= 0)
		sib_sq_complete(qp, IBV_WC_SUCCESS);
}

/* Oldest PSN still waiting for an ACK or a response. */
static void update_comp_psn(struct sib_qp *qp, uint32_t acked)
{
	struct sib_swqe *w = sq_oldest(qp);

	if (!w)
		qp->comp_psn = qp->req_psn;
	else if (w->opcode == IBV_WR_RDMA_READ)
		qp->comp_psn = iba_psn_add(w->first_psn, qp->read_rcvd);
	else if (iba_psn_diff(iba_psn_add(acked, 1), qp->comp_psn) > 0)
		qp->comp_psn = iba_psn_add(acked, 1);
}

/* Forward progress: reload the retry budgets, restart the ACK timer. */
static void progress_made(struct sib_qp *qp)
{
	qp->retry_left = qp->retry_cnt;
	qp->rnr_left = qp->rnr_retry;
	qp->retry_deadline = 0;
	/* Only PSNs on the wire need the ACK timer: a message held back by a
	 * full peer inbox is not late. */
	if (qp->comp_psn != qp->req_psn && qp->timeout)
		qp->retry_deadline = sib_now_ns() + sib_ack_timeout_ns(qp->timeout);
}

static void fail_oldest(struct sib_qp *qp, enum ibv_wc_status status)
{
	struct sib_swqe *w = sq_oldest(qp);

	if (w)
		w->status = status;
	sib_qp_enter_error(qp);
}

static void read_response(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	uint32_t psn = pkt->bth.psn;
	struct sib_swqe *w;
	uint32_t off;

	/* A READ response implicitly ACKs every request before it (C9-?). */
	ack_upto(qp, iba_psn_add(psn, IBA_PSN_MASK));
	w = sq_oldest(qp);
	if (!w || w->opcode != IBV_WR_RDMA_READ || w->state != SIB_SWQE_SENT ||
	    psn != iba_psn_add(w->first_psn, qp->read_rcvd))
		return; /* duplicate or out of order: dropped, the timer recovers */
	off = qp->read_rcvd * qp->mtu;
	bool last = pkt->op->flags & (IBA_OP_LAST | IBA_OP_ONLY);
	if (pkt->paylen > w->length - off || (!last && pkt->paylen != qp->mtu) ||
	    (last && off + pkt->paylen != w->length)) {
		fail_oldest(qp, IBV_WC_BAD_RESP_ERR);
		return;
	}
	/* The sink MR may have been deregistered since the WQE started. */
	if (sib_sge_check(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge,
			  IBV_ACCESS_LOCAL_WRITE) != IBV_WC_SUCCESS) {
		fail_oldest(qp, IBV_WC_LOC_PROT_ERR);
		return;
	}
	sib_sge_copy_in(w->sge, w->num_sge, off, pkt->payload, pkt->paylen);
	qp->read_rcvd++;
	qp->comp_psn = iba_psn_add(psn, 1);
	if (last) {
		qp->read_rcvd = 0;
		if (qp->reads_outstanding)
			qp->reads_outstanding--;
		sib_sq_complete(qp, IBV_WC_SUCCESS);
		/* ACKs for requests after the READ may have come first. */
		ack_upto(qp, qp->acked_psn);
		update_comp_psn(qp, iba_psn_diff(qp->acked_psn, psn) > 0 ? qp->acked_psn : psn);
	}
	progress_made(qp);
}

void sib_comp_packet(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	uint32_t psn = pkt->bth.psn;
	uint8_t syn = pkt->aeth.syndrome;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	/* Only PSNs that are outstanding mean anything; the rest are stale. */
	if (iba_psn_diff(psn, qp->comp_psn) < 0 || iba_psn_diff(qp->req_psn, psn) <= 0)
		return;
	if (pkt->op->flags & IBA_OP_READ_RESP) {
		read_response(qp, pkt);
		return;
	}
	if (!(pkt->op->flags & IBA_OP_ACK) || pkt->bth.opcode != IBA_OPC_ACKNOWLEDGE)
		return; /* atomics are not enabled (atomic_cap NONE) */

	switch (syn & IBA_AETH_TYPE_MASK) {
	case IBA_AETH_ACK:
		ack_upto(qp, psn);
		update_comp_psn(qp, psn);
		progress_made(qp);
		break;
	case IBA_AETH_RNR_NAK:
		qp->ctx->rnr_naks++;
		ack_upto(qp, iba_psn_add(psn, IBA_PSN_MASK));
		update_comp_psn(qp, iba_psn_add(psn, IBA_PSN_MASK));
		if (qp->rnr_left == 0) {
			fail_oldest(qp, IBV_WC_RNR_RETRY_EXC_ERR);
			break;
		}
		if (qp->rnr_retry != 7)
			qp->rnr_left--;
		sib_req_rewind(qp, psn);
		qp->retry_deadline = 0;
		qp->rnr_deadline = sib_now_ns() + (uint64_t)iba_rnr_timer_us(syn & IBA_AETH_VALUE_MASK) * 1000;
		break;
	case IBA_AETH_NAK: {
		uint32_t before = qp->comp_psn;

		ack_upto(qp, iba_psn_add(psn, IBA_PSN_MASK));
		update_comp_psn(qp, iba_psn_add(psn, IBA_PSN_MASK));
		if ((syn & IBA_AETH_VALUE_MASK) == IBA_NAK_PSN_SEQ) {
			qp->ctx->seq_naks++;
			/* The NAK acknowledged the PSNs before it: forward
			 * progress reloads the retry budget, as an ACK does. */
			if (qp->comp_psn != before)
				qp->retry_left = qp->retry_cnt;
			if (qp->retry_left == 0) {
				fail_oldest(qp, IBV_WC_RETRY_EXC_ERR);
				break;
			}
			qp->retry_left--;
			sib_req_rewind(qp, psn);
			qp->retry_deadline = 0;
			break;
		}
		unsigned int code = syn & IBA_AETH_VALUE_MASK;
		fail_oldest(qp, code < sizeof(nak_status) / sizeof(nak_status[0]) && nak_status[code] ?
				nak_status[code] : IBV_WC_REM_OP_ERR);
		break;
	}
	default:
		break; /* reserved type: ignored */
	}
}

void sib_comp_timers(struct sib_qp *qp, uint64_t now)
{
	if (qp->rnr_deadline && now >= qp->rnr_deadline)
		qp->rnr_deadline = 0; /* the requester resends from the NAKed PSN */
	if (!qp->retry_deadline || now < qp->retry_deadline)
		return;
	qp->retry_deadline = 0;
	if (!sq_outstanding(qp))
		return;
	qp->ctx->ack_timeouts++;
	if (qp->retry_left == 0) {
		fail_oldest(qp, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	qp->retry_left--;
	sib_req_rewind(qp, qp->comp_psn);
}

void sib_qp_flush(struct sib_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);

	while (qp->sq_tail != head) {
		struct sib_swqe *w = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];

		sib_sq_complete(qp, w->started && w->status != IBV_WC_SUCCESS ? w->status
									       : IBV_WC_WR_FLUSH_ERR);
	}
	qp->sq_next = qp->sq_tail;
	qp->req_offset = 0;
	qp->reads_outstanding = 0;
	qp->read_rcvd = 0;
	qp->retry_deadline = qp->rnr_deadline = 0;

	head = atomic_load_explicit(&qp->rq_head, memory_order_acquire);
	while (qp->rq_tail != head) {
		struct sib_rwqe *r = &qp->rq[qp->rq_tail & (qp->rq_size - 1)];
		struct ibv_wc wc = {
			.wr_id = r->wr_id,
			.status = qp->resp_have_rwqe ? qp->resp_err_status : IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.qp_num = qp->ibv.qp_base.qp_num,
		};
		if (wc.status == IBV_WC_SUCCESS)
			wc.status = IBV_WC_WR_FLUSH_ERR;
		qp->resp_have_rwqe = false;
		__atomic_store_n(&qp->rq_tail, qp->rq_tail + 1, __ATOMIC_RELEASE);
		sib_cq_push(to_scq(qp->ibv.qp_base.recv_cq), &wc, false);
	}
	qp->resp_in_send = qp->resp_in_write = false;
	/* A fatal NAK not yet on the wire is still owed (engine.c retries it). */
	if (qp->ack_pending && (qp->ack_syndrome & IBA_AETH_TYPE_MASK) != IBA_AETH_NAK)
		qp->ack_pending = false;
	qp->rd_res_head = qp->rd_res_tail = 0;
	qp->local_err = false;
}

void sib_comp_local_error(struct sib_qp *qp)
{
	/* Earlier WQEs complete first, in order (IBA 10.8.3.3). */
	if (qp->local_err && qp->sq_tail == qp->local_err_idx)
		sib_qp_enter_error(qp);
}

void sib_qp_async_event(struct sib_qp *qp, enum ibv_event_type type)
{
	sib_async_event(qp->ctx, type, qp->ibv.qp_base.qp_num, qp->obj_handle);
}

void sib_qp_enter_error(struct sib_qp *qp)
{
	qp->state = IBV_QPS_ERR;
	qp->ibv.qp_base.state = IBV_QPS_ERR;
	sib_qp_flush(qp);
}
