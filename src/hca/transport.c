/* SPDX-License-Identifier: MIT */
/*
 * The transport half of a QP: the lifecycle of the stage state (allocate,
 * RESET, the transport attributes of a modify, the MR references the
 * responder holds), and one engine pass over a QP's stages (IBA 9.7,
 * 10.3.1).  Callers hold progress_lock (it serializes the stages; lifetime
 * is the object tables'), except for init/fini, which run on a QP nobody
 * else can see yet or any more.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hca/srq.h"
#include "hca/transport.h"
#include "hca/ud.h"

int sib_qp_transport_init(struct sib_qp *qp)
{
	qp->resp.rd_res_size = SIB_MAX_RD_ATOMIC + 1;
	qp->resp.rd_res = calloc(qp->resp.rd_res_size, sizeof(*qp->resp.rd_res));
	return qp->resp.rd_res ? 0 : ENOMEM;
}

void sib_qp_transport_fini(struct sib_qp *qp)
{
	if (qp->wqe_srq) /* an SRQ's WQE taken mid-message (srq.c): let go */
		sib_rwqe_done(qp);
	free(qp->resp.rd_res);
	qp->resp.rd_res = NULL;
}

void sib_qp_transport_reset(struct sib_qp *qp)
{
	struct sib_read_res *rd_res = qp->resp.rd_res;
	uint32_t rd_res_size = qp->resp.rd_res_size;
	uint32_t sq_psn = qp->req.psn, rq_psn = qp->resp.epsn;

	sib_qp_transport_release(qp, false);
	if (qp->wqe_srq) /* RESET discards an SRQ's WQE taken mid-message (srq.c) */
		sib_rwqe_done(qp);
	/* PSNs are attributes that RESET keeps until the next modify sets them. */
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->req.psn = qp->comp.psn = sq_psn;
	qp->comp.acked_psn = iba_psn_add(sq_psn, IBA_PSN_MASK);
	qp->comp.retry_left = qp->retry_cnt;
	qp->comp.rnr_left = qp->rnr_retry;
	qp->resp.epsn = rq_psn;
	qp->resp.rd_res = rd_res;
	qp->resp.rd_res_size = rd_res_size;
	qp->resp.err_status = IBV_WC_SUCCESS;
}

void sib_qp_transport_modify(struct sib_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	if (mask & IBV_QP_RETRY_CNT)
		qp->comp.retry_left = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->comp.rnr_left = a->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		qp->resp.epsn = a->rq_psn & IBA_PSN_MASK;
	if (mask & IBV_QP_SQ_PSN) {
		qp->req.psn = qp->comp.psn = a->sq_psn & IBA_PSN_MASK;
		qp->comp.acked_psn = iba_psn_add(qp->req.psn, IBA_PSN_MASK);
	}
}

/* Drop one responder MR reference if all go, or if its MR was
 * deregistered or reregistered (the generation moved). */
static void mr_drop(struct sib_qp *qp, struct sib_mr **mr, uint64_t h, bool dead_only)
{
	if (!*mr || (dead_only && sib_objtab_live(&qp->ctx->mrs, h)))
		return;
	*mr = NULL;
	sib_objtab_put(&qp->ctx->mrs, h);
}

void sib_qp_transport_release(struct sib_qp *qp, bool dead_only)
{
	struct sib_resp *r = &qp->resp;

	mr_drop(qp, &r->mr, r->mr_h, dead_only);
	/* Entries between tail and head may hold one; the rest are NULL. */
	for (uint32_t i = r->rd_res_tail; r->rd_res && i != r->rd_res_head; i = (i + 1) % r->rd_res_size)
		mr_drop(qp, &r->rd_res[i].mr, r->rd_res[i].mr_h, dead_only);
}

static void earliest(uint64_t *next, uint64_t t)
{
	if (t && (!*next || t < *next))
		*next = t;
}

void sib_qp_transport_run(struct sib_qp *qp, uint64_t *now, uint64_t *next)
{
	/* An MR held between packets was deregistered or reregistered: let
	 * go now, so that its destroyer's wait ends without a packet. */
	if (__builtin_expect(qp->resp.mr != NULL || qp->resp.rd_res_tail != qp->resp.rd_res_head, 0))
		sib_qp_transport_release(qp, true);
	/* An XRC SRQ whose WQE this target QP holds mid-message is being
	 * destroyed: the WQE completes flushed and the SRQ is let go, so that
	 * the destroy ends (the rest of the message finds no SRQ: dropped). */
	if (__builtin_expect(qp->wqe_srq != NULL && qp->wqe_srq != qp->srq, 0) &&
	    !sib_objtab_live(&qp->ctx->srqs, qp->wqe_srq_h)) {
		struct sib_rwqe *r = sib_rwqe_cur(qp);
		struct ibv_wc wc = { .wr_id = r->wr_id, .status = IBV_WC_WR_FLUSH_ERR,
				     .qp_num = qp->ibv.qp_base.qp_num };
		struct sib_cq *cq = sib_rwqe_cq(qp);

		/* Before letting go: the SRQ's reference keeps its CQ. */
		sib_cq_push(cq, &wc, false);
		qp->resp.in_send = false;
		qp->resp.have_rwqe = false;
		sib_rwqe_done(qp);
	}
	if (qp->state == IBV_QPS_ERR) {
		if (qp->resp.ack_pending) /* a fatal NAK still owed to the requester */
			sib_resp_send_ack(qp, qp->resp.ack_syndrome, qp->resp.ack_psn);
		if (qp->sq_tail != atomic_load_explicit(&qp->sq_head, memory_order_acquire) ||
		    qp->rq_tail != atomic_load_explicit(&qp->rq_head, memory_order_acquire))
			sib_qp_flush(qp);
		return;
	}
	if (qp->state < IBV_QPS_RTR)
		return;
	sib_resp_run(qp);
	if (qp->comp.retry_deadline || qp->comp.rnr_deadline) {
		if (!*now)
			*now = sib_clock_ns(qp->ctx);
		sib_comp_timers(qp, *now);
	}
	if (qp->ibv.qp_base.qp_type == IBV_QPT_UD)
		sib_ud_req_run(qp);
	else
		sib_req_run(qp);
	sib_comp_local_error(qp);
	if (qp->state == IBV_QPS_SQE && qp->sq_tail != atomic_load_explicit(&qp->sq_head,
									     memory_order_acquire))
		sib_uc_flush_sq(qp); /* posted in SQE: flushed (uc.c) */
	if (qp->state == IBV_QPS_SQD && qp->sqd_event_pending && sib_sq_drained(qp)) {
		/* IBA 10.3.1: the send queue is drained. */
		qp->sqd_event_pending = false;
		sib_qp_async_event(qp, IBV_EVENT_SQ_DRAINED);
	}
	if (qp->state != IBV_QPS_ERR) {
		earliest(next, qp->comp.retry_deadline);
		earliest(next, qp->comp.rnr_deadline);
		earliest(next, qp->req.ackreq_deadline);
	}
}
