// SPDX-License-Identifier: MIT
/*
 * Publishing the SMA's port state of CA ports that are verbs devices
 * (d->devs[], the fabric map, pushed events): the one place where a
 * PortInfo becomes what ibv_query_port shows (IBA 14.2.5.6 -> struct
 * sib_shm_port).  Writes the private devs[] first, then the map through
 * fabmap.c's writers under the seqlock; never reads the map back (DESIGN
 * principle 6).  Single-threaded; no locks.
 */
#include <infiniband/verbs.h>
#include <string.h>

#include "subnet/sma.h"
#include "daemon/softibd.h"

int sibd_sma_dev_index(const struct sibd *d, const struct sib_fab_node *n)
{
	for (uint32_t i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++)
		if (d->dev_node[i] == n && sibd_dev_present(d, i))
			return (int)i;
	return -1;
}

void sibd_sma_port_to_shm(struct sib_shm_port *p, const struct sib_fab_port *fp)
{
	const struct sib_port_mgmt *pm = &fp->node->mgmt->port[fp->num];
	const struct mad_port_info *pi = &pm->pi;

	memset(p, 0, sizeof(*p));
	p->port_guid = fp->guid;
	p->gid_prefix = pi->gid_prefix;
	p->lid = pi->lid;
	p->lmc = pi->lmc;
	p->sm_lid = pi->master_sm_lid;
	p->sm_sl = pi->master_sm_sl;
	p->state = pi->port_state;          /* IBA PortState = enum ibv_port_state */
	p->phys_state = pi->port_phys_state;
	p->max_mtu = pi->mtu_cap;           /* IBA MTU codes = enum ibv_mtu */
	p->active_mtu = pi->neighbor_mtu < pi->mtu_cap ? pi->neighbor_mtu : pi->mtu_cap;
	p->active_width = pi->link_width_active;
	p->active_speed = pi->link_speed_active;
	p->subnet_timeout = pi->subnet_timeout;
	p->max_vl_num = pi->vl_cap;
	p->init_type_reply = pi->init_type_reply;
	p->cap_flags = pi->capability_mask;
	memcpy(p->pkey, pm->pkey, sizeof(p->pkey));
}

/* The lid_map entry lid should have: the verbs port owning it, or 0. */
static uint16_t lid_owner(const struct sibd *d, uint16_t lid)
{
	for (uint32_t i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++) {
		if (!sibd_dev_present(d, i))
			continue;
		for (unsigned int pn = 1; pn <= d->devs[i].num_ports && pn <= SIB_MAX_PORTS; pn++)
			if (sib_subnet_owns(&d->dev_node[i]->mgmt->port[pn].pi, lid))
				return SIB_LIDM_MAKE(i, pn);
	}
	return 0;
}

void sibd_sma_publish(struct sibd *d, struct sib_fab_node *n, uint8_t pn, unsigned int what,
		      uint16_t old_lid, uint8_t old_lmc)
{
	const struct mad_port_info *pi = &n->mgmt->port[pn].pi;
	int idx = sibd_sma_dev_index(d, n);
	uint32_t l;

	if (idx < 0 || pn < 1 || pn > SIB_MAX_PORTS || pn > d->devs[idx].num_ports)
		return;
	sibd_sma_port_to_shm(&d->devs[idx].ports[pn - 1], &n->ports[pn]);
	if (!d->shm)
		return; /* at start, before the map: map_fill copies devs[] */
	sibd_map_write_begin(d);
	if (what & SIB_CHG_LID) {
		/* the old range leads to whoever owns it now (a LID moved from
		 * one port to another), else nowhere */
		for (l = old_lid; old_lid && l < (uint32_t)old_lid + (1u << old_lmc); l++)
			sibd_map_put_lids(d, l, 1, lid_owner(d, (uint16_t)l));
		sibd_map_put_lids(d, pi->lid, 1u << pi->lmc, SIB_LIDM_MAKE(idx, pn));
	}
	sibd_map_put_device(d, (uint32_t)idx);
	sibd_map_write_end(d);
	if (what & SIB_CHG_STATE)
		sibd_event_port(d, SIB_EV_PORT_CHANGE, (uint32_t)idx, pn);
	if (what & SIB_CHG_LID)
		sibd_event_port(d, SIB_EV_LID_CHANGE, (uint32_t)idx, pn);
	if (what & SIB_CHG_SM)
		sibd_event_port(d, SIB_EV_SM_CHANGE, (uint32_t)idx, pn);
}
