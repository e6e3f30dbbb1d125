/* SPDX-License-Identifier: MIT */
/*
 * The MAD router of the subnet layer (docs/mai.md "MAD routing"): it moves
 * MADs (mai_mad_t) over the fabric model, directed route hop by hop (IBA
 * 14.2.2, mad_dr_*) and LID routed through the LFTs (sib_subnet_route),
 * and delivers them at QP0/QP1 of a node: to the internal SMA, PMA and
 * built-in SM, or through the host's table (subnet_api.h) to the MAI
 * channels softibd owns.  The filter engine (mai_match) decides between
 * channels and the internal agents alike.  Single-threaded; nothing here
 * blocks on a client.
 */
#ifndef SIB_SUBNET_MAD_ROUTER_H
#define SIB_SUBNET_MAD_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "softib/mai.h"

struct sib_subnet;
struct sib_fab_node;

/* Channel numbers (TID bits 63..40).  0 is nobody; 1 and 2 are the
 * internal SMA and PMA, 3 the built-in SM (their filters and the TIDs of
 * what they send); the host's channels count from SIBD_MAI_CHAN_FIRST
 * (daemon/mai_chan.h), above SIB_MAD_CHAN_INTERNAL. */
#define SIB_MAD_CHAN_SMA	1u
#define SIB_MAD_CHAN_PMA	2u
#define SIB_MAD_CHAN_SM		3u
#define SIB_MAD_CHAN_CM		4u	/* the CM agent's MADs (cm.c) */
#define SIB_MAD_CHAN_CMA	5u	/* the rdma_cm's SA queries (cma.c; 4 is the CM's) */
#define SIB_MAD_CHAN_INTERNAL	15u	/* the last number the subnet keeps */

/* Why the router did not deliver a MAD (one counter each, `softib status`
 * "mad_drop" line).  Drops of VL15 MADs also count on the PMA VL15Dropped
 * counter of the port where they happened. */
enum sib_mad_drop {
	SIB_MAD_DROP_BAD_BASE_VERSION,	/* BaseVersion != 1: the kernel drops these too */
	SIB_MAD_DROP_BAD_QP_CLASS,		/* an SMP on QP1 or a GMP on QP0 */
	SIB_MAD_DROP_QP_MISMATCH,		/* m->qp is not the channel's QP */
	SIB_MAD_DROP_NOT_PRIV,		/* RAW from an unprivileged channel */
	SIB_MAD_DROP_DR_HOP_CNT,		/* mad_dr verdicts (C14-6, C14-9, C14-13) */
	SIB_MAD_DROP_DR_HOP_PTR,
	SIB_MAD_DROP_DR_PORT,
	SIB_MAD_DROP_DR_NOT_SWITCH,
	SIB_MAD_DROP_DR_PERMISSIVE,
	SIB_MAD_DROP_DR_LID_PART,		/* a LID-routed part that fails its LID route */
	SIB_MAD_DROP_LINK_DOWN,		/* DR: no peer, or a link not physically LinkUp */
	SIB_MAD_DROP_ROUTE,		/* LID routed: sib_subnet_route gave no OK */
	SIB_MAD_DROP_NO_QP,		/* a GMP for a QP other than 1 (no redirection) */
	SIB_MAD_DROP_NO_AGENT,		/* a response whose TID names no channel there */
	SIB_MAD_DROP_UNMATCHED,		/* a request nobody takes, not Get/Set */
	SIB_MAD_DROP_AGENT,		/* the SMA/PMA gave no reply */
	SIB_MAD_DROP_QUEUE_FULL,		/* a channel's socket did not take it */
	SIB_MAD_DROP_NO_REQUEST,		/* a response to no request its channel sent */
	SIB_MAD_DROP_BAD_QKEY,		/* a GMP at QP1 whose DETH Q_Key is not the GSI's
					 * 0x80010000 (IBA 10.2.5, 13.5.3); also counted
					 * in PortInfo Q_KeyViolations */
	SIB_MAD_DROP_MAX,
};

struct sib_mad_counters {
	uint64_t sent;			/* MADs channels and agents put on the fabric */
	uint64_t resent;		/* mai_send_req retries */
	uint64_t delivered;		/* messages queued to channels */
	uint64_t sma, pma;		/* requests handled by the internal agents */
	uint64_t sa;			/* requests handled by the built-in SM's SA */
	uint64_t unsupported;		/* 0x000C answers to unmatched Get/Set */
	uint64_t oob;			/* OOB messages wrapped back */
	uint64_t timeouts;		/* TIMEOUT messages queued */
	uint64_t dup_tid;		/* requests refused: TID already outstanding */
	uint64_t bad_messages;		/* channel bytes that were no message */
	uint64_t forwarded;		/* DR hops through switches */
	uint64_t drop[SIB_MAD_DROP_MAX];
};

/* ---- mad_router.c ---- */

/* The router's start: sets sn->mad_out.  0. */
int sib_mad_init(struct sib_subnet *sn);

/* The router's stop (the host's channels are gone): sn->mad_out NULL, so
 * traps are counted unsent from here on. */
void sib_mad_fini(struct sib_subnet *sn);

/* A MAD leaving node n by port `port` (0: a switch's port 0) from QP m->qp:
 * DR SMPs walk the fabric, the rest is LID routed to m->lrh.dlid.  Every
 * outcome is a delivery or a counted drop.  m is the caller's; the router
 * works on copies. */
void sib_mad_send(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m);

/* sn->mad_out: A's traps leave through here (sib_mad_send). */
void sib_mad_out(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, mai_mad_t *m);

/* The base LID of port `port` of n (PortInfo.LID; 0 = none). */
uint16_t sib_mad_port_lid(const struct sib_fab_node *n, uint8_t port);

/* mad_agents.c: the internal agents' filters for QP qp (0: the SMA's, 1:
 * the PMA's), *n of them, in the order mai_match tries them after the
 * host's channels' (seq 0); and how many there are in all. */
struct mai_filter_ent;
const struct mai_filter_ent *sib_mad_agents(uint8_t qp, size_t *n);
size_t sib_mad_agent_filters(void);

/*
 * The packet MAD m is on the link of the CA port it crosses (out: leaving
 * it from QP m->qp to QP m->remote_qpn; else arriving at QP m->qp from
 * m->remote_qpn): LRH (VL15 for QP0, else VL0; m's SL and LIDs), the GRH
 * if m has one, BTH (UD SEND_ONLY, P_Key 0xFFFF, PSN 0), DETH (m's Q_Key;
 * 0 for QP0), the 256-byte MAD, ICRC and VCRC computed (IBA 5.2, 7.8).
 * Written to buf (cap >= SIB_MAD_WIRE_MAX); returns its length, 0 if m
 * has no MAD to show (OOB, TIMEOUT) or cap is short.  For capture.
 */
#define SIB_MAD_WIRE_MAX 336 /* LRH 8 + GRH 40 + BTH 12 + DETH 8 + 256 + 4 + 2 */
size_t sib_mad_wire(const mai_mad_t *m, bool out, uint8_t *buf, size_t cap);

/* Short name of a drop cause ("dr_hop_cnt"). */
const char *sib_mad_drop_str(enum sib_mad_drop why);

#endif
