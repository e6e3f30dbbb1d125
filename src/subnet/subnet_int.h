/* SPDX-License-Identifier: MIT */
/*
 * Inside the subnet layer: the context's layout (struct sib_subnet, opaque
 * to the host), and how its files tell the host what changed (the host
 * table of subnet_api.h), under one name each.  Included by src/subnet/
 * files and tests only (tests/subnet_private.py).
 */
#ifndef SIB_SUBNET_SUBNET_INT_H
#define SIB_SUBNET_SUBNET_INT_H

#include "subnet/subnet_api.h"

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
	struct sib_mcgroups *mcg;       /* its SA's multicast groups (sa_mcast.c), NULL: none yet */
	/* how a node's agents send (traps): sib_mad_out once sib_mad_init()
	 * ran; NULL: traps are counted unsent */
	void (*mad_out)(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
			struct mai_mad *m);
	const struct sib_subnet_host *host;
	void *host_ctx;
	struct sib_cm *cm;              /* the CM agent's state (cm.c), made on first use */
	struct sib_cma *cma;            /* the rdma_cm (cma.h), NULL until sib_cma_new */
	/* where the router gives SA answers for SIB_MAD_CHAN_CMA: set by
	 * sib_cma_new (so that a binary without the rdma_cm links no cma.o) */
	void (*cma_sa_receive)(struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port,
			       const struct mai_mad *m);
};

/* ---- cm.c: the CM agent's side of the router and the context ---- */
struct mai_mad;
/* A CM MAD (class 0x07) that arrived at QP1 of CA port `port` of n. */
void sib_cm_recv(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
		 const struct mai_mad *m);
/* CA n leaves the fabric: its ids send nothing more (the user still
 * destroys them), its queued MADs are dropped. */
void sib_cm_node_gone(struct sib_subnet *sn, struct sib_fab_node *n);
/* The fabric goes (unload, delete): every id and queue is freed. */
void sib_cm_free(struct sib_subnet *sn);

/* CA port pn of n changed (SIB_CHG_* in what; the LID range before). */
static inline void sib_subnet_port_changed(struct sib_subnet *sn, struct sib_fab_node *n,
					   uint8_t pn, unsigned int what, uint16_t old_lid,
					   uint8_t old_lmc)
{
	sn->host->port_changed(sn->host_ctx, n, pn, what, old_lid, old_lmc);
}

/* Forwarding changed: the host's cached paths go stale. */
static inline void sib_subnet_route_changed(struct sib_subnet *sn)
{
	sn->host->route_changed(sn->host_ctx);
}

/* The router's counters. */
static inline struct sib_mad_counters *sib_subnet_mad_ctr(struct sib_subnet *sn)
{
	return &sn->mad;
}

/* A line for the host's log, printf-style (sm_builtin.c). */
void sib_subnet_log(struct sib_subnet *sn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
