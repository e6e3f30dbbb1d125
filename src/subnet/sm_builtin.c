// SPDX-License-Identifier: MIT
/*
 * The default mode's subnet manager: one sweep as a real SM makes it
 * (IBA 1.4 vol 1, 14.4 subnet management, the state sequence of 7.2:
 * INIT -> ARMED -> ACTIVE), in phases (discover, LIDs, LFTs, MFTs, ports
 * up).  It is a MAI agent (channel SIB_MAD_CHAN_SM): every Get/Set is a
 * directed-route SMP from its own port through the MAD router to the
 * node's SMA and back, so that both modes program the same tables the
 * same way and an SA has one place to live beside it.  Reads the subnet
 * state only to plan (what an SM keeps in its database).  Must not run
 * with --sm external.  Single-threaded; no locks.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subnet/sa_int.h"
#include "subnet/sma.h"
#include "subnet/subnet_int.h"

#define SM_SUBNET_TIMEOUT 18 /* 4.096 us * 2^18 ~ 1.07 s, as before */

struct sweep {
	struct sib_subnet *sn;
	int errors;
	bool local;        /* SMPs of hop count 0 from the node's own port (a
	                      local tool's); else from the SM's port by the
	                      directed route discovery found */
};

/* ---- the SM as a MAI agent: SMPs through the MAD router ------------------ */

/* The answer to the SMP in flight, by TID (channel SIB_MAD_CHAN_SM). */
void sib_sm_receive(struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port,
		    const mai_mad_t *m)
{
	if (m->mgmt_class == MAD_MGMT_CLASS_SUBN_ADM) {
		/* a subscriber's ReportResp to the SA's Report (sa_inform.c),
		 * at the SM's port only (anything else there is dropped) */
		if (m->method == MAD_METHOD_REPORT_RESP && n == sn->sm.node &&
		    (port == sn->sm.port || n->type == SIB_NODE_SWITCH))
			sib_sa_report_resp(sn, m);
		return;
	}
	if (!sn->sm.tid || m->tid != sn->sm.tid || sn->sm.answered)
		return;
	if (mai_towire(m, sn->sm.reply, sizeof(sn->sm.reply)) == MAD_SIZE)
		sn->sm.answered = true;
}

/*
 * One DR SMP (class 0x81, DrSLID = DrDLID permissive) with HopCount hops
 * and InitialPath path[1..hops], leaving node `from` by port `out`, sent
 * through the MAD router as a MAI agent sends: its TID carries the SM's
 * channel, so the router hands the GetResp back to sib_sm_receive.  data
 * (64 bytes) in and out.  The reply's status, or -1 (no reply).
 */
static int smp_dr(struct sweep *s, struct sib_fab_node *from, uint8_t out, uint8_t hops,
		  const uint8_t *path, uint8_t method, uint16_t attr, uint32_t mod, uint8_t *data)
{
	struct sib_subnet *sn = s->sn;
	uint8_t wire[MAD_SIZE];
	struct mad_smp m;
	struct mad_hdr h;
	mai_mad_t mm;

	memset(&m, 0, sizeof(m));
	m.hdr.base_version = MAD_BASE_VERSION;
	m.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	m.hdr.class_version = MAD_SMP_CLASS_VERSION;
	m.hdr.method = method;
	m.hdr.tid = (uint64_t)SIB_MAD_CHAN_SM << MAI_TID_CHAN_SHIFT |
		    (++sn->trap_tid & ((1ull << MAI_TID_CHAN_SHIFT) - 1));
	m.hdr.attr_id = attr;
	m.hdr.attr_mod = mod;
	m.hop_cnt = hops;
	m.dr_slid = m.dr_dlid = MAD_PERMISSIVE_LID;
	memcpy(m.initial_path, path, (size_t)hops + 1);
	memcpy(m.data, data, MAD_SMP_DATA_SIZE);
	mad_smp_encode(&m, wire);
	memset(&mm, 0, sizeof(mm));
	if (mai_fromwire(wire, sizeof(wire), &mm) != MAD_SIZE) {
		s->errors++;
		return -1;
	}
	mm.type = MAI_TYPE_MAD;
	mm.port = out;
	mm.qp = 0;
	mm.data_len = MAI_MAD_DATA_SIZE;
	mm.lrh.slid = mm.lrh.dlid = MAD_PERMISSIVE_LID;
	sn->sm_act_count++;
	sn->sm.tid = m.hdr.tid;
	sn->sm.answered = false;
	sib_mad_send(sn, from, out, &mm);
	sn->sm.tid = 0;
	if (!sn->sm.answered) {
		s->errors++;
		return -1;
	}
	mad_hdr_decode(&h, sn->sm.reply);
	memcpy(data, sn->sm.reply + MAD_SMP_DATA_OFFS, MAD_SMP_DATA_SIZE);
	return h.status & 0x7FFF; /* without the D bit (DR SMPs, 14.2.1.2) */
}

/* One SMP from the SM to node n's SMA: data (64 bytes) in and out.  In a
 * local sweep it leaves n's own port in_port with hop count 0; else it
 * leaves the SM's port by the route discovery found (-1 if none).  The
 * reply's status, or -1 (no reply). */
static int smp(struct sweep *s, struct sib_fab_node *n, uint8_t in_port, uint8_t method,
	       uint16_t attr, uint32_t mod, uint8_t *data)
{
	const struct sib_node_mgmt *g = n->mgmt;
	static const uint8_t none[1] = { 0 };
	int st;

	if (s->local)
		st = smp_dr(s, n, in_port, 0, none, method, attr, mod, data);
	else if (!g || g->sm_seen != s->sn->sm.sweeps || !s->sn->sm.node) {
		s->errors++;
		return -1;
	} else
		st = smp_dr(s, s->sn->sm.node, g->sm_hops ? g->sm_path[1] : s->sn->sm.port,
			    g->sm_hops, g->sm_path, method, attr, mod, data);
	if (st > 0) {
		s->errors++;
		sib_subnet_log(s->sn, "built-in SM: %s attribute 0x%04x mod 0x%x: status 0x%04x",
			       n->id, attr, mod, (unsigned int)st);
	}
	return st;
}

/* The port a local SMP about port pn of n leaves from (switches: 0). */
static uint8_t via(const struct sib_fab_node *n, uint8_t pn)
{
	return n->type == SIB_NODE_SWITCH ? 0 : pn;
}

/* Does port pn of n take part: switch port 0, or a port whose link is up? */
static bool in_subnet(const struct sib_fab_node *n, unsigned int pn)
{
	if (n->type == SIB_NODE_SWITCH && pn == 0)
		return true;
	return pn > 0 && n->ports[pn].peer &&
	       n->mgmt->port[pn].pi.port_phys_state == MAD_PORT_PHYS_STATE_LINKUP;
}

static bool has_lid(const struct sib_fab_node *n, unsigned int pn)
{
	return n->type == SIB_NODE_SWITCH ? pn == 0 : pn > 0;
}

/* Did the last discovery reach n (its SMPs have a route)? */
static bool seen(const struct sweep *s, const struct sib_fab_node *n)
{
	return s->local || (n->mgmt && n->mgmt->sm_seen == s->sn->sm.sweeps);
}

/* Get PortInfo of port pn of n: 0 or the status (-1: no reply). */
static int pi_get(struct sweep *s, struct sib_fab_node *n, uint8_t pn, struct mad_port_info *pi)
{
	uint8_t data[MAD_SMP_DATA_SIZE] = { 0 };
	int st = smp(s, n, via(n, pn), MAD_METHOD_GET, MAD_ATTR_PORT_INFO, pn, data);

	if (!st)
		mad_port_info_decode(pi, data);
	return st;
}

/* Set PortInfo *pi whole; *pi gets the reply.  0 or the status. */
static int pi_put(struct sweep *s, struct sib_fab_node *n, uint8_t pn, struct mad_port_info *pi)
{
	uint8_t data[MAD_SMP_DATA_SIZE];
	int st;

	mad_port_info_encode(pi, data);
	st = smp(s, n, via(n, pn), MAD_METHOD_SET, MAD_ATTR_PORT_INFO, pn, data);
	mad_port_info_decode(pi, data);
	return st;
}

/* Set PortInfo with PortState `state` (0: no change), the physical state
 * and the enabled link widths and speeds untouched. */
static int pi_set(struct sweep *s, struct sib_fab_node *n, uint8_t pn, struct mad_port_info *pi,
		  uint8_t state)
{
	pi->port_state = state;
	pi->port_phys_state = 0;
	pi->link_width_enabled = 0;
	pi->link_speed_enabled = 0;
	return pi_put(s, n, pn, pi);
}

/* ---- LIDs and the PortInfo fields ------------------------------------------ */

/* The SM's own port (LID SIB_SM_LID) has IsSM in its CapabilityMask
 * (14.2.5.6); set here, not by a trap 144 to itself: the SM knows it is
 * one.  Its SMA then answers SMInfo (sma.c). */
static void sm_port_mark(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn)
{
	struct mad_port_info *pi = &n->mgmt->port[pn].pi;

	if (pi->lid != SIB_SM_LID || (pi->capability_mask & MAD_PORT_CAP_IS_SM))
		return;
	pi->capability_mask |= MAD_PORT_CAP_IS_SM;
	if (n->type != SIB_NODE_SWITCH)
		sib_subnet_port_changed(sn, n, pn, SIB_CHG_ATTR, pi->lid, pi->lmc);
}

/*
 * Ports without a LID get the lowest free one, in fabric order (switch
 * port 0, then each linked CA port): at start this is
 * sib_fabric_assign_lids' order.  Then LID, MasterSMLID, SubnetTimeout,
 * NeighborMTU and OperationalVLs by Get + Set PortInfo.
 */
static void configure_ports(struct sweep *s, uint8_t *used)
{
	struct sib_fabric *f = &s->sn->fab;
	uint32_t next = 1;
	unsigned int i, pn;

	for (i = 0; i < f->n_nodes; i++) {
		struct sib_fab_node *n = f->nodes[i];

		for (pn = 0; pn <= n->num_ports; pn++) {
			const struct mad_port_info *pi = &n->mgmt->port[pn].pi;

			if (has_lid(n, pn) && pi->lid)
				for (uint32_t l = pi->lid; l < pi->lid + (1u << pi->lmc) &&
							  l < SIB_SUBN_LFT_CAP; l++)
					used[l] = 1;
		}
	}
	for (i = 0; i < f->n_nodes; i++) {
		struct sib_fab_node *n = f->nodes[i];

		for (pn = 0; pn <= n->num_ports; pn++) {
			struct mad_port_info pi;

			if (!seen(s, n) || !in_subnet(n, pn) || pi_get(s, n, (uint8_t)pn, &pi))
				continue;
			if (has_lid(n, pn)) {
				if (!pi.lid) {
					while (next < SIB_SUBN_LFT_CAP && used[next])
						next++;
					if (next == SIB_SUBN_LFT_CAP) {
						sib_subnet_log(s->sn, "built-in SM: no LID left for %s port %u",
							 n->id, pn);
						s->errors++;
						continue;
					}
					pi.lid = (uint16_t)next;
					pi.lmc = 0;
					used[next] = 1;
				}
				pi.master_sm_lid = SIB_SM_LID;
				pi.master_sm_sl = 0;
				pi.subnet_timeout = SM_SUBNET_TIMEOUT;
			}
			pi.neighbor_mtu = pi.mtu_cap;
			pi.operational_vls = pi.vl_cap;
			pi_set(s, n, (uint8_t)pn, &pi, MAD_PORT_STATE_NOP);
			if (has_lid(n, pn))
				sm_port_mark(s->sn, n, (uint8_t)pn);
		}
	}
}

int sib_sm_get_port_info(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn,
			  struct mad_port_info *pi)
{
	struct sweep s = { .sn = sn, .local = true };

	return pi_get(&s, n, pn, pi);
}

int sib_sm_set_port_info(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t pn,
			  struct mad_port_info *pi)
{
	struct sweep s = { .sn = sn, .local = true };

	return pi_put(&s, n, pn, pi);
}

/* Is the link of port pn of n up at both ends (the SM routes over it)? */
static bool link_up(const struct sib_fab_node *n, unsigned int pn)
{
	const struct sib_fab_port *peer = n->ports[pn].peer;

	return peer && peer->node->mgmt && in_subnet(n, pn) &&
	       peer->node->mgmt->port[peer->num].pi.port_phys_state == MAD_PORT_PHYS_STATE_LINKUP;
}

/* ---- discovery ---------------------------------------------------------- */

/*
 * The SM's port: the one whose base LID is SIB_SM_LID, else the first port
 * that takes part in the subnet, in configure_ports' order (where LID
 * SIB_SM_LID goes while it is free).  false: no port at all.
 */
static bool sm_home(struct sib_subnet *sn)
{
	struct sib_fabric *f = &sn->fab;
	struct sib_fab_node *first = NULL;
	uint8_t first_pn = 0;

	for (unsigned int i = 0; i < f->n_nodes; i++) {
		struct sib_fab_node *n = f->nodes[i];

		for (unsigned int pn = 0; n->mgmt && pn <= n->num_ports; pn++) {
			if (!has_lid(n, pn))
				continue;
			if (n->mgmt->port[pn].pi.lid == SIB_SM_LID) {
				sn->sm.node = n;
				sn->sm.port = (uint8_t)pn;
				return true;
			}
			if (!first && in_subnet(n, pn)) {
				first = n;
				first_pn = (uint8_t)pn;
			}
		}
	}
	sn->sm.node = first;
	sn->sm.port = first_pn;
	return first != NULL;
}

/*
 * The discovery phase (as OpenSM's first sweep, IBA 14.4.2): breadth-first
 * from the SM's port by directed route, a Get NodeInfo to every node behind
 * every linked port of the SM's node and of each switch reached; a node is
 * found when its NodeInfo answers with its NodeGUID, and keeps the route
 * (sm_path) the later phases address it by.  Routes stop at 63 hops
 * (C14-6).  CAs are not crossed (C14-9:2).
 */
static void discover(struct sweep *s, struct sib_fab_node **queue)
{
	struct sib_subnet *sn = s->sn;
	uint8_t data[MAD_SMP_DATA_SIZE];
	struct mad_node_info ni;
	unsigned int head = 0, tail = 0;
	struct sib_fab_node *home;

	sn->sm.sweeps++;
	if (!sn->sm.sweeps)
		sn->sm.sweeps = 1; /* 0 is "never found" */
	if (!sm_home(sn))
		return;
	home = sn->sm.node;
	home->mgmt->sm_seen = sn->sm.sweeps;
	home->mgmt->sm_hops = 0;
	home->mgmt->sm_path[0] = 0;
	memset(data, 0, sizeof(data));
	if (smp(s, home, sn->sm.port, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, data)) {
		home->mgmt->sm_seen = 0;
		return;
	}
	queue[tail++] = home;
	while (head < tail) {
		struct sib_fab_node *u = queue[head++];
		const struct sib_node_mgmt *g = u->mgmt;

		if (g->sm_hops + 1 >= MAD_DR_MAX_HOPS)
			continue;
		for (unsigned int pn = 1; pn <= u->num_ports; pn++) {
			struct sib_fab_node *v;
			struct sib_node_mgmt *vg;

			if (u->type != SIB_NODE_SWITCH && pn != sn->sm.port)
				continue; /* a CA sends by its own port only */
			if (!link_up(u, pn))
				continue;
			v = u->ports[pn].peer->node;
			vg = v->mgmt;
			if (vg->sm_seen == sn->sm.sweeps)
				continue;
			memcpy(vg->sm_path, g->sm_path, (size_t)g->sm_hops + 1);
			vg->sm_hops = (uint8_t)(g->sm_hops + 1);
			vg->sm_path[vg->sm_hops] = (uint8_t)pn;
			vg->sm_seen = sn->sm.sweeps; /* smp() addresses it by this route */
			memset(data, 0, sizeof(data));
			if (smp(s, v, 0, MAD_METHOD_GET, MAD_ATTR_NODE_INFO, 0, data)) {
				vg->sm_seen = 0;
				continue;
			}
			mad_node_info_decode(&ni, data);
			if (ni.node_guid != v->node_guid) {
				vg->sm_seen = 0;
				continue;
			}
			if (v->type == SIB_NODE_SWITCH)
				queue[tail++] = v;
		}
	}
}

/* ---- forwarding tables -------------------------------------------------- */

struct bfs {
	struct sib_fab_node **sw;  /* the switches, sorted by address (sw_index) */
	unsigned int nsw, root;    /* root: the file's first switch */
	unsigned int *queue;       /* the last bfs_from's order, nq of them */
	unsigned int nq;
	uint8_t *first;            /* per switch: src's egress port toward it, 0 = unreached */
	const struct sib_fab_port **tree; /* per switch: the port it was reached by (the
	                              far end's: a spanning-tree link), NULL for src */
};

static int sw_index(const struct bfs *b, const struct sib_fab_node *n)
{
	unsigned int lo = 0, hi = b->nsw;

	while (lo < hi) { /* b->sw is sorted by address */
		unsigned int mid = (lo + hi) / 2;

		if (b->sw[mid] == n)
			return (int)mid;
		if ((uintptr_t)b->sw[mid] < (uintptr_t)n)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

/* Breadth-first from switch src: b->first[j] = src's port of the first hop
 * of a min-hop path to switch j (lowest port first), src itself 0xFF. */
static void bfs_from(struct bfs *b, unsigned int src)
{
	unsigned int head = 0, tail = 0;

	memset(b->first, 0, b->nsw);
	b->first[src] = 0xFF;
	b->tree[src] = NULL;
	b->queue[tail++] = src;
	while (head < tail) {
		unsigned int u = b->queue[head++];
		struct sib_fab_node *n = b->sw[u];

		for (unsigned int pn = 1; pn <= n->num_ports; pn++) {
			int v;

			if (!link_up(n, pn) || n->ports[pn].peer->node->type != SIB_NODE_SWITCH)
				continue;
			v = sw_index(b, n->ports[pn].peer->node);
			if (v < 0 || b->first[v])
				continue;
			b->first[v] = u == src ? (uint8_t)pn : b->first[u];
			b->tree[v] = &n->ports[pn];
			b->queue[tail++] = (unsigned int)v;
		}
	}
	b->nq = tail;
}

static void lid_range(uint8_t *lft, const struct mad_port_info *pi, uint8_t port, uint32_t *top)
{
	for (uint32_t l = pi->lid; pi->lid && l < pi->lid + (1u << pi->lmc) &&
				   l < SIB_SUBN_LFT_CAP; l++) {
		lft[l] = port;
		if (l > *top)
			*top = l;
	}
}

/* Min-hop LFT of switch b->sw[si] into lft; returns LinearFDBTop. */
static uint32_t plan_lft(struct bfs *b, unsigned int si, uint8_t *lft)
{
	uint32_t top = 0;

	memset(lft, MAD_LFT_NO_PATH, SIB_SUBN_LFT_CAP);
	bfs_from(b, si);
	for (unsigned int j = 0; j < b->nsw; j++) {
		struct sib_fab_node *x = b->sw[j];
		uint8_t e = j == si ? 0 : b->first[j];

		if (j != si && !e)
			continue; /* unreachable */
		lid_range(lft, &x->mgmt->port[0].pi, e, &top);
		for (unsigned int pn = 1; pn <= x->num_ports; pn++) {
			const struct sib_fab_port *peer = x->ports[pn].peer;

			if (!link_up(x, pn) || peer->node->type == SIB_NODE_SWITCH)
				continue;
			lid_range(lft, &peer->node->mgmt->port[peer->num].pi,
				  j == si ? (uint8_t)pn : e, &top);
		}
	}
	return top;
}

/*
 * What the SM knows it programmed (its database, as OpenSM's sends only
 * the blocks that differ): is LFT block blk of switch n already t, or
 * every entry of MFT block blk at position pos already mask?  A table
 * never set reads as all 0xFF (LFT) or all 0 (MFT).
 */
static bool lft_block_is(const struct sib_fab_node *n, uint32_t blk, const uint8_t *t)
{
	const uint8_t *lft = n->mgmt->sw->lft;
	size_t off = (size_t)blk * MAD_LFT_BLOCK_SIZE;

	for (unsigned int k = 0; k < MAD_LFT_BLOCK_SIZE; k++)
		if ((lft ? lft[off + k] : MAD_LFT_NO_PATH) != t[k])
			return false;
	return true;
}

static bool mft_block_is(const struct sib_fab_node *n, unsigned int pos, unsigned int blk,
			 const uint16_t *t)
{
	const uint16_t *mft = n->mgmt->sw->mft;
	unsigned int npos = sib_subnet_mft_positions(n);

	for (unsigned int k = 0; k < MAD_MFT_BLOCK_SIZE; k++)
		if ((mft ? mft[((size_t)blk * MAD_MFT_BLOCK_SIZE + k) * npos + pos] : 0) != t[k])
			return false;
	return true;
}

static void program_lfts(struct sweep *s, struct bfs *b)
{
	uint8_t *lft = malloc(SIB_SUBN_LFT_CAP), data[MAD_SMP_DATA_SIZE];
	struct mad_switch_info si;

	if (!lft) {
		s->errors++;
		return;
	}
	for (unsigned int i = 0; i < b->nsw; i++) {
		struct sib_fab_node *n = b->sw[i];
		uint32_t top;

		if (!seen(s, n))
			continue;
		top = plan_lft(b, i, lft);

		for (uint32_t blk = 0; blk <= top / MAD_LFT_BLOCK_SIZE; blk++) {
			struct mad_lft t;

			memcpy(t.port, lft + blk * MAD_LFT_BLOCK_SIZE, MAD_LFT_BLOCK_SIZE);
			if (lft_block_is(n, blk, t.port))
				continue;
			mad_lft_encode(&t, data);
			smp(s, n, 0, MAD_METHOD_SET, MAD_ATTR_LIN_FWD_TBL, blk, data);
		}
		memset(data, 0, sizeof(data));
		if (smp(s, n, 0, MAD_METHOD_GET, MAD_ATTR_SWITCH_INFO, 0, data))
			continue;
		mad_switch_info_decode(&si, data);
		si.linear_fdb_top = (uint16_t)top;
		si.life_time_value = 18;
		si.port_state_change = 1; /* written 1: clears it, as after a sweep */
		mad_switch_info_encode(&si, data);
		smp(s, n, 0, MAD_METHOD_SET, MAD_ATTR_SWITCH_INFO, 0, data);
	}
	free(lft);
}

/* Set port pn's bit in switch i's masks (16 positions of 16 ports). */
static void mask_set(uint16_t *mask, unsigned int i, unsigned int pn)
{
	mask[i * 16 + pn / 16] |= (uint16_t)(1u << (pn % 16));
}

/* Both ends of the spanning-tree link that reached switch v. */
static void mask_tree_link(const struct bfs *b, uint16_t *mask, unsigned int v)
{
	const struct sib_fab_port *up = b->tree[v];

	mask_set(mask, v, up->peer->num);
	mask_set(mask, (unsigned int)sw_index(b, up->node), up->num);
}

/* Every linked CA port and every link of the spanning tree: a packet
 * reaches every CA port once (MLIDs no SA group owns). */
static void flood_masks(const struct bfs *b, uint16_t *mask)
{
	for (unsigned int i = 0; i < b->nsw; i++) {
		struct sib_fab_node *n = b->sw[i];

		for (unsigned int pn = 1; pn <= n->num_ports; pn++)
			if (link_up(n, pn) && n->ports[pn].peer->node->type != SIB_NODE_SWITCH)
				mask_set(mask, i, pn);
		if (b->tree[i])
			mask_tree_link(b, mask, i);
	}
}

/*
 * The masks of an SA group's MLID: its receiving members' CA ports, and
 * the tree links that join the switches its members (senders too) hang
 * off: a link carries the group when members lie on both of its sides.
 * cnt: nsw counters (scratch).
 */
static void group_masks(struct sib_subnet *sn, const struct bfs *b, uint16_t mlid, uint16_t *mask,
			unsigned int *cnt)
{
	struct sib_fab_node *mn;
	unsigned int total = 0, nm;
	uint8_t mp;
	bool rcv;

	memset(cnt, 0, b->nsw * sizeof(*cnt));
	for (unsigned int k = 0; (nm = sib_sa_mcast_members(sn, mlid, k, &mn, &mp, &rcv)) && k < nm; k++) {
		const struct sib_fab_port *peer;
		int i;

		if (mn->type == SIB_NODE_SWITCH || !mp || mp > mn->num_ports ||
		    !(peer = mn->ports[mp].peer) || (i = sw_index(b, peer->node)) < 0 ||
		    !link_up(peer->node, peer->num))
			continue;
		cnt[i]++;
		total++;
		if (rcv)
			mask_set(mask, (unsigned int)i, peer->num);
	}
	/* subtree counts, leaves first (the reverse of the BFS order) */
	for (unsigned int q = b->nq; q-- > 1;) { /* queue[0] is the root */
		unsigned int v = b->queue[q];

		if (cnt[v] && cnt[v] < total)
			mask_tree_link(b, mask, v);
		cnt[sw_index(b, b->tree[v]->node)] += cnt[v];
	}
}

/* Block blk of switch i's MFT (position pos), as the SM wants it. */
static void mft_block(struct sib_subnet *sn, const struct bfs *b, unsigned int i, unsigned int pos,
		      unsigned int blk, const uint16_t *flood, uint16_t *scratch, unsigned int *cnt,
		      uint16_t *t)
{
	for (unsigned int k = 0; k < MAD_MFT_BLOCK_SIZE; k++) {
		uint16_t mlid = (uint16_t)(0xC000u + blk * MAD_MFT_BLOCK_SIZE + k);

		if (!sib_sa_mcast_group(sn, mlid)) {
			t[k] = flood[i * 16 + pos];
			continue;
		}
		memset(scratch, 0, (size_t)b->nsw * 16 * sizeof(*scratch));
		group_masks(sn, b, mlid, scratch, cnt);
		t[k] = scratch[i * 16 + pos];
	}
}

/*
 * MFTs over one spanning tree of the switches (breadth-first from the
 * first in the file): every MLID to every linked CA port, but the SA's
 * groups' to their members only (group_masks); blocks lo..hi (of
 * MAD_MFT_BLOCK_SIZE MLIDs from 0xC000), only those that differ.
 */
static void program_mfts(struct sweep *s, struct bfs *b, unsigned int lo, unsigned int hi)
{
	uint8_t data[MAD_SMP_DATA_SIZE];
	uint16_t *flood, *scratch, t[MAD_MFT_BLOCK_SIZE];
	unsigned int *cnt;

	if (!b->nsw)
		return;
	flood = calloc((size_t)b->nsw * 16, sizeof(*flood));
	scratch = calloc((size_t)b->nsw * 16, sizeof(*scratch));
	cnt = calloc(b->nsw, sizeof(*cnt));
	if (!flood || !scratch || !cnt) {
		s->errors++;
		goto out;
	}
	bfs_from(b, b->root);
	flood_masks(b, flood);
	for (unsigned int i = 0; i < b->nsw; i++) {
		struct sib_fab_node *n = b->sw[i];
		unsigned int npos = sib_subnet_mft_positions(n);
		unsigned int blocks = n->mgmt->sw->si.multicast_fdb_cap / MAD_MFT_BLOCK_SIZE;

		if (!seen(s, n))
			continue;
		for (unsigned int pos = 0; pos < npos && pos < 16; pos++)
			for (unsigned int blk = lo; blk <= hi && blk < blocks; blk++) {
				struct mad_mft m;

				mft_block(s->sn, b, i, pos, blk, flood, scratch, cnt, t);
				if (mft_block_is(n, pos, blk, t))
					continue;
				memcpy(m.port_mask, t, sizeof(t));
				mad_mft_encode(&m, data);
				smp(s, n, 0, MAD_METHOD_SET, MAD_ATTR_MCAST_FWD_TBL,
				    (uint32_t)pos << 28 | blk, data);
			}
	}
out:
	free(flood);
	free(scratch);
	free(cnt);
}

/* ---- states ------------------------------------------------------------- */

/* Every port of the subnet from `from` to `to` by Set PortInfo.PortState. */
static void move_ports(struct sweep *s, uint8_t from, uint8_t to)
{
	struct sib_fabric *f = &s->sn->fab;

	for (unsigned int i = 0; i < f->n_nodes; i++) {
		struct sib_fab_node *n = f->nodes[i];

		for (unsigned int pn = 0; pn <= n->num_ports; pn++) {
			struct mad_port_info pi;

			if (!seen(s, n) || !in_subnet(n, pn) || n->mgmt->port[pn].pi.port_state != from ||
			    pi_get(s, n, (uint8_t)pn, &pi))
				continue;
			pi_set(s, n, (uint8_t)pn, &pi, to);
		}
	}
}

/*
 * One sweep in the phases of an SM's state manager (as OpenSM's
 * osm_state_mgr: heavy sweep, then LID assignment, forwarding tables,
 * multicast, ports up; IBA 14.4): each phase ends before the next begins,
 * and each talks to the SMAs only by SMPs through the MAD router.
 */
/* The switches, sorted for sw_index, and the BFS's room.  0 or -ENOMEM. */
static int bfs_alloc(struct sib_subnet *sn, struct bfs *b)
{
	unsigned int i;

	b->sw = calloc(sn->fab.n_nodes + 1, sizeof(*b->sw));
	b->queue = calloc(sn->fab.n_nodes + 1, sizeof(*b->queue));
	b->first = calloc(sn->fab.n_nodes + 1, 1);
	b->tree = calloc(sn->fab.n_nodes + 1, sizeof(*b->tree));
	if (!b->sw || !b->queue || !b->first || !b->tree)
		return -ENOMEM;
	for (i = 0; i < sn->fab.n_nodes; i++)
		if (sn->fab.nodes[i]->type == SIB_NODE_SWITCH && sn->fab.nodes[i]->mgmt)
			b->sw[b->nsw++] = sn->fab.nodes[i];
	qsort(b->sw, b->nsw, sizeof(*b->sw), cmp_ptr);
	for (i = 0; i < sn->fab.n_nodes && b->nsw; i++)
		if (sn->fab.nodes[i]->type == SIB_NODE_SWITCH && sn->fab.nodes[i]->mgmt) {
			b->root = (unsigned int)sw_index(b, sn->fab.nodes[i]);
			break;
		}
	return 0;
}

static void bfs_free(struct bfs *b)
{
	free(b->sw);
	free(b->queue);
	free(b->first);
	free(b->tree);
}

int sib_sm_sweep(struct sib_subnet *sn)
{
	struct sweep s = { .sn = sn };
	struct bfs b = { 0 };
	uint8_t *used = calloc(SIB_SUBN_LFT_CAP, 1);
	struct sib_fab_node **found = calloc(sn->fab.n_nodes + 1, sizeof(*found));
	int ret = 0;

	if (sn->sm_sweeping)
		goto out;
	if (!used || !found || bfs_alloc(sn, &b)) {
		ret = -ENOMEM;
		goto out;
	}
	sn->sm_sweeping = true;
	sib_sa_mcast_refresh(sn);           /* members of CAs removed since */
	discover(&s, found);                                    /* 1. discover */
	configure_ports(&s, used);                              /* 2. LIDs, PortInfo */
	program_lfts(&s, &b);                                   /* 3. unicast routes */
	program_mfts(&s, &b, 0, UINT_MAX);                      /* 4. multicast */
	move_ports(&s, MAD_PORT_STATE_INIT, MAD_PORT_STATE_ARMED); /* 5. ports up */
	move_ports(&s, MAD_PORT_STATE_ARMED, MAD_PORT_STATE_ACTIVE);
	if (sib_sa_sweep(sn))       /* 6. ports in/out of service: traps 64/65, */
		program_mfts(&s, &b, 0, UINT_MAX); /* members of ports gone leave */

	sn->sm_sweeping = false;
	if (s.errors) {
		sib_subnet_log(sn, "built-in SM: %d SMPs failed", s.errors);
		ret = -EIO;
	}
	if (sib_sa_mcast_init(sn))                              /* 7. IPoIB groups */
		sib_subnet_log(sn, "built-in SM: no IPoIB broadcast group (no memory or MLID)");
out:
	free(used);
	free(found);
	bfs_free(&b);
	return ret;
}

void sib_sm_mcast_update(struct sib_subnet *sn, uint16_t mlid)
{
	struct sweep s = { .sn = sn };
	struct bfs b = { 0 };
	unsigned int blk = (mlid - 0xC000u) / MAD_MFT_BLOCK_SIZE;

	/* a sweep in progress programs every MFT itself */
	if (sn->sm_external || sn->sm_sweeping || mlid < 0xC000u || !sn->sm.node)
		return;
	sib_sa_mcast_refresh(sn);
	if (bfs_alloc(sn, &b)) {
		sib_subnet_log(sn, "built-in SM: MLID 0x%04x not reprogrammed: no memory", mlid);
	} else {
		program_mfts(&s, &b, blk, blk);
		if (s.errors)
			sib_subnet_log(sn, "built-in SM: MLID 0x%04x: %d SMPs failed", mlid, s.errors);
	}
	bfs_free(&b);
}

void sib_subnet_log(struct sib_subnet *sn, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sn->host->log(sn->host_ctx, line);
}
