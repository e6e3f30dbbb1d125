/* SPDX-License-Identifier: MIT */
/*
 * One IPoIB endpoint per (device, port), datagram mode (RFC 4391), written on
 * the public verbs API as seed 001 describes the kernel's ipoib: a UD QP with
 * one CQ and a completion channel, a receive ring (GRH area + IB MTU per
 * slot) and a send ring in one MR, joined to the partition's broadcast group
 * through the SA (only MGID|PortGID|P_Key|JoinState in the mask: Q_Key and MTU
 * come from the SA) and attached to it; ARP (RFC 4391 §4.2) and IPv6
 * neighbour discovery with the IPoIB link-layer option (RFC 4391 §5)
 * answered and asked; IP datagrams sent to a neighbour's QPN through an AH
 * made from a PathRecord, broadcast and multicast to the broadcast group.
 * Connected mode (RFC 4755, cm.h) when ipoib_cm_open is called: unicast to
 * neighbours with the RC flag over RC connections, the rest as above.
 */
#ifndef SOFTIB_IPOIB_EP_H
#define SOFTIB_IPOIB_EP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "ipoib/cm.h"
#include "ipoib/neigh.h"
#include "ipoib/sa.h"
#include "ipoib/wire.h"

#define IPOIB_RX_RING	256
#define IPOIB_TX_RING	128
#define IPOIB_NEIGH_MAX	256
#define IPOIB_NEIGH_TTL_MS	(60 * 1000)
#define IPOIB_ARP_RETRY_MS	1000
#define IPOIB_ARP_PROBES	3
#define IPOIB_MAX_IP6	8
#define IPOIB_MC_MAX	32	/* IPv4 multicast groups joined */
#define IPOIB_MC_RETRY_MS	5000	/* a failed send-only join, tried again after */

/* One IPv4 multicast group (RFC 4391 §4: ff12:401b:PKEY::IPv4 low 28 bits)
 * the endpoint is in: a FullMember for a group the kernel joined on the
 * interface (/proc/net/igmp), a SendOnlyNonMember for one it sends to. */
struct ipoib_mc {
	uint32_t ip;			/* host order */
	uint8_t mgid[16];
	uint16_t mlid;
	uint8_t join_state;		/* 0: the join failed (until retry) */
	bool attached, seen;
	struct ibv_ah *ah;
	uint64_t retry;			/* ms: join again after, when join_state is 0 */
};

struct ipoib_stats {
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
	uint64_t rx_dropped;	/* malformed, not for us, unknown EtherType */
	uint64_t tx_dropped;	/* no neighbour, ring full, unsupported */
	uint64_t arp_rx, arp_tx, nd_rx, nd_tx, path_queries, path_errors, rx_errors;
	uint64_t mc_joins, mc_join_errors, port_events, rejoins;
};

struct ipoib_ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;			/* RX ring then TX ring */
	size_t rx_slot, tx_slot;	/* bytes per slot */
	uint32_t tx_free[IPOIB_TX_RING];
	unsigned int tx_nfree;
	char dev[64];
	uint8_t port;
	uint16_t lid, pkey;
	uint8_t gid[16];
	struct ipoib_hwaddr hw;		/* ours */
	/* the broadcast group, from the SA */
	uint8_t mgid[16];
	uint32_t qkey;
	uint16_t mlid;
	uint8_t mc_sl;
	unsigned int mtu;		/* IPoIB MTU of UD: group MTU - 4 */
	unsigned int if_mtu;		/* the interface's: mtu, or IPOIB_CM_MTU in connected mode */
	struct ipoib_mcm bcast_rec;	/* the broadcast group's record from the SA */
	struct ibv_ah *bcast_ah;
	struct ipoib_mc mc[IPOIB_MC_MAX];
	unsigned int nmc;
	bool joined, attached;
	bool rejoin;			/* a port event asked for a flush and rejoin */
	bool fatal;			/* IBV_EVENT_DEVICE_FATAL: the device is gone */
	uint64_t now;			/* ms: the last time a caller gave us */
	struct ipoib_sa sa;
	struct neigh_table neigh;
	uint32_t ip, prefix_mask;	/* host order; 0: no address */
	char ifname[16];		/* the interface whose IPv6 addresses we answer ND for */
	uint8_t ip6[IPOIB_MAX_IP6][16];
	unsigned int nip6;
	uint32_t ip4[IPOIB_MAX_IP6];	/* every IPv4 address of ifname (ARP answers) */
	unsigned int nip4;
	uint64_t ip6_read;		/* ms: when ip6 and ip4 were last read */
	/* where received IP datagrams go (the TUN) */
	void (*deliver)(void *arg, const uint8_t *pkt, size_t len);
	void *deliver_arg;
	struct ipoib_stats st;
	struct ipoib_cm cm;		/* connected mode (cm.h), when enabled */
};

/* Open dev/port (waiting up to wait_ms for the port to be ACTIVE), create the
 * verbs objects, join and attach to the broadcast group, post receives.
 * 0 or -errno; a message on stderr says what failed. */
int ipoib_ep_open(struct ipoib_ep *ep, const char *dev, int port, int wait_ms);
/* Leave the group, destroy everything (safe on a half-open endpoint). */
void ipoib_ep_close(struct ipoib_ep *ep);

/* The completion channel's fd (non-blocking): readable when the CQ has news. */
int ipoib_ep_fd(const struct ipoib_ep *ep);
/* Handle the completion channel's event and drain the CQ (receives go to
 * deliver, ARP is answered). 0 or -errno. */
int ipoib_ep_poll(struct ipoib_ep *ep, uint64_t now_ms);
/* True if a send slot is free (after reclaiming completed ones). */
bool ipoib_ep_can_send(struct ipoib_ep *ep);
/* Send one IP datagram (IPv4 or IPv6, from the version nibble): to the
 * neighbour (ARP or ND, and a PathRecord, first if needed; the packet waits) or the
 * broadcast group. 0, or -errno when dropped (counted). */
int ipoib_ep_send_ip(struct ipoib_ep *ep, const uint8_t *pkt, size_t len, uint64_t now_ms);
/* A frame received (UD after its GRH, or an RC connection): the 4-byte
 * header then ARP, IPv4 or IPv6; handled as the UD path does (ARP and ND
 * answered, IP delivered), malformed frames dropped and counted. */
void ipoib_ep_rx_frame(struct ipoib_ep *ep, const uint8_t *p, size_t len, uint16_t slid,
		       uint64_t now_ms);
/* The IP datagram pkt is larger than mtu on its way: an ICMP "fragmentation
 * needed" / ICMPv6 "packet too big" with mtu goes to deliver (the kernel's
 * ipoib_cm_skb_too_long), so that the IP stack lowers its path MTU. */
void ipoib_ep_too_big(struct ipoib_ep *ep, const uint8_t *pkt, size_t len, unsigned int mtu);
/* The device's async event fd (non-blocking). */
int ipoib_ep_async_fd(const struct ipoib_ep *ep);
/* Read the device's async events: a PORT_ACTIVE, LID_CHANGE, SM_CHANGE,
 * CLIENT_REREGISTER or PKEY_CHANGE of our port asks for a flush and rejoin
 * (the kernel's ipoib_event -> ipoib_flush_dev: paths forgotten, the
 * broadcast and IPv4 groups joined again), done by the next tick once the
 * port is ACTIVE.  DEVICE_FATAL (softibd gone) sets ep->fatal: the bridge
 * stops, as the kernel's ipoib interface goes with its device. */
void ipoib_ep_async(struct ipoib_ep *ep);
/* Timers: ARP/ND retries, neighbour expiry, re-reading the interface's IPv6
 * addresses (each second).  Call at least every second. */
void ipoib_ep_tick(struct ipoib_ep *ep, uint64_t now_ms);


/* ---- IPv4 multicast groups (mcast.c) ---- */
/* Follow the kernel's IPv4 groups of ep->ifname (/proc/net/igmp of our network
 * namespace): join (FullMember) and attach new ones, detach and leave gone
 * ones.  Call each second. */
void ipoib_mc_sync(struct ipoib_ep *ep, uint64_t now_ms);
/* The AH to send to IPv4 group ip with (to QPN 0xFFFFFF), joining as a
 * SendOnlyNonMember first if we are not in it; NULL: send to the broadcast
 * group instead (the join failed, or too many groups). */
struct ibv_ah *ipoib_mc_sender(struct ipoib_ep *ep, uint32_t ip, uint64_t now_ms);
/* Detach from and leave every group (at close). */
void ipoib_mc_leave_all(struct ipoib_ep *ep);

#endif
