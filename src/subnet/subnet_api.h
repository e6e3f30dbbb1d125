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
 *  - the context's life: sib_subnet_load() (the fabric and its first
 *    sweep), sib_subnet_unload(), --sm external;
 *  - route lookups: sib_subnet_lookup(), sib_subnet_mcast_lookup();
 *  - what is published to the map: the nodes (sib_subnet_nodes/node) and
 *    their ports' SMA state (subnet.h), a CA added or removed at run time
 *    (sib_subnet_ca_add/remove);
 *  - link and port state changes: sib_sma_link_down/up(),
 *    sib_sma_set_capability(); the subnet tells the host what changed
 *    through port_changed and route_changed, never by calling it by name;
 *  - the built-in SM: sib_sm_sweep(), sib_sm_get/set_port_info();
 *  - counters: the host's MAD events counted (sib_subnet_mad_count) and
 *    every counter read for its status report.
 * The context's layout is the subnet's own (subnet_int.h): the host holds
 * a pointer (sib_subnet_new) and uses no field; tests/subnet_private.py
 * checks that no file outside src/subnet/ includes subnet_int.h or uses
 * a field.
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
	/* Optional (NULL: nothing traced): MAD m crosses CA port `port` of n,
	 * leaving it (out) or arriving at it, as a packet on that port's
	 * link would (capture: sib_mad_wire builds the packet). */
	void (*mad_trace)(void *host_ctx, const struct sib_fab_node *n, uint8_t port,
			  const mai_mad_t *m, bool out);
};

/* ---- the context (struct sib_subnet, its layout private: subnet_int.h) ----
 * The host holds a pointer and uses only the functions below and the
 * other headers' (sib_mad_send, sib_sma_*, sib_sm_*); the check
 * `subnet_private` (tests/subnet_private.py) holds every file outside
 * src/subnet/ to it. */

/* A new context without a fabric, the host's table h (kept by reference;
 * every entry set; NULL only for a test that never makes the subnet call
 * its host) and host_ctx registered; NULL without memory. */
struct sib_subnet *sib_subnet_new(const struct sib_subnet_host *h, void *host_ctx);

/* Free a context (after sib_subnet_unload); NULL is ignored. */
void sib_subnet_delete(struct sib_subnet *sn);

/* Load the fabric from the topology file at path (NULL: the built-in
 * default topology), give every node the state of a freshly powered
 * fabric (sib_subnet_init) and, unless the SM is external, run the
 * built-in SM's first sweep (a sweep that does not complete is logged
 * through the host, not an error).  0; -EINVAL: the topology is bad (err
 * says why, errlen bytes); -ENOMEM.  On error nothing stays allocated. */
int sib_subnet_load(struct sib_subnet *sn, const char *path, char *err, size_t errlen);

/* Free the fabric and every node's management state (after the last
 * use; the context stays, empty).  NULL is ignored. */
void sib_subnet_unload(struct sib_subnet *sn);

/* --sm external (ports wait in INIT for an SM) or the built-in SM; set
 * before sib_subnet_load(). */
void sib_subnet_set_sm_external(struct sib_subnet *sn, bool external);
bool sib_subnet_sm_external(const struct sib_subnet *sn);

/* The nodes, for what the host publishes: how many, and node i (0-based,
 * in fabric order: switches and CAs as loaded, CAs added at run time
 * last); NULL past the end. */
unsigned int sib_subnet_nodes(const struct sib_subnet *sn);
struct sib_fab_node *sib_subnet_node(const struct sib_subnet *sn, unsigned int i);

/* The switch whose topology id matches id (compared up to idlen bytes),
 * or NULL. */
struct sib_fab_node *sib_subnet_find_switch(const struct sib_subnet *sn, const char *id,
					    size_t idlen);

/* A CA added at run time (DEVICE_ADD) and removed (DEVICE_REMOVE):
 *  - sib_subnet_free_switch_port: a switch port without a link, or NULL;
 *  - sib_subnet_fresh_guid: the first of need + 1 consecutive GUIDs above
 *    every node, system image and port GUID of the fabric and above
 *    `above` (the host's highest GUID given, so none is reused); 0 if none;
 *  - sib_subnet_fresh_lid: the lowest unicast LID no port has (each port's
 *    range LID..LID+2^LMC-1); 0 if none;
 *  - sib_subnet_lid_free: is lid free of every port but self?
 *  - sib_subnet_ca_add: a single-port CA named name (its device name;
 *    node id "H-<GUID>", NodeGUID guid, port GUID guid + 1), powered
 *    (Polling/DOWN, LID 0) and cabled to sw, its link not trained yet (the
 *    host calls sib_sma_link_up); NULL without memory, nothing changed;
 *  - sib_subnet_ca_remove: its links go down (the far ends' trap 128),
 *    its management state and the node are freed, sw ports become free. */
struct sib_fab_port *sib_subnet_free_switch_port(const struct sib_subnet *sn);
uint64_t sib_subnet_fresh_guid(const struct sib_subnet *sn, unsigned int need, uint64_t above);
uint16_t sib_subnet_fresh_lid(const struct sib_subnet *sn);
bool sib_subnet_lid_free(const struct sib_subnet *sn, uint32_t lid,
			 const struct sib_fab_port *self);
struct sib_fab_node *sib_subnet_ca_add(struct sib_subnet *sn, const char *name,
				       struct sib_fab_port *sw, uint64_t guid);
void sib_subnet_ca_remove(struct sib_subnet *sn, struct sib_fab_node *n);

/* Route lookups for the data path (SIB_CTL_ROUTE): sib_subnet_route()
 * with vl15 false (data: every port on the way ACTIVE), and
 * sib_subnet_mcast_route() (subnet.h) over the context's fabric. */
struct sib_route sib_subnet_lookup(const struct sib_subnet *sn, const struct sib_fab_node *src,
				   uint8_t port, uint16_t dlid);
int sib_subnet_mcast_lookup(const struct sib_subnet *sn, const struct sib_fab_node *src,
			    uint8_t port, uint16_t mlid,
			    void (*reach)(void *ctx, const struct sib_fab_node *n, uint8_t port),
			    void *ctx);

/* The built-in SA's clock (sa_inform.c; needed because the subnet has no
 * clock of its own, as sib_cm_tick): the host calls it with
 * CLOCK_MONOTONIC ns after every event it handled and when the returned
 * deadline (0: none) is due.  ServiceRecord leases run out and Reports
 * without a ReportResp are sent again (every 200 ms, 3 times) here; a
 * lease or Report begun since the last call starts at this one; a trap
 * that reached the built-in SM since (128: a link changed) makes it sweep
 * here, as OpenSM sweeps on one (traps 64/65, members of ports gone). */
uint64_t sib_sa_tick(struct sib_subnet *sn, uint64_t now_ns);

/* The built-in SA's counters since start (sa_inform.c, sa_service.c keep
 * them; `softib status` "sa" line; docs/subnet.md "The SA"). */
struct sib_sa_counters {
	uint64_t reports_sent;		/* Report(Notice) MADs, first sends */
	uint64_t reports_resent;	/* retries of unanswered ones */
	uint64_t reports_lost;		/* given up after the last retry */
	uint64_t reports_acked;		/* ReportResp taken */
	uint64_t report_resp_dropped;	/* a ReportResp for no Report in flight */
	uint64_t leases_expired;	/* ServiceRecords whose lease ran out */
	uint64_t subs_dropped;		/* subscriptions of a port that left */
	uint64_t traps_forwarded;	/* SMA traps reported to subscribers */
	uint64_t traps_suppressed;	/* repeats within OpenSM's aging window */
	uint64_t traps_dropped;		/* IssuerLID of no port */
};

/* The built-in SA's records and Reports now: counts of live objects, and
 * the counters.  All 0 before the SA's first use. */
struct sib_sa_status {
	unsigned int services;          /* ServiceRecords registered */
	unsigned int subscriptions;     /* InformInfo subscriptions */
	unsigned int reports_pending;   /* Reports waiting for their ReportResp */
	struct sib_sa_counters ctr;
};
void sib_sa_status(struct sib_subnet *sn, struct sib_sa_status *st);

/* What the host's MAI channels do with MADs, counted with the router's
 * (struct sib_mad_counters; `softib status` "mad" and "mad_drop" lines). */
enum sib_mad_event {
	SIB_MAD_EV_DELIVERED,      /* a message queued to a channel (.delivered) */
	SIB_MAD_EV_RESENT,         /* a mai_send_req retry (.resent) */
	SIB_MAD_EV_TIMEOUT,        /* a TIMEOUT message queued (.timeouts) */
	SIB_MAD_EV_OOB,            /* an OOB message wrapped back (.oob) */
	SIB_MAD_EV_DUP_TID,        /* a request refused: TID outstanding (.dup_tid) */
	SIB_MAD_EV_BAD_MESSAGE,    /* channel bytes that were no message (.bad_messages) */
	SIB_MAD_EV_QUEUE_FULL,     /* dropped: a channel's socket did not take it */
	SIB_MAD_EV_NOT_PRIV,       /* dropped: RAW from an unprivileged channel */
	SIB_MAD_EV_QP_MISMATCH,    /* dropped: m->qp is not the channel's QP */
	SIB_MAD_EV_MAX,
};

/* Count n MADs (a count, not bytes) under ev.  Never fails (mad_router.c,
 * with the router, so that a test linking the router alone has it). */
void sib_subnet_mad_count(struct sib_subnet *sn, enum sib_mad_event ev, uint64_t n);

/* The counters for the status report: the router's and the channels'
 * MADs, and the SMAs' and PMAs' (valid as long as sn). */
const struct sib_mad_counters *sib_subnet_mad_counters(const struct sib_subnet *sn);
const struct sib_sma_counters *sib_subnet_sma_counters(const struct sib_subnet *sn);

#endif
