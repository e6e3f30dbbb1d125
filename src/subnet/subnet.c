// SPDX-License-Identifier: MIT
/*
 * The managed subnet's storage (subnet.h): every node's SMA/PMA state with
 * the values a freshly powered fabric has (IBA 1.4 vol 1, 14.2.5.4
 * SwitchInfo, 14.2.5.6 PortInfo, 14.2.5.7 P_KeyTable) and LID routing through
 * the switches' linear forwarding tables (18.2.4.3.2); and the context
 * itself (struct sib_subnet, subnet_int.h: made, freed, --sm external).
 * Never programs anything: the SM (built-in or external) does, through
 * sma.c.  Pure data, no I/O; softibd is single-threaded, so no locks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "subnet/subnet.h"
#include "subnet/subnet_int.h"

#define GID_PREFIX_DEFAULT  0xfe80000000000000ull  /* IBA 4.1.1 link-local */
#define WIDTH_1X_4X         3    /* LinkWidthSupported/Enabled: 1X or 4X */
#define WIDTH_1X            1    /* LinkWidthActive: 1X, 4X */
#define WIDTH_4X            2
#define SPEED_SDR_DDR_QDR   7    /* LinkSpeedSupported/Enabled: 2.5, 5, 10 Gb/s */
#define SPEED_SDR           1    /* LinkSpeedActive: 2.5, 10 Gb/s */
#define SPEED_QDR           4
#define VLCAP_VL0_7         4    /* VLCap: VL0-7 */
#define OPVLS_VL0           1    /* OperationalVLs after reset: VL0 only */
#define VLARB_CAP           8    /* VLArbitrationHigh/LowCap: entries supported */
#define RESP_TIME_VALUE     8    /* 4.096 us * 2^8 ~ 1 ms: the SMA answers at once */
#define LINK_DOWN_POLLING   2    /* LinkDownDefaultState */
#define SW_LIFE_TIME        18   /* SwitchInfo.LifeTimeValue: 4.096 us * 2^18 ~ 1 s */
#define CA_PARTITION_CAP    16   /* = SIB_PKEY_TBL_LEN, what verbs shows */

/*
 * MulticastFDBCap: 0x4000, every multicast LID (0xC000..0xFFFE; the last
 * entry, 0xFFFF, is the permissive LID and never used).  Verbs clients
 * pick any MLID for ibv_attach_mcast, and the default mode's SM programs
 * all of them; OpenSM limits itself to the smallest cap of the fabric.
 * A 36-port switch's table (3 positions) is 96 KiB, allocated only on the
 * first MFT Set.
 */
#define SW_MCAST_FDB_CAP    0x4000

/*
 * PortInfo.CapabilityMask of a CA port, only what is true (14.2.5.6 table
 * 146): the SMA sends traps (128/144 through the MAD router),
 * SLtoVLMappingTable is served, SystemImageGUID is set.  Not claimed:
 * IsNoticeSupported (no Notice attribute), IsCommunicationManagement (no CM
 * on QP1), IsClientReregistration (no CLIENT_REREGISTER event to deliver).
 * IsSM belongs to the port an SM runs on (sib_sma_set_capability).
 */
#define CA_CAP_MASK   (MAD_PORT_CAP_IS_TRAP_SUP | MAD_PORT_CAP_IS_SL_MAP_SUP | \
		       MAD_PORT_CAP_IS_SYS_IMAGE_GUID_SUP)
/* Switch port 0 (base SP0) sends traps 128 and serves SLtoVL too. */
#define SW0_CAP_MASK  CA_CAP_MASK

/* The PortInfo of port pn of n after power-on. */
static void port_defaults(const struct sib_fab_node *n, unsigned int pn, struct sib_port_mgmt *pm)
{
	const struct sib_fab_port *fp = &n->ports[pn];
	struct mad_port_info *pi = &pm->pi;
	bool sw = n->type == SIB_NODE_SWITCH;
	bool linked = fp->peer != NULL || (sw && pn == 0);
	unsigned int sl;

	memset(pm, 0, sizeof(*pm));
	pi->gid_prefix = GID_PREFIX_DEFAULT;
	if (!sw)
		pi->capability_mask = CA_CAP_MASK;
	else if (pn == 0)
		pi->capability_mask = SW0_CAP_MASK;
	pi->local_port_num = (uint8_t)pn;
	pi->link_width_supported = WIDTH_1X_4X;
	pi->link_width_enabled = WIDTH_1X_4X;
	pi->link_width_active = linked ? WIDTH_4X : WIDTH_1X;
	pi->link_speed_supported = SPEED_SDR_DDR_QDR;
	pi->link_speed_enabled = SPEED_SDR_DDR_QDR;
	pi->link_speed_active = linked ? SPEED_QDR : SPEED_SDR;
	pi->port_state = linked ? MAD_PORT_STATE_INIT : MAD_PORT_STATE_DOWN;
	pi->port_phys_state = linked ? MAD_PORT_PHYS_STATE_LINKUP : MAD_PORT_PHYS_STATE_POLLING;
	pi->link_down_default_state = LINK_DOWN_POLLING;
	pi->neighbor_mtu = MAD_MTU_4096;
	pi->mtu_cap = MAD_MTU_4096;
	pi->vl_cap = VLCAP_VL0_7;
	pi->operational_vls = OPVLS_VL0;
	pi->vl_arbitration_high_cap = VLARB_CAP;
	pi->vl_arbitration_low_cap = VLARB_CAP;
	pi->guid_cap = (!sw || pn == 0) ? 1 : 0;
	pi->resp_time_value = RESP_TIME_VALUE;
	pm->pkey[0] = 0xFFFF; /* the default partition, full member */
	for (sl = 0; sl < 16; sl++)
		pm->sl2vl[sl] = (uint8_t)(sl & 7); /* SL i -> VL i mod 8 */
}

static void switch_defaults(struct sib_switch_mgmt *sw)
{
	struct mad_switch_info *si = &sw->si;

	memset(si, 0, sizeof(*si));
	si->linear_fdb_cap = SIB_SUBN_LFT_CAP;
	si->random_fdb_cap = 0;
	si->multicast_fdb_cap = SW_MCAST_FDB_CAP;
	si->linear_fdb_top = 0;
	si->default_port = 0;
	si->default_mcast_primary_port = 0;
	si->default_mcast_not_primary_port = 0;
	si->life_time_value = SW_LIFE_TIME;
	si->port_state_change = 0;
	si->lids_per_port = 0;
	si->partition_enforcement_cap = SIB_SUBN_PKEYS; /* tables exist, */
	si->inbound_enforcement_cap = 0;                /* but are not enforced */
	si->outbound_enforcement_cap = 0;
	si->enhanced_port0 = 0;                         /* base SP0 */
}

void sib_subnet_node_free(struct sib_fab_node *n)
{
	struct sib_node_mgmt *m = n->mgmt;

	if (!m)
		return;
	if (m->sw) {
		free(m->sw->lft);
		free(m->sw->mft);
		free(m->sw->sl2vl);
		free(m->sw);
	}
	free(m->port);
	free(m);
	n->mgmt = NULL;
}

int sib_subnet_node_init(struct sib_fab_node *n)
{
	struct sib_node_mgmt *m;
	unsigned int pn;

	if (n->mgmt)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	n->mgmt = m;
	m->port = calloc((size_t)n->num_ports + 1, sizeof(*m->port));
	if (n->type == SIB_NODE_SWITCH)
		m->sw = calloc(1, sizeof(*m->sw));
	if (!m->port || (n->type == SIB_NODE_SWITCH && !m->sw)) {
		sib_subnet_node_free(n);
		return -ENOMEM;
	}
	for (pn = 0; pn <= n->num_ports; pn++) {
		port_defaults(n, pn, &m->port[pn]);
		n->ports[pn].lid = 0;
		n->ports[pn].lmc = 0;
	}
	if (m->sw)
		switch_defaults(m->sw);
	return 0;
}

int sib_subnet_init(struct sib_fabric *f)
{
	unsigned int i;
	int ret;

	for (i = 0; i < f->n_nodes; i++) {
		ret = sib_subnet_node_init(f->nodes[i]);
		if (ret) {
			sib_subnet_free(f);
			return ret;
		}
	}
	return 0;
}

void sib_subnet_free(struct sib_fabric *f)
{
	unsigned int i;

	for (i = 0; i < f->n_nodes; i++)
		sib_subnet_node_free(f->nodes[i]);
}

/* ---- LID routing ------------------------------------------------------- */

bool sib_subnet_owns(const struct mad_port_info *pi, uint16_t lid)
{
	uint32_t base = pi->lid, n = 1u << (pi->lmc & 7);

	return base != 0 && lid >= base && lid < base + n;
}

/* May a packet leave (egress) or enter (ingress) port pi?  IBA 7.2: data
 * leaves ACTIVE ports only and is taken in ARMED or ACTIVE; VL15 SMPs pass
 * any port at least INIT. */
static bool state_passes(const struct mad_port_info *pi, bool vl15, bool egress)
{
	uint8_t s = pi->port_state;

	if (vl15)
		return s >= MAD_PORT_STATE_INIT && s <= MAD_PORT_STATE_ACTIVE;
	return s == MAD_PORT_STATE_ACTIVE || (!egress && s == MAD_PORT_STATE_ARMED);
}

static const struct mad_port_info *pinfo(const struct sib_fab_port *p)
{
	return &p->node->mgmt->port[p->num].pi;
}

/* The egress port a switch's LFT gives for dlid, or MAD_LFT_NO_PATH. */
static uint8_t lft_lookup(const struct sib_fab_node *sw, uint16_t dlid)
{
	const struct sib_switch_mgmt *s = sw->mgmt->sw;

	if (!s->lft || dlid > s->si.linear_fdb_top) /* 14.2.5.4: above the top is dropped */
		return MAD_LFT_NO_PATH;
	return s->lft[dlid];
}

static struct sib_route stop(enum sib_route_verdict v, const struct sib_fab_node *n, uint8_t port,
			     uint16_t hops)
{
	struct sib_route r = {
		.verdict = v, .at = (struct sib_fab_node *)n, .at_port = port, .hops = hops,
	};

	return r;
}

static struct sib_route arrived(const struct sib_fab_node *n, uint8_t port, uint16_t hops)
{
	struct sib_route r = {
		.verdict = SIB_ROUTE_OK, .node = (struct sib_fab_node *)n, .port = port, .hops = hops,
	};

	return r;
}

struct sib_route sib_subnet_route(const struct sib_fabric *f, const struct sib_fab_node *src,
				  uint8_t src_port, uint16_t dlid, bool vl15)
{
	const struct sib_fab_node *n = src;
	const struct sib_fab_port *out, *in;
	unsigned int switches = 0;
	uint16_t hops = 0;
	uint8_t e;

	(void)f;
	if (dlid == 0 || dlid >= MAD_MLID_START)
		return stop(SIB_ROUTE_BAD_LID, src, src_port, 0);
	if (!src->mgmt || src_port > src->num_ports ||
	    (src->type != SIB_NODE_SWITCH && src_port == 0))
		return stop(SIB_ROUTE_SRC_DOWN, src, src_port, 0);

	if (src->type == SIB_NODE_SWITCH && src_port == 0) {
		/* Switch port 0 is internal: always up; its LFT picks the way. */
		if (sib_subnet_owns(pinfo(&src->ports[0]), dlid))
			return arrived(src, 0, 0);
		e = lft_lookup(src, dlid);
		if (e == MAD_LFT_NO_PATH || e > src->num_ports)
			return stop(SIB_ROUTE_LFT_MISS, src, 0, 0);
		if (e == 0)
			return stop(SIB_ROUTE_NO_OWNER, src, 0, 0);
		switches = 1;
	} else {
		const struct mad_port_info *pi = pinfo(&src->ports[src_port]);

		if (pi->port_phys_state != MAD_PORT_PHYS_STATE_LINKUP ||
		    !state_passes(pi, vl15, true))
			return stop(SIB_ROUTE_SRC_DOWN, src, src_port, 0);
		if (sib_subnet_owns(pi, dlid))
			return arrived(src, src_port, 0);
		e = src_port;
	}

	for (;;) {
		out = &n->ports[e];
		in = out->peer;
		if (!in || !in->node->mgmt ||
		    pinfo(out)->port_phys_state != MAD_PORT_PHYS_STATE_LINKUP ||
		    pinfo(in)->port_phys_state != MAD_PORT_PHYS_STATE_LINKUP)
			return stop(SIB_ROUTE_LINK_DOWN, n, e, hops);
		if (!state_passes(pinfo(out), vl15, true))
			return stop(SIB_ROUTE_PORT_STATE, n, e, hops);
		hops++;
		n = in->node;
		if (!state_passes(pinfo(in), vl15, false))
			return stop(SIB_ROUTE_PORT_STATE, n, in->num, hops);
		if (n->type != SIB_NODE_SWITCH) {
			if (sib_subnet_owns(pinfo(in), dlid))
				return arrived(n, in->num, hops);
			return stop(SIB_ROUTE_NO_OWNER, n, in->num, hops);
		}
		if (sib_subnet_owns(pinfo(&n->ports[0]), dlid))
			return arrived(n, 0, hops);
		if (++switches > SIB_SUBN_MAX_HOPS)
			return stop(SIB_ROUTE_LOOP, n, in->num, hops);
		e = lft_lookup(n, dlid);
		if (e == MAD_LFT_NO_PATH || e > n->num_ports)
			return stop(SIB_ROUTE_LFT_MISS, n, in->num, hops);
		if (e == 0)
			return stop(SIB_ROUTE_NO_OWNER, n, 0, hops);
	}
}

/* ---- multicast routes (IBA 18.2.4.3.3) ---- */

static const struct mad_port_info *mcast_pi(const struct sib_fab_node *n, uint8_t port)
{
	return n->mgmt && port <= n->num_ports ? &n->mgmt->port[port].pi : NULL;
}

/* A port that passes data (IBA 7.2: ACTIVE, the link up). */
static bool port_active(const struct sib_fab_node *n, uint8_t port)
{
	const struct mad_port_info *pi = mcast_pi(n, port);

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
	uint32_t npos = sib_subnet_mft_positions(sw), idx = mlid - MAD_MLID_START;

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

int sib_subnet_mcast_route(const struct sib_fabric *f, const struct sib_fab_node *src,
			   uint8_t port, uint16_t mlid,
			   void (*reach)(void *ctx, const struct sib_fab_node *n, uint8_t port),
			   void *ctx)
{
	static uint64_t walks; /* the host's thread only */
	const struct sib_fab_port *first, **queue;
	unsigned int head = 0, tail = 0;
	uint64_t walk = ++walks;
	int rc = 0;

	reach(ctx, src, port);
	if (!port_active(src, port))
		return SIB_ROUTE_SRC_DOWN;
	first = cross(src, port);
	if (!first)
		return 0; /* nobody else */
	if (first->node->type != SIB_NODE_SWITCH) {
		reach(ctx, first->node, first->num);
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
				reach(ctx, peer->node, peer->num);
				continue;
			}
			if (!mark(walk, peer->node) && tail < f->n_nodes)
				queue[tail++] = peer;
		}
	}
	free(queue);
	return rc;
}

const char *sib_route_verdict_str(enum sib_route_verdict v)
{
	static const char *const names[] = {
		[SIB_ROUTE_OK] = "ok",
		[SIB_ROUTE_BAD_LID] = "bad_lid",
		[SIB_ROUTE_SRC_DOWN] = "src_down",
		[SIB_ROUTE_LINK_DOWN] = "link_down",
		[SIB_ROUTE_LFT_MISS] = "lft_miss",
		[SIB_ROUTE_PORT_STATE] = "port_state",
		[SIB_ROUTE_NO_OWNER] = "no_owner",
		[SIB_ROUTE_LOOP] = "loop",
	};

	return (unsigned int)v < sizeof(names) / sizeof(names[0]) && names[v] ? names[v] : "?";
}

uint8_t *sib_subnet_lft(struct sib_switch_mgmt *sw)
{
	if (!sw->lft) {
		sw->lft = malloc(SIB_SUBN_LFT_CAP);
		if (sw->lft)
			memset(sw->lft, MAD_LFT_NO_PATH, SIB_SUBN_LFT_CAP);
	}
	return sw->lft;
}

int sib_subnet_lft_entry_set(struct sib_switch_mgmt *sw, uint16_t lid, uint8_t port)
{
	uint8_t *lft = lid < SIB_SUBN_LFT_CAP ? sib_subnet_lft(sw) : NULL;

	if (!lft)
		return lid < SIB_SUBN_LFT_CAP ? -ENOMEM : -EINVAL;
	lft[lid] = port;
	if (lid > sw->si.linear_fdb_top)
		sw->si.linear_fdb_top = lid;
	return 0;
}

/* ---- the context (subnet_api.h; here, with the storage, so that a test
 * linking the router alone has it) ---------------------------------------- */

struct sib_subnet *sib_subnet_new(const struct sib_subnet_host *h, void *host_ctx)
{
	struct sib_subnet *sn = calloc(1, sizeof(*sn));

	if (sn) {
		sn->host = h;
		sn->host_ctx = host_ctx;
	}
	return sn;
}

void sib_subnet_delete(struct sib_subnet *sn)
{
	if (sn) { /* (unload did, unless the fabric was freed by hand) */
		sib_sa_mcast_free(sn);
		sib_cm_free(sn);
	}
	free(sn);
}

void sib_subnet_set_sm_external(struct sib_subnet *sn, bool external)
{
	sn->sm_external = external;
}

bool sib_subnet_sm_external(const struct sib_subnet *sn)
{
	return sn->sm_external;
}
