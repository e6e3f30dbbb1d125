// SPDX-License-Identifier: MIT
/*
 * The device registry of softibd: CAs registered and unregistered at run
 * time (seed 000's Access Layer hot-plug; seed 004 "Hot-plug") and port
 * state set by hand (`softib device add|remove`, `softib port ... down|up`).
 * A device is usable from the moment its map entry turns odd until its
 * removal turns it even; removal releases everything clients held on it.
 * Changes softibd's private state (struct sibd) first, then publishes it
 * through fabmap.c's writers (ports and LIDs under port_seq); never reads
 * the map back (DESIGN principle 6).  Single-threaded; no locks.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/linkcfg.h"
#include "daemon/mai_chan.h"
#include "daemon/softibd.h"

#define PHYS_DISABLED 3 /* PortPhysicalState (IBA 14.2.5.6) */
#define PHYS_LINKUP   5

bool sibd_dev_present(const struct sibd *d, uint32_t dev_index)
{
	return dev_index < SIB_MAX_DEVICES && dev_index < d->num_devices &&
	       (d->devs[dev_index].gen & 1);
}

/* Index of the present device called name, or -1. */
static int find_dev(const struct sibd *d, const char *name)
{
	uint32_t i;

	for (i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++)
		if (sibd_dev_present(d, i) && !strcmp(d->devs[i].name, name))
			return (int)i;
	return -1;
}

/* The name of a command: NUL-terminated, 1..63 of [A-Za-z0-9_.-].  0 or -EINVAL. */
static int check_name(struct sib_ctl_dev_cmd *c)
{
	size_t i, n = strnlen(c->name, sizeof(c->name));

	if (n == 0 || n == sizeof(c->name))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		char ch = c->name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return -EINVAL;
	}
	return 0;
}

/* A private port's state; published by the caller (fabmap.c). */
static void port_set_state(struct sib_shm_port *p, uint8_t state, uint8_t phys)
{
	p->state = state;
	p->phys_state = phys;
}

/* ---- add ---------------------------------------------------------------- */

/* A switch port without a link, or NULL. */
static struct sib_fab_port *free_switch_port(struct sibd *d)
{
	unsigned int i, p;

	for (i = 0; i < d->sn.fab.n_nodes; i++) {
		struct sib_fab_node *n = d->sn.fab.nodes[i];

		if (n->type != SIB_NODE_SWITCH)
			continue;
		for (p = 1; p <= n->num_ports; p++)
			if (!n->ports[p].peer)
				return &n->ports[p];
	}
	return NULL;
}

/* Highest GUID handed out by DEVICE_ADD: a removed CA's GUIDs are never reused. */
static uint64_t guid_given;

/*
 * need + 1 consecutive GUIDs above every node, system image and port GUID
 * of the fabric and every one given before; returns the first, 0 if none.
 */
static uint64_t fresh_guid(const struct sibd *d, unsigned int need)
{
	uint64_t max = guid_given > SIB_FAB_GUID_PREFIX ? guid_given : SIB_FAB_GUID_PREFIX;
	unsigned int i, p;

	for (i = 0; i < d->sn.fab.n_nodes; i++) {
		const struct sib_fab_node *n = d->sn.fab.nodes[i];

		max = n->node_guid > max ? n->node_guid : max;
		max = n->sys_image_guid > max ? n->sys_image_guid : max;
		for (p = 0; p <= n->num_ports; p++)
			max = n->ports[p].guid > max ? n->ports[p].guid : max;
	}
	return max <= UINT64_MAX - 1 - need ? max + 1 : 0;
}

/* The lowest unicast LID no port of the fabric has (range LID..LID+2^LMC-1); 0 if none. */
static uint16_t fresh_lid(const struct sibd *d)
{
	uint8_t *used = calloc(SIB_UNICAST_LIDS, 1);
	unsigned int i, p, l;
	uint16_t lid = 0;

	if (!used)
		return 0;
	for (i = 0; i < d->sn.fab.n_nodes; i++) {
		const struct sib_fab_node *n = d->sn.fab.nodes[i];

		for (p = 0; p <= n->num_ports; p++)
			for (l = 0; n->ports[p].lid && l < (1u << n->ports[p].lmc); l++)
				if (n->ports[p].lid + l < SIB_UNICAST_LIDS)
					used[n->ports[p].lid + l] = 1;
	}
	for (l = 1; l < SIB_UNICAST_LIDS && !lid; l++)
		if (!used[l])
			lid = (uint16_t)l;
	free(used);
	return lid;
}

/* The first never-used or unregistered devs[] slot, or -1. */
static int free_dev_slot(const struct sibd *d)
{
	uint32_t i;

	for (i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++)
		if (!sibd_dev_present(d, i))
			return (int)i;
	return d->num_devices < SIB_MAX_DEVICES ? (int)d->num_devices : -1;
}

/* A single-port CA called name, cabled to sw (its link not trained yet):
 * appended to the fabric. */
static struct sib_fab_node *new_ca(struct sibd *d, const char *name, struct sib_fab_port *sw,
				   uint64_t guid)
{
	struct sib_fab_node *n, **nodes;

	nodes = realloc(d->sn.fab.nodes, (d->sn.fab.n_nodes + 1) * sizeof(*nodes));
	if (!nodes)
		return NULL;
	d->sn.fab.nodes = nodes;
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
	d->sn.fab.nodes[d->sn.fab.n_nodes++] = n;
	d->sn.fab.n_cas++;
	return n;
}

/*
 * DEVICE_ADD: register a new single-port CA on a free switch port, with a
 * fresh GUID, and in the default mode a fresh LID and its port ACTIVE
 * (--sm external: INIT and LID 0 until the SM comes); new processes list it.
 * EINVAL (name), EEXIST, ENOSPC (no devs[] slot, switch port, GUID or LID).
 */
int sibd_cmd_device_add(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			int *pass_fd)
{
	struct sib_ctl_dev_cmd *dc = &m->u.dev;
	struct sib_fab_port *sw;
	struct sib_fab_node *n;
	uint64_t guid;
	uint16_t lid;
	int idx;

	(void)pass_fd;
	if (check_name(dc))
		return -EINVAL;
	if (find_dev(d, dc->name) >= 0)
		return -EEXIST;
	idx = free_dev_slot(d);
	sw = free_switch_port(d);
	guid = fresh_guid(d, 1);
	lid = fresh_lid(d);
	if (idx < 0 || !sw || !guid || !lid)
		return -ENOSPC;
	n = new_ca(d, dc->name, sw, guid);
	if (!n)
		return -ENOMEM;
	guid_given = guid + 1;
	/* The link trains (the switch's PortStateChange, trap 128); in the
	 * default mode the built-in SM gives the port the lowest free LID
	 * (= lid) and makes it ACTIVE before anyone can see the device. */
	sib_sma_link_up(&d->sn, n, 1);
	lid = n->mgmt->port[1].pi.lid;

	/* Our record first; then fill the map's slot while its gen is even
	 * (nobody uses it), and only then make the gen odd. */
	sibd_map_set_device(d, (uint32_t)idx, n);
	d->devs[idx].gen++;
	if ((uint32_t)idx >= d->num_devices)
		d->num_devices = (uint32_t)idx + 1;
	sibd_map_write_begin(d);
	sibd_map_put_device(d, (uint32_t)idx);
	sibd_map_put_routes(d, (uint32_t)idx, true);
	sibd_map_write_end(d);
	sibd_map_publish_gen(d, (uint32_t)idx);
	d->ctr.devices_added++;
	sibd_log("device %s added by pid %d: index %d, GUID 0x%016" PRIx64 ", LID %u, on %s[%u]",
		 dc->name, (int)c->pid, idx, guid, lid, sw->node->id, sw->num);
	dc->dev_index = (uint32_t)idx;
	dc->dev_gen = d->devs[idx].gen;
	sibd_event_port(d, SIB_EV_DEVICE_ADD, (uint32_t)idx, 0);
	return 0;
}

/* ---- remove ------------------------------------------------------------- */

/* Take node n out of the fabric: its links go, the switch ports become free. */
static void drop_node(struct sibd *d, struct sib_fab_node *n)
{
	unsigned int i, p;

	for (p = 1; p <= n->num_ports; p++) /* the far ends go DOWN (trap 128) */
		sib_sma_link_down(&d->sn, n, (uint8_t)p, SIB_LINK_LOST);
	sib_subnet_node_free(n);
	for (p = 0; p <= n->num_ports; p++)
		if (n->ports[p].peer) {
			n->ports[p].peer->peer = NULL;
			n->ports[p].peer = NULL;
		}
	for (i = 0; i < d->sn.fab.n_nodes; i++)
		if (d->sn.fab.nodes[i] == n) {
			memmove(&d->sn.fab.nodes[i], &d->sn.fab.nodes[i + 1],
				(d->sn.fab.n_nodes - i - 1) * sizeof(*d->sn.fab.nodes));
			d->sn.fab.n_nodes--;
			break;
		}
	d->sn.fab.n_cas--;
	free(n->ports);
	free(n);
}

/*
 * DEVICE_REMOVE (ib_unregister_device): the device leaves the map (new
 * processes no longer list it, its contexts' data path stops at the gen
 * check), its ports go DOWN and its LIDs unroute (peers' packets are lost),
 * every client's objects, QPNs and inboxes on it are released, and every
 * subscriber hears DEVICE_REMOVE (the library raises DEVICE_FATAL).
 * EINVAL (name), ENODEV.
 */
int sibd_cmd_device_remove(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
			   int *pass_fd)
{
	struct sib_ctl_dev_cmd *dc = &m->u.dev;
	struct sib_shm_device *dev;
	struct sib_ctl_event ev;
	struct sibd_client *cl;
	unsigned int pn;
	int idx;

	(void)pass_fd;
	if (check_name(dc))
		return -EINVAL;
	idx = find_dev(d, dc->name);
	if (idx < 0)
		return -ENODEV;
	dev = &d->devs[idx];
	sibd_event_fill(d, &ev, SIB_EV_DEVICE_REMOVE, (uint32_t)idx, 0);

	/* Unregistered in our record, then in the map: gen even first, so the
	 * data path stops before the ports go down and the LIDs unroute. */
	dev->gen++;
	sibd_map_publish_gen(d, (uint32_t)idx);
	for (pn = 1; pn <= dev->num_ports && pn <= SIB_MAX_PORTS; pn++)
		port_set_state(&dev->ports[pn - 1], IBV_PORT_DOWN, PHYS_DISABLED);
	sibd_map_write_begin(d);
	sibd_map_put_device(d, (uint32_t)idx);
	sibd_map_put_routes(d, (uint32_t)idx, false);
	sibd_map_write_end(d);
	for (cl = d->clients; cl; cl = cl->next)
		sibd_client_device_gone(d, cl, (uint32_t)idx);
	sibd_link_device_gone(d, (uint32_t)idx);
	sibd_mai_device_gone(d, (uint32_t)idx); /* before its node goes */
	sibd_issm_device_gone(d, (uint32_t)idx);
	drop_node(d, d->dev_node[idx]);
	d->dev_node[idx] = NULL;
	d->ctr.devices_removed++;
	sibd_log("device %s removed by pid %d", dc->name, (int)c->pid);
	sibd_event_push(d, &ev);
	return 0;
}

/* ---- ports ------------------------------------------------------------- */

/* Is lid (with 2^lmc - 1 above it) free of every port but self? */
static bool lid_free(const struct sibd *d, uint32_t lid, const struct sib_fab_port *self)
{
	unsigned int i, p;

	for (i = 0; i < d->sn.fab.n_nodes; i++) {
		const struct sib_fab_node *n = d->sn.fab.nodes[i];

		for (p = 0; p <= n->num_ports; p++) {
			const struct sib_fab_port *pt = &n->ports[p];

			if (pt != self && pt->lid && lid >= pt->lid && lid < pt->lid + (1u << pt->lmc))
				return false;
		}
	}
	return true;
}

/*
 * Give a linked port a new base LID, as an SM's LID reassignment would
 * (Get + Set PortInfo through its SMA): the old LIDs unroute (packets to
 * them are lost), the new ones lead here; in the default mode the built-in
 * SM then reprograms the LFTs.  0, EINVAL (not unicast, LMC range too
 * high), EADDRINUSE.
 */
static int port_relid(struct sibd *d, uint32_t idx, uint32_t pn, uint32_t lid)
{
	struct sib_fab_node *node = d->dev_node[idx];
	struct sib_fab_port *fp = &node->ports[pn];
	struct mad_port_info pi;
	uint32_t n, l;

	if (sib_sm_get_port_info(&d->sn, node, (uint8_t)pn, &pi))
		return -EIO;
	n = 1u << pi.lmc;
	if (lid == 0 || lid >= SIB_UNICAST_LIDS || n > SIB_UNICAST_LIDS - lid)
		return -EINVAL; /* overflow-safe: lid comes from a client */
	for (l = lid; l < lid + n; l++)
		if (!lid_free(d, l, fp))
			return -EADDRINUSE;
	pi.lid = (uint16_t)lid;
	pi.port_state = MAD_PORT_STATE_NOP;
	pi.port_phys_state = 0;
	if (sib_sm_set_port_info(&d->sn, node, (uint8_t)pn, &pi))
		return -EIO;
	if (!d->sn.sm_external)
		sib_sm_sweep(&d->sn);
	return 0;
}

/* A new MasterSMLID for a port, as an SM handover would.  0 or -EIO. */
static int port_sm_lid(struct sibd *d, uint32_t idx, uint32_t pn, uint32_t sm_lid)
{
	struct sib_fab_node *node = d->dev_node[idx];
	struct mad_port_info pi;

	if (sib_sm_get_port_info(&d->sn, node, (uint8_t)pn, &pi))
		return -EIO;
	pi.master_sm_lid = (uint16_t)sm_lid;
	pi.port_state = MAD_PORT_STATE_NOP;
	pi.port_phys_state = 0;
	return sib_sm_set_port_info(&d->sn, node, (uint8_t)pn, &pi) ? -EIO : 0;
}

/*
 * PORT_SET: a port's link goes down (PortPhysicalState Disabled here, DOWN
 * at both ends: the switch's PortStateChange and trap 128) or comes back
 * (LinkUp/INIT, then ACTIVE from the built-in SM in the default mode),
 * keeping its LID; or gets a new LID or SM LID through its SMA, as an SM
 * would (IBA 14.2.5.6).  Subscribers hear PORT_CHANGE, LID_CHANGE or
 * SM_CHANGE from sma_publish.c; a command that changes nothing says
 * nothing.  EINVAL (name, port, action, LID), ENODEV, ENOLINK (the port has
 * no link), EADDRINUSE (LID taken), EIO (the SMA refused: a bug).
 */
int sibd_cmd_port_set(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m,
		      int *pass_fd)
{
	static const char *const what[SIB_PORT_ACTION_MAX] = {
		[SIB_PORT_DOWN] = "down", [SIB_PORT_UP] = "up",
		[SIB_PORT_LID] = "LID", [SIB_PORT_SM_LID] = "SM LID",
	};
	struct sib_ctl_dev_cmd *dc = &m->u.dev;
	const struct mad_port_info *pi;
	struct sib_fab_node *node;
	struct sib_shm_port *p;
	int idx, ret;

	(void)pass_fd;
	if (check_name(dc) || dc->action >= SIB_PORT_ACTION_MAX)
		return -EINVAL;
	idx = find_dev(d, dc->name);
	if (idx < 0)
		return sibd_port_set_switch(d, dc); /* route.c: a switch's port, or ENODEV */
	if (dc->port_num < 1 || dc->port_num > d->devs[idx].num_ports)
		return -EINVAL;
	p = &d->devs[idx].ports[dc->port_num - 1];
	node = d->dev_node[idx];
	pi = &node->mgmt->port[dc->port_num].pi;
	if (dc->action != SIB_PORT_DOWN && !node->ports[dc->port_num].peer)
		return -ENOLINK;
	switch (dc->action) {
	case SIB_PORT_DOWN: /* the state machine: Disabled here, DOWN at both ends */
		if (pi->port_phys_state == MAD_PORT_PHYS_STATE_DISABLED)
			return 0;
		sib_sma_link_down(&d->sn, node, (uint8_t)dc->port_num, SIB_LINK_LOST);
		break;
	case SIB_PORT_UP: /* LinkUp/INIT; the built-in SM (if any) activates it */
		if (pi->port_phys_state != MAD_PORT_PHYS_STATE_DISABLED)
			return 0;
		sib_sma_link_up(&d->sn, node, (uint8_t)dc->port_num);
		break;
	case SIB_PORT_LID:
		if (dc->value == p->lid)
			return 0;
		ret = port_relid(d, (uint32_t)idx, dc->port_num, dc->value);
		if (ret)
			return ret;
		break;
	default: /* SIB_PORT_SM_LID */
		if (dc->value == 0 || dc->value >= SIB_UNICAST_LIDS)
			return -EINVAL;
		if (dc->value == p->sm_lid)
			return 0;
		ret = port_sm_lid(d, (uint32_t)idx, dc->port_num, dc->value);
		if (ret)
			return ret;
		break;
	}
	d->ctr.port_changes++;
	if (dc->action >= SIB_PORT_LID)
		sibd_log("%s port %u %s %u (pid %d)", dc->name, dc->port_num, what[dc->action],
			 dc->value, (int)c->pid);
	else
		sibd_log("%s port %u %s (pid %d)", dc->name, dc->port_num, what[dc->action],
			 (int)c->pid);
	return 0;
}
