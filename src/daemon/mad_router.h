/* SPDX-License-Identifier: MIT */
/*
 * The MAD layer of softibd (issue 7 part 3; docs/mai.md "MAD routing"):
 * mad_router.c moves MADs (mai_mad_t) over the fabric model, directed
 * route hop by hop (IBA 14.2.2, mad_dr_*) and LID routed through the LFTs
 * (sib_subnet_route), and delivers them at QP0/QP1 of a node; mai_chan.c
 * owns the MAI channels (clients' socketpairs), their filters, TID
 * routing and timeouts.  The filter engine (mai_match) decides between
 * channels and the internal SMA/PMA alike.  Single-threaded (the event
 * loop); nothing here blocks on a client.
 */
#ifndef SIB_DAEMON_MAD_ROUTER_H
#define SIB_DAEMON_MAD_ROUTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "softib/mai.h"

struct sibd;
struct sibd_client;
struct sibd_proc;
struct sib_ctl_msg;
struct sib_fab_node;

/* Channel numbers (TID bits 63..40).  0 is nobody; 1 and 2 are softibd's
 * own SMA and PMA (their filters and the TIDs of what they send); clients'
 * channels count from SIBD_MAI_CHAN_FIRST to MAI_TID_CHAN_MASK, then wrap. */
#define SIBD_MAI_CHAN_SMA	1u
#define SIBD_MAI_CHAN_PMA	2u
#define SIBD_MAI_CHAN_FIRST	16u

#define SIBD_MAI_FILTERS_MAX	64	/* filters per channel: ENOMEM beyond */
#define SIBD_MAI_PENDING_MAX	256	/* outstanding mai_send_req per channel */
#define SIBD_MAI_CHANS_PER_CONN	64	/* channels per control connection: ENOSPC beyond */
#define SIBD_MAI_CHANS_MAX	1024	/* channels in all (one softibd fd each): ENOSPC beyond */
#define SIBD_MAI_TIMEOUT_MAX	60000	/* ms: a larger mai_send_req timeout is clamped */
#define SIBD_MAI_TIMEOUT_MIN	10	/* ms: a smaller one is raised (docs/mai.md) */
#define SIBD_MAI_RETRIES_MAX	100
#define SIBD_MAI_ANSWERED	32	/* recently sent/answered TIDs kept per channel */
#define SIBD_MAI_ANSWER_MS	5000	/* how long one of those still takes responses */

/* Channels softibd lets exist at once (mai_chan.c): SIBD_MAI_CHANS_MAX,
 * lowered at start so that they fit its RLIMIT_NOFILE (softibd.c). */
extern unsigned int sibd_mai_chans_max;

/* Why the router did not deliver a MAD (one counter each, `softib status`
 * "mad_drop" line).  Drops of VL15 MADs also count on the PMA VL15Dropped
 * counter of the port where they happened. */
enum sibd_mad_drop {
	SIBD_DROP_BAD_BASE_VERSION,	/* BaseVersion != 1: the kernel drops these too */
	SIBD_DROP_BAD_QP_CLASS,		/* an SMP on QP1 or a GMP on QP0 */
	SIBD_DROP_QP_MISMATCH,		/* m->qp is not the channel's QP */
	SIBD_DROP_NOT_PRIV,		/* RAW from an unprivileged channel */
	SIBD_DROP_DR_HOP_CNT,		/* mad_dr verdicts (C14-6, C14-9, C14-13) */
	SIBD_DROP_DR_HOP_PTR,
	SIBD_DROP_DR_PORT,
	SIBD_DROP_DR_NOT_SWITCH,
	SIBD_DROP_DR_PERMISSIVE,
	SIBD_DROP_DR_LID_PART,		/* a LID-routed part that fails its LID route */
	SIBD_DROP_LINK_DOWN,		/* DR: no peer, or a link not physically LinkUp */
	SIBD_DROP_ROUTE,		/* LID routed: sib_subnet_route gave no OK */
	SIBD_DROP_NO_QP,		/* a GMP for a QP other than 1 (no redirection) */
	SIBD_DROP_NO_AGENT,		/* a response whose TID names no channel there */
	SIBD_DROP_UNMATCHED,		/* a request nobody takes, not Get/Set */
	SIBD_DROP_AGENT,		/* the SMA/PMA gave no reply */
	SIBD_DROP_QUEUE_FULL,		/* a channel's socket did not take it */
	SIBD_DROP_NO_REQUEST,		/* a response to no request its channel sent */
	SIBD_DROP_BAD_QKEY,		/* a GMP at QP1 whose DETH Q_Key is not the GSI's
					 * 0x80010000 (IBA 10.2.5, 13.5.3); also counted
					 * in PortInfo Q_KeyViolations */
	SIBD_DROP_MAX,
};

struct sibd_mad_counters {
	uint64_t sent;			/* MADs channels and agents put on the fabric */
	uint64_t resent;		/* mai_send_req retries */
	uint64_t delivered;		/* messages queued to channels */
	uint64_t sma, pma;		/* requests handled by the internal agents */
	uint64_t unsupported;		/* 0x000C answers to unmatched Get/Set */
	uint64_t oob;			/* OOB messages wrapped back */
	uint64_t timeouts;		/* TIMEOUT messages queued */
	uint64_t dup_tid;		/* requests refused: TID already outstanding */
	uint64_t bad_messages;		/* channel bytes that were no message */
	uint64_t forwarded;		/* DR hops through switches */
	uint64_t drop[SIBD_DROP_MAX];
};

/* ---- mad_router.c ---- */

/* The router's start: sets d->mad_out.  0. */
int sibd_mad_init(struct sibd *d);

/* A MAD leaving node n by port `port` (0: a switch's port 0) from QP m->qp:
 * DR SMPs walk the fabric, the rest is LID routed to m->lrh.dlid.  Every
 * outcome is a delivery or a counted drop.  m is the caller's; the router
 * works on copies. */
void sibd_mad_send(struct sibd *d, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m);

/* d->mad_out: A's traps leave through here (sibd_mad_send). */
void sibd_mad_out(struct sibd *d, struct sib_fab_node *n, uint8_t port, mai_mad_t *m);

/* The base LID of port `port` of n (PortInfo.LID; 0 = none). */
uint16_t sibd_mad_port_lid(const struct sib_fab_node *n, uint8_t port);

/* Short name of a drop cause ("dr_hop_cnt"). */
const char *sibd_mad_drop_str(enum sibd_mad_drop why);

/* ---- mai_chan.c ---- */

int sibd_mai_init(struct sibd *d);
void sibd_mai_fini(struct sibd *d);
/* The fd the event loop polls for every channel (an epoll fd), or -1. */
int sibd_mai_poll_fd(const struct sibd *d);
/* Its readiness: read the channels that have input, reap closed ones. */
void sibd_mai_event(struct sibd *d);
/* The event loop's wait: timeout (ms, -1 = none) shortened to the next
 * mai_send_req deadline. */
int sibd_mai_timeout(struct sibd *d, int timeout);
/* Resend or time out the requests whose deadline passed. */
void sibd_mai_timers(struct sibd *d);
/* Device dev_index is unregistered (its node is about to be freed): its
 * channels close (their clients read end-of-file). */
void sibd_mai_device_gone(struct sibd *d, uint32_t dev_index);
/* Connection c closes: its channels close. */
void sibd_mai_client_gone(struct sibd *d, struct sibd_client *c);
/* Live channels of the connections of process p (budget.c), all if p is NULL. */
uint32_t sibd_mai_chans_of(const struct sibd *d, const struct sibd_proc *p);
int sibd_cmd_mai_open(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
		      int *pass_fd);
int sibd_cmd_mai_filter(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			int *pass_fd);
/* "mad", "mad_drop", "mai" and "mai_chan" lines of the status report. */
void sibd_mai_status(struct sibd *d, FILE *f);

/* For the router: */
struct sibd_mad_counters *sibd_mad_ctr(struct sibd *d);
/* The filters that may take a request arriving at (n, port, qp): those of
 * the channels opened there, then the internal agents' (seq 0).  *ents
 * stays valid until the next call.  Returns the count. */
size_t sibd_mai_ents(struct sibd *d, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
		     const struct mai_filter_ent **ents);
/* Queue m to channel `chan` (a receive of a request that matched).  0 or
 * -ENOENT (no such live channel), -EAGAIN (its queue is full; counted). */
int sibd_mai_push(struct sibd *d, uint32_t chan, const mai_mad_t *m);
/* A response arriving at (n, port, qp) for channel `chan` (TID bits
 * 63..40): queued only if it answers a request the channel sent (ending a
 * pending mai_send_req, or a mai_send within SIBD_MAI_ANSWER_MS) or is a
 * later RMPP segment of such an answer (docs/mai.md "Responses"), as the
 * kernel's ib_find_send_mad.  0, -ENOENT (no such channel there) or
 * -ESRCH (no such request: counted no_request). */
int sibd_mai_response(struct sibd *d, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		      uint8_t qp, const mai_mad_t *m);

#endif
