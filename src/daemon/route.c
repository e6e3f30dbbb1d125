// SPDX-License-Identifier: MIT
/*
 * The data path's routes (SIB_CTL_ROUTE, docs/subnet.md): where a packet
 * leaving a verbs device's port ends, as the switches' forwarding tables
 * say (IBA 18.2.4.3.2 linear FDB through sib_subnet_route; 18.2.4.3.3
 * multicast FDB walked here), and the map's route_gen that tells clients
 * when their cached answers are stale.  Reads softibd's private subnet
 * state only (never the map); writes the map's route_gen and the
 * switches' multicast walk stamps alone.  A
 * client's request is bounds-checked before use.  Single-threaded.
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

static const struct mad_port_info *pinfo(const struct sib_fab_node *n, uint8_t port)
{
	return n->mgmt && port <= n->num_ports ? &n->mgmt->port[port].pi : NULL;
}

/* A port that passes data (IBA 7.2: ACTIVE, the link up). */
static bool port_active(const struct sib_fab_node *n, uint8_t port)
{
	const struct mad_port_info *pi = pinfo(n, port);

	return pi && pi->port_state == MAD_PORT_STATE_ACTIVE &&
	       pi->port_phys_state == MAD_PORT_PHYS_STATE_LINKUP;
}

/* Across the link from (n, port) to its peer, both ends ACTIVE: the peer
 * port, or NULL. */
static const struct sib_fab_port *cross(const struct sib_fab_node *n, uint8_t port)
{
	const struct sib_fab_port *peer;

	if (port < 1 || port > n->num_ports || !port_active(n, port))
		return NULL;
	peer = n->ports[port].peer;
	return peer && port_active(peer->node, peer->num) ? peer : NULL;
}

/*
 * The egress ports of switch sw's MFT entry for mlid (IBA 18.2.4.3.3:
 * PortMask blocks of 16 ports per position), as a bitmap over ports
 * 0..255; an MFT never set forwards nothing.
 */
static void mft_ports(const struct sib_fab_node *sw, uint16_t mlid, uint64_t out[4])
{
	const struct sib_switch_mgmt *s = sw->mgmt ? sw->mgmt->sw : NULL;
	uint32_t npos = sib_subnet_mft_positions(sw), idx = mlid - SIB_MCAST_LID_MIN;

	memset(out, 0, 4 * sizeof(uint64_t));
	if (!s || !s->mft || idx >= s->si.multicast_fdb_cap)
		return;
	for (uint32_t pos = 0; pos < npos; pos++) {
		uint16_t m = s->mft[(size_t)idx * npos + pos];

		for (uint32_t b = 0; b < 16; b++)
			if (m & (1u << b))
				out[(pos * 16 + b) / 64] |= 1ull << ((pos * 16 + b) % 64);
	}
}

/* Mark switch n visited by walk; true if it was already (or it has no
 * switch state, so forwards nothing).  O(1): the stamp lives on the switch. */
static bool mark(uint64_t walk, const struct sib_fab_node *n)
{
	struct sib_switch_mgmt *s = n->mgmt ? n->mgmt->sw : NULL;

	if (!s || s->mcast_walk == walk)
		return true;
	s->mcast_walk = walk;
	return false;
}

static void mask_set(uint64_t *mask, int dev, uint8_t port)
{
	uint32_t bit = (uint32_t)dev * SIB_MAX_PORTS + port - 1u;

	if (dev >= 0 && port >= 1 && port <= SIB_MAX_PORTS)
		mask[bit / 64] |= 1ull << (bit % 64);
}

/*
 * The CA ports a multicast packet from CA port (src, port) to mlid reaches
 * through the MFTs: every switch forwards to the ports of its entry except
 * the one it came in on (18.2.4.3.3), each switch once (a loop in the
 * tables ends there).  The source port is included (local loopback of
 * the sender's own members).  0 or a verdict.
 */
static int route_mcast(const struct sibd *d, const struct sib_fab_node *src, uint8_t port,
		       uint16_t mlid, uint64_t *mask)
{
	const struct sib_fabric *f = &d->sn.fab;
	static uint64_t walks; /* the daemon's thread only */
	const struct sib_fab_port *first, **queue;
	unsigned int head = 0, tail = 0;
	uint64_t walk = ++walks;
	int rc = 0;

	memset(mask, 0, SIB_CTL_ROUTE_MASK_WORDS * sizeof(uint64_t));
	mask_set(mask, dev_of(d, src), port);
	if (!port_active(src, port))
		return SIB_ROUTE_SRC_DOWN;
	first = cross(src, port);
	if (!first)
		return 0; /* nobody else */
	if (first->node->type != SIB_NODE_SWITCH) {
		mask_set(mask, dev_of(d, first->node), first->num);
		return 0;
	}
	queue = malloc((f->n_nodes + 1) * sizeof(*queue)); /* each switch once */
	if (!queue)
		return SIB_ROUTE_LOOP; /* no memory: reaches nobody else */
	mark(walk, first->node);
	queue[tail++] = first;
	while (head < tail) {
		const struct sib_fab_port *in = queue[head++];
		const struct sib_fab_node *sw = in->node;
		uint64_t out[4];

		mft_ports(sw, mlid, out);
		for (uint32_t p = 1; p <= sw->num_ports; p++) {
			const struct sib_fab_port *peer;

			if (p == in->num || !(out[p / 64] & (1ull << (p % 64))) || !(peer = cross(sw, (uint8_t)p)))
				continue;
			if (peer->node->type != SIB_NODE_SWITCH) {
				mask_set(mask, dev_of(d, peer->node), peer->num);
				continue;
			}
			if (!mark(walk, peer->node) && tail < f->n_nodes)
				queue[tail++] = peer;
		}
	}
	free(queue);
	return rc;
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
		r->verdict = (uint8_t)route_mcast(d, src, port, dlid, r->mcast_mask);
		return 0;
	}
	struct sib_route rt = sib_subnet_route(&d->sn.fab, src, port, dlid, false);
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
