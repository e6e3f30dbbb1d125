/* SPDX-License-Identifier: MIT */
/*
 * Completer (IBA 9.7.5.1, 10.7.3): ACKs, NAKs and READ responses for the
 * requester, and its timers, as a state machine (STYLE 6.4): one function
 * per state returning the next.  Completes send WQEs strictly in order,
 * places READ response data, retries on PSN-sequence NAKs and ACK
 * timeouts (retry_cnt), waits out RNR NAKs (rnr_retry, 7 = forever), and
 * moves the QP to ERR with every outstanding WQE flushed when a retry
 * budget runs out or the responder reports a fatal error (transport.c's
 * class table gives the WC status).  Owns qp->comp.  Engine context only.
 */
#include "hca/atomic.h"
#include "hca/direct.h"
#include "hca/srq.h"
#include "hca/transport.h"
#include "hca/wr.h"

enum comp_state {
	COMPST_CHECK_PSN,              /* an outstanding PSN at all? */
	COMPST_CHECK_OPCODE,           /* READ response, ACK, or something else */
	COMPST_READ,                   /* place a READ response packet */
	COMPST_ATOMIC,                 /* ATOMIC_ACKNOWLEDGE: the original value, complete */
	COMPST_CHECK_ACK,              /* by AETH type: ACK, RNR NAK, NAK */
	COMPST_ACK,                    /* complete SEND/WRITEs up to the PSN */
	COMPST_PROGRESS,               /* forward progress: reload budgets, timer */
	COMPST_RNR,                    /* RNR NAK: wait, then resend from the PSN */
	COMPST_SEQ_NAK,                /* PSN sequence NAK: resend from the PSN */
	COMPST_CHECK_TIMERS,           /* RNR wait over? ACK timeout? */
	COMPST_TIMEOUT,                /* local ACK timeout: resend from the oldest PSN */
	/* Errors (IBA 9.9.2 requester side): the oldest WQE completes with the
	 * status, the rest flush, the QP goes to ERR. */
	COMPST_ERR_NAK,                /* responder class A/C NAK: the class table's status */
	COMPST_ERR_RETRY_EXC,          /* retry_cnt spent on timeouts or sequence NAKs */
	COMPST_ERR_RNR_RETRY_EXC,      /* rnr_retry spent on RNR NAKs */
	COMPST_ERR_BAD_RESP,           /* a READ response that does not fit its WQE */
	COMPST_ERR_LOC_PROT,           /* a READ's sink buffers fail their L_Key check */
	COMPST_ERROR,
	COMPST_DONE,
	COMPST_COUNT
};

static const char *const comp_state_name[COMPST_COUNT] = {
	[COMPST_CHECK_PSN] = "CHECK_PSN",
	[COMPST_CHECK_OPCODE] = "CHECK_OPCODE",
	[COMPST_READ] = "READ",
	[COMPST_ATOMIC] = "ATOMIC",
	[COMPST_CHECK_ACK] = "CHECK_ACK",
	[COMPST_ACK] = "ACK",
	[COMPST_PROGRESS] = "PROGRESS",
	[COMPST_RNR] = "RNR",
	[COMPST_SEQ_NAK] = "SEQ_NAK",
	[COMPST_CHECK_TIMERS] = "CHECK_TIMERS",
	[COMPST_TIMEOUT] = "TIMEOUT",
	[COMPST_ERR_NAK] = "ERR_NAK",
	[COMPST_ERR_RETRY_EXC] = "ERR_RETRY_EXC",
	[COMPST_ERR_RNR_RETRY_EXC] = "ERR_RNR_RETRY_EXC",
	[COMPST_ERR_BAD_RESP] = "ERR_BAD_RESP",
	[COMPST_ERR_LOC_PROT] = "ERR_LOC_PROT",
	[COMPST_ERROR] = "ERROR",
	[COMPST_DONE] = "DONE",
};

/* The oldest WQE's status in each requester-side error state. */
static const enum ibv_wc_status comp_err_status[COMPST_COUNT] = {
	[COMPST_ERR_RETRY_EXC] = IBV_WC_RETRY_EXC_ERR,
	[COMPST_ERR_RNR_RETRY_EXC] = IBV_WC_RNR_RETRY_EXC_ERR,
	[COMPST_ERR_BAD_RESP] = IBV_WC_BAD_RESP_ERR,
	[COMPST_ERR_LOC_PROT] = IBV_WC_LOC_PROT_ERR,
};

const char *sib_comp_state_name(unsigned int st)
{
	return st < COMPST_COUNT && comp_state_name[st] ? comp_state_name[st] : "unknown";
}

/* One packet (or timer check) going through the machine. */
struct comp_pass {
	struct sib_qp *qp;
	const struct iba_pkt *pkt;     /* NULL for the timers */
	uint64_t now;                  /* timers only */
	enum ibv_wc_status status;     /* COMPST_ERROR: for the oldest WQE */
};

static bool is_read(const struct sib_swqe *w)
{
	const struct sib_wr_info *wi = sib_wr_info(w->opcode);

	return wi && (wi->flags & SIB_WR_READ);
}

/* A READ or an atomic: only its response completes it. */
static bool is_rd_atomic(const struct sib_swqe *w)
{
	const struct sib_wr_info *wi = sib_wr_info(w->opcode);

	return wi && (wi->flags & (SIB_WR_READ | SIB_WR_ATOMIC));
}

void sib_sq_complete(struct sib_qp *qp, enum ibv_wc_status status)
{
	struct sib_swqe *w = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];
	const struct sib_wr_info *wi = sib_wr_info(w->opcode);
	/* Errors complete even unsignaled WRs (IBA 10.7.3.1). */
	bool cqe = w->signaled || status != IBV_WC_SUCCESS;
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = wi ? wi->wc_opcode : IBV_WC_SEND,
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

static struct sib_swqe *sq_oldest(struct sib_qp *qp)
{
	return sib_sq_drained(qp) ? NULL : &qp->sq[qp->sq_tail & (qp->sq_size - 1)];
}

static void update_comp_psn(struct sib_qp *qp, uint32_t acked);

/* Complete SEND/WRITE WQEs whose last PSN is <= psn.  Stops at a READ or
 * an atomic, which only its response completes.  comp.psn follows at once:
 * a response that is dropped afterwards (out of order) must not leave it
 * behind the oldest outstanding WQE, or a timeout would rewind to a PSN no
 * WQE holds and nothing would be sent again. */
static void ack_upto(struct sib_qp *qp, uint32_t psn)
{
	struct sib_swqe *w;
	bool done = false;

	if (iba_psn_diff(psn, qp->comp.acked_psn) > 0)
		qp->comp.acked_psn = psn;
	while ((w = sq_oldest(qp)) && w->state == SIB_SWQE_SENT && !is_rd_atomic(w) &&
	       (!w->npsn /* a local WQE, done */ ||
		iba_psn_diff(iba_psn_add(w->first_psn, w->npsn - 1), psn) <= 0)) {
		sib_sq_complete(qp, IBV_WC_SUCCESS);
		done = true;
	}
	if (done)
		update_comp_psn(qp, psn);
}

/* Oldest PSN still waiting for an ACK or a response. */
static void update_comp_psn(struct sib_qp *qp, uint32_t acked)
{
	struct sib_swqe *w = sq_oldest(qp);

	if (!w)
		qp->comp.psn = qp->req.psn;
	else if (is_rd_atomic(w)) /* read_rcvd is 0 for an atomic */
		qp->comp.psn = iba_psn_add(w->first_psn, qp->comp.read_rcvd);
	else if (iba_psn_diff(iba_psn_add(acked, 1), qp->comp.psn) > 0)
		qp->comp.psn = iba_psn_add(acked, 1);
}

/* A NAK or READ response for PSN p acknowledges everything before p. */
static void ack_before(struct sib_qp *qp, uint32_t psn)
{
	uint32_t prev = iba_psn_add(psn, IBA_PSN_MASK);

	ack_upto(qp, prev);
	update_comp_psn(qp, prev);
}

static enum comp_state check_psn(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;
	uint32_t psn = p->pkt->bth.psn;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return COMPST_DONE;
	/* Only PSNs that are outstanding mean anything; the rest are stale. */
	if (iba_psn_diff(psn, qp->comp.psn) < 0 || iba_psn_diff(qp->req.psn, psn) <= 0)
		return COMPST_DONE;
	return COMPST_CHECK_OPCODE;
}

static enum comp_state check_opcode(struct comp_pass *p)
{
	if (p->pkt->op->flags & IBA_OP_READ_RESP)
		return COMPST_READ;
	if ((p->pkt->bth.opcode & ~IBA_TRANSPORT_MASK) == IBA_OPC_ACKNOWLEDGE) /* RC or XRC */
		return COMPST_CHECK_ACK;
	if ((p->pkt->bth.opcode & ~IBA_TRANSPORT_MASK) == IBA_OPC_ATOMIC_ACKNOWLEDGE)
		return COMPST_ATOMIC;
	return COMPST_DONE;
}

/* The READ or atomic at the head got its last response, at psn. */
static void rd_atomic_done(struct sib_qp *qp, uint32_t psn)
{
	if (qp->req.reads_outstanding)
		qp->req.reads_outstanding--;
	sib_sq_complete(qp, IBV_WC_SUCCESS);
	/* ACKs for requests after it may have come first. */
	ack_upto(qp, qp->comp.acked_psn);
	update_comp_psn(qp, iba_psn_diff(qp->comp.acked_psn, psn) > 0 ? qp->comp.acked_psn : psn);
}

/* A READ the requester read itself (direct.c) is answered by one response
 * without payload at its last PSN; the data is in the sink already. */
static enum comp_state placed_read(struct comp_pass *p, struct sib_swqe *w)
{
	struct sib_qp *qp = p->qp;
	uint32_t psn = p->pkt->bth.psn;

	/* A response of the other kind answers another request than the one
	 * this WQE sent last (a READ is placed, or not, from its first send). */
	if (!w->placed || !p->pkt->placed || psn != iba_psn_add(w->first_psn, w->npsn - 1))
		return COMPST_DONE; /* not its answer: dropped, the timer recovers */
	if (!(p->pkt->op->flags & IBA_OP_ONLY) || p->pkt->paylen || qp->comp.read_rcvd)
		return COMPST_ERR_BAD_RESP;
	qp->comp.psn = iba_psn_add(psn, 1);
	rd_atomic_done(qp, psn);
	return COMPST_PROGRESS;
}

static enum comp_state do_read(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;
	const struct iba_pkt *pkt = p->pkt;
	uint32_t psn = pkt->bth.psn, off;
	bool last = pkt->op->flags & (IBA_OP_LAST | IBA_OP_ONLY);
	struct sib_swqe *w;

	/* A READ response implicitly ACKs every request before it. */
	ack_upto(qp, iba_psn_add(psn, IBA_PSN_MASK));
	w = sq_oldest(qp);
	if (w && is_read(w) && w->state == SIB_SWQE_SENT && (pkt->placed || w->placed))
		return placed_read(p, w);
	if (!w || !is_read(w) || w->state != SIB_SWQE_SENT ||
	    psn != iba_psn_add(w->first_psn, qp->comp.read_rcvd))
		return COMPST_DONE; /* duplicate or out of order: dropped, the timer recovers */
	off = qp->comp.read_rcvd * qp->mtu;
	if (pkt->paylen > w->length - off || (!last && pkt->paylen != qp->mtu) ||
	    (last && off + pkt->paylen != w->length))
		return COMPST_ERR_BAD_RESP;
	/* The sink MR may have been deregistered since the WQE started. */
	if (sib_sge_check(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge,
			  IBV_ACCESS_LOCAL_WRITE) != IBV_WC_SUCCESS)
		return COMPST_ERR_LOC_PROT;
	if (sib_sge_copy_in(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge, off,
			    pkt->payload, pkt->paylen) != IBV_WC_SUCCESS)
		return COMPST_ERR_LOC_PROT; /* deregistered between check and copy */
	qp->comp.read_rcvd++;
	qp->comp.psn = iba_psn_add(psn, 1);
	if (last) {
		qp->comp.read_rcvd = 0;
		rd_atomic_done(qp, psn);
	}
	return COMPST_PROGRESS;
}

/* An ATOMIC_ACKNOWLEDGE (IBA 9.7.5.1.2 / 9.4.5): it acknowledges every
 * request before it and completes the atomic at the head of the SQ, whose
 * local SGE receives the original remote value (atomic.c). */
static enum comp_state do_atomic(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;
	uint32_t psn = p->pkt->bth.psn;
	struct sib_swqe *w;

	if ((p->pkt->aeth.syndrome & IBA_AETH_TYPE_MASK) != IBA_AETH_ACK)
		return COMPST_DONE; /* malformed: an atomic response is never a NAK */
	ack_upto(qp, iba_psn_add(psn, IBA_PSN_MASK));
	w = sq_oldest(qp);
	if (!w || is_read(w) || !is_rd_atomic(w) || w->state != SIB_SWQE_SENT || psn != w->first_psn)
		return COMPST_DONE; /* duplicate or out of order: dropped, the timer recovers */
	if (sib_atomic_complete(qp, w, p->pkt->atomic_ack) != IBV_WC_SUCCESS)
		return COMPST_ERR_LOC_PROT;
	qp->comp.psn = iba_psn_add(psn, 1);
	rd_atomic_done(qp, psn);
	return COMPST_PROGRESS;
}

static enum comp_state check_ack(struct comp_pass *p)
{
	uint8_t syn = p->pkt->aeth.syndrome;

	switch (syn & IBA_AETH_TYPE_MASK) {
	case IBA_AETH_ACK:
		return COMPST_ACK;
	case IBA_AETH_RNR_NAK:
		return COMPST_RNR;
	case IBA_AETH_NAK:
		return (syn & IBA_AETH_VALUE_MASK) == IBA_NAK_PSN_SEQ ? COMPST_SEQ_NAK : COMPST_ERR_NAK;
	default:
		return COMPST_DONE; /* reserved type: ignored */
	}
}

/*
 * Is the READ or atomic at the head of the send queue still waiting for
 * its response although the responder has answered a request after it
 * (an ACK or NAK for psn, past the WQE's last PSN)?  Responses leave in
 * PSN order, so its response was lost: it must be asked again, from its
 * missing part (IBA 9.7.5.1.3, the "implied NAK" of rxe's completer).
 */
static bool head_response_lost(struct sib_qp *qp, uint32_t psn)
{
	struct sib_swqe *w = sq_oldest(qp);

	return w && is_rd_atomic(w) && w->state == SIB_SWQE_SENT &&
	       iba_psn_diff(psn, iba_psn_add(w->first_psn, w->npsn - 1)) > 0;
}

static enum comp_state do_ack(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;

	ack_upto(qp, p->pkt->bth.psn);
	update_comp_psn(qp, p->pkt->bth.psn);
	if (head_response_lost(qp, p->pkt->bth.psn)) {
		sib_req_rewind(qp, qp->comp.psn);
		qp->comp.retry_deadline = 0;
	}
	return COMPST_PROGRESS;
}

/* Forward progress: reload the retry budgets, restart the ACK timer. */
static enum comp_state progress(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;

	qp->comp.retry_left = qp->retry_cnt;
	qp->comp.rnr_left = qp->rnr_retry;
	qp->comp.starved = 0;
	qp->comp.retry_deadline = 0;
	/* Only PSNs on the wire need the ACK timer: a message held back by a
	 * full peer inbox is not late. */
	if (qp->comp.psn != qp->req.psn && qp->timeout)
		qp->comp.retry_deadline = sib_deadline_ns(qp->ctx, sib_ack_timeout_ns(qp->timeout));
	return COMPST_DONE;
}

static enum comp_state rnr(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;
	uint32_t psn = p->pkt->bth.psn;

	qp->ctx->rnr_naks++;
	ack_before(qp, psn);
	if (qp->comp.rnr_left == 0)
		return COMPST_ERR_RNR_RETRY_EXC;
	if (qp->rnr_retry != 7) /* 7 = retry forever */
		qp->comp.rnr_left--;
	/* Past a READ or atomic whose response never came: from it (seq_nak). */
	sib_req_rewind(qp, head_response_lost(qp, psn) ? qp->comp.psn : psn);
	qp->comp.retry_deadline = 0;
	qp->comp.rnr_deadline = sib_deadline_ns(qp->ctx, (uint64_t)iba_rnr_timer_us(p->pkt->aeth.syndrome &
										    IBA_AETH_VALUE_MASK) * 1000);
	return COMPST_DONE;
}

static enum comp_state seq_nak(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;

	uint32_t before = qp->comp.psn, acked_before = qp->comp.acked_psn, from = p->pkt->bth.psn;

	qp->ctx->seq_naks++;
	ack_before(qp, p->pkt->bth.psn);
	/* Past a READ or atomic whose response never came: ask for it again
	 * first, or go-back-N from the NAK's PSN would skip it for good. */
	if (head_response_lost(qp, p->pkt->bth.psn))
		from = qp->comp.psn;
	/* The NAK acknowledged the PSNs before it (IBA 9.7.5.2.2): forward
	 * progress reloads the retry budget, as an ACK does; else a long
	 * transfer under loss runs out of retries while it moves.  Progress
	 * is the responder's too: behind an unanswered READ, comp.psn stays. */
	if (qp->comp.psn != before || iba_psn_diff(qp->comp.acked_psn, acked_before) > 0)
		qp->comp.retry_left = qp->retry_cnt;
	if (qp->comp.retry_left == 0)
		return COMPST_ERR_RETRY_EXC;
	qp->comp.retry_left--;
	sib_req_rewind(qp, from);
	qp->comp.retry_deadline = 0;
	return COMPST_DONE;
}

static enum comp_state err_nak(struct comp_pass *p)
{
	ack_before(p->qp, p->pkt->bth.psn);
	p->status = sib_err_info(sib_err_from_nak(p->pkt->aeth.syndrome & IBA_AETH_VALUE_MASK))->req_status;
	return COMPST_ERROR;
}

static enum comp_state check_timers(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;

	if (qp->comp.rnr_deadline && p->now >= qp->comp.rnr_deadline)
		qp->comp.rnr_deadline = 0; /* the requester resends from the NAKed PSN */
	if (!qp->comp.retry_deadline || p->now < qp->comp.retry_deadline)
		return COMPST_DONE;
	qp->comp.retry_deadline = 0;
	return sib_sq_drained(qp) ? COMPST_DONE : COMPST_TIMEOUT;
}

static enum comp_state timeout(struct comp_pass *p)
{
	struct sib_qp *qp = p->qp;

	/* The peer's context has not even taken from our ring what we sent
	 * (its engine is starved of CPU, or stopped): not the wire's loss.
	 * Wait one more timeout without spending a retry, at most
	 * SIB_STARVED_TIMEOUTS times in a row (a peer that never takes
	 * anything still runs out of retries, later). */
	if (qp->comp.starved < SIB_STARVED_TIMEOUTS && sib_link_dest_backlog(qp->dest.dest)) {
		qp->comp.starved++;
		qp->ctx->ack_timeouts_starved++;
		qp->comp.retry_deadline = sib_deadline_ns(qp->ctx, sib_ack_timeout_ns(qp->timeout));
		return COMPST_DONE;
	}
	qp->ctx->ack_timeouts++;
	if (qp->comp.retry_left == 0)
		return COMPST_ERR_RETRY_EXC;
	qp->comp.retry_left--;
	sib_req_rewind(qp, qp->comp.psn);
	return COMPST_DONE;
}

/* The oldest WQE fails with p->status; the QP goes to ERR. */
static enum comp_state error(struct comp_pass *p)
{
	struct sib_swqe *w = sq_oldest(p->qp);

	if (w)
		w->status = p->status;
	sib_qp_enter_error(p->qp);
	return COMPST_DONE;
}

static void comp_run(struct comp_pass *p, enum comp_state st)
{
	for (;;) {
		SIB_STAGE_TRACE("comp", p->qp, comp_state_name[st]);
		switch (st) {
		case COMPST_CHECK_PSN:
			st = check_psn(p);
			break;
		case COMPST_CHECK_OPCODE:
			st = check_opcode(p);
			break;
		case COMPST_READ:
			st = do_read(p);
			break;
		case COMPST_ATOMIC:
			st = do_atomic(p);
			break;
		case COMPST_CHECK_ACK:
			st = check_ack(p);
			break;
		case COMPST_ACK:
			st = do_ack(p);
			break;
		case COMPST_PROGRESS:
			st = progress(p);
			break;
		case COMPST_RNR:
			st = rnr(p);
			break;
		case COMPST_SEQ_NAK:
			st = seq_nak(p);
			break;
		case COMPST_CHECK_TIMERS:
			st = check_timers(p);
			break;
		case COMPST_TIMEOUT:
			st = timeout(p);
			break;
		case COMPST_ERR_NAK:
			st = err_nak(p);
			break;
		case COMPST_ERR_RETRY_EXC:
		case COMPST_ERR_RNR_RETRY_EXC:
		case COMPST_ERR_BAD_RESP:
		case COMPST_ERR_LOC_PROT:
			p->status = comp_err_status[st];
			st = COMPST_ERROR;
			break;
		case COMPST_ERROR:
			st = error(p);
			break;
		case COMPST_DONE:
		default:
			return;
		}
	}
}

void sib_comp_packet(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	struct comp_pass p = { .qp = qp, .pkt = pkt };

	comp_run(&p, COMPST_CHECK_PSN);
}

void sib_comp_timers(struct sib_qp *qp, uint64_t now)
{
	struct comp_pass p = { .qp = qp, .now = now };

	comp_run(&p, COMPST_CHECK_TIMERS);
}

void sib_qp_flush(struct sib_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);

	sib_qp_transport_release(qp, false); /* in ERR the responder places nothing */

	while (qp->sq_tail != head) {
		struct sib_swqe *w = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];

		sib_sq_complete(qp, w->started && w->status != IBV_WC_SUCCESS ? w->status
									       : IBV_WC_WR_FLUSH_ERR);
	}
	qp->req.wqe = qp->sq_tail;
	qp->req.offset = 0;
	qp->req.reads_outstanding = 0;
	qp->comp.read_rcvd = 0;
	qp->comp.retry_deadline = qp->comp.rnr_deadline = 0;

	while (sib_rwqe_pending(qp)) {
		struct sib_rwqe *r = sib_rwqe_cur(qp);
		struct sib_cq *cq = sib_rwqe_cq(qp);
		struct ibv_wc wc = {
			.wr_id = r->wr_id,
			.status = qp->resp.have_rwqe ? qp->resp.err_status : IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.qp_num = qp->ibv.qp_base.qp_num,
		};
		if (wc.status == IBV_WC_SUCCESS)
			wc.status = IBV_WC_WR_FLUSH_ERR;
		qp->resp.have_rwqe = false;
		sib_rwqe_done(qp);
		sib_cq_push(cq, &wc, false);
	}
	qp->resp.in_send = qp->resp.in_write = false;
	/* A fatal NAK not yet on the wire is still owed (sib_qp_transport_run). */
	if (qp->resp.ack_pending && (qp->resp.ack_syndrome & IBA_AETH_TYPE_MASK) != IBA_AETH_NAK)
		qp->resp.ack_pending = false;
	qp->resp.rd_res_head = qp->resp.rd_res_tail = 0;
	qp->req.local_err = false;
}

void sib_comp_local_error(struct sib_qp *qp)
{
	/* Earlier WQEs complete first, in order (IBA 10.8.3.3). */
	if (qp->req.local_err && qp->sq_tail == qp->req.local_err_idx) {
		if (sib_qp_is_uc(qp))
			sib_uc_enter_sqe(qp); /* UC: SQE, not ERR (uc.c) */
		else
			sib_qp_enter_error(qp);
	}
}

void sib_qp_async_event(struct sib_qp *qp, enum ibv_event_type type)
{
	sib_async_event(qp->ctx, type, qp->ibv.qp_base.qp_num, qp->obj_handle);
}

void sib_qp_enter_error(struct sib_qp *qp)
{
	qp->state = IBV_QPS_ERR;
	/* not ibv.qp_base.state: the application sees it by ibv_query_qp (hca.h) */
	sib_dx_qp_export(qp); /* peers place nothing more (direct.c) */
	sib_qp_flush(qp);
	sib_srq_qp_error(qp);
}
