// SPDX-License-Identifier: MIT
/*
 * The data path's routes (SIB_CTL_ROUTE, docs/subnet.md): where a packet
 * leaving a verbs device's port ends, as the subnet layer's route lookups
 * say (IBA 18.2.4.3.2 linear FDB: sib_subnet_lookup; 18.2.4.3.3 multicast
 * FDB: sib_subnet_mcast_lookup), turned into verbs devices, and the map's
 * route_gen that tells clients when their cached answers are stale.  Never
 * reads the map; writes its route_gen alone.  A client's request is
 * bounds-checked before use.  Single-threaded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/softibd.h"
#include "subnet/subnet.h"

_Static_assert(SIB_CTL_ROUTE_MASK_WORDS * 64 >= SIB_MAX_DEVICES * SIB_MAX_PORTS,
	       "the route mask covers every CA port");

void sibd_route_changed(struct sibd *d)
{
	d->route_gen++;
	if (d->shm)
		atomic_store_explicit(&d->shm->route_gen, d->route_gen, memory_order_release);
}

/* The verbs device index of CA node n, or -1 (a switch, or no slot). */
static int dev_of(const struct sibd *d, const struct sib_fab_node *n)
{
	for (uint32_t i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++)
		if (d->dev_node[i] == n && (d->devs[i].gen & 1))
			return (int)i;
	return -1;
}

/* sib_subnet_mcast_route's reach: CA port (n, port) gets the packet. */
struct mcast_reach {
	const struct sibd *d;
	uint64_t *mask;
};

static void reach_port(void *ctx, const struct sib_fab_node *n, uint8_t port)
{
	const struct mcast_reach *mr = ctx;
	int dev = dev_of(mr->d, n);
	uint32_t bit = (uint32_t)dev * SIB_MAX_PORTS + port - 1u;

	if (dev >= 0 && port >= 1 && port <= SIB_MAX_PORTS)
		mr->mask[bit / 64] |= 1ull << (bit % 64);
}

int sibd_route_answer(struct sibd *d, struct sib_ctl_route *r)
{
	const struct sib_fab_node *src;
	uint32_t dev = r->dev_index;
	uint8_t port = r->port;
	uint16_t dlid = r->dlid;

	if (dev >= SIB_MAX_DEVICES || dev >= d->num_devices || !(d->devs[dev].gen & 1) ||
	    !(src = d->dev_node[dev]) || port < 1 || port > src->num_ports || port > SIB_MAX_PORTS)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->dev_index = dev;
	r->port = port;
	r->dlid = dlid;
	r->route_gen = d->route_gen;
	if (dlid >= SIB_MCAST_LID_MIN && dlid != 0xffff) {
		struct mcast_reach mr = { .d = d, .mask = r->mcast_mask };

		memset(r->mcast_mask, 0, sizeof(r->mcast_mask));
		r->verdict = (uint8_t)sib_subnet_mcast_lookup(d->sn, src, port, dlid, reach_port,
							      &mr);
		return 0;
	}
	struct sib_route rt = sib_subnet_lookup(d->sn, src, port, dlid);
	int to;

	if (rt.verdict != SIB_ROUTE_OK) {
		r->verdict = (uint8_t)rt.verdict;
		return 0;
	}
	r->hops = rt.hops > 255 ? 255 : (uint8_t)rt.hops;
	to = rt.node ? dev_of(d, rt.node) : -1;
	if (to < 0 || rt.port < 1 || rt.port > SIB_MAX_PORTS) {
		r->verdict = SIB_CTL_ROUTE_NOT_CA;
		return 0;
	}
	r->dst_dev = (uint32_t)to;
	r->dst_port = rt.port;
	return 0;
}

int sibd_cmd_route(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	(void)c;
	(void)pass_fd;
	return sibd_route_answer(d, &m->u.route);
}
