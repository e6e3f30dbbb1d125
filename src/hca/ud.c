/* SPDX-License-Identifier: MIT */
/*
 * UD transport (IBA 9.8.x datagrams, 10.2.5 Q_Keys, 11.4.1.2 the GRH area
 * of a UD receive buffer): the requester, which puts each posted WR on
 * the wire as one SEND_ONLY packet with a DETH and completes it at once
 * (no ACKs, no retries), and the responder, which places one datagram
 * into one receive WQE.  The receive demux (recv.c) has checked headers,
 * QP, state, P_Key and Q_Key before sib_ud_packet runs.  Must not wait or
 * trust a packet.  Engine context (progress_lock held), except
 * sib_ud_swqe_fill, which runs in the poster under sq_lock.
 */
#include <errno.h>
#include <string.h>

#include "hca/srq.h"
#include "hca/transport.h"
#include "hca/ud.h"
#include "hca/wr.h"

#define UD_GRH_AREA IBA_GRH_BYTES     /* the first 40 bytes of every UD receive buffer */
#define IBA_QPN_MCAST   0xffffffu     /* BTH.DestQP of a multicast datagram */

/* The port's active MTU in bytes: a UD message must fit one packet. */
static uint32_t ud_mtu(const struct sib_qp *qp)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[qp->ctx->dev->index];
	uint8_t pn = qp->port_num >= 1 && qp->port_num <= SIB_MAX_PORTS ? qp->port_num : 1;

	return iba_mtu_bytes(__atomic_load_n(&sd->ports[pn - 1].active_mtu, __ATOMIC_RELAXED));
}

/*
 * A UD send larger than the port's active MTU is refused at post with
 * EINVAL, so the caller learns it where the mistake is and the QP stays
 * usable (mlx5's post_send fails such a WR the same way when it checks the
 * length against the MTU; rxe instead drops it and reports success, IBA
 * C10-93.1.1, which hides the error).
 */
int sib_ud_swqe_fill(struct sib_qp *qp, struct sib_swqe *w, const struct ibv_send_wr *wr)
{
	const struct sib_ah *ah = (const struct sib_ah *)wr->wr.ud.ah;

	if (!ah)
		return EINVAL;
	w->ud_av = ah->attr;
	w->ud_qpn = wr->wr.ud.remote_qpn & 0xffffff;
	w->ud_qkey = wr->wr.ud.remote_qkey;
	return sib_ud_wqe_check(qp, w);
}

int sib_ud_wqe_check(const struct sib_qp *qp, const struct sib_swqe *w)
{
	/* An AH always has a port (create_ah): port 0 means none was set. */
	return !w->ud_av.port_num || w->length > ud_mtu(qp) ? EINVAL : 0;
}

/* ---- requester ---- */

/* The Q_Key a datagram carries: the WR's, or the QP's own when the WR's
 * has the high bit set (controlled Q_Key, IBA 10.2.5). */
static uint32_t ud_qkey(const struct sib_qp *qp, const struct sib_swqe *w)
{
	return (w->ud_qkey & SIB_QKEY_CONTROLLED) ? qp->qkey : w->ud_qkey;
}

/*
 * The WQE at req.wqe (the oldest: UD WQEs complete in order as they go)
 * fails locally: it completes with st and the QP enters SQE, the send
 * queue error state of UD (IBA 10.3.1, 10.8.3.3): nothing more is sent,
 * later WRs are flushed, receives go on, and a modify to RTS recovers.
 */
static void ud_local_error(struct sib_qp *qp, struct sib_swqe *w, enum ibv_wc_status st)
{
	w->status = st;
	w->started = true;
	qp->req.wqe++;
	qp->req.offset = 0;
	sib_sq_complete(qp, st);
	qp->state = IBV_QPS_SQE;
	/* not ibv.qp_base.state: the application sees it by ibv_query_qp (hca.h) */
}

/* SQE: every WR posted completes with WR_FLUSH_ERR (IBA 10.8.3.3). */
static void ud_flush_sq(struct sib_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);

	while (qp->sq_tail != head)
		sib_sq_complete(qp, IBV_WC_WR_FLUSH_ERR);
	qp->req.wqe = qp->sq_tail;
	qp->req.offset = 0;
}

/* Build the packet in tx (its slot reserved) and send it.  False if the
 * payload could not be read (an MR went away). */
static bool ud_fill_and_send(struct sib_qp *qp, struct sib_swqe *w, struct sib_tx *tx, uint32_t dqpn)
{
	uint8_t *payload;
	bool ok = true;

	tx->h.bth.opcode = (w->opcode == IBV_WR_SEND_WITH_IMM) ?
			   IBA_TRANSPORT_UD | IBA_OPC_SEND_ONLY_WITH_IMMEDIATE :
			   IBA_TRANSPORT_UD | IBA_OPC_SEND_ONLY;
	tx->h.bth.dqpn = dqpn;
	tx->h.bth.psn = qp->req.psn;
	tx->h.bth.se = !!(w->send_flags & IBV_SEND_SOLICITED);
	tx->h.deth.qkey = ud_qkey(qp, w);
	tx->h.deth.src_qp = qp->ibv.qp_base.qp_num;
	if (w->opcode == IBV_WR_SEND_WITH_IMM)
		tx->h.immdt_be = w->imm_be;
	payload = sib_tx_headers(tx);
	if (w->length && w->inline_data)
		memcpy(payload, w->inline_data, w->length);
	else if (w->length && sib_sge_copy_out(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge, 0,
					       payload, w->length) != IBV_WC_SUCCESS)
		ok = false;
	sib_tx_end(qp, tx, w->length);
	return ok;
}

/*
 * Head-of-queue lifetime (IBA 18.2.5.4, a switch port's HOQLife and stall
 * state): a UD datagram whose destination inbox stays full this long is
 * dropped and counted (ud_hoq_drops), and that inbox is marked stalled:
 * later datagrams to it are dropped at once until it has room again.  So
 * a receiver that stopped draining (or stopped altogether) cannot stall a
 * UD send queue, nor the other members of a group.  RC and UC keep their
 * backpressure.  ud_tx_full: the inbox was full; true: drop the datagram.
 * A ring its receiver has not taken yet is not full for the first
 * SIB_LINK_ATTACH_WAIT_NS (link/dest.h): first contact loses nothing.
 */
#define SIB_UD_HOQ_NS (10 * 1000 * 1000ull)

static bool ud_tx_full(struct sib_qp *qp, uint32_t inbox, struct sib_link_dest *to)
{
	struct sib_qp_ud *ud = qp->ud;
	uint64_t *stalled = &ud->stalled[inbox / 64 % (SIB_MAX_INBOXES / 64)], bit = 1ull << (inbox % 64);
	uint64_t now;

	if (to && sib_link_dest_waits(to, sib_clock_ns(qp->ctx)))
		return false; /* a new ring its receiver did not take yet */
	if (*stalled & bit) {
		qp->ctx->ud_hoq_drops++;
		return true;
	}
	now = sib_clock_ns(qp->ctx);
	if (!ud->blocked_since) {
		ud->blocked_since = now;
		return false;
	}
	if (now - ud->blocked_since < SIB_UD_HOQ_NS)
		return false;
	ud->blocked_since = 0;
	*stalled |= bit;
	qp->ctx->ud_hoq_drops++;
	return true;
}

/* A datagram went into inbox: it drains. */
static void ud_tx_ok(struct sib_qp *qp, uint32_t inbox)
{
	qp->ud->blocked_since = 0;
	qp->ud->stalled[inbox / 64 % (SIB_MAX_INBOXES / 64)] &= ~(1ull << (inbox % 64));
}

/*
 * A datagram to a multicast LID (IBA 10.5.2.x): one copy to each member
 * inbox of the group (softibd's list in the fabric map), BTH.DestQP
 * 0xFFFFFF; each receiving context hands it to its attached QPs.  A group
 * nobody joined loses it, and so do members the switches' MFTs do not
 * reach from the sending port (mcast.c).  The
 * inboxes reached are marked in ud->mcast_sent, so that a fan-out resumed
 * after a full inbox sends to each member once even if the member list
 * changed meanwhile.  0: sent to all; -1: a member's inbox is full
 * (req.offset is nonzero: resume on the next pass); 1: the payload could
 * not be read.
 */
static int ud_mcast_send(struct sib_qp *qp, struct sib_swqe *w)
{
	struct sib_shm_mcast_member m[SIB_MAX_MCAST_QP_ATTACH];
	uint32_t n = sib_mcast_members_routed(qp, w->ud_av.dlid, m);
	int rc = 0;

	bool pending = n == UINT32_MAX; /* the route is asked for */
	struct sib_link_dest *to;

	/* Every member's context known, and its ring taken, before the
	 * first copy leaves, so that a fan-out does not pause halfway for
	 * an engine thread (or a member that stopped: for a bounded time). */
	for (uint32_t i = 0; !pending && i < n; i++) {
		enum sib_link_verdict v = sib_mcast_dest(qp, m[i].inbox, m[i].gen, &to);

		pending = v == SIB_LINK_PENDING || (v == SIB_LINK_OK && !sib_link_dest_attached(to) &&
						     sib_link_dest_waits(to, sib_clock_ns(qp->ctx)));
	}
	if (pending)
		return -1; /* the next pass starts it */

	if (!qp->req.offset) /* a new fan-out (also after a QP reset) */
		memset(qp->ud->mcast_sent, 0, sizeof(qp->ud->mcast_sent));
	for (uint32_t i = 0; i < n; i++) {
		uint64_t bit = 1ull << (m[i].inbox % 64);
		uint64_t *sent = &qp->ud->mcast_sent[m[i].inbox / 64];
		enum sib_link_verdict v;
		struct sib_tx tx;

		if (*sent & bit)
			continue; /* reached before the fan-out paused */
		v = sib_mcast_dest(qp, m[i].inbox, m[i].gen, &to);
		if (v == SIB_LINK_PENDING) {
			qp->req.offset = 1; /* being mapped: resume on a later pass */
			return -1;
		}
		if (v != SIB_LINK_OK) {
			qp->ctx->tx_no_dest++; /* that member's context is gone */
			continue;
		}
		if (!sib_tx_begin_ring(qp, &tx, to, &w->ud_av, IBA_QPN_MCAST)) {
			if (!ud_tx_full(qp, m[i].inbox, to)) {
				qp->req.offset = 1;
				return -1;
			}
			*sent |= bit; /* that member loses it */
			continue;
		}
		ud_tx_ok(qp, m[i].inbox);
		*sent |= bit;
		if (tx.slot && !ud_fill_and_send(qp, w, &tx, IBA_QPN_MCAST)) {
			rc = 1;
			break;
		}
	}
	memset(qp->ud->mcast_sent, 0, sizeof(qp->ud->mcast_sent));
	qp->req.offset = 0;
	return rc;
}

/* One WQE to the wire.  False: stop (the wire is full, or a local error). */
static bool ud_send(struct sib_qp *qp, struct sib_swqe *w)
{
	struct sib_tx tx;
	bool ok = true;

	if (!w->inline_data && w->length &&
	    sib_sge_check(qp->ctx, qp->ibv.qp_base.pd->handle, w->sge, w->num_sge, 0) != IBV_WC_SUCCESS) {
		ud_local_error(qp, w, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	if (w->ud_av.dlid >= SIB_MCAST_LID_MIN && w->ud_av.dlid != IBA_LID_PERMISSIVE) {
		int rc = ud_mcast_send(qp, w);

		if (rc < 0)
			return false; /* the rest of the members on the next pass */
		ok = rc == 0;
	} else if (sib_tx_begin_to(qp, &tx, &w->ud_av, w->ud_qpn)) {
		ud_tx_ok(qp, sib_link_peer_inbox(&qp->dest));
		if (tx.slot)
			ok = ud_fill_and_send(qp, w, &tx, w->ud_qpn);
	} else if (tx.pending || !ud_tx_full(qp, sib_link_peer_inbox(&qp->dest), qp->dest.dest)) {
		return false; /* the wire is full: the next pass resumes here */
	}
	if (!ok) {
		/* Deregistered between check and copy: what left is garbage. */
		ud_local_error(qp, w, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	/* On the wire (or lost on it): the WR is done (IBA 10.7.3.1: a UD
	 * send completes once sent; nothing acknowledges it). */
	w->first_psn = qp->req.psn;
	w->npsn = 1;
	w->started = true;
	w->state = SIB_SWQE_SENT;
	qp->req.psn = iba_psn_add(qp->req.psn, 1);
	qp->req.wqe++;
	sib_sq_complete(qp, IBV_WC_SUCCESS);
	return true;
}

void sib_ud_req_run(struct sib_qp *qp)
{
	uint32_t head;

	if (qp->state == IBV_QPS_SQE) {
		ud_flush_sq(qp);
		return;
	}
	head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	/* SQD: only a multicast fan-out under way is finished (sq drained). */
	if (qp->state == IBV_QPS_SQD && qp->req.offset && qp->req.wqe != head)
		(void)ud_send(qp, &qp->sq[qp->req.wqe & (qp->sq_size - 1)]);
	if (qp->state != IBV_QPS_RTS)
		return;
	while (qp->req.wqe != head && ud_send(qp, &qp->sq[qp->req.wqe & (qp->sq_size - 1)]))
		;
}

/* ---- responder ---- */

/*
 * Place one datagram (IBA 11.4.1.2 and ibv_post_recv(3)): the first 40
 * bytes of the buffer are the GRH area, filled when the packet had a GRH
 * (IBV_WC_GRH), left as they were otherwise; the payload follows; byte_len
 * counts both.  No receive WQE: dropped and counted (UD has no RNR).  A
 * datagram longer than the WQE completes it with LOC_LEN_ERR, buffers
 * failing their L_Key check where the datagram writes (the GRH area only
 * with a GRH) with LOC_PROT_ERR; the QP stays as it is (a
 * stranger's datagram must not take a UD QP down).
 */
enum sib_rx_drop sib_ud_packet(struct sib_qp *qp, const struct iba_pkt *pkt, const uint8_t *buf)
{
	const struct sib_shm_port *port =
		&sib_fabric->devs[qp->ctx->dev->index].ports[(qp->port_num ? qp->port_num : 1) - 1];
	/* the QP's receive queue or its SRQ (transport.h) */
	struct sib_rwqe *r = sib_rwqe_take(qp) ? sib_rwqe_cur(qp) : NULL;
	struct sib_cq *cq = sib_rwqe_cq(qp);
	uint32_t pd = qp->ibv.qp_base.pd->handle;
	bool grh = pkt->lrh.lnh == IBA_LNH_GLOBAL;
	struct ibv_wc wc;

	if (!r)
		return SIB_RX_DROP_NO_RWQE;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qp->ibv.qp_base.qp_num;
	if ((uint64_t)pkt->paylen + UD_GRH_AREA > r->length)
		wc.status = IBV_WC_LOC_LEN_ERR;
	/* The bytes written only: the GRH area when the packet has a GRH
	 * (untouched otherwise), then the payload (rxe, hardware). */
	else if (sib_sge_check_range(qp->ctx, pd, r->sge, r->num_sge, grh ? 0 : UD_GRH_AREA,
				     (grh ? UD_GRH_AREA : 0) + pkt->paylen,
				     IBV_ACCESS_LOCAL_WRITE) != IBV_WC_SUCCESS ||
		 (grh && sib_sge_copy_in(qp->ctx, pd, r->sge, r->num_sge, 0, buf + IBA_LRH_BYTES,
					 UD_GRH_AREA) != IBV_WC_SUCCESS) ||
		 (pkt->paylen && sib_sge_copy_in(qp->ctx, pd, r->sge, r->num_sge, UD_GRH_AREA, pkt->payload,
						 pkt->paylen) != IBV_WC_SUCCESS))
		wc.status = IBV_WC_LOC_PROT_ERR;
	if (wc.status == IBV_WC_SUCCESS) {
		wc.byte_len = UD_GRH_AREA + pkt->paylen;
		wc.src_qp = pkt->deth.src_qp;
		wc.slid = pkt->lrh.slid;
		wc.sl = pkt->lrh.sl;
		wc.pkey_index = qp->pkey_index;
		if (pkt->lrh.dlid < SIB_UNICAST_LIDS)
			wc.dlid_path_bits = (uint8_t)(pkt->lrh.dlid & ((1u << (port->lmc & 7)) - 1));
		if (grh)
			wc.wc_flags |= IBV_WC_GRH;
		if (pkt->op->flags & IBA_OP_IMM) {
			wc.wc_flags |= IBV_WC_WITH_IMM;
			wc.imm_data = pkt->immdt_be;
		}
	}
	sib_rwqe_done(qp);
	sib_cq_push(cq, &wc, pkt->bth.se);
	return SIB_RX_DELIVERED;
}
