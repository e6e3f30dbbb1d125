// SPDX-License-Identifier: MIT
/*
 * softibd as the host of the managed fabric (subnet/subnet_api.h): the
 * table through which the subnet layer tells the daemon what changed (a CA
 * port: the verbs map and events; forwarding: route_gen), reads the data
 * path's counters, logs, and hands MADs to the MAI channels.  The subnet
 * calls up only through this table; it names no daemon function.  The
 * subnet's context is opaque here as in every daemon file (subnet_api.h:
 * sib_subnet_new registers the table).
 */
#include <errno.h>

#include "daemon/linkcfg.h"
#include "daemon/mai_chan.h"
#include "daemon/softibd.h"

static void host_port_changed(void *ctx, struct sib_fab_node *n, uint8_t pn, unsigned int what,
			      uint16_t old_lid, uint8_t old_lmc)
{
	sibd_sma_publish(ctx, n, pn, what, old_lid, old_lmc);
}

static void host_route_changed(void *ctx)
{
	sibd_route_changed(ctx);
}

static void host_data_counters(void *ctx, const struct sib_fab_node *n, uint8_t pn,
			       struct sib_pma_counters *sum)
{
	int idx = sibd_sma_dev_index(ctx, n);

	if (idx >= 0)
		sibd_data_counters(ctx, (uint32_t)idx, pn, sum);
}

static void host_log(void *ctx, const char *line)
{
	(void)ctx;
	sibd_log("%s", line);
}

static size_t host_mad_filters(void *ctx, const struct sib_fab_node *n, uint8_t port, uint8_t qp,
			       const struct mai_filter_ent *tail, size_t ntail,
			       const struct mai_filter_ent **ents)
{
	return sibd_mai_ents(ctx, n, port, qp, tail, ntail, ents);
}

static int host_mad_push(void *ctx, uint32_t chan, const mai_mad_t *m)
{
	return sibd_mai_push(ctx, chan, m);
}

static int host_mad_response(void *ctx, uint32_t chan, const struct sib_fab_node *n, uint8_t port,
			     uint8_t qp, const mai_mad_t *m)
{
	return sibd_mai_response(ctx, chan, n, port, qp, m);
}

static void host_mad_trace(void *ctx, const struct sib_fab_node *n, uint8_t port, const mai_mad_t *m,
			   bool out)
{
	int idx = sibd_sma_dev_index(ctx, n);

	if (idx >= 0)
		sibd_link_mad_trace(ctx, (uint32_t)idx, port, m, out);
}

static const struct sib_subnet_host sibd_subnet_host = {
	.port_changed = host_port_changed,
	.route_changed = host_route_changed,
	.data_counters = host_data_counters,
	.log = host_log,
	.mad_filters = host_mad_filters,
	.mad_push = host_mad_push,
	.mad_response = host_mad_response,
	.mad_trace = host_mad_trace,
};

int sibd_subnet_attach(struct sibd *d)
{
	d->sn = sib_subnet_new(&sibd_subnet_host, d);
	if (!d->sn)
		return -ENOMEM;
	sib_subnet_set_sm_external(d->sn, d->sm_external);
	return 0;
}
