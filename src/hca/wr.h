/* SPDX-License-Identifier: MIT */
/*
 * Send WR validity and packetisation as data (STYLE 6.5): which QP types
 * accept which WR opcode, what each carries, and the packet opcode for
 * every transport, WR opcode and position in the message (IBA 9.2, 10.8.3,
 * ibv_post_send(3)).  Pure tables and lookups: no state, no locks.
 */
#ifndef SIB_WR_H
#define SIB_WR_H

#include <infiniband/verbs.h>
#include <stdint.h>

/* Transports that carry send WRs (the BTH opcode's prefix). */
enum sib_transport {
	SIB_TR_RC = 0,
	SIB_TR_UC,
	SIB_TR_UD,
	SIB_TR_XRC,
	SIB_TR_COUNT,
	SIB_TR_NONE = -1,
};

/* Position of a packet in its message. */
enum sib_pos {
	SIB_POS_FIRST = 0,
	SIB_POS_MIDDLE,
	SIB_POS_LAST,
	SIB_POS_ONLY,
	SIB_POS_COUNT,
};

/* What a WR opcode is and carries (sib_wr_info.flags). */
#define SIB_WR_SEND    (1u << 0)       /* a SEND: consumes a receive WQE at the responder */
#define SIB_WR_WRITE   (1u << 1)
#define SIB_WR_READ    (1u << 2)
#define SIB_WR_ATOMIC  (1u << 3)       /* AtomicETH, 8-byte result */
#define SIB_WR_IMM     (1u << 4)       /* ImmDt on the last packet */
#define SIB_WR_INV     (1u << 5)       /* IETH on the last packet */
#define SIB_WR_RETH    (1u << 6)       /* RETH on the first packet */
#define SIB_WR_LOCAL   (1u << 7)       /* local operation, no packet (LOCAL_INV, BIND_MW) */
#define SIB_WR_SOLICIT (1u << 8)       /* IBV_SEND_SOLICITED sets BTH.SE on the last packet */
#define SIB_WR_IMPL    (1u << 15)      /* this HCA carries it out today */

#define SIB_QPT_BIT(t) (1u << (t))     /* enum ibv_qp_type < 32 */

struct sib_wr_info {
	const char *name;              /* "SEND", ...; NULL: not a send WR opcode */
	uint32_t qpts;                 /* SIB_QPT_BIT(qp types) IBA allows it on */
	uint32_t flags;                /* SIB_WR_* */
	enum ibv_wc_opcode wc_opcode;  /* the requester's completion opcode */
};

/* Table row of a WR opcode; NULL if op is not a send WR opcode. */
const struct sib_wr_info *sib_wr_info(enum ibv_wr_opcode op);

/* May a QP of type qpt post op?  0, or EINVAL as rxe's post_send gives for
 * an opcode the QP type does not allow or the HCA does not implement. */
int sib_wr_check(enum ibv_qp_type qpt, enum ibv_wr_opcode op);

/* The transport a QP type sends with; SIB_TR_NONE if none. */
enum sib_transport sib_qpt_transport(enum ibv_qp_type qpt);

/* The BTH opcode prefix of a transport (IBA_TRANSPORT_*). */
uint8_t sib_transport_prefix(enum sib_transport tr);

/* The BTH opcode (prefix included) of the packet at `pos` of a message of
 * WR opcode `op` on transport `tr`; -1 if that packet cannot exist (UD has
 * ONLY packets only, UC has no READ, a READ request is always ONLY). */
int sib_wr_pkt_opcode(enum sib_transport tr, enum ibv_wr_opcode op, enum sib_pos pos);

#endif
