/* SPDX-License-Identifier: MIT */
/*
 * The context's route cache (IBA 18.2.4.3: switches forward LID-routed
 * packets by their linear and multicast forwarding tables).  softibd
 * resolves a path through the tables it holds (SIB_CTL_ROUTE through the
 * host's route hook); the answer is kept per (port, DLID) while the fabric
 * map's route_gen keeps the value it was computed at, so the data path asks
 * once per path and per table change, and pays one atomic load per packet.
 * Engine context only (progress_lock); the only allocation is a port's
 * table at its first ask.  Answers come from softibd, but are still
 * bounds-checked before use.
 */
#include <stdlib.h>
#include <string.h>

#include "hca/transport.h"

_Static_assert(SIB_CTL_ROUTE_MASK_WORDS * 64 >= SIB_MAX_DEVICES * SIB_MAX_PORTS,
	       "the route mask covers every CA port");

_Static_assert(SIB_MAX_DEVICES <= 256, "sib_route_ent.dst_dev is a byte");

/* The table of port (1-based) in tab, allocated at first use (calloc:
 * zero pages until touched); NULL when the port is out of range or memory
 * is short (then each ask goes to softibd). */
#define ROUTE_TABLE(tab, port, n) \
	((port) - 1u >= SIB_MAX_PORTS ? NULL : \
	 (tab)[(port) - 1] ? (tab)[(port) - 1] : ((tab)[(port) - 1] = calloc((n), sizeof(*(tab)[0]))))

void sib_route_ctx_fini(struct sib_context *ctx)
{
	for (uint32_t p = 0; p < SIB_MAX_PORTS; p++) {
		free(ctx->route[p]);
		free(ctx->mroute[p]);
		ctx->route[p] = NULL;
		ctx->mroute[p] = NULL;
	}
}

/* No route hook (a test host, no switches): the LID leads where lid_map says. */
static void route_direct(uint16_t dlid, struct sib_route_ent *e)
{
	uint16_t lm = dlid && dlid < SIB_UNICAST_LIDS ?
		      atomic_load_explicit(&sib_fabric->lid_map[dlid], memory_order_acquire) : 0;

	e->verdict = lm ? 0 : SIB_CTL_ROUTE_NOT_CA;
	e->dst_dev = lm >> 8;
	e->dst_port = lm & 0xff;
}

const struct sib_route_ent *sib_route_get(struct sib_context *ctx, uint8_t port, uint16_t dlid,
					  uint32_t gen)
{
	struct sib_route_ent *e = dlid < SIB_UNICAST_LIDS ?
		ROUTE_TABLE(ctx->route, port, SIB_UNICAST_LIDS) : NULL;
	struct sib_ctl_route r;

	e = e ? &e[dlid] : &ctx->route_tmp;
	if (e->valid && e->gen == gen)
		return e;
	e->valid = e != &ctx->route_tmp;
	e->gen = gen;
	if (!sib_host->route) {
		route_direct(dlid, e);
		return e;
	}
	memset(&r, 0, sizeof(r));
	r.dev_index = ctx->dev->index;
	r.port = port;
	r.dlid = dlid;
	ctx->route_asks++;
	if (sib_host->route(&r)) {
		/* softibd is gone: lost on the wire, and not asked again
		 * until the tables change. */
		e->verdict = SIB_CTL_ROUTE_NOT_CA;
		return e;
	}
	/* Kept under the gen we loaded before asking: the answer is at least
	 * that new (softibd's gen only grows), and if the tables changed in
	 * between, the next load misses and asks once more. */
	e->verdict = r.verdict;
	e->dst_dev = (uint8_t)r.dst_dev;
	e->dst_port = r.dst_port;
	if (!r.verdict && (r.dst_dev >= SIB_MAX_DEVICES || r.dst_port - 1u >= SIB_MAX_PORTS))
		e->verdict = SIB_CTL_ROUTE_NOT_CA;
	return e;
}

const uint64_t *sib_mroute_get(struct sib_context *ctx, uint8_t port, uint16_t mlid)
{
	uint32_t gen = atomic_load_explicit(&sib_fabric->route_gen, memory_order_acquire);
	struct sib_mroute_ent *e = mlid >= SIB_UNICAST_LIDS ?
		ROUTE_TABLE(ctx->mroute, port, SIB_MROUTE_LIDS) : NULL;
	struct sib_ctl_route r;

	e = e ? &e[mlid - SIB_UNICAST_LIDS] : &ctx->mroute_tmp;
	if (e->valid && e->gen == gen)
		return e->mask;
	e->valid = e != &ctx->mroute_tmp;
	e->gen = gen;
	if (!sib_host->route) {
		memset(e->mask, 0xff, sizeof(e->mask));
		return e->mask;
	}
	memset(&r, 0, sizeof(r));
	r.dev_index = ctx->dev->index;
	r.port = port;
	r.dlid = mlid;
	ctx->route_asks++;
	if (sib_host->route(&r) || r.verdict) {
		memset(e->mask, 0, sizeof(e->mask)); /* reaches nobody */
		return e->mask;
	}
	memcpy(e->mask, r.mcast_mask, sizeof(e->mask));
	return e->mask;
}

bool sib_mroute_reaches_dev(const uint64_t *mask, uint32_t dev)
{
	if (dev >= SIB_MAX_DEVICES)
		return false;
	for (uint32_t p = 0; p < SIB_MAX_PORTS; p++) {
		uint32_t bit = dev * SIB_MAX_PORTS + p;

		if (mask[bit / 64] & (1ull << (bit % 64)))
			return true;
	}
	return false;
}
