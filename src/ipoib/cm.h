/* SPDX-License-Identifier: MIT */
/*
 * IPoIB connected mode (RFC 4755), as the kernel's ipoib_cm.c behaves, for an
 * endpoint (ep.h) asked for it (`softib ipoib ... --mode connected`): RC QPs
 * set up through the IB CM, which user space reaches through softib's own
 * librdmacm with AF_IB addresses in RDMA_PS_IB (docs/rdmacm.md "AF_IB
 * ServiceIDs outside rdma_cm's ranges").  The endpoint listens on ServiceID
 * 0x1000000000000000 | its UD QPN; each direction of a pair of neighbours has
 * its own connection: the TX side connects on the first unicast datagram to a
 * neighbour whose hardware address has IPOIB_FLAGS_RC, sending its UD QPN and
 * receive buffer size (struct ipoib_cm_data) in the REQ; the RX side is made
 * on the REQ and answers with its own.  Connections carry the same 4-byte
 * IPoIB header as UD; MTU 65520.  Receive buffers (65524 bytes) are in one SRQ
 * shared by every RX connection, send buffers in one pool shared by every TX
 * connection.  Multicast, broadcast and neighbours without the flag go over
 * UD; a TX connection that fails falls back to UD for IPOIB_CM_RETRY_MS, and
 * datagrams larger than the UD MTU are answered with ICMP "fragmentation
 * needed" / "packet too big" (the kernel's ipoib_cm_skb_too_long).
 */
#ifndef SOFTIB_IPOIB_CM_H
#define SOFTIB_IPOIB_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "ipoib/neigh.h"
#include "ipoib/wire.h"

#define IPOIB_CM_SRQ_RING	32	/* receive buffers, shared by RX connections */
#define IPOIB_CM_TX_RING	32	/* send buffers, shared by TX connections */
#define IPOIB_CM_MAX_TX		32	/* TX connections (neighbours beyond: UD) */
#define IPOIB_CM_MAX_RX		32	/* RX connections (REQs beyond: rejected) */
#define IPOIB_CM_QLEN		8	/* datagrams waiting per connecting TX */
#define IPOIB_CM_RETRY_MS	10000	/* a failed TX connection: UD until then */
#define IPOIB_CM_TX_IDLE_MS	60000	/* a TX connection unused so long goes */
#define IPOIB_CM_RX_IDLE_MS	(512 * 1000) /* the kernel's IPOIB_CM_RX_TIMEOUT (2 * 256 s) */
#define IPOIB_CM_CONNECT_MS	20000	/* not ESTABLISHED by then: destroyed */

struct ipoib_ep;
struct rdma_event_channel;
struct rdma_cm_id;

enum ipoib_cm_state {
	IPOIB_CM_FREE,
	IPOIB_CM_CONNECTING,	/* TX: resolving or REQ sent; RX: REP sent, no RTU yet */
	IPOIB_CM_UP,		/* ESTABLISHED */
	IPOIB_CM_FAILED,	/* TX only: UD until deadline */
};

/* One RC connection, one direction. */
struct ipoib_cm_conn {
	enum ipoib_cm_state state;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ipoib_hwaddr peer;	/* TX: the neighbour; RX: its UD QPN from the REQ */
	unsigned int mtu;		/* TX: the largest IP datagram the peer takes */
	uint64_t last_use;		/* ms */
	uint64_t deadline;		/* ms: CONNECTING: given up; FAILED: tried again */
	struct neigh_pkt q[IPOIB_CM_QLEN];	/* TX: waiting for ESTABLISHED */
	unsigned int qn;
};

struct ipoib_cm_stats {
	uint64_t tx_conns, rx_conns;	/* ESTABLISHED, each direction */
	uint64_t fallbacks;		/* TX connections that failed (UD instead) */
	uint64_t rejected;		/* REQs refused: bad private data, too many */
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
	uint64_t tx_errors, rx_errors;	/* completions in error (a peer's too-long
					 * packet: IBV_WC_LOC_LEN_ERR here) */
	uint64_t teardowns;		/* connections destroyed (idle, error, peer gone) */
	uint64_t timeouts;		/* of those: not ESTABLISHED in time */
	uint64_t too_big;		/* ICMP too-big given back to the IP stack */
	uint64_t qps_created, qps_destroyed;
};

struct ipoib_cm {
	bool enabled;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	uint8_t *buf;				/* SRQ buffers, then TX buffers */
	uint32_t tx_free[IPOIB_CM_TX_RING];
	unsigned int tx_nfree;
	uint8_t tx_owner[IPOIB_CM_TX_RING];	/* TX connection index + 1, 0: free */
	uint32_t tx_gen[IPOIB_CM_TX_RING];	/* bumped when a slot is taken back */
	struct ipoib_cm_conn tx[IPOIB_CM_MAX_TX], rx[IPOIB_CM_MAX_RX];
	uint64_t connect_ms;			/* IPOIB_CM_CONNECT_MS (tests shorten it) */
	struct ipoib_cm_stats st;
};

/* Turn connected mode on for an open endpoint: the event channel, the
 * listener on ipoib_cm_service_id(UD QPN) at the port's GID, the SRQ, CQ and
 * buffers; ep->hw gets IPOIB_FLAGS_RC and ep->if_mtu IPOIB_CM_MTU.
 * 0 or -errno (a message on stderr). */
int ipoib_cm_open(struct ipoib_ep *ep);
/* Disconnect and destroy every connection, the listener and the rest
 * (safe when never opened). */
void ipoib_cm_close(struct ipoib_ep *ep);
/* The rdma_cm event channel's fd and the CQ's completion channel's fd
 * (non-blocking), for the caller's poll. */
int ipoib_cm_event_fd(const struct ipoib_ep *ep);
int ipoib_cm_comp_fd(const struct ipoib_ep *ep);
/* Handle every rdma_cm event waiting (REQs, REPs, RTUs, errors). */
void ipoib_cm_events(struct ipoib_ep *ep, uint64_t now_ms);
/* Drain the CQ: receives delivered (ipoib_ep_rx_frame), sends reclaimed.
 * 0 or -EIO. */
int ipoib_cm_poll(struct ipoib_ep *ep, uint64_t now_ms);
/* True if a TX buffer is free (after reclaiming completed sends). */
bool ipoib_cm_can_send(struct ipoib_ep *ep);
/* Send an IP datagram with ethertype to the neighbour peer (which has
 * IPOIB_FLAGS_RC) over its TX connection, connecting first (the datagram
 * waits, at most IPOIB_CM_QLEN of them).  0 sent or queued; -ENOTCONN: no
 * connection can be had now (failed recently, too many): send it over UD;
 * -EMSGSIZE: larger than the peer takes (an ICMP too-big went back);
 * -ENOBUFS: no buffer (dropped, counted by the caller). */
int ipoib_cm_send(struct ipoib_ep *ep, const struct ipoib_hwaddr *peer, uint16_t ethertype,
		  const uint8_t *pkt, size_t len, uint64_t now_ms);
/* Timers: connections not ESTABLISHED in time, idle ones, failed TX
 * connections to try again.  Call at least every second. */
void ipoib_cm_tick(struct ipoib_ep *ep, uint64_t now_ms);
/* Destroy the TX connection to peer (its path changed: the next datagram
 * connects again), or end its fallback to UD. */
void ipoib_cm_forget(struct ipoib_ep *ep, const struct ipoib_hwaddr *peer);
/* Destroy every connection, both ways (our port's LID or P_Key changed: the
 * kernel's flush on a port event). */
void ipoib_cm_flush(struct ipoib_ep *ep);
/* RC QPs that exist now (created - destroyed). */
uint64_t ipoib_cm_live_qps(const struct ipoib_ep *ep);

#endif
