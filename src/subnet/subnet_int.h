/* SPDX-License-Identifier: MIT */
/*
 * Inside the subnet layer: how its files tell the host what changed
 * (the host table of subnet_api.h), under one name each.
 */
#ifndef SIB_SUBNET_SUBNET_INT_H
#define SIB_SUBNET_SUBNET_INT_H

#include "subnet/subnet_api.h"

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
