/* SPDX-License-Identifier: MIT */
/*
 * A subnet host (subnet/subnet_api.h struct sib_subnet_host) with nothing
 * but the router, for unit tests of the subnet layer without softibd: port
 * and route changes ignored, no data counters, no log, no MAI channels
 * (only the internal agents' filters take requests), no response taken.
 * A test that needs one entry of its own copies fake_subnet_host and sets
 * that entry; the functions are here to reuse.
 */
#ifndef SIB_TEST_FAKE_SUBNET_HOST_H
#define SIB_TEST_FAKE_SUBNET_HOST_H

#include "subnet/subnet_api.h"

void fake_host_port_changed(void *ctx, struct sib_fab_node *n, uint8_t pn, unsigned int what,
			    uint16_t old_lid, uint8_t old_lmc);
void fake_host_route_changed(void *ctx);
void fake_host_no_counters(void *ctx, const struct sib_fab_node *n, uint8_t pn,
			   struct sib_pma_counters *sum);
void fake_host_no_log(void *ctx, const char *line);
/* The internal agents' filters only (tail), no channel of the host. */
size_t fake_host_agents_only(void *ctx, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
			     const struct mai_filter_ent *tail, size_t ntail,
			     const struct mai_filter_ent **ents);
/* -ENOENT: no such channel. */
int fake_host_no_chan(void *ctx, uint32_t chan, const mai_mad_t *m);
int fake_host_no_resp(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		      uint8_t qp, const mai_mad_t *m);

/* Every entry above (mad_trace NULL). */
extern const struct sib_subnet_host fake_subnet_host;

#endif
