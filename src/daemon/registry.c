// SPDX-License-Identifier: MIT
/*
 * The device registry of softibd: CAs registered and unregistered at run
 * time (seed 000's Access Layer hot-plug; seed 004 "Hot-plug") and port
 * state set by hand (`softib device add|remove`, `softib port ... down|up`).
 * A device is usable from the moment its map entry turns odd until its
 * removal turns it even; removal releases everything clients held on it.
 * The fabric's side of adding and removing a CA (its node, free switch
 * port, GUIDs and LIDs) is the subnet layer's (sib_subnet_ca_add/remove,
 * subnet_api.h); this file does the daemon's: devs[], the map, clients.
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
#include "daemon/ucma.h"

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

	if (n == 0 || n == sizeof(c->name) || c->name[0] == '.') /* ".", "..", hidden */
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

/* Highest GUID handed out by DEVICE_ADD: a removed CA's GUIDs are never reused. */
static uint64_t guid_given;

/* The first never-used or unregistered devs[] slot, or -1. */
static int free_dev_slot(const struct sibd *d)
{
	uint32_t i;

	for (i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++)
		if (!sibd_dev_present(d, i))
			return (int)i;
	return d->num_devices < SIB_MAX_DEVICES ? (int)d->num_devices : -1;
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
	sw = sib_subnet_free_switch_port(d->sn);
	guid = sib_subnet_fresh_guid(d->sn, 1, guid_given);
	lid = sib_subnet_fresh_lid(d->sn);
	if (idx < 0 || !sw || !guid || !lid)
		return -ENOSPC;
	n = sib_subnet_ca_add(d->sn, dc->name, sw, guid);
	if (!n)
		return -ENOMEM;
	guid_given = guid + 1;
	/* The link trains (the switch's PortStateChange, trap 128); in the
	 * default mode the built-in SM gives the port the lowest free LID
	 * (= lid) and makes it ACTIVE before anyone can see the device. */
	sib_sma_link_up(d->sn, n, 1);
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
	sibd_ucma_device_gone(d, (uint32_t)idx);
	sibd_issm_device_gone(d, (uint32_t)idx);
	sib_subnet_ca_remove(d->sn, d->dev_node[idx]);
	d->dev_node[idx] = NULL;
	d->ctr.devices_removed++;
	sibd_log("device %s removed by pid %d", dc->name, (int)c->pid);
	sibd_event_push(d, &ev);
	return 0;
}

/* ---- ports ------------------------------------------------------------- */

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

	if (sib_sm_get_port_info(d->sn, node, (uint8_t)pn, &pi))
		return -EIO;
	n = 1u << pi.lmc;
	if (lid == 0 || lid >= SIB_UNICAST_LIDS || n > SIB_UNICAST_LIDS - lid)
		return -EINVAL; /* overflow-safe: lid comes from a client */
	for (l = lid; l < lid + n; l++)
		if (!sib_subnet_lid_free(d->sn, l, fp))
			return -EADDRINUSE;
	pi.lid = (uint16_t)lid;
	pi.port_state = MAD_PORT_STATE_NOP;
	pi.port_phys_state = 0;
	if (sib_sm_set_port_info(d->sn, node, (uint8_t)pn, &pi))
		return -EIO;
	if (!sib_subnet_sm_external(d->sn))
		sib_sm_sweep(d->sn);
	return 0;
}

/* A new MasterSMLID for a port, as an SM handover would.  0 or -EIO. */
static int port_sm_lid(struct sibd *d, uint32_t idx, uint32_t pn, uint32_t sm_lid)
{
	struct sib_fab_node *node = d->dev_node[idx];
	struct mad_port_info pi;

	if (sib_sm_get_port_info(d->sn, node, (uint8_t)pn, &pi))
		return -EIO;
	pi.master_sm_lid = (uint16_t)sm_lid;
	pi.port_state = MAD_PORT_STATE_NOP;
	pi.port_phys_state = 0;
	return sib_sm_set_port_info(d->sn, node, (uint8_t)pn, &pi) ? -EIO : 0;
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
		sib_sma_link_down(d->sn, node, (uint8_t)dc->port_num, SIB_LINK_LOST);
		break;
	case SIB_PORT_UP: /* LinkUp/INIT; the built-in SM (if any) activates it */
		if (pi->port_phys_state != MAD_PORT_PHYS_STATE_DISABLED)
			return 0;
		sib_sma_link_up(d->sn, node, (uint8_t)dc->port_num);
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
