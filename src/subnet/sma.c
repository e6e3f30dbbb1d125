// SPDX-License-Identifier: MIT
/*
 * The SMA of every node (IBA 1.4 vol 1, 14.2.5 SM attributes; 14.2.4 M_Key)
 * as one table {attribute, switch only, get, set}, the port state machine
 * (7.2, 14.2.5.6: Down, Init, Armed, Active; PortPhysicalState Polling,
 * Disabled, LinkUp) and traps 128 and 144 (14.2.5.1).  Everything in a MAD
 * is hostile: every index is checked, a Set is validated whole before any
 * field changes.  Writes only the subnet state; a CA port change or a
 * forwarding change is told to the host (subnet_api.h: port_changed,
 * route_changed), which publishes it.  Single-threaded: no locks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sib_shm.h" /* SIB_PKEY_TBL_LEN: what verbs shows */
#include "subnet/sa_int.h" /* sib_sa_trap */
#include "subnet/sma.h"
#include "subnet/subnet_int.h"
#include "softib/mai.h"

/* One SMP being answered. */
struct sma_ctx {
	struct sib_subnet *sn;
	struct sib_fab_node *n;
	uint8_t in_port;
	uint32_t mod;            /* AttributeModifier */
	uint64_t m_key;          /* the SMP's M_Key */
	bool key_ok;             /* it matched (or the port has none) */
	uint8_t *out;            /* the reply's 64 data bytes */
};

struct sma_attr {
	uint16_t id;
	bool switch_only;
	uint16_t (*get)(struct sma_ctx *c);
	uint16_t (*set)(struct sma_ctx *c, const uint8_t *in); /* NULL: Get only */
};

static bool is_switch(const struct sib_fab_node *n)
{
	return n->type == SIB_NODE_SWITCH;
}

static struct sib_port_mgmt *pm_of(struct sib_fab_node *n, uint8_t pn)
{
	return &n->mgmt->port[pn];
}

/*
 * The port a per-port attribute addresses: on a switch the number given
 * (0..NumPorts); on a CA 0 means the port the SMP came in on.  false: none.
 */
static bool pick_port(const struct sma_ctx *c, uint32_t num, uint8_t *pn)
{
	if (!is_switch(c->n) && num == 0)
		num = c->in_port;
	if (num > c->n->num_ports || (!is_switch(c->n) && num == 0))
		return false;
	*pn = (uint8_t)num;
	return true;
}

/* Do LID, LMC, M_Key, MasterSMLID of this port mean anything?  CA ports and
 * switch port 0 only (14.2.5.6: a switch's external ports have none). */
static bool is_mgmt_port(const struct sib_fab_node *n, uint8_t pn)
{
	return !is_switch(n) || pn == 0;
}

/* The PortGUID of port pn (a CA's) or of a switch (port 0's, = its node
 * GUID when the file has none). */
static uint64_t port_guid(const struct sib_fab_node *n, uint8_t pn)
{
	if (is_switch(n))
		return n->ports[0].guid ? n->ports[0].guid : n->node_guid;
	return n->ports[pn].guid;
}

/* Is port pn of n the built-in SM's (default mode, LID SIB_SM_LID)?  Its
 * SMA then also answers SMInfo and represses traps (docs/subnet.md). */
static bool is_sm_port(const struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn)
{
	return !sn->sm_external && is_mgmt_port(n, pn) && pm_of(n, pn)->pi.lid == SIB_SM_LID;
}

/* ---- traps (14.2.5.1, 13.4.8.2) ----------------------------------------- */

/* Send Notice n from port pn of node to its master SM, LID-routed on QP0. */
static void send_trap(struct sib_subnet *sn, struct sib_fab_node *node, uint8_t pn, struct mad_notice *nt)
{
	const struct mad_port_info *pi = &pm_of(node, pn)->pi;
	uint8_t wire[MAD_SIZE];
	mai_mad_t m;

	if (!sn->mad_out || pi->master_sm_lid == 0 || pi->lid == 0) {
		sn->sma.traps_unsent++;
		return;
	}
	memset(wire, 0, sizeof(wire));
	mad_notice_encode(nt, wire + MAD_SMP_DATA_OFFS);
	memset(&m, 0, sizeof(m));
	m.type = MAI_TYPE_MAD;
	m.port = pn;
	m.qp = 0;
	m.remote_qpn = 0;
	m.data_len = MAI_MAD_DATA_SIZE;
	m.lrh.vl = 15;
	m.lrh.lver = 0;
	m.lrh.sl = pi->master_sm_sl;
	m.lrh.lnh = 2;
	m.lrh.dlid = pi->master_sm_lid;
	m.lrh.slid = pi->lid;
	m.base_version = MAD_BASE_VERSION;
	m.mgmt_class = MAD_MGMT_CLASS_SUBN_LID_ROUTED;
	m.class_version = MAD_SMP_CLASS_VERSION;
	m.method = MAD_METHOD_TRAP;
	m.tid = ++sn->trap_tid;
	m.attr_id = MAD_ATTR_NOTICE;
	m.attr_mod = 0;
	/* M_Key (bytes 24-31) is the port's own (14.2.4.3) */
	for (int i = 0; i < 8; i++)
		wire[24 + i] = (uint8_t)(pi->m_key >> (56 - 8 * i));
	memcpy(m.data, wire + MAD_HDR_SIZE, MAI_MAD_DATA_SIZE);
	sn->sma.traps_sent++;
	sn->mad_out(sn, node, pn, &m);
}

/* Trap 128 from switch sw: a port's link state changed. */
static void trap128(struct sib_subnet *sn, struct sib_fab_node *sw)
{
	struct mad_notice nt = {
		.is_generic = 1, .type = MAD_NOTICE_TYPE_URGENT,
		.producer_type = MAD_NOTICE_PROD_SWITCH, .trap_num = MAD_TRAP_LINK_STATE_CHANGE,
	};
	struct mad_trap128 t = { .lid = pm_of(sw, 0)->pi.lid };

	nt.issuer_lid = t.lid;
	mad_trap128_encode(&t, &nt);
	send_trap(sn, sw, 0, &nt);
}

/* Trap 144 from port pn: its CapabilityMask changed. */
static void trap144(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn)
{
	const struct mad_port_info *pi = &pm_of(n, pn)->pi;
	struct mad_notice nt = {
		.is_generic = 1, .type = MAD_NOTICE_TYPE_INFO,
		.producer_type = is_switch(n) ? MAD_NOTICE_PROD_SWITCH : MAD_NOTICE_PROD_CA,
		.trap_num = MAD_TRAP_LOCAL_CHANGES, .issuer_lid = pi->lid,
	};
	struct mad_trap144 t = { .lid = pi->lid, .capability_mask = pi->capability_mask };

	mad_trap144_encode(&t, &nt);
	send_trap(sn, n, pn, &nt);
}

void sib_sma_set_capability(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
			     uint32_t cap_bits, bool on)
{
	struct mad_port_info *pi;
	uint32_t old;

	if (!n->mgmt || port > n->num_ports || !is_mgmt_port(n, port) ||
	    (!is_switch(n) && port == 0))
		return;
	pi = &pm_of(n, port)->pi;
	old = pi->capability_mask;
	pi->capability_mask = on ? old | cap_bits : old & ~cap_bits;
	if (pi->capability_mask == old)
		return;
	sib_subnet_port_changed(sn, n, port, SIB_CHG_ATTR, pi->lid, pi->lmc);
	trap144(sn, n, port);
}

/* ---- the port state machine (7.2, 14.2.5.6) ----------------------------- */

/* The port's state moved to st (and phys to ph); what a change means.
 * lost: a LinkUp that ends here counts in LinkDownedCounter (the link
 * failed, rather than this port being told to go down). */
static void port_moved(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn, uint8_t st, uint8_t ph,
		       bool lost)
{
	struct mad_port_info *pi = &pm_of(n, pn)->pi;
	bool was_down = pi->port_state == MAD_PORT_STATE_DOWN;
	bool link_change;

	if (pi->port_state == st && pi->port_phys_state == ph)
		return;
	if (lost && pi->port_phys_state == MAD_PORT_PHYS_STATE_LINKUP &&
	    ph != MAD_PORT_PHYS_STATE_LINKUP)
		pm_of(n, pn)->pma.link_downed++;
	link_change = was_down != (st == MAD_PORT_STATE_DOWN);
	pi->port_state = st;
	pi->port_phys_state = ph;
	if (is_switch(n)) {
		/* 14.2.5.4: PortStateChange is set when a port goes Down <-> Init */
		if (link_change) {
			n->mgmt->sw->si.port_state_change = 1;
			trap128(sn, n);
		}
	} else {
		sib_subnet_port_changed(sn, n, pn, SIB_CHG_STATE, pi->lid, pi->lmc);
	}
	n->mgmt->route_gen++;
}

/* The highest bit of m (0 for none): LinkWidth 1X=1 4X=2 8X=4 12X=8 and
 * LinkSpeed SDR=1 DDR=2 QDR=4 both rank by bit (14.2.5.6). */
static uint8_t top_bit(uint8_t m)
{
	uint8_t b = 0x80;

	while (b && !(m & b))
		b >>= 1;
	return b;
}

/* Train the link of port pn: LinkUp and INIT at both ends, unless an end
 * is disabled, there is no peer, or the ends share no enabled (and
 * supported) width or speed.  Active width and speed: the highest both
 * ends enable (14.2.5.6 LinkWidthActive, LinkSpeedActive; a Set of
 * LinkWidth/SpeedEnabled takes effect here, at the next training).  The
 * built-in SM then activates it. */
static bool link_train(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn)
{
	struct sib_fab_port *peer = n->ports[pn].peer;
	struct mad_port_info *a = &pm_of(n, pn)->pi, *b;
	uint8_t width, speed;

	if (!peer || !peer->node->mgmt)
		return false;
	b = &pm_of(peer->node, peer->num)->pi;
	if (a->port_phys_state == MAD_PORT_PHYS_STATE_DISABLED ||
	    b->port_phys_state == MAD_PORT_PHYS_STATE_DISABLED ||
	    a->port_phys_state == MAD_PORT_PHYS_STATE_LINKUP)
		return false;
	width = top_bit(a->link_width_enabled & a->link_width_supported &
			b->link_width_enabled & b->link_width_supported);
	speed = top_bit(a->link_speed_enabled & a->link_speed_supported &
			b->link_speed_enabled & b->link_speed_supported);
	if (!width || !speed) {
		sn->sma.train_failed++;
		return false;
	}
	a->link_width_active = b->link_width_active = width;
	a->link_speed_active = b->link_speed_active = speed;
	port_moved(sn, n, pn, MAD_PORT_STATE_INIT, MAD_PORT_PHYS_STATE_LINKUP, false);
	port_moved(sn, peer->node, peer->num, MAD_PORT_STATE_INIT, MAD_PORT_PHYS_STATE_LINKUP, false);
	return true;
}

/* After a link came up: the default mode's SM brings it ACTIVE (at once:
 * softibd is its own SM, nothing to wait for). */
static void link_trained(struct sib_subnet *sn)
{
	sib_subnet_route_changed(sn);
	if (!sn->sm_external && !sn->sm_sweeping)
		sib_sm_sweep(sn);
}

void sib_sma_link_down(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn, enum sib_link_cause why)
{
	bool phys_disabled = why != SIB_LINK_RETRAIN;
	struct sib_fab_port *peer;

	if (!n->mgmt || pn == 0 || pn > n->num_ports)
		return;
	peer = n->ports[pn].peer;
	port_moved(sn, n, pn, MAD_PORT_STATE_DOWN,
		   phys_disabled ? MAD_PORT_PHYS_STATE_DISABLED : MAD_PORT_PHYS_STATE_POLLING,
		   why == SIB_LINK_LOST);
	if (peer && peer->node->mgmt &&
	    pm_of(peer->node, peer->num)->pi.port_phys_state != MAD_PORT_PHYS_STATE_DISABLED)
		port_moved(sn, peer->node, peer->num, MAD_PORT_STATE_DOWN,
			   MAD_PORT_PHYS_STATE_POLLING, why != SIB_LINK_RETRAIN);
	sib_subnet_route_changed(sn);
	if (!phys_disabled && link_train(sn, n, pn))
		link_trained(sn);
}

void sib_sma_link_up(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn)
{
	struct mad_port_info *pi;

	if (!n->mgmt || pn == 0 || pn > n->num_ports)
		return;
	pi = &pm_of(n, pn)->pi;
	if (pi->port_phys_state == MAD_PORT_PHYS_STATE_DISABLED)
		port_moved(sn, n, pn, MAD_PORT_STATE_DOWN, MAD_PORT_PHYS_STATE_POLLING, false);
	if (link_train(sn, n, pn))
		link_trained(sn);
}

/* ---- NodeInfo, NodeDescription (14.2.5.3, 14.2.5.2) ---------------------- */

static uint16_t node_info_get(struct sma_ctx *c)
{
	const struct sib_fab_node *n = c->n;
	struct mad_node_info ni = {
		.base_version = MAD_BASE_VERSION, .class_version = MAD_SMP_CLASS_VERSION,
		.node_type = (uint8_t)n->type, .num_ports = n->num_ports,
		.sys_guid = n->sys_image_guid, .node_guid = n->node_guid,
		.partition_cap = is_switch(n) ? SIB_SUBN_PKEYS : SIB_PKEY_TBL_LEN,
		.device_id = (uint16_t)n->device_id, .revision = 0,
		.local_port_num = c->in_port, .vendor_id = n->vendor_id & 0xFFFFFF,
	};

	if (c->mod)
		return MAD_STATUS_INVALID_FIELD;
	ni.port_guid = port_guid(n, c->in_port);
	mad_node_info_encode(&ni, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t node_desc_get(struct sma_ctx *c)
{
	struct mad_node_desc nd;

	if (c->mod)
		return MAD_STATUS_INVALID_FIELD;
	memset(&nd, 0, sizeof(nd));
	memcpy(nd.description, c->n->desc, strnlen(c->n->desc, sizeof(nd.description)));
	mad_node_desc_encode(&nd, c->out);
	return MAD_STATUS_SUCCESS;
}

/* ---- PortInfo (14.2.5.6) ------------------------------------------------ */

static uint16_t port_info_get(struct sma_ctx *c)
{
	struct mad_port_info pi;
	uint8_t pn;

	if (!pick_port(c, c->mod, &pn))
		return MAD_STATUS_INVALID_FIELD;
	pi = pm_of(c->n, pn)->pi;
	pi.local_port_num = c->in_port; /* "the port this SMP came in on" */
	/* 14.2.4.1: protect bits 1 hide the key from a Get without it */
	if (!c->key_ok)
		pi.m_key = 0;
	mad_port_info_encode(&pi, c->out);
	return MAD_STATUS_SUCCESS;
}

/* May PortState go from cur to want by a Set?  0 = no change; Down always;
 * Armed from Init; Active from Armed; Init never (the link does that). */
static bool state_set_ok(uint8_t cur, uint8_t want)
{
	switch (want) {
	case MAD_PORT_STATE_NOP:
	case MAD_PORT_STATE_DOWN:
		return true;
	case MAD_PORT_STATE_ARMED:
		return cur == MAD_PORT_STATE_INIT || cur == MAD_PORT_STATE_ARMED;
	case MAD_PORT_STATE_ACTIVE:
		return cur == MAD_PORT_STATE_ARMED || cur == MAD_PORT_STATE_ACTIVE;
	case MAD_PORT_STATE_INIT:
		return cur == MAD_PORT_STATE_INIT;
	default:
		return false;
	}
}

/* Is enabled a valid LinkWidth/SpeedEnabled for supported (all = "set to
 * supported", 0 = no change)? */
static bool enabled_ok(uint8_t want, uint8_t supported, uint8_t all)
{
	return want == 0 || want == all || !(want & ~supported);
}

/* Validate a PortInfo Set of port pn whole (14.2.5.6 access rules). */
static bool port_info_valid(const struct sib_fab_node *n, uint8_t pn,
			    const struct mad_port_info *cur, const struct mad_port_info *w)
{
	if (is_mgmt_port(n, pn)) {
		if (w->lid >= MAD_MLID_START ||
		    (w->lid && (uint32_t)w->lid + (1u << w->lmc) - 1 >= MAD_MLID_START))
			return false;
		if (w->master_sm_lid >= MAD_MLID_START)
			return false;
	}
	if (!state_set_ok(cur->port_state, w->port_state))
		return false;
	if (w->port_phys_state != 0 && w->port_phys_state != MAD_PORT_PHYS_STATE_POLLING &&
	    w->port_phys_state != MAD_PORT_PHYS_STATE_DISABLED)
		return false;
	if (w->link_down_default_state > 2)
		return false;
	if (!enabled_ok(w->link_width_enabled, cur->link_width_supported, 0xFF) ||
	    !enabled_ok(w->link_speed_enabled, cur->link_speed_supported, 0xF))
		return false;
	if (w->neighbor_mtu == 0 || w->neighbor_mtu > cur->mtu_cap)
		return false;
	if (w->operational_vls > cur->vl_cap)
		return false;
	return true;
}

static uint16_t port_info_set(struct sma_ctx *c, const uint8_t *in)
{
	struct sib_fab_node *n = c->n;
	struct mad_port_info w, *pi;
	unsigned int what = 0;
	uint16_t old_lid;
	uint8_t pn, old_lmc;

	if (!pick_port(c, c->mod, &pn))
		return MAD_STATUS_INVALID_FIELD;
	pi = &pm_of(n, pn)->pi;
	mad_port_info_decode(&w, in);
	if (!port_info_valid(n, pn, pi, &w))
		return MAD_STATUS_INVALID_FIELD;
	old_lid = pi->lid;
	old_lmc = pi->lmc;

	if (is_mgmt_port(n, pn)) {
		if (w.lid != pi->lid || w.lmc != pi->lmc) {
			pi->lid = w.lid;
			pi->lmc = w.lmc;
			n->ports[pn].lid = w.lid;
			n->ports[pn].lmc = w.lmc;
			what |= SIB_CHG_LID;
		}
		if (w.master_sm_lid != pi->master_sm_lid || w.master_sm_sl != pi->master_sm_sl) {
			pi->master_sm_lid = w.master_sm_lid;
			pi->master_sm_sl = w.master_sm_sl;
			what |= SIB_CHG_SM;
		}
		if (w.gid_prefix != pi->gid_prefix || w.subnet_timeout != pi->subnet_timeout)
			what |= SIB_CHG_ATTR;
		pi->m_key = w.m_key;
		pi->gid_prefix = w.gid_prefix;
		pi->m_key_lease_period = w.m_key_lease_period;
		pi->m_key_protect_bits = w.m_key_protect_bits;
		pi->subnet_timeout = w.subnet_timeout;
		pi->m_key_violations = w.m_key_violations;
		pi->p_key_violations = w.p_key_violations;
		pi->q_key_violations = w.q_key_violations;
		pi->init_type = w.init_type;
	}
	if (w.link_width_enabled)
		pi->link_width_enabled = w.link_width_enabled == 0xFF ? pi->link_width_supported
								    : w.link_width_enabled;
	if (w.link_speed_enabled)
		pi->link_speed_enabled = w.link_speed_enabled == 0xF ? pi->link_speed_supported
								   : w.link_speed_enabled;
	if (w.link_down_default_state)
		pi->link_down_default_state = w.link_down_default_state;
	if (w.neighbor_mtu != pi->neighbor_mtu)
		what |= SIB_CHG_ATTR;
	pi->neighbor_mtu = w.neighbor_mtu;
	if (w.operational_vls)
		pi->operational_vls = w.operational_vls;
	pi->vl_high_limit = w.vl_high_limit;
	pi->hoq_life = w.hoq_life;
	pi->vl_stall_count = w.vl_stall_count;
	pi->local_phy_errors = w.local_phy_errors;
	pi->overrun_errors = w.overrun_errors;
	pi->partition_enforcement_inbound = 0;  /* not enforced: */
	pi->partition_enforcement_outbound = 0; /* SwitchInfo says so */
	if (what)
		sib_subnet_port_changed(c->sn, n, pn, what, old_lid, old_lmc);
	if (what & SIB_CHG_LID)
		sib_subnet_route_changed(c->sn);

	/* the state machine last, so that a port goes ACTIVE with its new LID */
	if (pn != 0 || !is_switch(n)) {
		if (w.port_phys_state == MAD_PORT_PHYS_STATE_DISABLED) {
			sib_sma_link_down(c->sn, n, pn, SIB_LINK_DISABLED);
			return MAD_STATUS_SUCCESS;
		}
		if (w.port_phys_state == MAD_PORT_PHYS_STATE_POLLING &&
		    pi->port_phys_state == MAD_PORT_PHYS_STATE_DISABLED) {
			sib_sma_link_up(c->sn, n, pn);
			return MAD_STATUS_SUCCESS;
		}
		/* Polling on a live port, or Down: the link retrains (ibportstate reset) */
		if (w.port_state == MAD_PORT_STATE_DOWN ||
		    w.port_phys_state == MAD_PORT_PHYS_STATE_POLLING) {
			sib_sma_link_down(c->sn, n, pn, SIB_LINK_RETRAIN);
			return MAD_STATUS_SUCCESS;
		}
	}
	if ((w.port_state == MAD_PORT_STATE_ARMED || w.port_state == MAD_PORT_STATE_ACTIVE) &&
	    w.port_state != pi->port_state) {
		port_moved(c->sn, n, pn, w.port_state, pi->port_phys_state, false);
		sib_subnet_route_changed(c->sn);
	}
	return MAD_STATUS_SUCCESS;
}

/* ---- SwitchInfo (14.2.5.4) ----------------------------------------------- */

static uint16_t switch_info_get(struct sma_ctx *c)
{
	if (c->mod)
		return MAD_STATUS_INVALID_FIELD;
	mad_switch_info_encode(&c->n->mgmt->sw->si, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t switch_info_set(struct sma_ctx *c, const uint8_t *in)
{
	struct mad_switch_info *si = &c->n->mgmt->sw->si, w;

	if (c->mod)
		return MAD_STATUS_INVALID_FIELD;
	mad_switch_info_decode(&w, in);
	if (w.linear_fdb_top >= si->linear_fdb_cap)
		return MAD_STATUS_INVALID_FIELD;
	if (w.linear_fdb_top != si->linear_fdb_top) {
		si->linear_fdb_top = w.linear_fdb_top;
		c->n->mgmt->route_gen++;
		sib_subnet_route_changed(c->sn);
	}
	si->default_port = w.default_port;
	si->default_mcast_primary_port = w.default_mcast_primary_port;
	si->default_mcast_not_primary_port = w.default_mcast_not_primary_port;
	si->life_time_value = w.life_time_value;
	si->multicast_fdb_top = w.multicast_fdb_top;
	if (w.port_state_change) /* written 1: cleared */
		si->port_state_change = 0;
	return MAD_STATUS_SUCCESS;
}

/* ---- GUIDInfo, P_KeyTable (14.2.5.5, 14.2.5.7) ---------------------------- */

static uint16_t guid_info_get(struct sma_ctx *c)
{
	struct mad_guid_info gi;
	uint8_t pn = is_switch(c->n) ? 0 : c->in_port;

	if (c->mod) /* GUIDCap 1: block 0 only */
		return MAD_STATUS_INVALID_FIELD;
	memset(&gi, 0, sizeof(gi));
	gi.guid[0] = c->n->ports[pn].guid ? c->n->ports[pn].guid : c->n->node_guid;
	mad_guid_info_encode(&gi, c->out);
	return MAD_STATUS_SUCCESS;
}

/* P_KeyTable modifier: block in bits 15-0 (one block), port in 31-16. */
static bool pkey_port(const struct sma_ctx *c, uint8_t *pn)
{
	return (c->mod & 0xFFFF) == 0 && pick_port(c, c->mod >> 16, pn);
}

static uint16_t pkey_get(struct sma_ctx *c)
{
	struct mad_pkey_table t;
	uint8_t pn;

	if (!pkey_port(c, &pn))
		return MAD_STATUS_INVALID_FIELD;
	memcpy(t.pkey, pm_of(c->n, pn)->pkey, sizeof(t.pkey));
	mad_pkey_table_encode(&t, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t pkey_set(struct sma_ctx *c, const uint8_t *in)
{
	unsigned int cap = is_switch(c->n) ? SIB_SUBN_PKEYS : SIB_PKEY_TBL_LEN, i;
	struct sib_port_mgmt *pm;
	struct mad_pkey_table t;
	uint8_t pn;

	if (!pkey_port(c, &pn))
		return MAD_STATUS_INVALID_FIELD;
	pm = pm_of(c->n, pn);
	mad_pkey_table_decode(&t, in);
	for (i = 0; i < SIB_SUBN_PKEYS; i++) /* entries past PartitionCap stay 0 */
		pm->pkey[i] = i < cap ? t.pkey[i] : 0;
	if (!is_switch(c->n))
		sib_subnet_port_changed(c->sn, c->n, pn, SIB_CHG_ATTR, pm->pi.lid, pm->pi.lmc);
	return MAD_STATUS_SUCCESS;
}

/* ---- SLtoVLMappingTable, VLArbitrationTable (14.2.5.8, 14.2.5.9) --------- */

/* The 16-byte SL -> VL table the modifier names, allocating a switch's
 * tables on a Set; NULL for a bad modifier (or no memory). */
static uint8_t *sl2vl_table(struct sma_ctx *c, bool for_set)
{
	struct sib_switch_mgmt *sw = c->n->mgmt->sw;
	unsigned int in = (c->mod >> 8) & 0xFF, out = c->mod & 0xFF, np = c->n->num_ports + 1u;
	uint8_t pn;

	if (c->mod >> 16)
		return NULL;
	if (!is_switch(c->n))
		return pick_port(c, out, &pn) ? pm_of(c->n, pn)->sl2vl : NULL;
	if (in >= np || out >= np)
		return NULL;
	if (!sw->sl2vl && for_set) {
		sw->sl2vl = malloc((size_t)np * np * 16);
		if (!sw->sl2vl)
			return NULL;
		for (size_t i = 0; i < (size_t)np * np; i++)
			memcpy(sw->sl2vl + i * 16, pm_of(c->n, 0)->sl2vl, 16);
	}
	if (!sw->sl2vl)
		return pm_of(c->n, 0)->sl2vl; /* never set: the default */
	return sw->sl2vl + ((size_t)in * np + out) * 16;
}

static uint16_t sl2vl_get(struct sma_ctx *c)
{
	const uint8_t *t = sl2vl_table(c, false);
	struct mad_sl2vl s;

	if (!t)
		return MAD_STATUS_INVALID_FIELD;
	memcpy(s.vl, t, 16);
	mad_sl2vl_encode(&s, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t sl2vl_set(struct sma_ctx *c, const uint8_t *in)
{
	uint8_t *t = sl2vl_table(c, true);
	struct mad_sl2vl s;

	if (!t)
		return MAD_STATUS_INVALID_FIELD;
	mad_sl2vl_decode(&s, in);
	memcpy(t, s.vl, 16);
	return MAD_STATUS_SUCCESS;
}

/* VLArbitrationTable modifier: block 1..4 in bits 31-16, port in 7-0. */
static struct mad_vl_arb *vlarb_block(struct sma_ctx *c)
{
	uint32_t block = c->mod >> 16;
	uint8_t pn;

	if (block < 1 || block > 4 || (c->mod & 0xFF00) || !pick_port(c, c->mod & 0xFF, &pn))
		return NULL;
	return &pm_of(c->n, pn)->vlarb[block - 1];
}

static uint16_t vlarb_get(struct sma_ctx *c)
{
	struct mad_vl_arb *b = vlarb_block(c);

	if (!b)
		return MAD_STATUS_INVALID_FIELD;
	mad_vl_arb_encode(b, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t vlarb_set(struct sma_ctx *c, const uint8_t *in)
{
	struct mad_vl_arb *b = vlarb_block(c);

	if (!b)
		return MAD_STATUS_INVALID_FIELD;
	mad_vl_arb_decode(b, in);
	return MAD_STATUS_SUCCESS;
}

/* ---- LinearForwardingTable, MulticastForwardingTable (14.2.5.10, .12) ---- */

static uint16_t lft_get(struct sma_ctx *c)
{
	const struct sib_switch_mgmt *sw = c->n->mgmt->sw;
	struct mad_lft b;

	if (c->mod >= SIB_SUBN_LFT_CAP / MAD_LFT_BLOCK_SIZE)
		return MAD_STATUS_INVALID_FIELD;
	if (sw->lft)
		memcpy(b.port, sw->lft + c->mod * MAD_LFT_BLOCK_SIZE, MAD_LFT_BLOCK_SIZE);
	else
		memset(b.port, MAD_LFT_NO_PATH, MAD_LFT_BLOCK_SIZE);
	mad_lft_encode(&b, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t lft_set(struct sma_ctx *c, const uint8_t *in)
{
	struct sib_switch_mgmt *sw = c->n->mgmt->sw;
	struct mad_lft b;

	if (c->mod >= SIB_SUBN_LFT_CAP / MAD_LFT_BLOCK_SIZE)
		return MAD_STATUS_INVALID_FIELD;
	if (!sib_subnet_lft(sw))
		return MAD_STATUS_BUSY;
	mad_lft_decode(&b, in);
	if (memcmp(sw->lft + c->mod * MAD_LFT_BLOCK_SIZE, b.port, MAD_LFT_BLOCK_SIZE)) {
		memcpy(sw->lft + c->mod * MAD_LFT_BLOCK_SIZE, b.port, MAD_LFT_BLOCK_SIZE);
		c->n->mgmt->route_gen++;
		sib_subnet_route_changed(c->sn);
	}
	return MAD_STATUS_SUCCESS;
}

/* MFT modifier: position (16 ports each) in bits 31-28, block of 32 MLIDs
 * in bits 8-0; the rest reserved.  The index of entry 0 of the block, or -1. */
static long mft_index(const struct sma_ctx *c, unsigned int *npos)
{
	const struct sib_switch_mgmt *sw = c->n->mgmt->sw;
	uint32_t pos = c->mod >> 28, block = c->mod & 0x1FF;

	*npos = sib_subnet_mft_positions(c->n);
	if ((c->mod & 0x0FFFFE00) || pos >= *npos ||
	    (block + 1) * MAD_MFT_BLOCK_SIZE > sw->si.multicast_fdb_cap)
		return -1;
	return (long)block * MAD_MFT_BLOCK_SIZE * *npos + pos;
}

static uint16_t mft_get(struct sma_ctx *c)
{
	const struct sib_switch_mgmt *sw = c->n->mgmt->sw;
	struct mad_mft b;
	unsigned int npos, i;
	long at = mft_index(c, &npos);

	if (at < 0)
		return MAD_STATUS_INVALID_FIELD;
	for (i = 0; i < MAD_MFT_BLOCK_SIZE; i++)
		b.port_mask[i] = sw->mft ? sw->mft[at + (long)i * npos] : 0;
	mad_mft_encode(&b, c->out);
	return MAD_STATUS_SUCCESS;
}

static uint16_t mft_set(struct sma_ctx *c, const uint8_t *in)
{
	struct sib_switch_mgmt *sw = c->n->mgmt->sw;
	struct mad_mft b;
	unsigned int npos, i;
	long at = mft_index(c, &npos);
	bool changed = false;

	if (at < 0)
		return MAD_STATUS_INVALID_FIELD;
	if (!sw->mft) {
		sw->mft = calloc((size_t)sw->si.multicast_fdb_cap * npos, sizeof(*sw->mft));
		if (!sw->mft)
			return MAD_STATUS_BUSY;
	}
	mad_mft_decode(&b, in);
	for (i = 0; i < MAD_MFT_BLOCK_SIZE; i++) {
		changed |= sw->mft[at + (long)i * npos] != b.port_mask[i];
		sw->mft[at + (long)i * npos] = b.port_mask[i];
	}
	if (changed) {
		c->n->mgmt->route_gen++;
		sib_subnet_route_changed(c->sn);
	}
	return MAD_STATUS_SUCCESS;
}

/* ---- SMInfo of the built-in SM (14.2.5.13) -------------------------------- */

/* Only on the SM's port (the dispatcher checks is_sm_port): MASTER, SM_Key 0,
 * Priority SIB_SM_PRIORITY, ActCount = SMPs it sent and traps it repressed.
 * No Set: it neither hands over nor steps down (0x000C). */
static uint16_t sm_info_get(struct sma_ctx *c)
{
	const struct sib_fab_node *n = c->n;
	struct mad_sm_info si = {
		.act_count = c->sn->sm_act_count, .priority = SIB_SM_PRIORITY,
		.sm_state = MAD_SMINFO_STATE_MASTER,
	};

	if (c->mod)
		return MAD_STATUS_INVALID_FIELD;
	si.guid = port_guid(n, c->in_port);
	mad_sm_info_encode(&si, c->out);
	return MAD_STATUS_SUCCESS;
}

/* ---- the table and the dispatcher --------------------------------------- */

static const struct sma_attr sma_attrs[] = {
	{ MAD_ATTR_NODE_DESC, false, node_desc_get, NULL },
	{ MAD_ATTR_NODE_INFO, false, node_info_get, NULL },
	{ MAD_ATTR_SWITCH_INFO, true, switch_info_get, switch_info_set },
	{ MAD_ATTR_GUID_INFO, false, guid_info_get, NULL },
	{ MAD_ATTR_PORT_INFO, false, port_info_get, port_info_set },
	{ MAD_ATTR_P_KEY_TABLE, false, pkey_get, pkey_set },
	{ MAD_ATTR_SLVL_TABLE, false, sl2vl_get, sl2vl_set },
	{ MAD_ATTR_VL_ARBITRATION, false, vlarb_get, vlarb_set },
	{ MAD_ATTR_LIN_FWD_TBL, true, lft_get, lft_set },
	{ MAD_ATTR_MCAST_FWD_TBL, true, mft_get, mft_set },
	{ MAD_ATTR_SM_INFO, false, sm_info_get, NULL }, /* the SM's port only */
};

static const struct sma_attr *find_attr(uint16_t id)
{
	for (size_t i = 0; i < sizeof(sma_attrs) / sizeof(sma_attrs[0]); i++)
		if (sma_attrs[i].id == id)
			return &sma_attrs[i];
	return NULL;
}

/*
 * M_Key check (14.2.4.1-2): an SMP passes if the port has no key (0) or the
 * SMP carries it.  Otherwise Set and TrapRepress fail, and so does Get when
 * the protect bits are 2 or 3; a failing SMP is dropped without a reply and
 * counted in M_KeyViolations.  The key is port 0's on a switch, the
 * receiving port's on a CA.  Lease periods are not run (the key never
 * expires).
 */
static bool m_key_passes(struct sma_ctx *c, uint8_t method)
{
	struct mad_port_info *pi = &pm_of(c->n, is_switch(c->n) ? 0 : c->in_port)->pi;

	c->key_ok = pi->m_key == 0 || pi->m_key == c->m_key;
	if (c->key_ok || (method == MAD_METHOD_GET && pi->m_key_protect_bits < 2)) {
		if (pi->m_key_protect_bits == 0)
			c->key_ok = true; /* protect bits 0: Get shows the key */
		return true;
	}
	if (pi->m_key_violations < 0xFFFF)
		pi->m_key_violations++;
	c->sn->sma.m_key_violations++;
	return false;
}

static int reply(uint8_t *resp, const uint8_t *req, const uint8_t *data, uint16_t status)
{
	if (resp != req)
		memcpy(resp, req, MAD_SIZE);
	if (data)
		memcpy(resp + MAD_SMP_DATA_OFFS, data, MAD_SMP_DATA_SIZE);
	return mad_make_reply(resp, status) ? 0 : 1;
}

int sib_sma_process(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t in_port,
		     const uint8_t *req, uint8_t *resp)
{
	uint8_t out[MAD_SMP_DATA_SIZE], in[MAD_SMP_DATA_SIZE];
	const struct sma_attr *a;
	struct sma_ctx c;
	struct mad_hdr h;
	uint16_t st;

	mad_hdr_decode(&h, req);
	if ((h.mgmt_class != MAD_MGMT_CLASS_SUBN_LID_ROUTED &&
	     h.mgmt_class != MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE) || !n->mgmt ||
	    in_port > n->num_ports || (!is_switch(n) && in_port == 0)) {
		sn->sma.dropped++;
		return 0;
	}
	if (h.r) { /* a response: nobody here asked */
		sn->sma.dropped++;
		return 0;
	}
	if (h.method == MAD_METHOD_TRAP_REPRESS) { /* the SM saw our trap */
		sn->sma.trap_represses++;
		return 0;
	}
	if (h.method == MAD_METHOD_TRAP) {
		/* a manager represses a trap (13.4.8.2): the built-in SM's port
		 * does; any other SMA is no manager and drops it, counted */
		if (!is_sm_port(sn, n, is_switch(n) ? 0 : in_port)) {
			sn->sma.dropped++;
			return 0;
		}
		sn->sma.sm_traps++;
		sn->sm_act_count++;
		sib_sa_trap(sn, req); /* to the InformInfo subscribers */
		return reply(resp, req, NULL, MAD_STATUS_SUCCESS); /* -> TrapRepress */
	}
	if (h.base_version != MAD_BASE_VERSION || h.class_version != MAD_SMP_CLASS_VERSION) {
		sn->sma.bad_version++;
		return reply(resp, req, NULL, MAD_STATUS_BAD_VERSION);
	}
	if (h.method != MAD_METHOD_GET && h.method != MAD_METHOD_SET) {
		sn->sma.unsupported++;
		return reply(resp, req, NULL, MAD_STATUS_UNSUP_METHOD);
	}
	memset(&c, 0, sizeof(c));
	c.sn = sn;
	c.n = n;
	c.in_port = in_port;
	c.mod = h.attr_mod;
	c.out = out;
	for (int i = 0; i < 8; i++)
		c.m_key = c.m_key << 8 | req[24 + i];
	if (!m_key_passes(&c, h.method))
		return 0;
	a = find_attr(h.attr_id);
	if (a && a->id == MAD_ATTR_SM_INFO && !is_sm_port(sn, n, is_switch(n) ? 0 : in_port))
		a = NULL; /* SMInfo is an SM's, not an SMA's (an external SM answers it) */
	if (!a || (a->switch_only && !is_switch(n)) || (h.method == MAD_METHOD_SET && !a->set)) {
		sn->sma.unsupported++;
		return reply(resp, req, NULL, MAD_STATUS_UNSUP_METHOD_ATTR);
	}
	memcpy(in, req + MAD_SMP_DATA_OFFS, sizeof(in));
	memset(out, 0, sizeof(out));
	st = h.method == MAD_METHOD_SET ? a->set(&c, in) : MAD_STATUS_SUCCESS;
	if (st == MAD_STATUS_SUCCESS)
		st = a->get(&c);
	if (st == MAD_STATUS_INVALID_FIELD)
		sn->sma.invalid_field++;
	sn->sma.smps++;
	return reply(resp, req, st == MAD_STATUS_SUCCESS ? out : NULL, st);
}
