/* SPDX-License-Identifier: MIT */
/*
 * UD and multicast in the software HCA (ud.c, mcast.c; IBA 9.8.x, 10.2.5,
 * 10.5.2.x, 18.2.5.4): the part of a QP only UD QPs carry (qp->ud,
 * allocated at create_qp), and the engine's side of the UD requester and
 * responder and of multicast fan-out.  The attach and detach verbs are in
 * hca.h (the provider's ops table).  Engine context (progress_lock held)
 * unless a function says otherwise.
 */
#ifndef SIB_HCA_UD_H
#define SIB_HCA_UD_H

#include "hca/hca.h"

/* The UD part of a QP (qp->ud; NULL for every other type). */
struct sib_qp_ud {
	bool block_self_mcast;         /* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB */
	uint32_t mcast_attached;       /* groups this QP is attached to (mcast.c) */
	struct sib_mcast_rings *mcast_rings; /* member inboxes it sent to (mcast.c, engine) */
	uint64_t blocked_since;        /* ns: the head WQE's destination inbox full since */
	uint64_t mcast_sent[SIB_MAX_INBOXES / 64]; /* member inboxes the head WQE reached */
	uint64_t stalled[SIB_MAX_INBOXES / 64];    /* inboxes past HOQ lifetime, until they drain */
};

/* ud.c: UD requester and responder (IBA 9.8.x, 10.2.5 Q_Keys, 11.4.1.2 GRH) */
/* Fill the UD part of a send WQE from wr (wr.ud.ah, remote_qpn,
 * remote_qkey); EINVAL without an AH or for a message larger than the
 * port's active MTU (see ud.c). */
int sib_ud_swqe_fill(struct sib_qp *qp, struct sib_swqe *w, const struct ibv_send_wr *wr);
/* A filled UD WQE can go: EINVAL without an AH or over the MTU. */
int sib_ud_wqe_check(const struct sib_qp *qp, const struct sib_swqe *w);
/* Send every posted UD WQE; each completes once it is on the wire. */
void sib_ud_req_run(struct sib_qp *qp);
/* A UD request packet that passed the demux checks (buf: the whole
 * packet, for its GRH).  SIB_RX_DELIVERED or the drop cause. */
enum sib_rx_drop sib_ud_packet(struct sib_qp *qp, const struct iba_pkt *pkt, const uint8_t *buf);

/* mcast.c: multicast (IBA 10.5.2.x).  The QP's attachments end (destroy). */
void sib_mcast_qp_gone(struct sib_qp *qp);
/* QPNs of this context attached to (mlid, and dgid when the packet has a
 * GRH); at most max.  Any thread. */
uint32_t sib_mcast_local_qps(struct sib_context *ctx, uint16_t mlid, const uint8_t *dgid, uint32_t *qpns,
			     uint32_t max);
/* The member inboxes of the group with this MLID, read from the fabric
 * map (m holds SIB_MAX_MCAST_QP_ATTACH); 0 if none or unreadable. */
uint32_t sib_mcast_members(uint16_t mlid, struct sib_shm_mcast_member *m);
/* The same, less the members whose device the multicast forwarding
 * tables do not reach from qp's port (sib_link_mroute; a member context is
 * reached when a port of its device is).  Engine context.  UINT32_MAX:
 * the route is being asked for (retry later). */
uint32_t sib_mcast_members_routed(struct sib_qp *qp, uint16_t mlid, struct sib_shm_mcast_member *m);
/* A member context's destination from qp's cache (taken from the link
 * once): SIB_LINK_OK and *d, SIB_LINK_PENDING (retry later) or
 * SIB_LINK_UNREACHABLE.  release drops them all (engine context). */
enum sib_link_verdict sib_mcast_dest(struct sib_qp *qp, uint32_t inbox, uint32_t gen,
				     struct sib_link_dest **d);
void sib_mcast_rings_release(struct sib_qp *qp);

#endif
