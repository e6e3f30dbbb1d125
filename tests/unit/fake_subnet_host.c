/* SPDX-License-Identifier: MIT */
/* The subnet host of unit tests without softibd (fake_subnet_host.h). */
#include <errno.h>

#include "fake_subnet_host.h"

void fake_host_port_changed(void *ctx, struct sib_fab_node *n, uint8_t pn, unsigned int what,
			    uint16_t old_lid, uint8_t old_lmc)
{
	(void)ctx, (void)n, (void)pn, (void)what, (void)old_lid, (void)old_lmc;
}

void fake_host_route_changed(void *ctx)
{
	(void)ctx;
}

void fake_host_no_counters(void *ctx, const struct sib_fab_node *n, uint8_t pn,
			   struct sib_pma_counters *sum)
{
	(void)ctx, (void)n, (void)pn, (void)sum;
}

void fake_host_no_log(void *ctx, const char *line)
{
	(void)ctx, (void)line;
}

size_t fake_host_agents_only(void *ctx, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
			     const struct mai_filter_ent *tail, size_t ntail,
			     const struct mai_filter_ent **ents)
{
	(void)ctx, (void)n, (void)port, (void)qp;
	*ents = tail;
	return ntail;
}

int fake_host_no_chan(void *ctx, uint32_t chan, const mai_mad_t *m)
{
	(void)ctx, (void)chan, (void)m;
	return -ENOENT;
}

int fake_host_no_resp(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
		      uint8_t qp, const mai_mad_t *m)
{
	(void)ctx, (void)chan, (void)n, (void)port, (void)qp, (void)m;
	return -ENOENT;
}

const struct sib_subnet_host fake_subnet_host = {
	.port_changed = fake_host_port_changed, .route_changed = fake_host_route_changed,
	.data_counters = fake_host_no_counters, .log = fake_host_no_log,
	.mad_filters = fake_host_agents_only, .mad_push = fake_host_no_chan,
	.mad_response = fake_host_no_resp,
};
