/* SPDX-License-Identifier: MIT */
/*
 * Atomics (IBA 9.4.5 CmpSwap / FetchAdd; 9.7.4.1.5 responder resources
 * shared with RDMA READ; 9.7.5.1 duplicate atomics answered from saved
 * results, never executed twice).  Owns qp->resp.atomic_saved and the
 * atomic entries of the responder's resource ring.  Executes on the
 * target memory with __atomic builtins, never with a lock, so atomics of
 * every QP, context and process on the host serialise, with each other
 * and with the CPU's atomics (GLOB's promise; atomic_cap says HCA,
 * docs/transport.md "Atomics").
 * Must not touch an MR without the caller's reference.  Engine context
 * (progress_lock held).
 */
#include <string.h>

#include "hca/atomic.h"
#include "hca/wr.h"

void sib_atomic_fill_eth(struct iba_atomiceth *e, const struct sib_swqe *w)
{
	e->va = w->remote_addr;
	e->rkey = w->rkey;
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		e->swap_add = w->swap;
		e->compare = w->compare_add;
	} else {
		e->swap_add = w->compare_add;
		e->compare = 0;
	}
}

uint64_t sib_atomic_apply(uint8_t opc, uint64_t *t, uint64_t swap_add, uint64_t compare)
{
	if (opc == IBA_OPC_COMPARE_SWAP) {
		uint64_t orig = compare;

		/* On failure orig receives the current value: the original either way. */
		__atomic_compare_exchange_n(t, &orig, swap_add, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return orig;
	}
	return __atomic_fetch_add(t, swap_add, __ATOMIC_SEQ_CST);
}

/* Queue an ATOMIC_ACKNOWLEDGE for PSN psn in the next responder resource
 * (the caller checked there is one).  Responses leave in PSN order. */
static void queue_ack(struct sib_qp *qp, uint32_t psn, uint64_t orig, bool dup)
{
	struct sib_resp *r = &qp->resp;
	struct sib_read_res *res = &r->rd_res[r->rd_res_head];

	/* ACKs owed for earlier requests go first, as for a READ. */
	if (r->ack_pending && r->rd_res_tail == r->rd_res_head)
		sib_resp_send_ack(qp, r->ack_syndrome, r->ack_psn);
	memset(res, 0, sizeof(*res));
	res->atomic = true;
	res->dup = dup;
	res->orig = orig;
	res->psn = res->first_psn = psn;
	res->msn = r->msn;
	r->rd_res_head = (r->rd_res_head + 1) % r->rd_res_size;
}

bool sib_atomic_execute(struct sib_qp *qp, const struct iba_pkt *pkt, struct sib_mr *mr)
{
	struct sib_resp *r = &qp->resp;
	uint8_t *p = sib_mr_ptr(mr, pkt->atomic.va);
	struct sib_atomic_saved *s;
	uint64_t orig;

	if ((uintptr_t)p & 7)
		return false;
	orig = sib_atomic_apply(pkt->bth.opcode & ~IBA_TRANSPORT_MASK, (uint64_t *)(void *)p,
				pkt->atomic.swap_add, pkt->atomic.compare);
	/* Keep the result for a duplicate: a ring of the last SIB_ATOMIC_SAVED
	 * (>= max_dest_rd_atomic, so every atomic the requester may still
	 * resend is kept). */
	s = &r->atomic_saved[r->atomic_saved_next++ % SIB_ATOMIC_SAVED];
	s->psn = pkt->bth.psn;
	s->orig = orig;
	s->valid = true;
	r->msn = iba_psn_add(r->msn, 1);
	r->epsn = iba_psn_add(r->epsn, 1);
	queue_ack(qp, pkt->bth.psn, orig, false);
	return true;
}

void sib_atomic_duplicate(struct sib_qp *qp, const struct iba_pkt *pkt)
{
	struct sib_resp *r = &qp->resp;
	const struct sib_atomic_saved *found = NULL;
	uint32_t psn = pkt->bth.psn;

	/* Newest first: after the PSN space wraps, an old result with the same
	 * PSN may still be in the ring, and the newest is the one meant. */
	for (unsigned int k = 1; k <= SIB_ATOMIC_SAVED && !found; k++) {
		const struct sib_atomic_saved *e =
			&r->atomic_saved[(r->atomic_saved_next - k) % SIB_ATOMIC_SAVED];

		if (e->valid && e->psn == psn)
			found = e;
	}
	if (!found)
		return; /* not one we executed (or long gone): dropped */
	for (uint32_t i = r->rd_res_tail; i != r->rd_res_head; i = (i + 1) % r->rd_res_size)
		if (r->rd_res[i].atomic && r->rd_res[i].first_psn == psn)
			return; /* its answer is still queued and goes out anyway */
	if ((r->rd_res_head + 1) % r->rd_res_size == r->rd_res_tail)
		return;
	queue_ack(qp, psn, found->orig, true);
}

bool sib_atomic_send_ack(struct sib_qp *qp, const struct sib_read_res *res, uint8_t syndrome)
{
	struct sib_tx tx;

	if (!sib_tx_begin(qp, &tx))
		return false;
	if (!tx.slot)
		return true; /* the peer is gone: lost on the wire */
	tx.h.bth.opcode = sib_transport_prefix(sib_qpt_transport(qp->ibv.qp_base.qp_type)) |
			  IBA_OPC_ATOMIC_ACKNOWLEDGE;
	tx.h.bth.psn = res->psn;
	tx.h.aeth.syndrome = syndrome;
	tx.h.aeth.msn = res->msn;
	tx.h.atomic_ack = res->orig;
	sib_tx_headers(&tx);
	sib_tx_end(qp, &tx, 0);
	return true;
}

enum ibv_wc_status sib_atomic_complete(struct sib_qp *qp, const struct sib_swqe *w, uint64_t orig)
{
	uint32_t pd = qp->ibv.qp_base.pd->handle;

	if (sib_sge_check(qp->ctx, pd, w->sge, w->num_sge, IBV_ACCESS_LOCAL_WRITE) != IBV_WC_SUCCESS)
		return IBV_WC_LOC_PROT_ERR;
	return sib_sge_copy_in(qp->ctx, pd, w->sge, w->num_sge, 0, &orig, sizeof(orig));
}
