/* SPDX-License-Identifier: MIT */
/*
 * RC responder (IBA 9.7.5, 9.7.4.1): request packets to data placement,
 * receive completions, ACKs, NAKs and RDMA READ responses.
 *
 * Checks, in the order a packet meets them: QP state; PSN (duplicate:
 * re-ACK or re-read, C9-105; ahead: one PSN-sequence NAK); opcode sequence
 * and lengths (class B: NAK invalid request); receive WQE (RNR NAK, epsn
 * unchanged); R_Key, PD, access and bounds (class C: NAK remote access).
 * Fatal NAKs move the QP to ERR.  Engine context only.
 */
#include <string.h>

#include "hca/transport.h"

static uint8_t ack_syndrome(const struct sib_qp *qp)
{
	uint32_t free_rwqes = atomic_load_explicit(&qp->rq_head, memory_order_acquire) - qp->rq_tail;

	return IBA_AETH_ACK | iba_aeth_credit_code(free_rwqes);
}

void sib_resp_send_ack(struct sib_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct sib_tx tx;

	if (!sib_tx_begin(qp, &tx)) {
		/* Coalesce: a later ACK covers an earlier one (IBA 9.7.5.1.1). */
		qp->ack_pending = true;
		qp->ack_psn = psn;
		qp->ack_syndrome = syndrome;
		return;
	}
	qp->ack_pending = false;
	if (!tx.slot)
		return;
	tx.h.bth.opcode = IBA_OPC_ACKNOWLEDGE;
	tx.h.bth.psn = psn;
	tx.h.aeth.syndrome = syndrome;
	tx.h.aeth.msn = qp->resp_msn;
	sib_tx_headers(&tx);
	sib_tx_end(qp, &tx, 0);
}

static bool send_read_responses(struct sib_qp *qp);

/* ACK a request.  Responses leave in PSN order: behind queued READ
 * responses the ACK waits (sib_resp_run sends it after them). */
static void ack(struct sib_qp *qp, uint32_t psn)
{
	if (qp->rd_res_tail != qp->rd_res_head) {
		qp->ack_pending = true;
		qp->ack_psn = psn;
		qp->ack_syndrome = ack_syndrome(qp);
		return;
	}
	sib_resp_send_ack(qp, ack_syndrome(qp), psn);
}

/* Class B/C/D responder errors: NAK, then the QP is in error (IBA 9.9.3). */
static void fatal_nak(struct sib_qp *qp, uint8_t code, uint32_t psn, enum ibv_wc_status rwqe_status)
{
	(void)send_read_responses(qp); /* earlier READs are answered first */
	sib_resp_send_ack(qp, IBA_AETH_NAK | code, psn);
	qp->resp_err_status = rwqe_status;
	sib_qp_enter_error(qp);
}

static bool rq_empty(const struct sib_qp *qp)
{
	return atomic_load_explicit(&qp->rq_head, memory_order_acquire) == qp->rq_tail;
}

static void rnr_nak(struct sib_qp *qp, uint32_t psn)
{
	sib_resp_send_ack(qp, IBA_AETH_RNR_NAK | (qp->min_rnr_timer & IBA_AETH_VALUE_MASK), psn);
	/* Packets already in flight behind it are dropped silently until
	 * the requester resends from psn. */
	qp->resp_nak_seq_sent = true;
}

/* Complete the receive WQE at rq_tail (IBA 10.7.2). */
static void rq_complete(struct sib_qp *qp, const struct iba_pkt *pkt, enum ibv_wc_opcode opcode,
			uint32_t byte_len)
{
	struct sib_rwqe *r = &qp->rq[qp->rq_tail & (qp->rq_size - 1)];
	struct ibv_wc wc = {
		.wr_id = r->wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp_num = qp->ibv.qp_base.qp_num,
		.src_qp = qp->dest_qpn,
		.slid = pkt->lrh.slid,
		.sl = pkt->lrh.sl,
	};

	if (pkt->op->flags & IBA_OP_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = pkt->immdt_be;
	}
	qp->resp_have_rwqe = false;
	__atomic_store_n(&qp->rq_tail, qp->rq_tail + 1, __ATOMIC_RELEASE);
	sib_cq_push(to_scq(qp->ibv.qp_base.recv_cq), &wc, pkt->bth.se);
}

/* Opcode sequence and packet length (C9-?: class B, invalid request). */
static bool sequence_ok(const struct sib_qp *qp, const struct iba_pkt *pkt)
{
	uint32_t f = pkt->op->flags;
	bool in_msg = (f & IBA_OP_SEND) ? qp->resp_in_send : qp->resp_in_write;

	if (f & (IBA_OP_FIRST | IBA_OP_ONLY)) {
		if (qp->resp_in_send || qp->resp_in_write)
			return false;
	} else if (!in_msg) {
		return false;
	}
	if (f & (IBA_OP_FIRST | IBA_OP_MIDDLE))
		return pkt->paylen == qp->mtu;
	if (f & IBA_OP_LAST)
		return pkt->paylen >= 1 && pkt->paylen <= qp->mtu;
	return pkt->paylen <= qp->mtu;
}

static void do_send(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	uint32_t f = pkt->op->flags, pd = qp->ibv.qp_base.pd->handle;
	struct sib_rwqe *r;

	if (f & (IBA_OP_FIRST | IBA_OP_ONLY)) {
		if (rq_empty(qp)) {
			rnr_nak(qp, pkt->bth.psn);
			return;
		}
		qp->resp_have_rwqe = true;
		qp->resp_offset = 0;
	}
	r = &qp->rq[qp->rq_tail & (qp->rq_size - 1)];
	/* Every packet: the MR may be gone since the message started. */
	if (sib_sge_check(qp->ctx, pd, r->sge, r->num_sge, IBV_ACCESS_LOCAL_WRITE) != IBV_WC_SUCCESS) {
		fatal_nak(qp, IBA_NAK_REM_OP, pkt->bth.psn, IBV_WC_LOC_PROT_ERR);
		return;
	}
	if (pkt->paylen > r->length - qp->resp_offset) {
		fatal_nak(qp, IBA_NAK_INV_REQ, pkt->bth.psn, IBV_WC_LOC_LEN_ERR);
		return;
	}
	sib_sge_copy_in(r->sge, r->num_sge, qp->resp_offset, pkt->payload, pkt->paylen);
	qp->resp_offset += pkt->paylen;
	qp->resp_epsn = iba_psn_add(qp->resp_epsn, 1);
	if (f & (IBA_OP_LAST | IBA_OP_ONLY)) {
		qp->resp_msn = iba_psn_add(qp->resp_msn, 1);
		qp->resp_in_send = false;
		rq_complete(qp, pkt, IBV_WC_RECV, qp->resp_offset);
	} else {
		qp->resp_in_send = true;
	}
	if (pkt->bth.ackreq)
		ack(qp, pkt->bth.psn);
}

/* R_Key check for RETH-carrying requests (STYLE 6.8).  NULL mr with
 * true means a zero-length request, which needs no valid R_Key. */
static bool rkey_ok(struct sib_qp *qp, const struct iba_reth *reth, unsigned int need, struct sib_mr **out)
{
	struct sib_mr *mr;

	*out = NULL;
	if (!reth->dmalen)
		return true;
	mr = sib_mr_lookup(qp->ctx, reth->rkey);              /* (1), (2) */
	if (!mr || sib_mr_check(&mr->range, qp->ibv.qp_base.pd->handle, reth->va, reth->dmalen,
				need) != SIB_KEY_OK)         /* (3), (4), (6) */
		return false;
	*out = mr;
	return true;
}

static void do_write(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	uint32_t f = pkt->op->flags;

	if ((f & IBA_OP_IMM) && rq_empty(qp)) {
		rnr_nak(qp, pkt->bth.psn);
		return;
	}
	if (f & (IBA_OP_FIRST | IBA_OP_ONLY)) {
		if (!(qp->access & IBV_ACCESS_REMOTE_WRITE) || pkt->reth.dmalen > SIB_MAX_MSG_SZ) {
			fatal_nak(qp, IBA_NAK_INV_REQ, pkt->bth.psn, IBV_WC_REM_INV_REQ_ERR);
			return;
		}
		if (!rkey_ok(qp, &pkt->reth, IBV_ACCESS_REMOTE_WRITE, &qp->resp_mr)) {
			fatal_nak(qp, IBA_NAK_REM_ACCESS, pkt->bth.psn, IBV_WC_REM_ACCESS_ERR);
			return;
		}
		qp->resp_va = pkt->reth.va;
		qp->resp_remaining = pkt->reth.dmalen;
		qp->resp_offset = 0;
	}
	if (pkt->paylen > qp->resp_remaining ||
	    ((f & (IBA_OP_LAST | IBA_OP_ONLY)) && pkt->paylen != qp->resp_remaining)) {
		fatal_nak(qp, IBA_NAK_INV_REQ, pkt->bth.psn, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (pkt->paylen) {
		if (!qp->resp_mr) { /* deregistered under a running WRITE */
			fatal_nak(qp, IBA_NAK_REM_ACCESS, pkt->bth.psn, IBV_WC_REM_ACCESS_ERR);
			return;
		}
		memcpy(sib_mr_ptr(qp->resp_mr, qp->resp_va), pkt->payload, pkt->paylen);
	}
	qp->resp_va += pkt->paylen;
	qp->resp_remaining -= pkt->paylen;
	qp->resp_offset += pkt->paylen;
	qp->resp_epsn = iba_psn_add(qp->resp_epsn, 1);
	if (f & (IBA_OP_LAST | IBA_OP_ONLY)) {
		qp->resp_msn = iba_psn_add(qp->resp_msn, 1);
		qp->resp_in_write = false;
		qp->resp_mr = NULL;
		if (f & IBA_OP_IMM)
			rq_complete(qp, pkt, IBV_WC_RECV_RDMA_WITH_IMM, qp->resp_offset);
	} else {
		qp->resp_in_write = true;
	}
	if (pkt->bth.ackreq)
		ack(qp, pkt->bth.psn);
}

/* Queue READ responses (a responder resource, IBA 9.7.4.1.x).  A duplicate
 * READ is simply executed again from its RETH: reads are idempotent. */
static void do_read(struct sib_qp *qp, const struct iba_pkt *pkt, bool duplicate)
{
	struct sib_read_res *res;
	struct sib_mr *mr;
	uint32_t next = (qp->rd_res_head + 1) % qp->rd_res_size;

	if (!(qp->access & IBV_ACCESS_REMOTE_READ) || !qp->max_dest_rd_atomic ||
	    pkt->reth.dmalen > SIB_MAX_MSG_SZ || next == qp->rd_res_tail) {
		if (!duplicate)
			fatal_nak(qp, IBA_NAK_INV_REQ, pkt->bth.psn, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	if (!rkey_ok(qp, &pkt->reth, IBV_ACCESS_REMOTE_READ, &mr)) {
		if (!duplicate)
			fatal_nak(qp, IBA_NAK_REM_ACCESS, pkt->bth.psn, IBV_WC_REM_ACCESS_ERR);
		return;
	}
	/* A duplicate of a READ whose responses are still queued: they will
	 * go out anyway (rxe matches duplicates to their resource too). */
	if (duplicate) {
		for (uint32_t i = qp->rd_res_tail; i != qp->rd_res_head; i = (i + 1) % qp->rd_res_size) {
			const struct sib_read_res *r = &qp->rd_res[i];
			int32_t d = iba_psn_diff(pkt->bth.psn, r->first_psn);

			if (d >= 0 && (uint32_t)d < sib_msg_npsn(r->len, qp->mtu))
				return;
		}
	}
	/* ACKs owed for earlier requests go first: responses stay in order. */
	if (qp->ack_pending && qp->rd_res_tail == qp->rd_res_head)
		sib_resp_send_ack(qp, qp->ack_syndrome, qp->ack_psn);
	if (!duplicate) {
		qp->resp_msn = iba_psn_add(qp->resp_msn, 1);
		qp->resp_epsn = iba_psn_add(qp->resp_epsn, sib_msg_npsn(pkt->reth.dmalen, qp->mtu));
	}
	res = &qp->rd_res[qp->rd_res_head];
	res->va = pkt->reth.va;
	res->len = pkt->reth.dmalen;
	res->sent = 0;
	res->psn = pkt->bth.psn;
	res->first_psn = pkt->bth.psn;
	res->msn = qp->resp_msn;
	res->mr = mr;
	qp->rd_res_head = next;
}

void sib_resp_packet(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	uint32_t f = pkt->op->flags;
	int32_t d;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	d = iba_psn_diff(pkt->bth.psn, qp->resp_epsn);
	if (d > 0) {
		/* Out of sequence: one NAK until the sequence recovers. */
		if (!qp->resp_nak_seq_sent) {
			qp->resp_nak_seq_sent = true;
			sib_resp_send_ack(qp, IBA_AETH_NAK | IBA_NAK_PSN_SEQ, qp->resp_epsn);
		}
		return;
	}
	if (d < 0) {
		/* Duplicate (C9-105): re-ACK, never re-execute a SEND/WRITE. */
		if (f & IBA_OP_READ)
			do_read(qp, pkt, true);
		else if (pkt->bth.ackreq)
			ack(qp, iba_psn_add(qp->resp_epsn, IBA_PSN_MASK));
		return;
	}
	qp->resp_nak_seq_sent = false;
	if (f & (IBA_OP_SEND | IBA_OP_WRITE)) {
		if (!sequence_ok(qp, pkt)) {
			fatal_nak(qp, IBA_NAK_INV_REQ, pkt->bth.psn, IBV_WC_REM_INV_REQ_ERR);
			return;
		}
		if (f & IBA_OP_SEND)
			do_send(qp, pkt);
		else
			do_write(qp, pkt);
	} else if (f & IBA_OP_READ) {
		if (qp->resp_in_send || qp->resp_in_write)
			fatal_nak(qp, IBA_NAK_INV_REQ, pkt->bth.psn, IBV_WC_REM_INV_REQ_ERR);
		else
			do_read(qp, pkt, false);
	} else {
		/* Atomics and other requests are not enabled on this HCA. */
		fatal_nak(qp, IBA_NAK_INV_REQ, pkt->bth.psn, IBV_WC_REM_INV_REQ_ERR);
	}
}

/* Send queued READ responses.  False if the wire is full. */
static bool send_read_responses(struct sib_qp *qp)
{
	while (qp->rd_res_tail != qp->rd_res_head) {
		struct sib_read_res *res = &qp->rd_res[qp->rd_res_tail];
		uint32_t npkt = sib_msg_npsn(res->len, qp->mtu);

		while ((uint32_t)iba_psn_diff(res->psn, res->first_psn) < npkt) {
			uint32_t idx = (uint32_t)iba_psn_diff(res->psn, res->first_psn);
			bool first = idx == 0, last = idx + 1 == npkt;
			uint32_t paylen = last ? res->len - res->sent : qp->mtu;
			struct sib_tx tx;

			if (paylen && !res->mr)
				break; /* MR deregistered: nothing more to send */
			if (!sib_tx_begin(qp, &tx))
				return false;
			if (tx.slot) {
				uint8_t *payload;

				tx.h.bth.opcode = first ? (last ? IBA_OPC_RDMA_READ_RESPONSE_ONLY
								: IBA_OPC_RDMA_READ_RESPONSE_FIRST)
							: (last ? IBA_OPC_RDMA_READ_RESPONSE_LAST
								: IBA_OPC_RDMA_READ_RESPONSE_MIDDLE);
				tx.h.bth.psn = res->psn;
				tx.h.aeth.syndrome = ack_syndrome(qp);
				tx.h.aeth.msn = res->msn;
				payload = sib_tx_headers(&tx);
				if (paylen)
					memcpy(payload, sib_mr_ptr(res->mr, res->va + res->sent), paylen);
				sib_tx_end(qp, &tx, paylen);
			}
			res->sent += paylen;
			res->psn = iba_psn_add(res->psn, 1);
		}
		qp->rd_res_tail = (qp->rd_res_tail + 1) % qp->rd_res_size;
	}
	return true;
}

void sib_resp_run(struct sib_qp *qp)
{
	if (qp->ack_pending && (qp->rd_res_tail == qp->rd_res_head ||
				iba_psn_diff(qp->ack_psn, qp->rd_res[qp->rd_res_tail].psn) < 0))
		sib_resp_send_ack(qp, qp->ack_syndrome, qp->ack_psn);
	if (!send_read_responses(qp))
		return;
	if (qp->ack_pending)
		sib_resp_send_ack(qp, qp->ack_syndrome, qp->ack_psn);
}
