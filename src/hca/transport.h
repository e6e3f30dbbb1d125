/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the RC transport stages (req.c, resp.c, comp.c):
 * putting packets on the wire, moving payload between packets and local
 * memory with the key checks of STYLE 6.8, and completing WQEs.
 * All of them run in engine context (progress_lock held).
 */
#ifndef SIB_TRANSPORT_H
#define SIB_TRANSPORT_H

#include "hca/hca.h"

/* A packet being put on the wire (engine.c). */
struct sib_tx {
	struct iba_pkt h;              /* the headers to send; LRH/GRH/BTH prefilled */
	struct sib_link_tx lt;         /* the buffer reserved on the link */
	uint8_t *slot;                 /* where the packet goes; NULL: peer unreachable, lost */
	size_t hdr_len;
};

/* Reserve room on the link toward qp's peer.  False: its inbox is full,
 * retry later.  True with tx->slot NULL: the peer is gone, the packet is lost. */
bool sib_tx_begin(struct sib_qp *qp, struct sib_tx *tx);
/* Write tx->h into the slot; returns where the payload goes. */
uint8_t *sib_tx_headers(struct sib_tx *tx);
/* Pad, PktLen, ICRC (and VCRC if enabled), then out through sib_link_send. */
void sib_tx_end(struct sib_qp *qp, struct sib_tx *tx, size_t paylen);

/* Local ACK timeout in ns: 4.096 us * 2^timeout; 0 = none (IBA 11.2.4.2). */
static inline uint64_t sib_ack_timeout_ns(uint8_t timeout)
{
	return timeout ? 4096ull << timeout : 0;
}

/* PSNs a message of `len` bytes uses at path MTU `mtu` (at least one). */
static inline uint32_t sib_msg_npsn(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

/*
 * Check that every local SGE is covered by a live MR of `pd` with `need`
 * access.  Returns IBV_WC_SUCCESS or IBV_WC_LOC_PROT_ERR.
 */
enum ibv_wc_status sib_sge_check(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				 uint32_t num_sge, unsigned int need);

/* Copy between a (checked) SGE list at byte offset `off` and a buffer. */
void sib_sge_copy_out(const struct ibv_sge *sge, uint32_t num_sge, uint32_t off, void *dst, uint32_t len);
void sib_sge_copy_in(const struct ibv_sge *sge, uint32_t num_sge, uint32_t off, const void *src, uint32_t len);

/* Local address of remote-access VA `va` inside mr (range already checked). */
static inline uint8_t *sib_mr_ptr(const struct sib_mr *mr, uint64_t va)
{
	return (uint8_t *)mr->ibv.addr + (va - mr->range.iova);
}

/* Complete the oldest send WQE (sq_tail) with `status`; a CQE is written
 * if it was signaled or failed (IBA 10.7.3.1).  Advances sq_tail. */
void sib_sq_complete(struct sib_qp *qp, enum ibv_wc_status status);

/* The requester rewinds to resend from `psn` (go-back-N, IBA 9.7.5.1.x). */
void sib_req_rewind(struct sib_qp *qp, uint32_t psn);

/* Send an ACK/NAK now if the wire has room, else leave it pending. */
void sib_resp_send_ack(struct sib_qp *qp, uint8_t syndrome, uint32_t psn);

#endif
