/* SPDX-License-Identifier: MIT */
/*
 * The managed fabric as a layer (src/subnet, archive sib_subnet;
 * docs/subnet.md, docs/architecture.md): what its host (softibd) sees of
 * it.  The subnet owns the fabric model (fabric.h), every node's SMA and
 * PMA state (subnet.h), the MAD router (mad_router.h) and the built-in SM
 * (sma.h).  Its interface is narrow:
 *  - MADs in and out: sib_mad_send() puts a MAD on the fabric at a node's
 *    port; what arrives for the host's MAI channels leaves through the
 *    host table below (mad_filters, mad_push, mad_response);
 *  - route lookups: sib_subnet_route(), sib_subnet_mcast_route() (subnet.h);
 *  - link and port state changes: sib_sma_link_down/up(),
 *    sib_sma_set_capability(); the subnet tells the host what changed
 *    through port_changed and route_changed, never by calling it by name;
 *  - the built-in SM: sib_sm_sweep().
 * The subnet never includes a daemon header nor calls a daemon function.
 * Single-threaded: the host calls it from one thread; no locks.
 */
#ifndef SIB_SUBNET_SUBNET_API_H
#define SIB_SUBNET_SUBNET_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "softib/mai.h"
#include "subnet/fabric.h"
#include "subnet/mad_router.h"
#include "subnet/sma.h"
#include "subnet/subnet.h"

#define SIB_SM_LID        1       /* the built-in SM's port LID (default mode) */
#define SIB_SM_PRIORITY   15      /* its SMInfo.Priority: the highest, it never yields */

struct mai_filter_ent;

/*
 * What the subnet needs from its host, all called with host_ctx.  Every
 * entry must be set (a host with nothing to do passes a function that
 * does nothing).
 */
struct sib_subnet_host {
	/* CA port pn of n changed (SIB_CHG_* in what; old_lid/old_lmc its
	 * LID range before): publish it (softibd: the verbs map and events). */
	void (*port_changed)(void *host_ctx, struct sib_fab_node *n, uint8_t pn,
			     unsigned int what, uint16_t old_lid, uint8_t old_lmc);
	/* Forwarding changed (an LFT, MFT, LID or port state): cached paths
	 * must be resolved again. */
	void (*route_changed)(void *host_ctx);
	/* Add the data path's counters of CA port pn of n into *sum (the PMA
	 * reads them; numbers clients wrote, only ever added up). */
	void (*data_counters)(void *host_ctx, const struct sib_fab_node *n, uint8_t pn,
			      struct sib_pma_counters *sum);
	/* One line for the log (no newline). */
	void (*log)(void *host_ctx, const char *line);
	/* The filters that may take a request arriving at (n, port, qp): the
	 * host's channels opened there, then tail[0..ntail) (the internal
	 * agents', seq 0).  *ents stays valid until the next call (it may be
	 * tail itself).  Returns the count. */
	size_t (*mad_filters)(void *host_ctx, const struct sib_fab_node *n, uint8_t port,
			      uint8_t qp, const struct mai_filter_ent *tail, size_t ntail,
			      const struct mai_filter_ent **ents);
	/* Queue m to the host's channel chan (a request that matched its
	 * filter).  0, -ENOENT, -EAGAIN (its queue is full; counted). */
	int (*mad_push)(void *host_ctx, uint32_t chan, const mai_mad_t *m);
	/* A response for the host's channel chan arriving at (n, port, qp).
	 * 0, -ENOENT (no such channel there), -ESRCH (it asked nothing). */
	int (*mad_response)(void *host_ctx, uint32_t chan, const struct sib_fab_node *n,
			    uint8_t port, uint8_t qp, const mai_mad_t *m);
};

/* The built-in SM as a MAI agent (sm_builtin.c): where its SMPs leave and
 * the answer to the one in flight (the router is synchronous: the answer
 * is in before sib_mad_send returns). */
struct sib_sm_agent {
	struct sib_fab_node *node;      /* the SM's node and port (LID SIB_SM_LID) */
	uint8_t port;                   /* 0 on a switch */
	uint32_t sweeps;                /* discoveries run (sib_node_mgmt.sm_seen) */
	uint64_t tid;                   /* TID of the SMP in flight, 0 = none */
	bool answered;                  /* its GetResp arrived: reply holds it */
	uint8_t reply[256];             /* the GetResp, wire form (MAD_SIZE) */
};

/* The subnet's context: one per managed fabric. */
struct sib_subnet {
	struct sib_fabric fab;          /* the model; sib_subnet_init() hangs the SMA state off it */
	bool sm_external;               /* --sm external: ports wait in INIT for an SM */
	bool sm_sweeping;               /* the built-in SM is running (no re-entry) */
	uint32_t sm_act_count;          /* its SMInfo.ActCount: SMPs sent, traps repressed */
	uint64_t trap_tid;              /* TID of the last SMP the subnet made (traps, SM) */
	struct sib_sma_counters sma;
	struct sib_mad_counters mad;    /* the router's (and the host's channels') */
	struct sib_sm_agent sm;         /* the built-in SM's MAI side */
	/* how a node's agents send (traps): sib_mad_out once sib_mad_init()
	 * ran; NULL: traps are counted unsent */
	void (*mad_out)(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
			struct mai_mad *m);
	const struct sib_subnet_host *host;
	void *host_ctx;
};

/* Register the host's table (kept by reference) and its context. */
static inline void sib_subnet_set_host(struct sib_subnet *sn, const struct sib_subnet_host *h,
				       void *host_ctx)
{
	sn->host = h;
	sn->host_ctx = host_ctx;
}

#endif
