/* SPDX-License-Identifier: MIT */
/*
 * MAI channels inside softibd (mai_chan.c; docs/mai.md "Channels"): the
 * clients' socketpairs, their filters, TID stamping and timeouts, OOB and
 * privilege.  The MAD router of the subnet layer (subnet/mad_router.h)
 * delivers to them through the host table softibd registers
 * (subnet_host.c).  Single-threaded (the event loop).
 */
#ifndef SIB_DAEMON_MAI_CHAN_H
#define SIB_DAEMON_MAI_CHAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "subnet/subnet_api.h"

struct sibd;
struct sibd_client;
struct sibd_proc;
struct sib_ctl_msg;

#define SIBD_MAI_CHAN_FIRST	16u	/* clients' channels: from here to MAI_TID_CHAN_MASK, then wrap */
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

/* For the router, through the host table (subnet_host.c): */
/* The filters that may take a request arriving at (n, port, qp): those of
 * the channels opened there, then tail[0..ntail) (the subnet's agents',
 * seq 0).  *ents stays valid until the next call.  Returns the count. */
size_t sibd_mai_ents(struct sibd *d, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
		     const struct mai_filter_ent *tail, size_t ntail,
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
