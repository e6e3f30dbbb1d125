/* SPDX-License-Identifier: MIT */
/*
 * RC requester (IBA 9.7.4, 9.5): turns send WQEs into request packets.
 * Segments at the path MTU, assigns PSNs (a READ reserves one PSN per
 * response packet), sets AckReq on the last packet of every message and
 * at least every SIB_ACKREQ_EVERY packets, keeps at most
 * SIB_MAX_UNACKED_PSNS PSNs and max_rd_atomic READs outstanding, and
 * stops without losing anything when the peer's inbox is full.
 * Engine context only.
 */
#include <string.h>

#include "hca/transport.h"

enum { POS_FIRST, POS_MIDDLE, POS_LAST, POS_ONLY };

/* Packet opcode by WR opcode and position in the message (STYLE 6.5);
 * UC uses the same operations with its own transport prefix. */
static const uint8_t rc_opcode[][4] = {
	[IBV_WR_SEND] = { IBA_OPC_SEND_FIRST, IBA_OPC_SEND_MIDDLE, IBA_OPC_SEND_LAST,
			  IBA_OPC_SEND_ONLY },
	[IBV_WR_SEND_WITH_IMM] = { IBA_OPC_SEND_FIRST, IBA_OPC_SEND_MIDDLE,
				   IBA_OPC_SEND_LAST_WITH_IMMEDIATE, IBA_OPC_SEND_ONLY_WITH_IMMEDIATE },
	[IBV_WR_RDMA_WRITE] = { IBA_OPC_RDMA_WRITE_FIRST, IBA_OPC_RDMA_WRITE_MIDDLE,
				IBA_OPC_RDMA_WRITE_LAST, IBA_OPC_RDMA_WRITE_ONLY },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { IBA_OPC_RDMA_WRITE_FIRST, IBA_OPC_RDMA_WRITE_MIDDLE,
					 IBA_OPC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
					 IBA_OPC_RDMA_WRITE_ONLY_WITH_IMMEDIATE },
};

static void arm_retry_timer(struct sib_qp *qp)
{
	if (!qp->retry_deadline && qp->timeout)
		qp->retry_deadline = sib_now_ns() + sib_ack_timeout_ns(qp->timeout);
}

/*
 * A local error on the WQE at sq_next (IBA 10.8.3.3): it will complete with
 * `st` and the QP go to ERR once every earlier WQE has completed
 * (sib_comp_local_error); the requester sends nothing more.
 */
static void local_error(struct sib_qp *qp, struct sib_swqe *w, enum ibv_wc_status st)
{
	w->status = st;
	qp->local_err = true;
	qp->local_err_idx = qp->sq_next;
}

/* Start a WQE: PSNs and local key checks.  False if it must wait. */
static bool start_wqe(struct sib_qp *qp, struct sib_swqe *w)
{
	uint32_t pd = qp->ibv.qp_base.pd->handle;
	enum ibv_wc_status st = IBV_WC_SUCCESS;

	if (qp->state == IBV_QPS_SQD && !w->started)
		return false; /* SQD: finish what is in flight, start nothing new */
	if (iba_psn_diff(qp->req_psn, qp->comp_psn) >= SIB_MAX_UNACKED_PSNS)
		return false;
	if (w->opcode == IBV_WR_RDMA_READ &&
	    qp->reads_outstanding >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1))
		return false;
	if (!w->inline_data)
		st = sib_sge_check(qp->ctx, pd, w->sge, w->num_sge,
				   w->opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_LOCAL_WRITE : 0);
	w->first_psn = qp->req_psn;
	w->npsn = sib_msg_npsn(w->length, qp->mtu);
	w->started = true;
	if (st != IBV_WC_SUCCESS) {
		local_error(qp, w, st);
		return false;
	}
	return true;
}

/* Send the READ request for what is left of w.  False if the wire is full. */
static bool send_read(struct sib_qp *qp, struct sib_swqe *w)
{
	uint32_t left = w->length - qp->req_offset;
	struct sib_tx tx;

	if (!sib_tx_begin(qp, &tx))
		return false;
	if (tx.slot) {
		tx.h.bth.opcode = IBA_OPC_RDMA_READ_REQUEST;
		tx.h.bth.psn = qp->req_psn;
		tx.h.bth.ackreq = 1;
		tx.h.reth.va = w->remote_addr + qp->req_offset;
		tx.h.reth.rkey = w->rkey;
		tx.h.reth.dmalen = left;
		sib_tx_headers(&tx);
		sib_tx_end(qp, &tx, 0);
	}
	qp->req_psn = iba_psn_add(qp->req_psn, sib_msg_npsn(left, qp->mtu));
	qp->reads_outstanding++;
	qp->req_pkts_since_ack = 0;
	arm_retry_timer(qp);
	return true;
}

/* Send the next SEND/WRITE packet of w.  False if the wire is full;
 * *last says whether that was the message's last packet. */
static bool send_data(struct sib_qp *qp, struct sib_swqe *w, bool *last)
{
	uint32_t off = qp->req_offset, left = w->length - off;
	bool first = off == 0;
	uint32_t paylen;
	struct sib_tx tx;

	*last = left <= qp->mtu;
	paylen = *last ? left : qp->mtu;
	/* Keys are checked again for every packet: the application may have
	 * deregistered (and unmapped) the memory since the WQE started. */
	if (!w->inline_data && paylen &&
	    sib_sge_check(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge, 0) != IBV_WC_SUCCESS) {
		local_error(qp, w, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	if (!sib_tx_begin(qp, &tx))
		return false;
	if (++qp->req_pkts_since_ack >= SIB_ACKREQ_EVERY || *last)
		qp->req_pkts_since_ack = 0;
	if (tx.slot) {
		int pos = first ? (*last ? POS_ONLY : POS_FIRST) : (*last ? POS_LAST : POS_MIDDLE);
		uint8_t *payload;

		tx.h.bth.opcode = rc_opcode[w->opcode][pos];
		tx.h.bth.psn = qp->req_psn;
		tx.h.bth.ackreq = qp->req_pkts_since_ack == 0;
		tx.h.bth.se = *last && (w->send_flags & IBV_SEND_SOLICITED) &&
			      w->opcode != IBV_WR_RDMA_WRITE;
		if (first && (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
			tx.h.reth.va = w->remote_addr;
			tx.h.reth.rkey = w->rkey;
			tx.h.reth.dmalen = w->length;
		}
		tx.h.immdt_be = w->imm_be;
		payload = sib_tx_headers(&tx);
		if (w->inline_data)
			memcpy(payload, w->inline_data + off, paylen);
		else
			sib_sge_copy_out(w->sge, w->num_sge, off, payload, paylen);
		sib_tx_end(qp, &tx, paylen);
	}
	qp->req_psn = iba_psn_add(qp->req_psn, 1);
	qp->req_offset += paylen;
	arm_retry_timer(qp);
	return true;
}

void sib_req_run(struct sib_qp *qp)
{
	uint32_t head;

	if ((qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) || qp->rnr_deadline || qp->local_err)
		return;
	head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	while (qp->sq_next != head && qp->state != IBV_QPS_ERR) {
		struct sib_swqe *w = &qp->sq[qp->sq_next & (qp->sq_size - 1)];
		bool last = true;

		if (qp->req_offset == 0 && !start_wqe(qp, w))
			return;
		if (w->opcode == IBV_WR_RDMA_READ) {
			if (!send_read(qp, w))
				return;
		} else {
			do {
				if (!send_data(qp, w, &last))
					return;
			} while (!last);
		}
		w->state = SIB_SWQE_SENT;
		qp->req_offset = 0;
		qp->sq_next++;
	}
}

void sib_req_rewind(struct sib_qp *qp, uint32_t psn)
{
	/* The WQEs that may hold psn: those sent, plus a partly sent one. */
	uint32_t end = qp->sq_next + (qp->req_offset ? 1 : 0);

	for (uint32_t i = qp->sq_tail; i != end; i++) {
		struct sib_swqe *w = &qp->sq[i & (qp->sq_size - 1)];
		int32_t d;

		if (!w->started)
			break;
		d = iba_psn_diff(psn, w->first_psn);
		if (d < 0 || (uint32_t)d >= w->npsn)
			continue;
		/* READs from here on will be requested again. */
		for (uint32_t j = i; j != qp->sq_next; j++)
			if (qp->sq[j & (qp->sq_size - 1)].opcode == IBV_WR_RDMA_READ && qp->reads_outstanding)
				qp->reads_outstanding--;
		qp->sq_next = i;
		qp->req_offset = (uint32_t)d * qp->mtu;
		qp->req_psn = psn;
		qp->req_pkts_since_ack = 0;
		w->state = SIB_SWQE_POSTED;
		return;
	}
}
