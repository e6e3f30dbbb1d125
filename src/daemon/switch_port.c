// SPDX-License-Identifier: MIT
/*
 * `softib port SWITCH PORT down|up` (PORT_SET naming a switch by its
 * topology id): a cable pulled, or put back, in the middle of paths, so
 * that the data path's routes (route.c) can be seen to break and heal.
 * Goes through the port state machine (sma.c: both ends, PortStateChange,
 * trap 128, route_gen); only down and up, never a switch's LIDs.
 * Single-threaded; the name is bounds-checked (a client's).
 */
#include <errno.h>
#include <string.h>

#include "daemon/softibd.h"
#include "subnet/subnet_api.h"

int sibd_port_set_switch(struct sibd *d, const struct sib_ctl_dev_cmd *dc)
{
	struct sib_fab_node *sw = sib_subnet_find_switch(d->sn, dc->name, sizeof(dc->name));
	const struct mad_port_info *pi;

	if (!sw || !sw->mgmt)
		return -ENODEV;
	if (dc->port_num < 1 || dc->port_num > sw->num_ports ||
	    (dc->action != SIB_PORT_DOWN && dc->action != SIB_PORT_UP))
		return -EINVAL;
	if (!sw->ports[dc->port_num].peer)
		return -ENOLINK;
	pi = &sw->mgmt->port[dc->port_num].pi;
	if ((pi->port_phys_state == MAD_PORT_PHYS_STATE_DISABLED) == (dc->action == SIB_PORT_DOWN))
		return 0; /* already so */
	if (dc->action == SIB_PORT_DOWN)
		sib_sma_link_down(d->sn, sw, (uint8_t)dc->port_num, SIB_LINK_LOST);
	else
		sib_sma_link_up(d->sn, sw, (uint8_t)dc->port_num);
	d->ctr.port_changes++;
	sibd_log("switch %s port %u %s", sw->id, dc->port_num, dc->action == SIB_PORT_DOWN ? "down" : "up");
	return 0;
}
