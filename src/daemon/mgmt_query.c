// SPDX-License-Identifier: MIT
/*
 * MGMT_QUERY: the CA and port attributes libibumad reads from sysfs on a
 * kernel stack (/sys/class/infiniband/<ca>/..., rdma-core libibumad v44),
 * answered live from softibd's private state for softib's libibumad.so.3
 * (src/umad/, docs/umad.md).  Port values are PortInfo's (IBA 14.2.5.6):
 * the SMA's authoritative copy when the node has one (subnet.h), else the
 * device record the verbs map is published from.  Read only: never
 * changes state, trusts nothing in the request.  Single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/softibd.h"
#include "subnet/subnet.h"
#include "common/sib_shm.h" /* SIB_FW_VERSION */

/* PortInfo:LinkWidthActive and LinkSpeedActive (IBA 14.2.5.6) -> Gb/s. */
static uint32_t port_rate(uint8_t width, uint8_t speed)
{
	uint32_t lanes, tenths;

	switch (width) {
	case 1: lanes = 1; break;
	case 2: lanes = 4; break;
	case 4: lanes = 8; break;
	case 8: lanes = 12; break;
	case 16: lanes = 2; break;
	default: return 0;
	}
	switch (speed) {
	case 1: tenths = 25; break;   /* SDR 2.5 Gb/s */
	case 2: tenths = 50; break;   /* DDR */
	case 4: tenths = 100; break;  /* QDR */
	default: return 0;
	}
	return lanes * tenths / 10; /* sysfs "2.5 Gb/sec" reads as 2 (strtoul) */
}

/* Index of the present verbs device called name, or -1. */
static int find_ca(const struct sibd *d, const char *name)
{
	uint32_t i;

	for (i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++)
		if (sibd_dev_present(d, i) && !strcmp(d->devs[i].name, name))
			return (int)i;
	return -1;
}

static void fill_port(const struct sibd *d, uint32_t idx, uint32_t pn, struct sib_mgmt_port *out)
{
	const struct sib_shm_port *sp = &d->devs[idx].ports[pn - 1];
	const struct sib_fab_node *n = d->dev_node[idx];
	uint32_t i;

	memset(out, 0, sizeof(*out));
	out->port_guid = sp->port_guid;
	if (n && n->mgmt && n->mgmt->port) {
		const struct sib_port_mgmt *pm = &n->mgmt->port[pn];
		const struct mad_port_info *pi = &pm->pi;

		out->gid_prefix = pi->gid_prefix;
		out->capmask = pi->capability_mask;
		out->rate = port_rate(pi->link_width_active, pi->link_speed_active);
		out->base_lid = pi->lid;
		out->sm_lid = pi->master_sm_lid;
		out->lmc = pi->lmc;
		out->sm_sl = pi->master_sm_sl;
		out->state = pi->port_state;
		out->phys_state = pi->port_phys_state;
		for (i = 0; i < SIB_SUBN_PKEYS && i < SIB_MGMT_PKEYS; i++)
			out->pkeys[i] = pm->pkey[i];
		out->num_pkeys = (uint16_t)i;
		return;
	}
	out->gid_prefix = sp->gid_prefix;
	out->capmask = sp->cap_flags;
	out->rate = port_rate(sp->active_width, sp->active_speed);
	out->base_lid = sp->lid;
	out->sm_lid = sp->sm_lid;
	out->lmc = sp->lmc;
	out->sm_sl = sp->sm_sl;
	out->state = sp->state; /* enum ibv_port_state = PortState numbers */
	out->phys_state = sp->phys_state;
	for (i = 0; i < SIB_PKEY_TBL_LEN && i < SIB_MGMT_PKEYS; i++)
		out->pkeys[i] = sp->pkey[i];
	out->num_pkeys = (uint16_t)i;
}

/* The ISSM FIFO of a device port (issm.c creates it): next to the socket. */
int sibd_issm_path(const struct sibd *d, const char *dev, uint32_t port, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.issm-%s-%u", d->sock_path, dev, port);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int sibd_cmd_mgmt_query(struct sibd *d, struct sibd_client *c, struct sib_ctl_msg *m, int *pass_fd)
{
	struct sib_ctl_mgmt_query *q = &m->u.mgmt;
	int idx = -1, ret;
	uint32_t i, n = 0;

	if (q->abi_version != SIB_ABI_VERSION) {
		q->abi_version = SIB_ABI_VERSION;
		return -EPROTO;
	}
	if (q->what == 0 || q->what >= SIB_MGMT_WHAT_MAX)
		return -EINVAL;
	if (q->what != SIB_MGMT_CAS) {
		if (strnlen(q->ca_name, sizeof(q->ca_name)) == sizeof(q->ca_name))
			return -EINVAL;
		idx = find_ca(d, q->ca_name);
		if (idx < 0)
			return -ENODEV;
	}
	if ((q->what == SIB_MGMT_PORT || q->what == SIB_MGMT_ISSM) &&
	    (q->port_num == 0 || q->port_num > d->devs[idx].num_ports ||
	     q->port_num > SIB_MAX_PORTS))
		return -ENODEV;

	switch (q->what) {
	case SIB_MGMT_CAS:
		memset(q->names, 0, sizeof(q->names));
		for (i = 0; i < d->num_devices && i < SIB_MAX_DEVICES; i++) {
			if (!sibd_dev_present(d, i) ||
			    strlen(d->devs[i].name) >= SIB_MGMT_NAME_LEN || n >= SIB_MGMT_MAX_CAS)
				continue;
			memcpy(q->names[n++], d->devs[i].name, strlen(d->devs[i].name));
		}
		q->count = n;
		return 0;
	case SIB_MGMT_CA:
		q->count = d->devs[idx].num_ports;
		q->node_type = d->dev_node[idx] ? d->dev_node[idx]->type : SIB_NODE_CA;
		q->node_guid = d->devs[idx].node_guid;
		q->sys_image_guid = d->devs[idx].sys_image_guid;
		snprintf(q->fw_ver, sizeof(q->fw_ver), "%s", SIB_FW_VERSION);
		snprintf(q->hw_ver, sizeof(q->hw_ver), "%u", d->devs[idx].hw_ver);
		snprintf(q->ca_type, sizeof(q->ca_type), "softib");
		return 0;
	case SIB_MGMT_PORT:
		fill_port(d, (uint32_t)idx, q->port_num, &q->port);
		return 0;
	default: /* SIB_MGMT_ISSM: the FIFO exists from the first ask on (issm.c) */
		ret = sibd_issm_path(d, q->ca_name, q->port_num, q->path, sizeof(q->path));
		if (!ret)
			ret = sibd_issm_ensure(d, (uint32_t)idx, (uint8_t)q->port_num, q->path);
		if (ret)
			sibd_log("ISSM %s port %u: %s", q->ca_name, q->port_num, strerror(-ret));
		return ret ? -EIO : 0;
	}
}
