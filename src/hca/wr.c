/* SPDX-License-Identifier: MIT */
/*
 * Send WR validity and packetisation tables (STYLE 6.5; IBA 9.2 opcodes,
 * 10.8.3 and ibv_post_send(3) for the QP types of each WR opcode).  One
 * table [transport][WR opcode][FIRST|MIDDLE|LAST|ONLY] gives every packet
 * opcode, so RC, UC, UD and XRC share one requester path.  Pure data: no
 * state, no locks, no I/O.
 */
#include <errno.h>

#include "hca/wr.h"
#include "iba/iba.h"

#define Q_RC  SIB_QPT_BIT(IBV_QPT_RC)
#define Q_UC  SIB_QPT_BIT(IBV_QPT_UC)
#define Q_UD  SIB_QPT_BIT(IBV_QPT_UD)
#define Q_XRC SIB_QPT_BIT(IBV_QPT_XRC_SEND)

static const struct sib_wr_info wr_info[] = {
	[IBV_WR_RDMA_WRITE] = { "RDMA_WRITE", Q_RC | Q_UC | Q_XRC,
				SIB_WR_WRITE | SIB_WR_RETH | SIB_WR_IMPL, IBV_WC_RDMA_WRITE },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { "RDMA_WRITE_WITH_IMM", Q_RC | Q_UC | Q_XRC,
					 SIB_WR_WRITE | SIB_WR_RETH | SIB_WR_IMM | SIB_WR_SOLICIT |
					 SIB_WR_IMPL, IBV_WC_RDMA_WRITE },
	[IBV_WR_SEND] = { "SEND", Q_RC | Q_UC | Q_UD | Q_XRC, SIB_WR_SEND | SIB_WR_SOLICIT | SIB_WR_IMPL,
			  IBV_WC_SEND },
	[IBV_WR_SEND_WITH_IMM] = { "SEND_WITH_IMM", Q_RC | Q_UC | Q_UD | Q_XRC,
				   SIB_WR_SEND | SIB_WR_IMM | SIB_WR_SOLICIT | SIB_WR_IMPL, IBV_WC_SEND },
	[IBV_WR_RDMA_READ] = { "RDMA_READ", Q_RC | Q_XRC, SIB_WR_READ | SIB_WR_RETH | SIB_WR_IMPL,
			       IBV_WC_RDMA_READ },
	/* Atomics: 8 bytes, atomic_cap IBV_ATOMIC_HCA (atomic.c). */
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { "ATOMIC_CMP_AND_SWP", Q_RC | Q_XRC, SIB_WR_ATOMIC | SIB_WR_IMPL,
					IBV_WC_COMP_SWAP },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { "ATOMIC_FETCH_AND_ADD", Q_RC | Q_XRC, SIB_WR_ATOMIC | SIB_WR_IMPL,
					  IBV_WC_FETCH_ADD },
	/* Memory windows (mw.c). */
	[IBV_WR_LOCAL_INV] = { "LOCAL_INV", Q_RC | Q_UC | Q_XRC, SIB_WR_LOCAL | SIB_WR_IMPL, IBV_WC_LOCAL_INV },
	[IBV_WR_BIND_MW] = { "BIND_MW", Q_RC | Q_UC | Q_XRC, SIB_WR_LOCAL | SIB_WR_IMPL, IBV_WC_BIND_MW },
	/* ibv_post_send(3) lists UC too, but IBA has no UC opcode for it. */
	[IBV_WR_SEND_WITH_INV] = { "SEND_WITH_INV", Q_RC | Q_XRC,
				   SIB_WR_SEND | SIB_WR_INV | SIB_WR_SOLICIT | SIB_WR_IMPL, IBV_WC_SEND },
	[IBV_WR_TSO] = { "TSO", SIB_QPT_BIT(IBV_QPT_RAW_PACKET) | Q_UD, 0, IBV_WC_TSO },
	[IBV_WR_ATOMIC_WRITE] = { "ATOMIC_WRITE", Q_RC, SIB_WR_WRITE | SIB_WR_RETH, IBV_WC_ATOMIC_WRITE },
};

#define NWR ((int)(sizeof(wr_info) / sizeof(wr_info[0])))

/* Packet opcodes; 0 = no such packet, else 0x100 | BTH opcode. */
#define P(tr, op) (0x100 | IBA_TRANSPORT_##tr | IBA_OPC_##op)
#define MSG_ROWS(tr)                                                                              \
	[IBV_WR_SEND] = { P(tr, SEND_FIRST), P(tr, SEND_MIDDLE), P(tr, SEND_LAST),                \
			  P(tr, SEND_ONLY) },                                                     \
	[IBV_WR_SEND_WITH_IMM] = { P(tr, SEND_FIRST), P(tr, SEND_MIDDLE),                         \
				   P(tr, SEND_LAST_WITH_IMMEDIATE),                               \
				   P(tr, SEND_ONLY_WITH_IMMEDIATE) },                             \
	[IBV_WR_RDMA_WRITE] = { P(tr, RDMA_WRITE_FIRST), P(tr, RDMA_WRITE_MIDDLE),                \
				P(tr, RDMA_WRITE_LAST), P(tr, RDMA_WRITE_ONLY) },                 \
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { P(tr, RDMA_WRITE_FIRST), P(tr, RDMA_WRITE_MIDDLE),       \
					 P(tr, RDMA_WRITE_LAST_WITH_IMMEDIATE),                   \
					 P(tr, RDMA_WRITE_ONLY_WITH_IMMEDIATE) }
#define READ_ATOMIC_ROWS(tr)                                                                      \
	[IBV_WR_RDMA_READ] = { [SIB_POS_ONLY] = P(tr, RDMA_READ_REQUEST) },                       \
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { [SIB_POS_ONLY] = P(tr, COMPARE_SWAP) },                   \
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { [SIB_POS_ONLY] = P(tr, FETCH_ADD) },                    \
	[IBV_WR_SEND_WITH_INV] = { P(tr, SEND_FIRST), P(tr, SEND_MIDDLE),                         \
				   P(tr, SEND_LAST_WITH_INVALIDATE),                              \
				   P(tr, SEND_ONLY_WITH_INVALIDATE) }

static const uint16_t pkt_opcode[SIB_TR_COUNT][IBV_WR_ATOMIC_WRITE + 1][SIB_POS_COUNT] = {
	[SIB_TR_RC] = { MSG_ROWS(RC), READ_ATOMIC_ROWS(RC),
			[IBV_WR_ATOMIC_WRITE] = { [SIB_POS_ONLY] = P(RC, ATOMIC_WRITE) } },
	[SIB_TR_UC] = { MSG_ROWS(UC) },
	[SIB_TR_UD] = {
		[IBV_WR_SEND] = { [SIB_POS_ONLY] = P(UD, SEND_ONLY) },
		[IBV_WR_SEND_WITH_IMM] = { [SIB_POS_ONLY] = P(UD, SEND_ONLY_WITH_IMMEDIATE) },
	},
	[SIB_TR_XRC] = { MSG_ROWS(XRC), READ_ATOMIC_ROWS(XRC) },
};

const struct sib_wr_info *sib_wr_info(enum ibv_wr_opcode op)
{
	if ((int)op < 0 || (int)op >= NWR || !wr_info[op].name)
		return NULL;
	return &wr_info[op];
}

int sib_wr_check(enum ibv_qp_type qpt, enum ibv_wr_opcode op)
{
	const struct sib_wr_info *wi = sib_wr_info(op);

	if (!wi || (unsigned int)qpt >= 32 || !(wi->qpts & SIB_QPT_BIT(qpt)) || !(wi->flags & SIB_WR_IMPL))
		return EINVAL;
	return 0;
}

enum sib_transport sib_qpt_transport(enum ibv_qp_type qpt)
{
	switch (qpt) {
	case IBV_QPT_RC:
		return SIB_TR_RC;
	case IBV_QPT_UC:
		return SIB_TR_UC;
	case IBV_QPT_UD:
		return SIB_TR_UD;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return SIB_TR_XRC;
	default:
		return SIB_TR_NONE;
	}
}

uint8_t sib_transport_prefix(enum sib_transport tr)
{
	static const uint8_t prefix[SIB_TR_COUNT] = {
		[SIB_TR_RC] = IBA_TRANSPORT_RC,
		[SIB_TR_UC] = IBA_TRANSPORT_UC,
		[SIB_TR_UD] = IBA_TRANSPORT_UD,
		[SIB_TR_XRC] = IBA_TRANSPORT_XRC,
	};

	return (unsigned int)tr < SIB_TR_COUNT ? prefix[tr] : 0xff;
}

int sib_wr_pkt_opcode(enum sib_transport tr, enum ibv_wr_opcode op, enum sib_pos pos)
{
	uint16_t v;

	if ((unsigned int)tr >= SIB_TR_COUNT || (unsigned int)op > IBV_WR_ATOMIC_WRITE ||
	    (unsigned int)pos >= SIB_POS_COUNT)
		return -1;
	v = pkt_opcode[tr][op][pos];
	return v ? (int)(v & 0xff) : -1;
}
