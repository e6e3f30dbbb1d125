/* SPDX-License-Identifier: MIT */
/*
 * The receive demux of a device context: every packet that arrives for it
 * passes here (IBA 9.6 packet transport header validation, 10.9.3 P_Key,
 * 9.7.x connected-QP source checks), in the manner of rxe's hdr_check,
 * check_type_state, check_keys and check_addr, and is handed to its QP's
 * responder (requests) or completer (responses and ACKs).  The bytes come
 * from another process and are hostile: every check drops and counts by
 * cause (ctx->rx_drop[]), nothing here may crash or wait.  Engine context
 * (progress_lock held); no I/O.  The destination QP is looked up with a
 * table reference, put when the packet is done (one atomic add each way):
 * a QP destroyed meanwhile stays whole until then.
 */
#include <string.h>

#include "common/fabric_view.h"
#include "hca/events.h"
#include "hca/srq.h"
#include "hca/transport.h"
#include "hca/ud.h"
#include "hca/wr.h"

static const char *const drop_name[SIB_RX_DROP_COUNT] = {
	[SIB_RX_DROP_MALFORMED] = "malformed",
	[SIB_RX_DROP_CRC] = "crc",
	[SIB_RX_DROP_LVER] = "lver",
	[SIB_RX_DROP_DLID] = "dlid",
	[SIB_RX_DROP_LINK_DOWN] = "link_down",
	[SIB_RX_DROP_DGID] = "dgid",
	[SIB_RX_DROP_QPN] = "qpn",
	[SIB_RX_DROP_PORT] = "port",
	[SIB_RX_DROP_TYPE] = "type",
	[SIB_RX_DROP_STATE] = "state",
	[SIB_RX_DROP_PKEY] = "pkey",
	[SIB_RX_DROP_QKEY] = "qkey",
	[SIB_RX_DROP_SLID] = "slid",
	[SIB_RX_DROP_SGID] = "sgid",
	[SIB_RX_DROP_FOREIGN] = "foreign",
	[SIB_RX_DROP_NO_RWQE] = "no_rwqe",
	[SIB_RX_DROP_MCAST] = "mcast",
	[SIB_RX_DROP_XRC_SRQN] = "xrc_srqn",
	[SIB_RX_DROP_XRC_FWD_FORGED] = "xrc_fwd_forged",
	[SIB_RX_DROP_XRC_FWD_NORWQE] = "xrc_fwd_norwqe",
	[SIB_RX_DROP_XRC_FWD_LEN] = "xrc_fwd_len",
	[SIB_RX_DROP_XRC_FWD_LKEY] = "xrc_fwd_lkey",
	[SIB_RX_DROP_XRC_FWD_SEQ] = "xrc_fwd_seq",
};

const char *sib_rx_drop_name(unsigned int why)
{
	return why < SIB_RX_DROP_COUNT && drop_name[why] ? drop_name[why] : "unknown";
}

#define RX_OK SIB_RX_DROP_COUNT

/* A packet on its way through the checks. */
struct rx {
	struct sib_context *ctx;
	uint32_t from;                 /* the sending context's inbox (the link's word) */
	struct iba_pkt pkt;
	uint16_t lm;                   /* lid_map entry of the DLID: dev << 8 | port */
	const struct sib_shm_port *port;
	struct sib_qp *qp;             /* a reference (qp_h), or NULL */
	uint64_t qp_h;
	bool mcast;                    /* DLID is a multicast LID (mcast_recv) */
};

static uint16_t lid_map(uint16_t lid)
{
	return lid && lid < SIB_UNICAST_LIDS ?
	       atomic_load_explicit(&sib_fabric->lid_map[lid], memory_order_acquire) : 0;
}

/* Headers: decode (lengths, LNH, CRCs, GRH, TVer, reserved opcodes),
 * LRH version, DLID is one of our ports, DGID is that port's GID. */
static enum sib_rx_drop hdr_check(struct rx *rx, const uint8_t *buf, uint32_t len, unsigned int flags)
{
	unsigned int dflags = IBA_HAS_VCRC;
	unsigned int pn;
	int rc;

	if (flags & SIB_RX_ICRC)
		dflags |= IBA_CHECK_ICRC; /* computed by the sender (docs/link.md) */
	if (flags & SIB_RX_VCRC)
		dflags |= IBA_CHECK_VCRC;
	rc = iba_decode(buf, len, dflags, &rx->pkt);
	rx->pkt.placed = (flags & SIB_RX_PLACED) && !(flags & SIB_RX_XRC_FWD);
	if (rc == IBA_ERR_ICRC || rc == IBA_ERR_VCRC)
		return SIB_RX_DROP_CRC;
	if (rc != IBA_OK)
		return SIB_RX_DROP_MALFORMED;
	if (rx->pkt.lrh.lver != 0)
		return SIB_RX_DROP_LVER;
	if (rx->pkt.lrh.dlid >= SIB_MCAST_LID_MIN && rx->pkt.lrh.dlid != IBA_LID_PERMISSIVE) {
		rx->mcast = true; /* the attached QPs decide (mcast_recv) */
		return RX_OK;
	}
	/* Unicast only until UD multicast exists; the permissive DLID is
	 * QP0's, which lives in softibd. */
	rx->lm = lid_map(rx->pkt.lrh.dlid);
	pn = rx->lm & 0xff;
	if (!rx->lm || (uint32_t)(rx->lm >> 8) != rx->ctx->dev->index || pn < 1 || pn > SIB_MAX_PORTS)
		return SIB_RX_DROP_DLID;
	if (!sib_port_passes(rx->ctx->dev->index, rx->ctx->dev->gen, pn)) {
		rx->ctx->port_down_drops++; /* the link is down: lost, as on a wire */
		return SIB_RX_DROP_LINK_DOWN;
	}
	rx->port = &sib_fabric->devs[rx->ctx->dev->index].ports[pn - 1];
	if (rx->pkt.lrh.lnh == IBA_LNH_GLOBAL) {
		uint64_t pfx = htobe64(rx->port->gid_prefix), guid = htobe64(rx->port->port_guid);

		if (memcmp(rx->pkt.grh.dgid, &pfx, 8) || memcmp(rx->pkt.grh.dgid + 8, &guid, 8))
			return SIB_RX_DROP_DGID;
	}
	return RX_OK;
}

/* The QP: exists here, on the DLID's port, of the opcode's transport, and
 * in a state that takes this packet (requests from RTR on, responses
 * only when sending: IBA 10.3.1). */
static enum sib_rx_drop check_type_state(struct rx *rx)
{
	const struct iba_pkt *pkt = &rx->pkt;
	struct sib_qp *qp = sib_qp_get(rx->ctx, pkt->bth.dqpn, &rx->qp_h);
	enum sib_transport tr;
	enum ibv_qp_state s;

	if (!qp)
		return SIB_RX_DROP_QPN;
	rx->qp = qp;
	if (qp->port_num != (rx->lm & 0xff))
		return SIB_RX_DROP_PORT;
	tr = sib_qpt_transport(qp->ibv.qp_base.qp_type);
	if (tr == SIB_TR_NONE || (pkt->bth.opcode & IBA_TRANSPORT_MASK) != sib_transport_prefix(tr))
		return SIB_RX_DROP_TYPE;
	s = qp->state;
	if (pkt->op->flags & IBA_OP_REQ) {
		if (s != IBV_QPS_RTR && s != IBV_QPS_RTS && s != IBV_QPS_SQD && s != IBV_QPS_SQE)
			return SIB_RX_DROP_STATE;
	} else if (s != IBV_QPS_RTS && s != IBV_QPS_SQD) {
		return SIB_RX_DROP_STATE;
	}
	return RX_OK;
}

/* Count a key violation in the port's counter (PortInfo:P_KeyViolations,
 * Q_KeyViolations; ibv_port_attr bad_pkey_cntr / qkey_viol_cntr).  The
 * counters are this process's (fabric_view.h); absent when no view is
 * attached (an HCA test without a daemon). */
static void count_key_violation(const struct rx *rx, bool pkey)
{
	struct sib_port_counters *c = sib_fabric_view_cntr(&sib_fview, rx->ctx->dev->index,
							   (uint8_t)(rx->lm & 0xff));

	if (c)
		atomic_fetch_add_explicit(pkey ? &c->bad_pkey : &c->qkey_viol, 1, memory_order_relaxed);
}

/* P_Key against the QP's P_Key index (IBA 10.9.3), Q_Key for UD (10.2.4);
 * each violation is also counted on the port. */
static enum sib_rx_drop check_keys(struct rx *rx)
{
	const struct sib_qp *qp = rx->qp;

	if (!sib_pkey_match(rx->pkt.bth.pkey, rx->port->pkey[qp->pkey_index < SIB_PKEY_TBL_LEN ?
							  qp->pkey_index : 0])) {
		count_key_violation(rx, true);
		return SIB_RX_DROP_PKEY;
	}
	if (qp->ibv.qp_base.qp_type == IBV_QPT_UD && (rx->pkt.op->hdrs & IBA_HDR_DETH) &&
	    rx->pkt.deth.qkey != qp->qkey) {
		count_key_violation(rx, false);
		return SIB_RX_DROP_QKEY;
	}
	return RX_OK;
}

/* Did context rx->from send as the owner of QPN qpn?  A QPN nobody owns
 * now (its QP destroyed while the packet travelled) is let through: the
 * QP checks decide.  The sender's context is the pair ring's, named by
 * softibd (link/pair.h): no packet content can change it. */
static bool from_owner(const struct rx *rx, uint32_t qpn)
{
	uint64_t w = sib_link_qpn_owner(qpn);

	return !(w & SIB_QPO_VALID) || SIB_QPO_INBOX(w) == rx->from;
}

/*
 * Connected QPs (RC, UC, XRC) take packets from their peer only: the
 * context that sent it must own the QP's destination QP (the pair ring
 * says who sent it), the SLID
 * must be a LID of the port the QP's path leads to (its DLID, or another
 * LID of the same port under LMC), and a GRH must be present exactly when
 * the path is global, with the path's DGID as its SGID.  Otherwise anyone
 * who learns a QPN and PSN could inject into the connection.
 */
static enum sib_rx_drop check_addr(struct rx *rx)
{
	const struct sib_qp *qp = rx->qp;
	const struct iba_pkt *pkt = &rx->pkt;
	enum ibv_qp_type t = qp->ibv.qp_base.qp_type;
	bool global = pkt->lrh.lnh == IBA_LNH_GLOBAL;

	if (t == IBV_QPT_UD)
		return pkt->deth.src_qp > 1 && !from_owner(rx, pkt->deth.src_qp) ? SIB_RX_DROP_FOREIGN : RX_OK;
	if (t != IBV_QPT_RC && t != IBV_QPT_UC && t != IBV_QPT_XRC_SEND && t != IBV_QPT_XRC_RECV)
		return RX_OK;
	if (rx->from != SIB_QPO_INBOX(sib_link_qpn_owner(qp->dest_qpn)) &&
	    (sib_link_qpn_owner(qp->dest_qpn) & SIB_QPO_VALID))
		return SIB_RX_DROP_FOREIGN;
	if (pkt->lrh.slid != qp->ah.dlid) {
		uint16_t src = lid_map(pkt->lrh.slid);

		if (!src || src != lid_map(qp->ah.dlid))
			return SIB_RX_DROP_SLID;
	}
	if (global != !!qp->ah.is_global)
		return SIB_RX_DROP_SGID;
	if (global && memcmp(pkt->grh.sgid, qp->ah.grh.dgid.raw, 16))
		return SIB_RX_DROP_SGID;
	return RX_OK;
}

/* One attached QP (rx->qp) and a multicast datagram: the checks a unicast
 * datagram gets from check_type_state and check_keys, for its port. */
static enum sib_rx_drop mcast_qp_check(struct rx *rx)
{
	const struct sib_qp *qp = rx->qp;
	uint8_t pn = qp->port_num;
	enum ibv_qp_state s = qp->state;

	if (pn < 1 || pn > SIB_MAX_PORTS)
		return SIB_RX_DROP_PORT;
	rx->lm = (uint16_t)(rx->ctx->dev->index << 8 | pn);
	if (!sib_port_passes(rx->ctx->dev->index, rx->ctx->dev->gen, pn)) {
		rx->ctx->port_down_drops++;
		return SIB_RX_DROP_LINK_DOWN;
	}
	rx->port = &sib_fabric->devs[rx->ctx->dev->index].ports[pn - 1];
	if (qp->ibv.qp_base.qp_type != IBV_QPT_UD)
		return SIB_RX_DROP_TYPE;
	if (s != IBV_QPS_RTR && s != IBV_QPS_RTS && s != IBV_QPS_SQD && s != IBV_QPS_SQE)
		return SIB_RX_DROP_STATE;
	return check_keys(rx);
}

/*
 * A datagram to a multicast LID (IBA 10.5.2.x): a UD SEND to DestQP
 * 0xFFFFFF, taken by every QP of this context attached to the group (the
 * MGID must be the DGID when there is a GRH), each after the checks of a
 * unicast datagram; not by the sending QP itself if it was created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (QPNs are unique fabric-wide).  Drops
 * of single QPs are counted here; SIB_RX_DROP_MCAST if no QP is attached.
 */
static enum sib_rx_drop mcast_recv(struct rx *rx, const uint8_t *buf)
{
	const struct iba_pkt *pkt = &rx->pkt;
	uint32_t qpns[SIB_MAX_MCAST_QP_ATTACH], n;

	if ((pkt->bth.opcode & IBA_TRANSPORT_MASK) != IBA_TRANSPORT_UD || pkt->bth.dqpn != 0xffffff)
		return SIB_RX_DROP_TYPE;
	n = sib_mcast_local_qps(rx->ctx, pkt->lrh.dlid,
				pkt->lrh.lnh == IBA_LNH_GLOBAL ? pkt->grh.dgid : NULL, qpns,
				SIB_MAX_MCAST_QP_ATTACH);
	for (uint32_t i = 0; i < n; i++) {
		enum sib_rx_drop why;

		rx->qp = sib_qp_get(rx->ctx, qpns[i], &rx->qp_h);
		if (!rx->qp)
			continue; /* destroyed meanwhile */
		if (!(rx->qp->ud && rx->qp->ud->block_self_mcast && pkt->deth.src_qp == qpns[i])) {
			why = from_owner(rx, pkt->deth.src_qp) ? mcast_qp_check(rx) : SIB_RX_DROP_FOREIGN;
			if (why == RX_OK)
				why = sib_ud_packet(rx->qp, pkt, buf);
			if (why != SIB_RX_DELIVERED)
				__atomic_store_n(&rx->ctx->rx_drop[why], rx->ctx->rx_drop[why] + 1,
						 __ATOMIC_RELAXED);
		}
		sib_objtab_put(&rx->ctx->qps, rx->qp_h);
		rx->qp = NULL;
	}
	return n ? SIB_RX_DELIVERED : SIB_RX_DROP_MCAST;
}

/* XRC requests name their SRQ in the XRCETH: it must be an XRC SRQ of
 * this context in the XRC_RECV QP's domain (XRC annex; srq.c), held for
 * this packet (sib_xrc_srq_release), or one of another live context of
 * this device, to which the responder forwards the packet (xrc_fwd.c). */
static enum sib_rx_drop check_xrc(struct rx *rx, const uint8_t *buf, uint32_t len, unsigned int flags)
{
	if (rx->qp->ibv.qp_base.qp_type != IBV_QPT_XRC_RECV || !(rx->pkt.op->flags & IBA_OP_REQ))
		return RX_OK;
	if (sib_xrc_srq_resolve(rx->qp, rx->pkt.xrc_srqn) ||
	    sib_xfwd_target(rx->qp, rx->pkt.xrc_srqn, buf, len, flags))
		return RX_OK;
	return SIB_RX_DROP_XRC_SRQN;
}

enum sib_rx_drop sib_recv(struct sib_context *ctx, const uint8_t *buf, uint32_t len,
			  unsigned int flags, uint32_t from)
{
	struct rx rx = { .ctx = ctx, .from = from };
	enum sib_rx_drop why;

	if (flags & SIB_RX_XRC_FWD) {
		/* Forwarded by a TGT QP's owner (xrc_fwd.c): its own checks. */
		why = hdr_check(&rx, buf, len, flags);
		if (why == RX_OK && !from_owner(&rx, rx.pkt.bth.dqpn))
			why = SIB_RX_DROP_XRC_FWD_FORGED; /* only the TGT QP's owner forwards */
		else if (why == RX_OK)
			why = rx.mcast ? SIB_RX_DROP_XRC_FWD_FORGED : sib_xfwd_recv(ctx, &rx.pkt, flags);
		if (why != SIB_RX_DELIVERED)
			__atomic_store_n(&ctx->rx_drop[why], ctx->rx_drop[why] + 1, __ATOMIC_RELAXED);
	} else if ((why = hdr_check(&rx, buf, len, flags)) == RX_OK && rx.mcast) {
		why = mcast_recv(&rx, buf);
		if (why != SIB_RX_DELIVERED)
			__atomic_store_n(&ctx->rx_drop[why], ctx->rx_drop[why] + 1, __ATOMIC_RELAXED);
	} else if (why != RX_OK ||
	    (why = check_type_state(&rx)) != RX_OK ||
	    (why = check_keys(&rx)) != RX_OK ||
	    (why = check_addr(&rx)) != RX_OK ||
	    (why = check_xrc(&rx, buf, len, flags)) != RX_OK) {
		__atomic_store_n(&ctx->rx_drop[why], ctx->rx_drop[why] + 1, __ATOMIC_RELAXED);
	} else if (rx.qp->ibv.qp_base.qp_type == IBV_QPT_UD) {
		why = sib_ud_packet(rx.qp, &rx.pkt, buf); /* ud.c */
		if (why != SIB_RX_DELIVERED)
			__atomic_store_n(&ctx->rx_drop[why], ctx->rx_drop[why] + 1, __ATOMIC_RELAXED);
	} else {
		why = SIB_RX_DELIVERED;
		if (rx.pkt.op->flags & IBA_OP_REQ) {
			sib_resp_packet(rx.qp, &rx.pkt);
			sib_xrc_srq_release(rx.qp);
		} else
			sib_comp_packet(rx.qp, &rx.pkt);
	}
	if (rx.qp)
		sib_objtab_put(&ctx->qps, rx.qp_h);
	return why;
}
