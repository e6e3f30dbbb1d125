/* SPDX-License-Identifier: MIT */
/*
 * Responder (IBA 9.7.5, 9.7.4.1): request packets to data placement,
 * receive completions, ACKs, NAKs and RDMA READ responses, as a state
 * machine (STYLE 6.4): one function per state returning the next.
 *
 * A packet meets, in order: PSN (duplicate: re-ACK or re-read, C9-105;
 * ahead: one PSN-sequence NAK), opcode sequence, opcode enabled, resources
 * (receive WQE or READ slot), lengths, keys, then execution.  Error states
 * are named by the fault; each maps to an error class of transport.c's
 * table, which says the NAK, the RWQE's status and whether the QP goes to
 * ERR.  The demux (recv.c) has already checked headers, QP type, state,
 * keys and source path.  Owns qp->resp.  Engine context only.
 *
 * MRs: an R_Key lookup takes a table reference; a multi-packet WRITE
 * (resp.mr) and a queued READ (rd_res[].mr) keep it between packets and
 * check sib_objtab_live before each use: dereg_mr and rereg_mr move the
 * generation and wait for the reference, so no packet touches an MR's
 * memory once they return (docs/transport.md "Object lifetime").
 */
#include <string.h>

#include "hca/atomic.h"
#include "hca/mw.h"
#include "hca/srq.h"
#include "hca/transport.h"

enum resp_state {
	RESPST_CHK_PSN,
	RESPST_CHK_OP_SEQ,
	RESPST_CHK_OP_VALID,
	RESPST_CHK_RESOURCE,
	RESPST_CHK_LENGTH,
	RESPST_CHK_KEYS,
	RESPST_EXECUTE,
	RESPST_COMPLETE,               /* a receive WQE completes */
	RESPST_ACKNOWLEDGE,
	RESPST_DUPLICATE,              /* C9-105: re-ACK SEND/WRITE, re-read READ */
	/* Errors, by fault (IBA 9.9.3 responder classes): */
	RESPST_ERR_PSN_OUT_OF_SEQ,     /* RC class B: PSN ahead of ePSN; NAK once, QP stays */
	RESPST_ERR_RNR,                /* RC class B: no receive WQE; RNR NAK, ePSN unchanged */
	RESPST_ERR_MISSING_FIRST,      /* RC class C: MIDDLE/LAST outside a message */
	RESPST_ERR_MISSING_LAST,       /* RC class C: a new request inside a message */
	RESPST_ERR_UNSUPPORTED_OPCODE, /* RC class C: opcode not enabled (access flags, atomics) */
	RESPST_ERR_TOO_MANY_RD_ATOMIC, /* RC class C: no responder resource for a READ */
	RESPST_ERR_LENGTH,             /* RC class C: payload or DMALen inconsistent */
	RESPST_ERR_RKEY_VIOLATION,     /* RC class C: R_Key, PD, access or bounds (STYLE 6.8) */
	RESPST_ERR_MISALIGNED_ATOMIC,  /* RC class C: atomic VA not 8-byte aligned (IBA 9.4.4) */
	RESPST_ERR_INVALIDATE,         /* SEND_WITH_INV: the IETH's R_Key names no window
					  this QP may invalidate (rxe: class J) */
	RESPST_ERR_LOC_LEN,            /* RC class C: SEND longer than its receive WQE */
	RESPST_ERR_RWQE_LKEY,          /* class A: the receive WQE's buffers fail their L_Key check */
	RESPST_ERROR,                  /* apply the class: NAK, RWQE status, QP state */
	RESPST_DONE,
	RESPST_COUNT
};

static const char *const resp_state_name[RESPST_COUNT] = {
	[RESPST_CHK_PSN] = "CHK_PSN",
	[RESPST_CHK_OP_SEQ] = "CHK_OP_SEQ",
	[RESPST_CHK_OP_VALID] = "CHK_OP_VALID",
	[RESPST_CHK_RESOURCE] = "CHK_RESOURCE",
	[RESPST_CHK_LENGTH] = "CHK_LENGTH",
	[RESPST_CHK_KEYS] = "CHK_KEYS",
	[RESPST_EXECUTE] = "EXECUTE",
	[RESPST_COMPLETE] = "COMPLETE",
	[RESPST_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESPST_DUPLICATE] = "DUPLICATE",
	[RESPST_ERR_PSN_OUT_OF_SEQ] = "ERR_PSN_OUT_OF_SEQ",
	[RESPST_ERR_RNR] = "ERR_RNR",
	[RESPST_ERR_MISSING_FIRST] = "ERR_MISSING_FIRST",
	[RESPST_ERR_MISSING_LAST] = "ERR_MISSING_LAST",
	[RESPST_ERR_UNSUPPORTED_OPCODE] = "ERR_UNSUPPORTED_OPCODE",
	[RESPST_ERR_TOO_MANY_RD_ATOMIC] = "ERR_TOO_MANY_RD_ATOMIC",
	[RESPST_ERR_LENGTH] = "ERR_LENGTH",
	[RESPST_ERR_RKEY_VIOLATION] = "ERR_RKEY_VIOLATION",
	[RESPST_ERR_MISALIGNED_ATOMIC] = "ERR_MISALIGNED_ATOMIC",
	[RESPST_ERR_INVALIDATE] = "ERR_INVALIDATE",
	[RESPST_ERR_LOC_LEN] = "ERR_LOC_LEN",
	[RESPST_ERR_RWQE_LKEY] = "ERR_RWQE_LKEY",
	[RESPST_ERROR] = "ERROR",
	[RESPST_DONE] = "DONE",
};

/* The error class of each error state (transport.c's table). */
static const enum sib_err_class resp_err_class[RESPST_COUNT] = {
	[RESPST_ERR_PSN_OUT_OF_SEQ] = SIB_EC_PSN_SEQ,
	[RESPST_ERR_RNR] = SIB_EC_RNR,
	[RESPST_ERR_MISSING_FIRST] = SIB_EC_INV_REQ,
	[RESPST_ERR_MISSING_LAST] = SIB_EC_INV_REQ,
	[RESPST_ERR_UNSUPPORTED_OPCODE] = SIB_EC_INV_REQ,
	[RESPST_ERR_TOO_MANY_RD_ATOMIC] = SIB_EC_INV_REQ,
	[RESPST_ERR_LENGTH] = SIB_EC_INV_REQ,
	[RESPST_ERR_RKEY_VIOLATION] = SIB_EC_REM_ACCESS,
	[RESPST_ERR_MISALIGNED_ATOMIC] = SIB_EC_INV_REQ,
	[RESPST_ERR_INVALIDATE] = SIB_EC_INV_REQ,
	[RESPST_ERR_LOC_LEN] = SIB_EC_LOC_LEN,
	[RESPST_ERR_RWQE_LKEY] = SIB_EC_LOC_PROT,
};

const char *sib_resp_state_name(unsigned int st)
{
	return st < RESPST_COUNT && resp_state_name[st] ? resp_state_name[st] : "unknown";
}

/* One request packet going through the machine. */
struct resp_pass {
	struct sib_qp *qp;
	const struct iba_pkt *pkt;
	uint32_t f;                    /* pkt->op->flags */
	struct sib_mr *mr;             /* CHK_KEYS: the RETH's MR, a reference (mr_h);
					  NULL: zero length, or handed on */
	uint64_t mr_h;
	enum sib_err_class ec;         /* the error being handled */
};

static uint8_t ack_syndrome(const struct sib_qp *qp)
{
	uint32_t free_rwqes = atomic_load_explicit(&qp->rq_head, memory_order_acquire) - qp->rq_tail;

	if (qp->srq || qp->ibv.qp_base.qp_type == IBV_QPT_XRC_RECV)
		return IBA_AETH_ACK | IBA_AETH_CREDIT_INVALID; /* an SRQ gives no end-to-end credits: the invalid code */
	return IBA_AETH_ACK | iba_aeth_credit_code(free_rwqes);
}

void sib_resp_send_ack(struct sib_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct sib_tx tx;

	if (!sib_tx_begin(qp, &tx)) {
		/* Coalesce: a later ACK covers an earlier one (IBA 9.7.5.1.1). */
		qp->resp.ack_pending = true;
		qp->resp.ack_psn = psn;
		qp->resp.ack_syndrome = syndrome;
		return;
	}
	qp->resp.ack_pending = false;
	if (!tx.slot)
		return;
	tx.h.bth.opcode = sib_resp_opcode(qp, IBA_OPC_ACKNOWLEDGE);
	tx.h.bth.psn = psn;
	tx.h.aeth.syndrome = syndrome;
	tx.h.aeth.msn = qp->resp.msn;
	sib_tx_headers(&tx);
	sib_tx_end(qp, &tx, 0);
}

static bool send_read_responses(struct sib_qp *qp);

/* ACK a request.  Responses leave in PSN order: behind queued READ
 * responses the ACK waits (sib_resp_run sends it after them). */
static void ack(struct sib_qp *qp, uint32_t psn)
{
	if (qp->resp.rd_res_tail != qp->resp.rd_res_head) {
		qp->resp.ack_pending = true;
		qp->resp.ack_psn = psn;
		qp->resp.ack_syndrome = ack_syndrome(qp);
		return;
	}
	sib_resp_send_ack(qp, ack_syndrome(qp), psn);
}

/* ---- checks ---- */

static enum resp_state check_psn(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	int32_t d = iba_psn_diff(p->pkt->bth.psn, qp->resp.epsn);

	if (sib_qp_is_uc(qp)) /* UC: no duplicates, no NAK (uc.c) */
		return sib_uc_check_psn(qp, p->pkt) ? RESPST_CHK_OP_SEQ : RESPST_DONE;
	if (d > 0) /* out of sequence: one NAK until the sequence recovers */
		return qp->resp.nak_seq_sent ? RESPST_DONE : RESPST_ERR_PSN_OUT_OF_SEQ;
	if (d < 0)
		return RESPST_DUPLICATE;
	qp->resp.nak_seq_sent = false;
	return RESPST_CHK_OP_SEQ;
}

static enum resp_state check_op_seq(struct resp_pass *p)
{
	const struct sib_resp *r = &p->qp->resp;

	if (sib_qp_is_uc(p->qp))
		return sib_uc_check_op_seq(p->qp, p->pkt) ? RESPST_CHK_OP_VALID : RESPST_DONE;
	if (p->f & (IBA_OP_SEND | IBA_OP_WRITE)) {
		bool in_msg = (p->f & IBA_OP_SEND) ? r->in_send : r->in_write;

		if (p->f & (IBA_OP_FIRST | IBA_OP_ONLY))
			return r->in_send || r->in_write ? RESPST_ERR_MISSING_LAST : RESPST_CHK_OP_VALID;
		return in_msg ? RESPST_CHK_OP_VALID : RESPST_ERR_MISSING_FIRST;
	}
	if (r->in_send || r->in_write)
		return RESPST_ERR_MISSING_LAST;
	return RESPST_CHK_OP_VALID;
}

static enum resp_state check_op_valid(struct resp_pass *p)
{
	unsigned int access = p->qp->access;

	/* Another process's SRQ (xrc_fwd.c): only SENDs reach it; the R_Keys
	 * of WRITE and READ (and an IETH's key) name MRs of that process. */
	if (sib_xfwd_pkt(p->qp) && (!(p->f & IBA_OP_SEND) || (p->f & IBA_OP_INV)))
		return RESPST_ERR_UNSUPPORTED_OPCODE;
	if (p->f & IBA_OP_SEND)
		return RESPST_CHK_RESOURCE;
	if (p->f & IBA_OP_WRITE)
		return !(p->f & (IBA_OP_FIRST | IBA_OP_ONLY)) || (access & IBV_ACCESS_REMOTE_WRITE) ?
		       RESPST_CHK_RESOURCE : RESPST_ERR_UNSUPPORTED_OPCODE;
	if (p->f & IBA_OP_READ)
		return access & IBV_ACCESS_REMOTE_READ ? RESPST_CHK_RESOURCE
						       : RESPST_ERR_UNSUPPORTED_OPCODE;
	if (p->f & IBA_OP_ATOMIC)
		return access & IBV_ACCESS_REMOTE_ATOMIC ? RESPST_CHK_RESOURCE
							 : RESPST_ERR_UNSUPPORTED_OPCODE;
	return RESPST_ERR_UNSUPPORTED_OPCODE;
}

static enum resp_state check_resource(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;

	if (p->f & (IBA_OP_READ | IBA_OP_ATOMIC)) {
		/* READs and atomics share max_dest_rd_atomic resources (IBA
		 * 9.7.4.1.5); answers to duplicates queued meanwhile are not
		 * the requester's new requests and do not count. */
		const struct sib_resp *r = &qp->resp;
		uint32_t used = 0;

		for (uint32_t i = r->rd_res_tail; i != r->rd_res_head; i = (i + 1) % r->rd_res_size)
			used += !r->rd_res[i].dup;
		if (used >= qp->max_dest_rd_atomic)
			return RESPST_ERR_TOO_MANY_RD_ATOMIC;
		/* Room for the request, but duplicates' answers fill the ring:
		 * dropped unanswered (the requester resends once they drain). */
		return (r->rd_res_head + 1) % r->rd_res_size == r->rd_res_tail ? RESPST_DONE
										 : RESPST_CHK_LENGTH;
	}
	if (p->f & IBA_OP_SEND) { /* forwarded: no WQE here (xrc_fwd.c) */
		int fwd = sib_xfwd_check(qp, p->pkt);

		if (fwd)
			return fwd > 0 ? RESPST_CHK_LENGTH : RESPST_ERR_MISSING_FIRST;
	}
	if ((p->f & IBA_OP_SEND) && (p->f & (IBA_OP_FIRST | IBA_OP_ONLY))) {
		if (!sib_rwqe_take(qp))
			return RESPST_ERR_RNR;
		qp->resp.have_rwqe = true; /* a later error completes this RWQE */
		qp->resp.offset = 0;
	} else if ((p->f & IBA_OP_WRITE) && (p->f & IBA_OP_IMM) && !sib_rwqe_take(qp)) {
		return RESPST_ERR_RNR;
	}
	return RESPST_CHK_LENGTH;
}

static enum resp_state check_length(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	const struct iba_pkt *pkt = p->pkt;
	uint32_t f = p->f, len = pkt->paylen;

	if (pkt->placed) {
		/* Direct placement (direct.c): a WRITE ONLY or READ request for a
		 * whole message, no payload; nothing else may be flagged. */
		if ((!((f & IBA_OP_WRITE) && (f & IBA_OP_ONLY)) && !(f & IBA_OP_READ)) ||
		    qp->ibv.qp_base.qp_type != IBV_QPT_RC)
			return RESPST_ERR_LENGTH;
		if (len || !pkt->reth.dmalen || pkt->reth.dmalen > SIB_MAX_MSG_SZ)
			return RESPST_ERR_LENGTH;
		return RESPST_CHK_KEYS;
	}
	if (f & (IBA_OP_SEND | IBA_OP_WRITE)) {
		if ((f & (IBA_OP_FIRST | IBA_OP_MIDDLE)) && len != qp->mtu)
			return RESPST_ERR_LENGTH;
		if ((f & IBA_OP_LAST) && (len < 1 || len > qp->mtu))
			return RESPST_ERR_LENGTH;
		if ((f & IBA_OP_ONLY) && len > qp->mtu)
			return RESPST_ERR_LENGTH;
	}
	if ((pkt->op->hdrs & IBA_HDR_RETH) && pkt->reth.dmalen > SIB_MAX_MSG_SZ)
		return RESPST_ERR_LENGTH;
	if ((f & IBA_OP_ATOMIC) && len)
		return RESPST_ERR_LENGTH; /* an atomic request carries no payload */
	if (f & IBA_OP_WRITE) {
		uint32_t left = (f & (IBA_OP_FIRST | IBA_OP_ONLY)) ? pkt->reth.dmalen : qp->resp.remaining;

		if (len > left || ((f & (IBA_OP_LAST | IBA_OP_ONLY)) && len != left))
			return RESPST_ERR_LENGTH;
	}
	if ((f & IBA_OP_SEND) && !sib_xfwd_pkt(qp) && len > sib_rwqe_cur(qp)->length - qp->resp.offset)
		return RESPST_ERR_LOC_LEN;
	return RESPST_CHK_KEYS;
}

/* R_Key checks of a RETH (STYLE 6.8: (1) index live, (2) key byte, (3) PD,
 * (4) access, (6) range).  A zero-length request needs no valid R_Key. */
static bool rkey_ok(struct sib_qp *qp, const struct iba_reth *reth, unsigned int need,
		    struct sib_mr **out, uint64_t *out_h)
{
	struct sib_mr *mr;
	uint64_t h;

	*out = NULL;
	if (!reth->dmalen)
		return true;
	if (sib_key_is_mw(reth->rkey)) /* through a memory window (mw.c) */
		return sib_mw_rkey_ok(qp, reth->rkey, reth->va, reth->dmalen, need, out, out_h);
	mr = sib_mr_get(qp->ctx, reth->rkey, &h);           /* (1), (2) */
	if (!mr)
		return false;
	if (sib_mr_check(&mr->range, sib_resp_pd(qp), reth->va, reth->dmalen,
			 need) != SIB_KEY_OK) {                /* (3), (4), (6) */
		sib_objtab_put(&qp->ctx->mrs, h);
		return false;
	}
	*out = mr;
	*out_h = h;
	return true;
}

/* The responder's kept MR reference (a WRITE under way), or NULL once
 * its MR was deregistered or reregistered (the reference is dropped). */
static struct sib_mr *held_mr(struct sib_qp *qp, struct sib_mr **mr, uint64_t h)
{
	if (*mr && !sib_objtab_live(&qp->ctx->mrs, h)) {
		*mr = NULL;
		sib_objtab_put(&qp->ctx->mrs, h);
	}
	return *mr;
}

/* held_mr for a reference taken through `rkey`, which may be a window's:
 * the reference is also let go once that window is invalidated, rebound
 * or deallocated (sib_mw_key_live), so an access under way stops there. */
static struct sib_mr *held_key(struct sib_qp *qp, struct sib_mr **mr, uint64_t h, uint32_t rkey)
{
	if (*mr && !sib_mw_key_live(qp, rkey)) {
		*mr = NULL;
		sib_objtab_put(&qp->ctx->mrs, h);
	}
	return held_mr(qp, mr, h);
}

static enum resp_state check_keys(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	uint32_t f = p->f;

	if ((f & IBA_OP_SEND) && sib_xfwd_pkt(qp))
		return RESPST_EXECUTE; /* its target checks the WQE (xrc_fwd.c) */
	if (f & IBA_OP_SEND) {
		/* The bytes this packet writes, not the whole posted buffer (as
		 * rxe and hardware: a buffer whose tail lies past its MR takes
		 * every message that stops short of the tail); every packet,
		 * since the MR may be gone since the message started. */
		struct sib_rwqe *r = sib_rwqe_cur(qp);

		return sib_sge_check_range(qp->ctx, sib_resp_pd(qp), r->sge, r->num_sge, qp->resp.offset,
					   p->pkt->paylen, IBV_ACCESS_LOCAL_WRITE) == IBV_WC_SUCCESS
		       ? RESPST_EXECUTE : RESPST_ERR_RWQE_LKEY;
	}
	if (f & IBA_OP_READ)
		return rkey_ok(qp, &p->pkt->reth, IBV_ACCESS_REMOTE_READ, &p->mr, &p->mr_h) ? RESPST_EXECUTE
										  : RESPST_ERR_RKEY_VIOLATION;
	if (f & IBA_OP_ATOMIC) {
		/* 8 bytes at an 8-byte aligned VA (IBA 9.4.4), REMOTE_ATOMIC access. */
		struct iba_reth r = { .va = p->pkt->atomic.va, .rkey = p->pkt->atomic.rkey, .dmalen = 8 };

		if (r.va & 7)
			return RESPST_ERR_MISALIGNED_ATOMIC;
		return rkey_ok(qp, &r, IBV_ACCESS_REMOTE_ATOMIC, &p->mr, &p->mr_h) ? RESPST_EXECUTE
										 : RESPST_ERR_RKEY_VIOLATION;
	}
	if (f & (IBA_OP_FIRST | IBA_OP_ONLY))
		return rkey_ok(qp, &p->pkt->reth, IBV_ACCESS_REMOTE_WRITE, &p->mr, &p->mr_h) ? RESPST_EXECUTE
										   : RESPST_ERR_RKEY_VIOLATION;
	/* A later WRITE packet: the MR was deregistered or reregistered
	 * under the message. */
	return p->pkt->paylen && !held_key(qp, &qp->resp.mr, qp->resp.mr_h, qp->resp.rkey)
	       ? RESPST_ERR_RKEY_VIOLATION : RESPST_EXECUTE;
}

/* ---- execution ---- */

static enum resp_state do_send(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	bool fwd = sib_xfwd_pkt(qp);

	if (fwd) {
		/* To the SRQ's process; its inbox full: not accepted (no ePSN
		 * move, no ACK, and no sequence NAK for the packets behind it,
		 * which would burn the retry budget at once): the requester
		 * sends it again after its ACK timeout. */
		if (!sib_xfwd_send(qp)) {
			qp->resp.nak_seq_sent = true;
			return RESPST_DONE;
		}
	} else {
		struct sib_rwqe *r = sib_rwqe_cur(qp);

		if (sib_sge_copy_in(qp->ctx, sib_resp_pd(qp), r->sge, r->num_sge, qp->resp.offset,
				    p->pkt->payload, p->pkt->paylen) != IBV_WC_SUCCESS)
			return RESPST_ERR_RWQE_LKEY; /* deregistered between check and copy */
	}
	qp->resp.offset += p->pkt->paylen;
	qp->resp.epsn = iba_psn_add(qp->resp.epsn, 1);
	if (!(p->f & (IBA_OP_LAST | IBA_OP_ONLY))) {
		qp->resp.in_send = true;
		return RESPST_ACKNOWLEDGE;
	}
	qp->resp.msn = iba_psn_add(qp->resp.msn, 1);
	qp->resp.in_send = false;
	return fwd ? RESPST_ACKNOWLEDGE : RESPST_COMPLETE; /* forwarded: its target completes */
}

static enum resp_state do_write(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	const struct iba_pkt *pkt = p->pkt;

	if (p->f & (IBA_OP_FIRST | IBA_OP_ONLY)) {
		/* The reference moves to resp.mr (no WRITE is under way:
		 * CHK_OP_SEQ), dropped after the last packet. */
		qp->resp.mr = p->mr;
		qp->resp.mr_h = p->mr_h;
		qp->resp.rkey = pkt->reth.rkey;
		p->mr = NULL;
		qp->resp.va = pkt->reth.va;
		qp->resp.remaining = pkt->reth.dmalen;
		qp->resp.offset = 0;
	}
	if (pkt->placed) {
		/* The requester placed the data (direct.c): the message's PSNs
		 * and length are accounted as if its packets had come. */
		qp->resp.offset = pkt->reth.dmalen;
		qp->resp.epsn = iba_psn_add(qp->resp.epsn, sib_msg_npsn(pkt->reth.dmalen, qp->mtu));
		qp->resp.remaining = 0;
		goto last;
	}
	if (pkt->paylen)
		sib_place(sib_mr_ptr(qp->resp.mr, qp->resp.va), pkt->payload, pkt->paylen);
	qp->resp.va += pkt->paylen;
	qp->resp.remaining -= pkt->paylen;
	qp->resp.offset += pkt->paylen;
	qp->resp.epsn = iba_psn_add(qp->resp.epsn, 1);
	if (!(p->f & (IBA_OP_LAST | IBA_OP_ONLY))) {
		qp->resp.in_write = true;
		return RESPST_ACKNOWLEDGE;
	}
last:
	qp->resp.msn = iba_psn_add(qp->resp.msn, 1);
	qp->resp.in_write = false;
	if (qp->resp.mr) {
		qp->resp.mr = NULL;
		sib_objtab_put(&qp->ctx->mrs, qp->resp.mr_h);
	}
	return (p->f & IBA_OP_IMM) ? RESPST_COMPLETE : RESPST_ACKNOWLEDGE;
}

/* Queue the READ's responses in a responder resource (IBA 9.7.4.1.5); the
 * MSN counts the READ now (C9-148).  duplicate: a READ already executed
 * once, executed again from its RETH (reads are idempotent). */
static void queue_read(struct sib_qp *qp, const struct iba_pkt *pkt, struct resp_pass *p, bool duplicate)
{
	struct sib_resp *r = &qp->resp;
	struct sib_read_res *res = &r->rd_res[r->rd_res_head];

	/* ACKs owed for earlier requests go first: responses stay in order. */
	if (r->ack_pending && r->rd_res_tail == r->rd_res_head)
		sib_resp_send_ack(qp, r->ack_syndrome, r->ack_psn);
	if (!duplicate) {
		r->msn = iba_psn_add(r->msn, 1);
		r->epsn = iba_psn_add(r->epsn, sib_msg_npsn(pkt->reth.dmalen, qp->mtu));
	}
	res->atomic = false;
	res->va = pkt->reth.va;
	res->len = pkt->reth.dmalen;
	res->sent = 0;
	res->psn = pkt->bth.psn;
	res->first_psn = pkt->bth.psn;
	res->msn = r->msn;
	res->mr = p->mr;               /* the reference moves to the resource */
	res->mr_h = p->mr_h;
	res->rkey = pkt->reth.rkey;
	res->dup = duplicate;
	res->placed = pkt->placed;
	p->mr = NULL;
	r->rd_res_head = (r->rd_res_head + 1) % r->rd_res_size;
}

static enum resp_state execute(struct resp_pass *p)
{
	if (p->f & IBA_OP_SEND)
		return do_send(p);
	if (p->f & IBA_OP_WRITE)
		return do_write(p);
	if (p->f & IBA_OP_ATOMIC) /* the MR reference stays p's (dropped at DONE) */
		return sib_atomic_execute(p->qp, p->pkt, p->mr) ? RESPST_DONE : RESPST_ERR_MISALIGNED_ATOMIC;
	queue_read(p->qp, p->pkt, p, false);
	return RESPST_DONE;
}

/* Complete the receive WQE at rq_tail (IBA 10.7.2). */
static enum resp_state complete(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	const struct iba_pkt *pkt = p->pkt;
	struct sib_rwqe *r = sib_rwqe_cur(qp);
	struct ibv_wc wc = {
		.wr_id = r->wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = (p->f & IBA_OP_WRITE) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		.byte_len = qp->resp.offset,
		.qp_num = qp->ibv.qp_base.qp_num,
		.src_qp = qp->dest_qpn,
		.slid = pkt->lrh.slid,
		.sl = pkt->lrh.sl,
	};

	if (p->f & IBA_OP_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = pkt->immdt_be;
	}
	if (p->f & IBA_OP_INV) { /* remote invalidation (mw.c) */
		if (!sib_mw_remote_invalidate(qp, pkt->ieth_rkey))
			return RESPST_ERR_INVALIDATE;
		wc.wc_flags |= IBV_WC_WITH_INV;
		wc.invalidated_rkey = pkt->ieth_rkey;
	}
	struct sib_cq *cq = sib_rwqe_cq(qp);

	qp->resp.have_rwqe = false;
	sib_rwqe_done(qp);
	sib_cq_push(cq, &wc, pkt->bth.se);
	return RESPST_ACKNOWLEDGE;
}

static enum resp_state acknowledge(struct resp_pass *p)
{
	const struct iba_pkt *pkt = p->pkt;

	if (pkt->bth.ackreq && !sib_qp_is_uc(p->qp)) /* UC never ACKs */
		/* a placed message: its last PSN (direct.c) */
		ack(p->qp, pkt->placed ? iba_psn_add(pkt->bth.psn, sib_msg_npsn(pkt->reth.dmalen,
									       p->qp->mtu) - 1)
				       : pkt->bth.psn);
	return RESPST_DONE;
}

/* C9-105: a duplicate SEND/WRITE is ACKed again with the last PSN done,
 * never executed again.  A duplicate READ is read again, unless its
 * responses are still queued (they go out anyway); one that fails its
 * checks now is dropped (class D: no NAK for a duplicate). */
static enum resp_state duplicate(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	const struct iba_pkt *pkt = p->pkt;
	struct sib_resp *r = &qp->resp;

	if (p->f & IBA_OP_ATOMIC) { /* never executed twice (atomic.c) */
		sib_atomic_duplicate(qp, pkt);
		return RESPST_DONE;
	}
	if (!(p->f & IBA_OP_READ)) {
		if (pkt->bth.ackreq)
			ack(qp, iba_psn_add(r->epsn, IBA_PSN_MASK));
		return RESPST_DONE;
	}
	if (!(qp->access & IBV_ACCESS_REMOTE_READ) || !qp->max_dest_rd_atomic || sib_xfwd_pkt(qp) ||
	    pkt->reth.dmalen > SIB_MAX_MSG_SZ || (r->rd_res_head + 1) % r->rd_res_size == r->rd_res_tail ||
	    !rkey_ok(qp, &pkt->reth, IBV_ACCESS_REMOTE_READ, &p->mr, &p->mr_h))
		return RESPST_DONE;
	for (uint32_t i = r->rd_res_tail; i != r->rd_res_head; i = (i + 1) % r->rd_res_size) {
		const struct sib_read_res *res = &r->rd_res[i];
		int32_t d = iba_psn_diff(pkt->bth.psn, res->first_psn);

		if (d >= 0 && (uint32_t)d < sib_msg_npsn(res->len, qp->mtu))
			return RESPST_DONE;
	}
	queue_read(qp, pkt, p, true);
	return RESPST_DONE;
}

/* Apply an error class (transport.c): NAK, RWQE status, QP state. */
static enum resp_state error(struct resp_pass *p)
{
	struct sib_qp *qp = p->qp;
	const struct sib_err_info *e = sib_err_info(p->ec);

	if (sib_qp_is_uc(qp)) { /* no NAK: drop the message, or class A (uc.c) */
		sib_uc_error(qp, p->ec);
		return RESPST_DONE;
	}
	switch (p->ec) {
	case SIB_EC_PSN_SEQ:
		qp->resp.nak_seq_sent = true;
		sib_resp_send_ack(qp, e->syndrome, qp->resp.epsn);
		break;
	case SIB_EC_RNR:
		sib_resp_send_ack(qp, e->syndrome | (qp->min_rnr_timer & IBA_AETH_VALUE_MASK),
				  p->pkt->bth.psn);
		/* Packets already in flight behind it are dropped silently
		 * until the requester resends from this PSN. */
		qp->resp.nak_seq_sent = true;
		break;
	default:
		(void)send_read_responses(qp); /* earlier READs are answered first */
		sib_resp_send_ack(qp, e->syndrome, p->pkt->bth.psn);
		qp->resp.err_status = e->resp_status;
		if (e->next_state == IBV_QPS_ERR)
			sib_qp_enter_error(qp);
		break;
	}
	return RESPST_DONE;
}

void sib_resp_packet(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	struct resp_pass p = { .qp = qp, .pkt = pkt, .f = pkt->op->flags };
	enum resp_state st = RESPST_CHK_PSN;

	for (;;) {
		SIB_STAGE_TRACE("resp", p.qp, resp_state_name[st]);
		switch (st) {
		case RESPST_CHK_PSN:
			st = check_psn(&p);
			break;
		case RESPST_CHK_OP_SEQ:
			st = check_op_seq(&p);
			break;
		case RESPST_CHK_OP_VALID:
			st = check_op_valid(&p);
			break;
		case RESPST_CHK_RESOURCE:
			st = check_resource(&p);
			break;
		case RESPST_CHK_LENGTH:
			st = check_length(&p);
			break;
		case RESPST_CHK_KEYS:
			st = check_keys(&p);
			break;
		case RESPST_EXECUTE:
			st = execute(&p);
			break;
		case RESPST_COMPLETE:
			st = complete(&p);
			break;
		case RESPST_ACKNOWLEDGE:
			st = acknowledge(&p);
			break;
		case RESPST_DUPLICATE:
			st = duplicate(&p);
			break;
		case RESPST_ERR_PSN_OUT_OF_SEQ:
		case RESPST_ERR_RNR:
		case RESPST_ERR_MISSING_FIRST:
		case RESPST_ERR_MISSING_LAST:
		case RESPST_ERR_UNSUPPORTED_OPCODE:
		case RESPST_ERR_TOO_MANY_RD_ATOMIC:
		case RESPST_ERR_LENGTH:
		case RESPST_ERR_RKEY_VIOLATION:
		case RESPST_ERR_MISALIGNED_ATOMIC:
		case RESPST_ERR_INVALIDATE:
		case RESPST_ERR_LOC_LEN:
		case RESPST_ERR_RWQE_LKEY:
			p.ec = resp_err_class[st];
			st = RESPST_ERROR;
			break;
		case RESPST_ERROR:
			st = error(&p);
			break;
		case RESPST_DONE:
		default:
			if (p.mr) /* looked up, not handed on (a duplicate READ) */
				sib_objtab_put(&qp->ctx->mrs, p.mr_h);
			return;
		}
	}
}

/* A placed READ (direct.c): the requester has read the data itself; one
 * RDMA READ Response Only without payload at the READ's last PSN answers
 * it and acknowledges all its PSNs.  False if the wire is full. */
static bool send_placed_response(struct sib_qp *qp, struct sib_read_res *res, uint32_t npkt)
{
	struct sib_tx tx;

	if (!held_key(qp, &res->mr, res->mr_h, res->rkey)) {
		res->psn = iba_psn_add(res->first_psn, npkt); /* MR gone: no answer */
		return true;
	}
	if (!sib_tx_begin(qp, &tx))
		return false;
	if (tx.slot) {
		tx.h.bth.opcode = sib_resp_opcode(qp, IBA_OPC_RDMA_READ_RESPONSE_ONLY);
		tx.h.bth.psn = iba_psn_add(res->first_psn, npkt - 1);
		tx.h.aeth.syndrome = ack_syndrome(qp);
		tx.h.aeth.msn = res->msn;
		tx.sflags = SIB_SLOT_F_PLACED;
		sib_tx_headers(&tx);
		sib_tx_end(qp, &tx, 0);
	}
	res->sent = res->len;
	res->psn = iba_psn_add(res->first_psn, npkt);
	return true;
}

/* Send queued READ responses.  False if the wire is full. */
static bool send_read_responses(struct sib_qp *qp)
{
	struct sib_resp *r = &qp->resp;

	while (r->rd_res_tail != r->rd_res_head) {
		struct sib_read_res *res = &r->rd_res[r->rd_res_tail];
		uint32_t npkt = sib_msg_npsn(res->len, qp->mtu);

		if (res->atomic) { /* an atomic's result (atomic.c) */
			if (!sib_atomic_send_ack(qp, res, ack_syndrome(qp)))
				return false;
			r->rd_res_tail = (r->rd_res_tail + 1) % r->rd_res_size;
			continue;
		}

		if (res->placed && !send_placed_response(qp, res, npkt))
			return false;
		while ((uint32_t)iba_psn_diff(res->psn, res->first_psn) < npkt) {
			uint32_t idx = (uint32_t)iba_psn_diff(res->psn, res->first_psn);
			bool first = idx == 0, last = idx + 1 == npkt;
			uint32_t paylen = last ? res->len - res->sent : qp->mtu;
			struct sib_tx tx;

			if (paylen && !held_key(qp, &res->mr, res->mr_h, res->rkey))
				break; /* MR deregistered or reregistered, or its window
					  gone: nothing more to send */
			if (!sib_tx_begin(qp, &tx))
				return false;
			if (tx.slot) {
				uint8_t *payload;

				tx.h.bth.opcode = sib_resp_opcode(qp, first ? (last ? IBA_OPC_RDMA_READ_RESPONSE_ONLY
								: IBA_OPC_RDMA_READ_RESPONSE_FIRST)
							: (last ? IBA_OPC_RDMA_READ_RESPONSE_LAST
								: IBA_OPC_RDMA_READ_RESPONSE_MIDDLE));
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
		if (res->mr) {
			res->mr = NULL;
			sib_objtab_put(&qp->ctx->mrs, res->mr_h);
		}
		r->rd_res_tail = (r->rd_res_tail + 1) % r->rd_res_size;
	}
	return true;
}

void sib_resp_run(struct sib_qp *qp)
{
	struct sib_resp *r = &qp->resp;

	if (r->ack_pending && (r->rd_res_tail == r->rd_res_head ||
			       iba_psn_diff(r->ack_psn, r->rd_res[r->rd_res_tail].psn) < 0))
		sib_resp_send_ack(qp, r->ack_syndrome, r->ack_psn);
	if (!send_read_responses(qp))
		return;
	if (r->ack_pending)
		sib_resp_send_ack(qp, r->ack_syndrome, r->ack_psn);
}
