/* SPDX-License-Identifier: MIT */
/*
 * Atomic operations of the software HCA (IBA 9.4.5 CmpSwap / FetchAdd,
 * 9.7.4.1.5 responder resources, 9.7.5.1 duplicates): the AtomicETH a
 * requester sends, the responder's execution with CPU atomics and its
 * saved results, the ATOMIC_ACKNOWLEDGE, and the completer placing the
 * original value.  Engine context (progress_lock held) except
 * sib_atomic_apply, which is pure.
 */
#ifndef SIB_HCA_ATOMIC_H
#define SIB_HCA_ATOMIC_H

#include "hca/transport.h"

/* The AtomicETH of send WQE w (an IBV_WR_ATOMIC_* WQE): VA, R_Key,
 * Swap (or Add) Data, Compare Data (0 for FetchAdd). */
void sib_atomic_fill_eth(struct iba_atomiceth *e, const struct sib_swqe *w);

/* Carry out one atomic on the 8 bytes at t with CPU atomics (sequentially
 * consistent, so atomics from every QP, process and device on this host
 * serialise, and with the CPU's: atomic_cap IBV_ATOMIC_HCA, see
 * docs/transport.md "Atomics").  opc: the BTH opcode without its transport
 * prefix (IBA_OPC_COMPARE_SWAP or IBA_OPC_FETCH_ADD).  Returns the
 * original value, in host order.  t must be 8-byte aligned. */
uint64_t sib_atomic_apply(uint8_t opc, uint64_t *t, uint64_t swap_add, uint64_t compare);

/* Responder: execute the atomic request pkt on mr (its R_Key, access and
 * range already checked; the caller keeps the reference), save the result
 * by PSN, count the message (MSN, ePSN) and queue the ATOMIC_ACKNOWLEDGE
 * behind the responses already queued (a responder resource).  False if
 * the target is not 8-byte aligned in this process's memory (an iova that
 * is not congruent to the address mod 8): nothing was done. */
bool sib_atomic_execute(struct sib_qp *qp, const struct iba_pkt *pkt, struct sib_mr *mr);

/* Responder: a duplicate atomic (PSN before ePSN).  Answered from the
 * saved result without executing it again; nothing if its answer is still
 * queued, if the result is no longer kept, or no resource is free (the
 * requester's timer resends it). */
void sib_atomic_duplicate(struct sib_qp *qp, const struct iba_pkt *pkt);

/* Responder: send the ATOMIC_ACKNOWLEDGE of resource res (AETH with
 * `syndrome` and res->msn, AtomicAckETH with the original value).  False:
 * the wire is full, try again later. */
bool sib_atomic_send_ack(struct sib_qp *qp, const struct sib_read_res *res, uint8_t syndrome);

/* Completer: write the original value `orig` (host order, as verbs hands
 * it to the application) into WQE w's local SGEs, checking their L_Keys
 * for LOCAL_WRITE.  IBV_WC_SUCCESS or IBV_WC_LOC_PROT_ERR. */
enum ibv_wc_status sib_atomic_complete(struct sib_qp *qp, const struct sib_swqe *w, uint64_t orig);

#endif
