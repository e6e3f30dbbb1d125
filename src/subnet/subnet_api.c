// SPDX-License-Identifier: MIT
/*
 * The host's side of the subnet layer's interface (subnet_api.h): the
 * context's life (loading the fabric and its first sweep, freeing it), the
 * nodes as the host walks them for the map, a CA node added and removed at
 * run time (DEVICE_ADD/REMOVE), route lookups, and the counters the host
 * reads for its status report (the MAD events it counts are the router's:
 * mad_router.c; the context made and freed: subnet.c).  The host holds an
 * opaque pointer (the layout is subnet_int.h's): everything it does to
 * the context goes through here or another function of the interface.
 * Single-threaded; no locks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subnet/subnet_int.h"

/* ---- the context's life ----------------------------------------------- */

int sib_subnet_load(struct sib_subnet *sn, const char *path, char *err, size_t errlen)
{
	int ret;

	memset(&sn->fab, 0, sizeof(sn->fab));
	if (path)
		ret = sib_fabric_load_file(&sn->fab, path, err, errlen);
	else
		ret = sib_fabric_parse(&sn->fab, sib_fabric_default_topology(), "default", err,
				       errlen);
	if (ret) {
		sib_fabric_free(&sn->fab);
		return -EINVAL;
	}
	/* a freshly powered fabric; in the default mode the built-in SM
	 * brings it up through the SMAs, as OpenSM would with --sm external */
	if (sib_subnet_init(&sn->fab)) {
		sib_fabric_free(&sn->fab);
		return -ENOMEM;
	}
	if (!sn->sm_external && sib_sm_sweep(sn))
		sib_subnet_log(sn, "built-in SM: the first sweep did not complete");
	return 0;
}

void sib_subnet_unload(struct sib_subnet *sn)
{
	if (!sn)
		return;
	sib_sa_mcast_free(sn);
	sib_cm_free(sn);
	sib_subnet_free(&sn->fab);
	sib_fabric_free(&sn->fab);
}

/* ---- nodes -------------------------------------------------------------- */

unsigned int sib_subnet_nodes(const struct sib_subnet *sn)
{
	return sn->fab.n_nodes;
}

struct sib_fab_node *sib_subnet_node(const struct sib_subnet *sn, unsigned int i)
{
	return i < sn->fab.n_nodes ? sn->fab.nodes[i] : NULL;
}

struct sib_fab_node *sib_subnet_find_switch(const struct sib_subnet *sn, const char *id,
					    size_t idlen)
{
	for (unsigned int i = 0; i < sn->fab.n_nodes; i++)
		if (sn->fab.nodes[i]->type == SIB_NODE_SWITCH &&
		    !strncmp(sn->fab.nodes[i]->id, id, idlen))
			return sn->fab.nodes[i];
	return NULL;
}

/* ---- a CA added and removed at run time -------------------------------- */

struct sib_fab_port *sib_subnet_free_switch_port(const struct sib_subnet *sn)
{
	unsigned int i, p;

	for (i = 0; i < sn->fab.n_nodes; i++) {
		struct sib_fab_node *n = sn->fab.nodes[i];

		if (n->type != SIB_NODE_SWITCH)
			continue;
		for (p = 1; p <= n->num_ports; p++)
			if (!n->ports[p].peer)
				return &n->ports[p];
	}
	return NULL;
}

uint64_t sib_subnet_fresh_guid(const struct sib_subnet *sn, unsigned int need, uint64_t above)
{
	uint64_t max = above > SIB_FAB_GUID_PREFIX ? above : SIB_FAB_GUID_PREFIX;
	unsigned int i, p;

	for (i = 0; i < sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = sn->fab.nodes[i];

		max = n->node_guid > max ? n->node_guid : max;
		max = n->sys_image_guid > max ? n->sys_image_guid : max;
		for (p = 0; p <= n->num_ports; p++)
			max = n->ports[p].guid > max ? n->ports[p].guid : max;
	}
	return max <= UINT64_MAX - 1 - need ? max + 1 : 0;
}

uint16_t sib_subnet_fresh_lid(const struct sib_subnet *sn)
{
	uint8_t *used = calloc(SIB_SUBN_LFT_CAP, 1);
	unsigned int i, p, l;
	uint16_t lid = 0;

	if (!used)
		return 0;
	for (i = 0; i < sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = sn->fab.nodes[i];

		for (p = 0; p <= n->num_ports; p++)
			for (l = 0; n->ports[p].lid && l < (1u << n->ports[p].lmc); l++)
				if (n->ports[p].lid + l < SIB_SUBN_LFT_CAP)
					used[n->ports[p].lid + l] = 1;
	}
	for (l = 1; l < SIB_SUBN_LFT_CAP && !lid; l++)
		if (!used[l])
			lid = (uint16_t)l;
	free(used);
	return lid;
}

bool sib_subnet_lid_free(const struct sib_subnet *sn, uint32_t lid,
			 const struct sib_fab_port *self)
{
	unsigned int i, p;

	for (i = 0; i < sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = sn->fab.nodes[i];

		for (p = 0; p <= n->num_ports; p++) {
			const struct sib_fab_port *pt = &n->ports[p];

			if (pt != self && pt->lid && lid >= pt->lid && lid < pt->lid + (1u << pt->lmc))
				return false;
		}
	}
	return true;
}

struct sib_fab_node *sib_subnet_ca_add(struct sib_subnet *sn, const char *name,
				       struct sib_fab_port *sw, uint64_t guid)
{
	struct sib_fab_node *n, **nodes;

	nodes = realloc(sn->fab.nodes, (sn->fab.n_nodes + 1) * sizeof(*nodes));
	if (!nodes)
		return NULL;
	sn->fab.nodes = nodes;
	n = calloc(1, sizeof(*n));
	if (n)
		n->ports = calloc(2, sizeof(*n->ports));
	if (!n || !n->ports) {
		free(n);
		return NULL;
	}
	n->type = SIB_NODE_CA;
	n->node_guid = n->sys_image_guid = guid;
	n->vendor_id = SIB_FAB_VENDOR_ID;
	n->device_id = SIB_FAB_CA_DEVICE_ID;
	snprintf(n->id, sizeof(n->id), "H-%016" PRIx64, guid);
	snprintf(n->desc, sizeof(n->desc), "softib HCA %s", name);
	snprintf(n->dev_name, sizeof(n->dev_name), "%s", name);
	n->num_ports = 1;
	n->ports[0].node = n;
	n->ports[1].node = n;
	n->ports[1].num = 1;
	n->ports[1].guid = guid + 1;
	/* powered before it is cabled: Polling/DOWN, LID 0 (subnet.c) */
	if (sib_subnet_node_init(n)) {
		free(n->ports);
		free(n);
		return NULL;
	}
	n->ports[1].peer = sw;
	sw->peer = &n->ports[1];
	sn->fab.nodes[sn->fab.n_nodes++] = n;
	sn->fab.n_cas++;
	return n;
}

void sib_subnet_ca_remove(struct sib_subnet *sn, struct sib_fab_node *n)
{
	unsigned int i, p;

	sib_cm_node_gone(sn, n);
	for (p = 1; p <= n->num_ports; p++) /* the far ends go DOWN (trap 128) */
		sib_sma_link_down(sn, n, (uint8_t)p, SIB_LINK_LOST);
	sib_subnet_node_free(n);
	for (p = 0; p <= n->num_ports; p++)
		if (n->ports[p].peer) {
			n->ports[p].peer->peer = NULL;
			n->ports[p].peer = NULL;
		}
	for (i = 0; i < sn->fab.n_nodes; i++)
		if (sn->fab.nodes[i] == n) {
			memmove(&sn->fab.nodes[i], &sn->fab.nodes[i + 1],
				(sn->fab.n_nodes - i - 1) * sizeof(*sn->fab.nodes));
			sn->fab.n_nodes--;
			break;
		}
	sn->fab.n_cas--;
	free(n->ports);
	free(n);
}

/* ---- route lookups ------------------------------------------------------ */

struct sib_route sib_subnet_lookup(const struct sib_subnet *sn, const struct sib_fab_node *src,
				   uint8_t port, uint16_t dlid)
{
	return sib_subnet_route(&sn->fab, src, port, dlid, false);
}

int sib_subnet_mcast_lookup(const struct sib_subnet *sn, const struct sib_fab_node *src,
			    uint8_t port, uint16_t mlid,
			    void (*reach)(void *ctx, const struct sib_fab_node *n, uint8_t port),
			    void *ctx)
{
	return sib_subnet_mcast_route(&sn->fab, src, port, mlid, reach, ctx);
}

/* ---- counters (the MAD counters' are the router's: mad_router.c) -------- */

const struct sib_sma_counters *sib_subnet_sma_counters(const struct sib_subnet *sn)
{
	return &sn->sma;
}
