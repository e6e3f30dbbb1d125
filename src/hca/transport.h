/* SPDX-License-Identifier: MIT */
/*
 * The transport stages of the software HCA (IBA vol. 1 ch. 9): the state
 * each stage owns inside struct sib_qp (requester req.c, responder
 * resp.c, completer comp.c), the receive demux's drop causes (recv.c), the
 * error-class table, and the helpers the stages share.  Pure declarations:
 * no I/O here.  Every function runs in engine context (progress_lock held)
 * unless it says otherwise.
 *
 * hca.h includes the first part (stage state only) to lay out sib_qp;
 * the rest needs hca.h and is seen by the stage files.
 */
#ifndef SIB_TRANSPORT_STATE_H
#define SIB_TRANSPORT_STATE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct sib_mr;

/* Requester (req.c, IBA 9.7.4): WQEs to request packets.  Owned by req.c;
 * the completer rewinds it (sib_req_rewind) and reads wqe/offset/psn. */
struct sib_req {
	uint32_t wqe;                  /* SQ index of the next WQE to start or continue */
	uint32_t psn;                  /* next PSN to send */
	uint32_t offset;               /* bytes of sq[wqe] already sent */
	uint32_t psns_since_ackreq;    /* PSNs sent since the last AckReq */
	uint32_t owed_psn;             /* PSN of the last packet sent, when it and
					  others before it went without AckReq */
	bool ack_owed;                 /* owed_psn is valid (req.c ackreq policy) */
	bool force_ackreq;             /* the next packet sent carries AckReq */
	uint64_t ackreq_deadline;      /* ack_owed and nothing sent: ask then (ns, 0 = unset) */
	uint32_t reads_outstanding;    /* READs sent and not completed */
	uint32_t pkt_end;              /* PSN after the last request sent as packets */
	bool pkt_unacked;              /* ... and it may not be acknowledged yet: no
					  direct placement until it is (direct.c) */
	bool local_err;                /* sq[local_err_idx] failed a local check */
	uint32_t local_err_idx;
};

/* Completer (comp.c, IBA 9.7.5.1, 10.7.3): ACKs and responses to CQEs,
 * retries.  Timers are CLOCK_MONOTONIC ns, 0 = not running. */
struct sib_comp {
	uint32_t psn;                  /* oldest PSN not yet acknowledged */
	uint32_t acked_psn;            /* highest PSN an ACK covered */
	uint32_t read_rcvd;            /* response packets placed for the READ at sq_tail */
	uint8_t retry_left, rnr_left;  /* retry budgets (retry_cnt, rnr_retry) */
	uint8_t starved;               /* timeouts in a row forgiven: the peer took nothing */
	uint64_t retry_deadline;       /* local ACK timeout */
	uint64_t rnr_deadline;         /* waiting out an RNR NAK */
};

/* A responder resource: a READ being answered (IBA 9.7.4.1.5). */
struct sib_read_res {
	uint64_t va;
	uint32_t len, sent;            /* bytes */
	uint32_t psn;                  /* PSN of the next response packet */
	uint32_t first_psn;
	uint32_t msn;
	struct sib_mr *mr;             /* a reference (mr_h), NULL: none or dropped */
	uint64_t mr_h;
	uint32_t rkey;                 /* the RETH's R_Key (an MR's or a window's) */
	bool placed;                   /* the requester read the data itself: one
					  response without payload (direct.c) */
	bool dup;                      /* answers a duplicate: not counted against
					  max_dest_rd_atomic (only new requests are) */
	/* atomics (atomic.c): an ATOMIC_ACKNOWLEDGE owed instead of READ data */
	bool atomic;
	uint64_t orig;                 /* the original remote value, host order */
};

/* Results of executed atomics kept for duplicates (atomic.c): at least
 * max_dest_rd_atomic (IBA 9.7.5.1.3); SIB_MAX_RD_ATOMIC of hca.h. */
#define SIB_ATOMIC_SAVED 16
struct sib_atomic_saved {
	uint64_t orig;                 /* the original remote value, host order */
	uint32_t psn;
	bool valid;
};

/* Responder (resp.c, IBA 9.7.5): request packets to placement, ACKs,
 * NAKs and READ responses. */
struct sib_resp {
	uint32_t epsn;                 /* expected PSN */
	uint32_t msn;                  /* message sequence number (24 bits) */
	bool in_send;                  /* inside a multi-packet SEND */
	bool in_write;                 /* inside a multi-packet RDMA WRITE */
	bool have_rwqe;                /* the current SEND has taken an RWQE */
	bool nak_seq_sent;             /* PSN sequence NAK sent, not recovered */
	uint32_t offset;               /* bytes placed of the current message */
	uint64_t va;                   /* RDMA WRITE: next VA */
	uint32_t remaining;            /* RDMA WRITE: bytes left per RETH */
	struct sib_mr *mr;             /* RDMA WRITE: target MR, a reference (mr_h);
					  NULL: none, or deregistered/reregistered */
	uint64_t mr_h;
	uint32_t rkey;                 /* RDMA WRITE: the RETH's R_Key (an MR's or a window's) */
	enum ibv_wc_status err_status; /* for the RWQE in use when the QP failed */
	/* ACK/NAK owed, sent when the wire has room (coalesced) */
	bool ack_pending;
	uint32_t ack_psn;
	uint8_t ack_syndrome;
	/* READs being answered: ring of rd_res_size (max_dest_rd_atomic + 1) */
	struct sib_read_res *rd_res;
	uint32_t rd_res_head, rd_res_tail, rd_res_size;
	/* atomics (atomic.c): ring of the last results, next slot to fill */
	struct sib_atomic_saved atomic_saved[SIB_ATOMIC_SAVED];
	uint32_t atomic_saved_next;
	/* UC (uc.c) */
	bool uc_drop;                  /* dropping a message's packets until a FIRST/ONLY */
};

/*
 * Why the receive demux dropped a packet (recv.c), one per-context counter
 * each (sib_context.rx_drop[]).  In the order of the checks.
 */
enum sib_rx_drop {
	SIB_RX_DROP_MALFORMED = 0,     /* iba_decode: length, LNH, GRH, TVer, reserved opcode */
	SIB_RX_DROP_CRC,               /* ICRC or VCRC mismatch */
	SIB_RX_DROP_LVER,              /* LRH.LVer not 0 */
	SIB_RX_DROP_DLID,              /* DLID is not one of this device's ports */
	SIB_RX_DROP_LINK_DOWN,         /* arrived on a port that is down, or a removed device */
	SIB_RX_DROP_DGID,              /* GRH.DGID is not the port's GID */
	SIB_RX_DROP_QPN,               /* no such QP on this context */
	SIB_RX_DROP_PORT,              /* the QP is bound to another port */
	SIB_RX_DROP_TYPE,              /* opcode's transport is not the QP's */
	SIB_RX_DROP_STATE,             /* QP state does not receive this packet */
	SIB_RX_DROP_PKEY,              /* P_Key does not match the QP's */
	SIB_RX_DROP_QKEY,              /* UD: Q_Key does not match the QP's */
	SIB_RX_DROP_SLID,              /* connected QP: SLID is not the peer's path */
	SIB_RX_DROP_SGID,              /* connected QP: GRH or SGID is not the peer's path */
	SIB_RX_DROP_FOREIGN,           /* sent by a context that does not own the peer QP
	                                * (connected QP) or the DETH's source QP (UD) */
	SIB_RX_DROP_NO_RWQE,           /* UD: no receive WQE posted (no RNR for UD, IBA 9.7.x) */
	SIB_RX_DROP_MCAST,             /* multicast: no QP of this context is attached */
	SIB_RX_DROP_XRC_SRQN,          /* XRC: the XRCETH names no XRC SRQ of the QP's domain */
	/* XRC packets forwarded by another context of this device (xrc_fwd.c): */
	SIB_RX_DROP_XRC_FWD_FORGED,    /* not an XRC SEND to our SRQ from a live TGT QP's owner */
	SIB_RX_DROP_XRC_FWD_NORWQE,    /* the SRQ had no WQE (no RNR NAK possible: docs/srq.md) */
	SIB_RX_DROP_XRC_FWD_LEN,       /* the message overflows its WQE */
	SIB_RX_DROP_XRC_FWD_LKEY,      /* the WQE's buffers fail their L_Key check */
	SIB_RX_DROP_XRC_FWD_SEQ,       /* out of order, a duplicate, or no room to place it */
	SIB_RX_DROP_COUNT
};

#endif /* SIB_TRANSPORT_STATE_H */

#ifndef SIB_TRANSPORT_STATE_ONLY
#ifndef SIB_TRANSPORT_H
#define SIB_TRANSPORT_H

#include "hca/hca.h"

/* A packet being put on the wire (engine.c). */
struct sib_tx {
	struct iba_pkt h;              /* the headers to send; LRH/GRH/BTH prefilled */
	struct sib_link_tx lt;         /* the buffer reserved on the link */
	uint8_t *slot;                 /* where the packet goes; NULL: peer unreachable, lost */
	size_t hdr_len;
	uint32_t sflags;               /* extra slot flags (SIB_SLOT_F_PLACED), 0 by sib_tx_begin */
	bool pending;                  /* sib_tx_begin false: the link asks where the peer is */
};

/* qp's connected peer, resolved (cached in qp->dest) without reserving a
 * slot; NULL: our port is down, the peer unreachable or not known yet. */
struct sib_link_dest *sib_tx_dest(struct sib_qp *qp);
/* Reserve room on the link toward qp's peer.  False: its inbox is full,
 * or (tx->pending) the link is still asking where the peer is: retry
 * later.  True with tx->slot NULL: the peer is gone, the packet is lost. */
bool sib_tx_begin(struct sib_qp *qp, struct sib_tx *tx);
/* The same toward address vector ah and QPN dqpn (UD: the WR's AH). */
bool sib_tx_begin_to(struct sib_qp *qp, struct sib_tx *tx, const struct ibv_ah_attr *ah, uint32_t dqpn);
/* The same toward a given peer context (a multicast member, mcast.c);
 * to NULL: the context that owns dqpn. */
bool sib_tx_begin_ring(struct sib_qp *qp, struct sib_tx *tx, struct sib_link_dest *to,
		       const struct ibv_ah_attr *ah, uint32_t dqpn);
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

/*
 * Check only the bytes [off, off + len) of an SGE list, piece by piece
 * (key, PD, range; LOCAL_WRITE if `need` has it): the SGEs, or the parts
 * of them, that lie outside the range are not looked at.  This is the
 * receive side's check (a receive WQE's buffers are checked for the bytes
 * a message writes, not the whole posted buffer, as rxe's copy_data and
 * hardware do: UCX posts buffers whose tail lies past their MR).  len 0
 * checks nothing.  The caller has checked that off + len is within the
 * SGEs' total length (the LOC_LEN_ERR checks come first).  IBV_WC_SUCCESS
 * or IBV_WC_LOC_PROT_ERR.
 */
enum ibv_wc_status sib_sge_check_range(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				       uint32_t num_sge, uint32_t off, uint32_t len, unsigned int need);

/* Copy between an SGE list at byte offset `off` and a buffer, holding a
 * reference on each piece's MR while copying (dereg/rereg wait for it) and
 * checking it again under that reference.  IBV_WC_SUCCESS, or
 * IBV_WC_LOC_PROT_ERR (an MR went away: part may have been copied). */
enum ibv_wc_status sib_sge_copy_out(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				    uint32_t num_sge, uint32_t off, void *dst, uint32_t len);
enum ibv_wc_status sib_sge_copy_in(struct sib_context *ctx, uint32_t pd, const struct ibv_sge *sge,
				   uint32_t num_sge, uint32_t off, const void *src, uint32_t len);

/* Local address of remote-access VA `va` inside mr (range already checked). */
static inline uint8_t *sib_mr_ptr(const struct sib_mr *mr, uint64_t va)
{
	return (uint8_t *)mr->ibv.addr + (va - mr->range.iova);
}

/* An 8-byte word that may alias anything (sib_place's stores). */
typedef uint64_t __attribute__((may_alias)) sib_place_word;

/*
 * Place n bytes of a message into memory the application owns and may be
 * watching (RDMA WRITE and SEND payload, READ responses, direct placement):
 * the last bytes (all of a short message, the last SIB_PLACE_TAIL of a long
 * one, after the rest) are stored exactly once each, in ascending address
 * order, as an HCA's DMA writes them.  Programs that spin on the last byte of a WRITE
 * target and then write that byte themselves (perftest's ib_write_lat,
 * rdma-core's riostream, which also sends the same buffer back) depend on
 * it.  libc's memcpy gives neither: glibc copies 16..64 bytes with two
 * vector stores that overlap (for 64 bytes with AVX-512, the same 64
 * bytes twice), so the second store undoes a store the watcher made after
 * it saw the first one (docs/transport.md "Placing data").  Aligned
 * 8-byte words in between, each one relaxed atomic store (the compiler
 * may neither merge, repeat nor turn the loop into a memcpy call).
 */
#define SIB_PLACE_TAIL 512 /* bytes placed one store each after a longer message's memcpy */

static inline void sib_place(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	/* A long message: memcpy its bulk (its double stores stay inside it;
	 * on x86 they are visible before any later store) and place the last
	 * SIB_PLACE_TAIL bytes one store each, so that nothing is stored into
	 * the end a watcher polls after the byte it waits for.  memcpy for
	 * all of it cost a third of RDMA WRITE's bandwidth at 1 MiB. */
	if (n > 2 * SIB_PLACE_TAIL) {
		memcpy(d, s, n - SIB_PLACE_TAIL);
		d += n - SIB_PLACE_TAIL;
		s += n - SIB_PLACE_TAIL;
		n = SIB_PLACE_TAIL;
	}

	while (n && ((uintptr_t)d & 7)) {
		__atomic_store_n(d++, *s++, __ATOMIC_RELAXED);
		n--;
	}
	for (; n >= 8; n -= 8, d += 8, s += 8) {
		uint64_t w;

		memcpy(&w, s, 8);
		__atomic_store_n((sib_place_word *)(void *)d, w, __ATOMIC_RELAXED);
	}
	while (n--)
		__atomic_store_n(d++, *s++, __ATOMIC_RELAXED);
}

/* Complete the oldest send WQE (sq_tail) with `status`; a CQE is written
 * if it was signaled or failed (IBA 10.7.3.1).  Advances sq_tail. */
void sib_sq_complete(struct sib_qp *qp, enum ibv_wc_status status);

/* A response opcode on the QP's transport: an XRC_RECV QP answers with
 * the XRC opcodes (0xA0 prefix), RC with RC's. */
static inline uint8_t sib_resp_opcode(const struct sib_qp *qp, uint8_t opc)
{
	return (uint8_t)((qp->ibv.qp_base.qp_type == IBV_QPT_XRC_RECV ? IBA_TRANSPORT_XRC
								     : IBA_TRANSPORT_RC) | opc);
}


/* The requester rewinds to resend from `psn` (go-back-N, IBA 9.7.5.1.x). */
void sib_req_rewind(struct sib_qp *qp, uint32_t psn);

/* Send an ACK/NAK now if the wire has room, else leave it pending. */
void sib_resp_send_ack(struct sib_qp *qp, uint8_t syndrome, uint32_t psn);

/*
 * Transport error classes (IBA 9.9): one row per outcome, shared by the
 * responder (which NAKs and fails its RWQE) and the completer (which maps
 * a NAK it receives back to the requester's WC status).
 */
enum sib_err_class {
	SIB_EC_PSN_SEQ = 0,            /* RC class B: PSN sequence error */
	SIB_EC_RNR,                    /* RC class B: receiver not ready */
	SIB_EC_INV_REQ,                /* RC class C: invalid request */
	SIB_EC_LOC_LEN,                /* RC class C: message longer than the RWQE */
	SIB_EC_REM_ACCESS,             /* RC class C: R_Key violation */
	SIB_EC_LOC_PROT,               /* class A: the RWQE's own buffers fail the L_Key check */
	SIB_EC_REM_OP,                 /* class A: other responder-local failure */
	SIB_EC_INV_RD_REQ,             /* RD only: invalid RD request */
	SIB_EC_COUNT
};

struct sib_err_info {
	const char *name;              /* for traces */
	char iba_class;                /* IBA 9.9 class letter */
	uint8_t syndrome;              /* AETH syndrome the responder sends */
	enum ibv_wc_status resp_status;/* the responder's RWQE in use, if any */
	enum ibv_wc_status req_status; /* the requester's WQE when the NAK arrives */
	enum ibv_qp_state next_state;  /* the responder's QP: ERR, or UNKNOWN = unchanged */
};

/* Row of the class table; never NULL for a valid class. */
const struct sib_err_info *sib_err_info(enum sib_err_class ec);
/* The class a received NAK code (AETH value bits) reports; unknown codes
 * are a remote operational error (iba-transport.md 3). */
enum sib_err_class sib_err_from_nak(uint8_t code);

/*
 * UC (uc.c, IBA 9.7.4.1.4, 9.9.3 classes D/E): the branches where the UC
 * service differs from RC.  sib_uc_check_psn / sib_uc_check_op_seq: true
 * to go on with the packet, false to drop it (the message in progress is
 * dropped, the receiver resynchronises on the next FIRST/ONLY).
 * sib_uc_error applies an error class the UC way (no NAK ever: drop the
 * message, or for the receive WQE's own faults complete it in error and
 * enter ERR).  sib_uc_wqe_sent completes a send WQE whose packets are all
 * on the wire.
 */
static inline bool sib_qp_is_uc(const struct sib_qp *qp)
{
	return qp->ibv.qp_base.qp_type == IBV_QPT_UC;
}
bool sib_uc_check_psn(struct sib_qp *qp, const struct iba_pkt *pkt);
bool sib_uc_check_op_seq(struct sib_qp *qp, const struct iba_pkt *pkt);
void sib_uc_error(struct sib_qp *qp, enum sib_err_class ec);
void sib_uc_drop_msg(struct sib_qp *qp, bool rest);
void sib_uc_wqe_sent(struct sib_qp *qp);
/* A UC send WQE failed locally: the QP enters SQE (IBA 10.3.1), the SQ is
 * flushed, the RQ goes on.  sib_uc_flush_sq completes every SQ WQE (the
 * failed one with its status, the rest WR_FLUSH_ERR), as in SQE. */
void sib_uc_enter_sqe(struct sib_qp *qp);
void sib_uc_flush_sq(struct sib_qp *qp);

/*
 * Stage traces: a build with -DSIB_TRACE_STAGES (e.g. CMAKE_C_FLAGS) prints
 * every state a stage machine enters on stderr; otherwise compiled out.
 */
#ifdef SIB_TRACE_STAGES
#include <stdio.h>
#define SIB_STAGE_TRACE(stage, qp, name) \
	fprintf(stderr, "softib %s qp 0x%x: %s\n", (stage), (qp)->ibv.qp_base.qp_num, (name))
#else
#define SIB_STAGE_TRACE(stage, qp, name) ((void)0)
#endif

/* State names of the three stage machines, for traces; "unknown" out of range. */
const char *sib_req_state_name(unsigned int st);
const char *sib_resp_state_name(unsigned int st);
const char *sib_comp_state_name(unsigned int st);

#endif /* SIB_TRANSPORT_H */
#endif /* SIB_TRANSPORT_STATE_ONLY */
