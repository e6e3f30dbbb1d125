// SPDX-License-Identifier: MIT
/*
 * The subnet's MAD router (docs/mai.md "MAD routing"): DR SMPs walked hop by hop
 * over LinkUp links with the SMI rules (IBA 14.2.2, mad_dr_*), the rest LID
 * routed through the LFTs (sib_subnet_route); delivery by TID or mai_match,
 * unmatched requests answered as IBA 13.4.7; PMA counters of every port.
 * Trusts no MAD field unchecked.  Single-threaded (the event loop), synchronous.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "subnet/mad_router.h"
#include "subnet/subnet_int.h"
#include "subnet/subnet.h"
#include "iba/iba.h"
#include "iba/mad.h"
#include "iba/sa.h"

#include "subnet/sma.h"

#define GSI_QKEY	0x80010000u	/* IBA 13.4.6.1: the well-known GSI Q_Key */
#define QKEY_CONTROLLED	0x80000000u	/* IBA 10.2.5: a send's Q_Key with this bit
					 * takes the sending QP's own */
#define MAD_WORDS	72u		/* LRH 8 + BTH 12 + DETH 8 + MAD 256 + ICRC 4, in 4-byte words */
#define GRH_WORDS	10u
#define DR_WALK_MAX	(2 * MAD_DR_MAX_HOPS + 4)	/* hops one DR walk may take */

const char *sib_mad_drop_str(enum sib_mad_drop why)
{
	static const char *const s[SIB_MAD_DROP_MAX] = {
		[SIB_MAD_DROP_BAD_BASE_VERSION] = "bad_base_version",
		[SIB_MAD_DROP_BAD_QP_CLASS] = "bad_qp_class",
		[SIB_MAD_DROP_QP_MISMATCH] = "qp_mismatch",
		[SIB_MAD_DROP_NOT_PRIV] = "not_priv",
		[SIB_MAD_DROP_DR_HOP_CNT] = "dr_hop_cnt",
		[SIB_MAD_DROP_DR_HOP_PTR] = "dr_hop_ptr",
		[SIB_MAD_DROP_DR_PORT] = "dr_port",
		[SIB_MAD_DROP_DR_NOT_SWITCH] = "dr_not_switch",
		[SIB_MAD_DROP_DR_PERMISSIVE] = "dr_permissive",
		[SIB_MAD_DROP_DR_LID_PART] = "dr_lid_part",
		[SIB_MAD_DROP_LINK_DOWN] = "link_down",
		[SIB_MAD_DROP_ROUTE] = "route",
		[SIB_MAD_DROP_NO_QP] = "no_qp",
		[SIB_MAD_DROP_NO_AGENT] = "no_agent",
		[SIB_MAD_DROP_UNMATCHED] = "unmatched",
		[SIB_MAD_DROP_AGENT] = "agent",
		[SIB_MAD_DROP_QUEUE_FULL] = "queue_full",
		[SIB_MAD_DROP_NO_REQUEST] = "no_request",
		[SIB_MAD_DROP_BAD_QKEY] = "bad_qkey",
	};

	return (unsigned)why < SIB_MAD_DROP_MAX && s[why] ? s[why] : "?";
}

/* ---- counters ------------------------------------------------------------ */

static struct sib_pma_counters *pma(struct sib_fab_node *n, uint8_t port)
{
	if (!n->mgmt || !n->mgmt->port || port > n->num_ports)
		return NULL;
	return &n->mgmt->port[port].pma;
}

static uint32_t words(const mai_mad_t *m)
{
	return MAD_WORDS + (m->has_grh ? GRH_WORDS : 0);
}

/* One link crossing: transmitted at (n, port), received at its peer. */
static void count_link(struct sib_fab_node *n, uint8_t port, const mai_mad_t *m)
{
	struct sib_fab_port *peer = n->ports[port].peer;
	struct sib_pma_counters *c = pma(n, port);

	if (c) {
		c->xmit_pkts++;
		c->ucast_xmit_pkts++;
		c->xmit_data += words(m);
	}
	if (peer && (c = pma(peer->node, peer->num))) {
		c->rcv_pkts++;
		c->ucast_rcv_pkts++;
		c->rcv_data += words(m);
	}
}

/* A drop at (n, port): the cause's counter, and VL15Dropped for an SMP
 * (IBA 16.1.3.5) or the QP1 counter for a GMP. */
static void drop(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, uint8_t qp,
		 enum sib_mad_drop why)
{
	struct sib_pma_counters *c = n ? pma(n, port) : NULL;

	sib_subnet_mad_ctr(sn)->drop[why]++;
	if (c) {
		if (qp == 0)
			c->vl15_dropped++;
		else
			c->qp1_dropped++;
	}
}

/* A GMP with a wrong Q_Key at QP1 of (n, port): dropped, counted as the
 * router's bad_qkey and in PortInfo Q_KeyViolations (IBA 14.2.5.6, 16 bits,
 * saturating) of the port QP1 lives on (a switch's port 0). */
static void bad_qkey(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port)
{
	uint8_t at = n->type == SIB_NODE_SWITCH ? 0 : port;

	drop(sn, n, port, 1, SIB_MAD_DROP_BAD_QKEY);
	if (n->mgmt && n->mgmt->port && at <= n->num_ports &&
	    n->mgmt->port[at].pi.q_key_violations < 0xFFFF)
		n->mgmt->port[at].pi.q_key_violations++;
}

/* The Q_Key the DETH of m carries when QP m->qp sends it: for the GSI the
 * send's own, or the QP's (GSI_QKEY) when the send's has the controlled
 * bit, as the kernel's MAD layer always asks (IB_QP_SET_QKEY); QP0's is 0. */
static uint32_t deth_qkey(const mai_mad_t *m)
{
	if (m->qp == 0)
		return 0;
	return (m->remote_qkey & QKEY_CONTROLLED) ? GSI_QKEY : m->remote_qkey;
}

/* Is the link at (n, port) physically up at both ends (IBA 14.2.5.6
 * PortPhysicalState LinkUp)?  A port without management state (no
 * subnet yet) counts as up when cabled. */
static bool link_up(const struct sib_fab_node *n, uint8_t port)
{
	const struct sib_fab_port *p, *peer;

	if (port == 0 || port > n->num_ports)
		return false;
	p = &n->ports[port];
	peer = p->peer;
	if (!peer)
		return false;
	if (n->mgmt && n->mgmt->port &&
	    n->mgmt->port[port].pi.port_phys_state != MAD_PORT_PHYS_STATE_LINKUP)
		return false;
	if (peer->node->mgmt && peer->node->mgmt->port &&
	    peer->node->mgmt->port[peer->num].pi.port_phys_state != MAD_PORT_PHYS_STATE_LINKUP)
		return false;
	return true;
}

uint16_t sib_mad_port_lid(const struct sib_fab_node *n, uint8_t port)
{
	if (port > n->num_ports)
		return 0;
	if (n->mgmt && n->mgmt->port)
		return n->mgmt->port[port].pi.lid;
	return n->ports[port].lid;
}

/* ---- delivery --------------------------------------------------------------- */

static bool is_smp_class(uint8_t cls)
{
	return cls == MAD_MGMT_CLASS_SUBN_LID_ROUTED || cls == MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
}

static bool is_response(const mai_mad_t *m)
{
	return (m->method & MAD_METHOD_RESP_MASK) || m->method == MAD_METHOD_TRAP_REPRESS;
}

static void send_reply(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
		       const mai_mad_t *req, const uint8_t *wire);

/* What every SMI/GSI drops (counted at (n, port)): BaseVersion other than
 * 1 (the kernel's ib_mad drops those too), an SMP off QP0 or a GMP on it
 * (IBA 13.5.1: QP0 carries SMPs only). */
static bool header_ok(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m)
{
	if (m->base_version != MAD_BASE_VERSION) {
		drop(sn, n, port, m->qp, SIB_MAD_DROP_BAD_BASE_VERSION);
		return false;
	}
	if (is_smp_class(m->mgmt_class) != (m->qp == 0)) {
		drop(sn, n, port, m->qp, SIB_MAD_DROP_BAD_QP_CLASS);
		return false;
	}
	return true;
}

typedef int (*agent_fn)(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t in_port,
			const uint8_t *req, uint8_t *resp);

/* An internal agent (SMA or PMA) answers req at (n, port). */
static void run_agent(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *req,
		      agent_fn fn)
{
	uint8_t in[MAD_SIZE], out[MAD_SIZE];

	if (mai_towire(req, in, sizeof(in)) != MAD_SIZE) {
		drop(sn, n, port, req->qp, SIB_MAD_DROP_AGENT);
		return;
	}
	memset(out, 0, sizeof(out));
	if (fn(sn, n, port, in, out) != 1) {
		drop(sn, n, port, req->qp, SIB_MAD_DROP_AGENT);
		return;
	}
	send_reply(sn, n, port, req, out);
}

/*
 * A SubnAdm request at the built-in SM's port: the SA answers (sa_agent.c)
 * and its answer goes back as one MAD, or, RMPP Active (a GetTableResp),
 * as DATA segments (IBA 13.6), all at once: the receiving library opens
 * the whole window (docs/umad.md "RMPP").
 */
static void run_sa(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *req)
{
	size_t cap = MAD_SA_HDR_SIZE + SA_RMPP_MAX_DATA, len = 0;
	uint8_t in[MAD_SIZE], seg[MAD_SIZE];
	uint8_t *out = malloc(cap);

	if (!out || mai_towire(req, in, sizeof(in)) != MAD_SIZE ||
	    sib_sa_process(sn, in, req->lrh.slid, out, cap, &len) != 1) {
		drop(sn, n, port, req->qp, SIB_MAD_DROP_AGENT);
		free(out);
		return;
	}
	sib_subnet_mad_ctr(sn)->sa++;
	if (!(out[26] & MAD_RMPP_FLAG_ACTIVE)) {
		send_reply(sn, n, port, req, out);
	} else {
		uint32_t nsegs = sa_rmpp_nsegs(len - MAD_SA_HDR_SIZE);

		for (uint32_t s = 1; s <= nsegs; s++)
			if (sa_rmpp_build_seg(out, len, s, seg) == 0)
				send_reply(sn, n, port, req, seg);
	}
	free(out);
}

/* A request nobody's filter took (IBA 13.4.7; Linux ib_mad's
 * generate_unmatched_resp): an SMP goes to the SMA and a PerfMgt GMP to
 * the PMA, which answer "unsupported" themselves; any other Get or Set
 * gets GetResp with status 0x000C; the rest is dropped and counted. */
static void unmatched(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m)
{
	uint8_t wire[MAD_SIZE];

	if (is_smp_class(m->mgmt_class)) {
		sib_subnet_mad_ctr(sn)->sma++;
		run_agent(sn, n, port, m, sib_sma_process);
	} else if (m->mgmt_class == MAD_MGMT_CLASS_PERF_MGMT) {
		sib_subnet_mad_ctr(sn)->pma++;
		run_agent(sn, n, port, m, sib_pma_process);
	} else if ((m->method == MAD_METHOD_GET || m->method == MAD_METHOD_SET) &&
		   mai_towire(m, wire, sizeof(wire)) == MAD_SIZE &&
		   mad_make_reply(wire, MAD_STATUS_UNSUP_METHOD_ATTR) == 0) {
		sib_subnet_mad_ctr(sn)->unsupported++;
		send_reply(sn, n, port, m, wire);
	} else {
		drop(sn, n, port, m->qp, SIB_MAD_DROP_UNMATCHED);
	}
}

/*
 * m arrived at QP m->qp of (n, port), its routing fields already those of
 * the receive.  Responses go by TID; requests through the filter engine.
 */
/* MAD m crosses CA port `port` of n: the host may capture it. */
static void trace(struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port,
		  const mai_mad_t *m, bool out)
{
	if (sn->host && sn->host->mad_trace && n->type == SIB_NODE_CA && port >= 1)
		sn->host->mad_trace(sn->host_ctx, n, port, m, out);
}

size_t sib_mad_wire(const mai_mad_t *m, bool out, uint8_t *buf, size_t cap)
{
	struct iba_pkt p;
	size_t hdr;

	if (cap < SIB_MAD_WIRE_MAX || (m->type != MAI_TYPE_MAD && m->type != MAI_TYPE_RAW))
		return 0;
	memset(&p, 0, sizeof(p));
	p.lrh.vl = m->qp == 0 ? 15 : 0;
	p.lrh.sl = m->lrh.sl & 0xF;
	p.lrh.lnh = m->has_grh ? IBA_LNH_GLOBAL : IBA_LNH_LOCAL;
	p.lrh.dlid = m->lrh.dlid;
	p.lrh.slid = m->lrh.slid;
	if (m->has_grh) {
		p.grh.ipver = 6;
		p.grh.tclass = m->grh.tclass;
		p.grh.flow_label = m->grh.flow_label & 0xFFFFF;
		p.grh.nxthdr = 0x1B;
		p.grh.hoplmt = m->grh.hoplmt;
		memcpy(p.grh.sgid, m->grh.sgid, 16);
		memcpy(p.grh.dgid, m->grh.dgid, 16);
	}
	p.bth.opcode = IBA_TRANSPORT_UD | IBA_OPC_SEND_ONLY;
	p.bth.pkey = 0xFFFF;
	p.bth.dqpn = out ? m->remote_qpn & 0xFFFFFF : m->qp;
	p.deth.qkey = m->qp == 0 ? 0 : m->remote_qkey;
	p.deth.src_qp = out ? m->qp : m->remote_qpn & 0xFFFFFF;
	hdr = iba_build_headers(buf, &p);
	if (mai_towire(m, buf + hdr, MAD_SIZE) != MAD_SIZE)
		return 0;
	return iba_finish(buf, hdr, MAD_SIZE, IBA_HAS_VCRC);
}

static void deliver(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m)
{
	const struct mai_filter_ent *ents, *agents;
	uint32_t out[64];
	size_t nents, nagents;
	int cnt;

	if (!header_ok(sn, n, port, m))
		return;
	trace(sn, n, port, m, false);
	if (m->qp == 1 && m->remote_qkey != GSI_QKEY) {
		/* IBA 10.2.5 / 13.5.3: QP1 takes only datagrams with the GSI
		 * Q_Key; anything else is dropped unanswered */
		bad_qkey(sn, n, port);
		return;
	}
	if (m->qp == 1 && m->mgmt_class == MAD_MGMT_CLASS_CM && n->type == SIB_NODE_CA) {
		/* the CM agent of every CA port takes class 0x07 (IBA 12.11; the
		 * kernel's ib_cm owns the class): it checks and counts the rest */
		sib_cm_recv(sn, n, port, m);
		return;
	}
	if (is_response(m)) {
		uint32_t chan = (uint32_t)(m->tid >> MAI_TID_CHAN_SHIFT) & MAI_TID_CHAN_MASK;

		if (chan == SIB_MAD_CHAN_SM) { /* the built-in SM's answer */
			sib_sm_receive(sn, n, port, m);
			return;
		}
		if (chan == SIB_MAD_CHAN_CMA) { /* an SA answer to the rdma_cm */
			if (sn->cma_sa_receive)
				sn->cma_sa_receive(sn, n, port, m);
			else
				drop(sn, n, port, m->qp, SIB_MAD_DROP_NO_AGENT);
			return;
		}
		if (chan == SIB_MAD_CHAN_SMA || chan == SIB_MAD_CHAN_PMA) {
			/* a TrapRepress or answer to softibd's own agent: it takes
			 * (and counts) it without a reply */
			uint8_t in[MAD_SIZE], out[MAD_SIZE];

			if (mai_towire(m, in, sizeof(in)) == MAD_SIZE)
				(chan == SIB_MAD_CHAN_SMA ? sib_sma_process
							   : sib_pma_process)(sn, n, port, in, out);
			return;
		}
		int ret = sn->host->mad_response(sn->host_ctx, chan, n, port, m->qp, m);

		if (ret)
			drop(sn, n, port, m->qp,
			     ret == -ESRCH ? SIB_MAD_DROP_NO_REQUEST : SIB_MAD_DROP_NO_AGENT);
		return;
	}
	if (m->qp == 1 && m->mgmt_class == MAD_MGMT_CLASS_SUBN_ADM && sib_sa_at(sn, n, port)) {
		run_sa(sn, n, port, m);
		return;
	}
	agents = sib_mad_agents(m->qp, &nagents);
	nents = sn->host->mad_filters(sn->host_ctx, n, port, m->qp, agents, nagents, &ents);
	cnt = mai_match(ents, nents, m, out, sizeof(out) / sizeof(out[0]));
	if (cnt <= 0) {
		unmatched(sn, n, port, m);
		return;
	}
	if (cnt > (int)(sizeof(out) / sizeof(out[0])))
		cnt = (int)(sizeof(out) / sizeof(out[0]));
	for (int i = 0; i < cnt; i++) {
		if (out[i] == SIB_MAD_CHAN_SMA) {
			sib_subnet_mad_ctr(sn)->sma++;
			run_agent(sn, n, port, m, sib_sma_process);
		} else if (out[i] == SIB_MAD_CHAN_PMA) {
			sib_subnet_mad_ctr(sn)->pma++;
			run_agent(sn, n, port, m, sib_pma_process);
		} else {
			sn->host->mad_push(sn->host_ctx, out[i], m);
		}
	}
}

/* The routing fields a receive at (n, port) sees of m sent from QP sqp
 * with Q_Key qkey in its DETH. */
static void as_received(mai_mad_t *m, uint8_t port, uint8_t sqp, uint32_t qkey)
{
	m->type = MAI_TYPE_MAD;
	m->port = port;
	m->remote_qpn = sqp;
	m->remote_qkey = qkey;
	m->pkey_index = 0;
}

static uint8_t count_lid_path(struct sib_fab_node *n, uint8_t port, uint16_t dlid, uint16_t hops,
			      const mai_mad_t *m);

/* Where a LID-routed packet that reached rt is delivered: a switch's own
 * LID is answered for the port it came in on (hardware's LocalPortNum is
 * the ingress port), anything else at rt.port. */
static uint8_t lid_arrival(const struct sib_route *rt, uint8_t in)
{
	return rt->node->type == SIB_NODE_SWITCH && rt->port == 0 && rt->hops ? in : rt->port;
}

/* ---- directed route ------------------------------------------------------- */

static struct mad_dr_node dr_node(const struct sib_fab_node *n)
{
	struct mad_dr_node dn = {
		.is_switch = n->type == SIB_NODE_SWITCH,
		.num_ports = n->num_ports,
	};

	return dn;
}

static enum sib_mad_drop dr_drop_cause(enum mad_dr_verdict v)
{
	switch (v) {
	case MAD_DR_DROP_HOP_CNT: return SIB_MAD_DROP_DR_HOP_CNT;
	case MAD_DR_DROP_PORT: return SIB_MAD_DROP_DR_PORT;
	case MAD_DR_DROP_NOT_SWITCH: return SIB_MAD_DROP_DR_NOT_SWITCH;
	case MAD_DR_DROP_PERMISSIVE: return SIB_MAD_DROP_DR_PERMISSIVE;
	case MAD_DR_DROP_NOT_DR: return SIB_MAD_DROP_BAD_QP_CLASS;
	default: return SIB_MAD_DROP_DR_HOP_PTR;
	}
}

/* The DR SMP in wire, with `tmpl` its routing fields, arrived at (n,
 * port) and was judged r: deliver it there (LOCAL), or drop it. */
static void dr_local(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const uint8_t *wire,
		     const mai_mad_t *tmpl)
{
	mai_mad_t m = *tmpl;

	mai_fromwire(wire, MAD_SIZE, &m);
	as_received(&m, port, 0, 0);
	deliver(sn, n, port, &m);
}

/*
 * Walk a DR SMP that mad_dr_send let leave node n by `port` (C14-9 or
 * C14-13 at the sender).  Hop count 0 never leaves the node: the SMI
 * loops it back to itself (IBA 14.2.2.2).  Each arrival runs mad_dr_recv:
 * FORWARD crosses the next link, LOCAL delivers, LID_ROUTE takes the
 * LID-routed part, a drop verdict is counted with its cause.
 */
static void dr_walk(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, uint8_t *wire,
		    const mai_mad_t *tmpl)
{
	struct mad_dr_result r;
	struct mad_dr_node dn;

	for (int hop = 0; hop < DR_WALK_MAX; hop++) {
		if (wire[7] == 0) {
			dn = dr_node(n); /* hop count 0: loop back to this node's SMI */
			r = mad_dr_recv(wire, &dn, port);
		} else {
			struct sib_fab_port *peer;

			if (!link_up(n, port)) {
				drop(sn, n, port, 0, SIB_MAD_DROP_LINK_DOWN);
				return;
			}
			count_link(n, port, tmpl);
			peer = n->ports[port].peer;
			n = peer->node;
			port = peer->num;
			dn = dr_node(n);
			r = mad_dr_recv(wire, &dn, port);
		}
		switch (r.verdict) {
		case MAD_DR_FORWARD:
			sib_subnet_mad_ctr(sn)->forwarded++;
			port = r.port; /* link_up() refuses port 0 and ports past NumPorts */
			continue;
		case MAD_DR_LOCAL:
			dr_local(sn, n, port, wire, tmpl);
			return;
		case MAD_DR_LID_ROUTE: {
			/* The LID-routed part (IBA 14.2.2.2 C14-9:3): the switch
			 * LID-routes to DrDLID (D=0) or DrSLID (D=1). */
			struct sib_route rt = sib_subnet_route(&sn->fab, n, 0, r.lid, true);

			dn = dr_node(n);
			if (rt.verdict != SIB_ROUTE_OK ||
			    mad_dr_send(wire, &dn, 0).verdict != MAD_DR_SEND) {
				drop(sn, n, port, 0, SIB_MAD_DROP_DR_LID_PART);
				return;
			}
			port = lid_arrival(&rt, count_lid_path(n, 0, r.lid, rt.hops, tmpl));
			n = rt.node;
			dn = dr_node(n);
			r = mad_dr_recv(wire, &dn, port);
			if (r.verdict == MAD_DR_LOCAL)
				dr_local(sn, n, port, wire, tmpl);
			else
				drop(sn, n, port, 0, SIB_MAD_DROP_DR_LID_PART);
			return;
		}
		default:
			drop(sn, n, port, 0, dr_drop_cause(r.verdict));
			return;
		}
	}
	drop(sn, n, port, 0, SIB_MAD_DROP_DR_HOP_PTR);
}

/* Is wire (D=0, HopPointer 0, HopCount > 0, DrSLID not permissive) an
 * SMP whose first part is LID routed to LRH.DLID (IBA 14.2.2.1)? */
static bool dr_lid_first(const uint8_t *wire, const mai_mad_t *m)
{
	return !(wire[4] & 0x80) && wire[6] == 0 && wire[7] != 0 &&
	       (wire[32] << 8 | wire[33]) != MAD_PERMISSIVE_LID &&
	       m->lrh.dlid != MAD_PERMISSIVE_LID;
}

/*
 * A DR SMP leaving (n, port): the sender's SMI step, then the walk.  With
 * a LID-routed first part the SMP goes on VL15 to LRH.DLID first, and the
 * node there takes the originator step (C14-9:1) out of InitialPath[1].
 */
static void dr_send(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m)
{
	uint8_t wire[MAD_SIZE];
	struct mad_dr_node dn = dr_node(n);
	struct mad_dr_result r;

	if (mai_towire(m, wire, sizeof(wire)) != MAD_SIZE) {
		drop(sn, n, port, 0, SIB_MAD_DROP_BAD_QP_CLASS);
		return;
	}
	if (dr_lid_first(wire, m)) {
		struct sib_route rt = sib_subnet_route(&sn->fab, n, port, m->lrh.dlid, true);

		if (rt.verdict != SIB_ROUTE_OK) {
			drop(sn, rt.at ? rt.at : n, rt.at ? rt.at_port : port, 0,
			     SIB_MAD_DROP_DR_LID_PART);
			return;
		}
		count_lid_path(n, port, m->lrh.dlid, rt.hops, m);
		n = rt.node;
		port = wire[MAD_SMP_PATH_OFFS + 1];
		dn = dr_node(n);
	}
	r = mad_dr_send(wire, &dn, port);
	if (r.verdict != MAD_DR_SEND) {
		drop(sn, n, port, 0, dr_drop_cause(r.verdict));
		return;
	}
	dr_walk(sn, n, port, wire, m);
}

/* ---- LID routed ------------------------------------------------------------ */

/* The LFT's port for dlid at switch n (0xFF when there is none). */
static uint8_t lft_port(const struct sib_fab_node *n, uint16_t dlid)
{
	const struct sib_switch_mgmt *sw;

	if (n->type != SIB_NODE_SWITCH || !n->mgmt || !(sw = n->mgmt->sw) || !sw->lft ||
	    dlid >= SIB_SUBN_LFT_CAP)
		return MAD_LFT_NO_PATH;
	return sw->lft[dlid];
}

/* Count the ports a LID-routed packet crosses from (n, port) to dlid, on
 * a route sib_subnet_route found whole (so every step exists); from a
 * switch's port 0 (its SMA's answers and traps, a DR walk's LID-routed
 * part) the first link is the LFT's.  Returns the port it came in on at
 * the end (port itself when hops is 0). */
static uint8_t count_lid_path(struct sib_fab_node *n, uint8_t port, uint16_t dlid, uint16_t hops,
			      const mai_mad_t *m)
{
	uint8_t in = port;

	if (port == 0 && hops)
		port = lft_port(n, dlid);
	for (uint16_t h = 0; h < hops; h++) {
		struct sib_fab_port *peer;

		if (port == 0 || port > n->num_ports || !(peer = n->ports[port].peer))
			return in;
		count_link(n, port, m);
		n = peer->node;
		in = peer->num;
		port = lft_port(n, dlid);
	}
	return in;
}

static void lid_send(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m)
{
	struct sib_route rt;
	mai_mad_t rx;
	uint8_t in;

	if (m->qp == 1 && m->remote_qpn != 1) {
		drop(sn, n, port, 1, SIB_MAD_DROP_NO_QP); /* no redirected GSI QPs here */
		return;
	}
	if (m->qp == 0 && m->lrh.dlid == MAD_PERMISSIVE_LID) {
		rt.verdict = SIB_ROUTE_OK; /* a LID-routed SMP to the permissive LID: this node */
		rt.node = n;
		rt.port = port;
		rt.hops = 0;
	} else {
		rt = sib_subnet_route(&sn->fab, n, port, m->lrh.dlid, m->qp == 0);
	}
	if (rt.verdict != SIB_ROUTE_OK) {
		drop(sn, rt.at ? rt.at : n, rt.at ? rt.at_port : port, m->qp, SIB_MAD_DROP_ROUTE);
		return;
	}
	in = lid_arrival(&rt, count_lid_path(n, port, m->lrh.dlid, rt.hops, m));
	rx = *m;
	as_received(&rx, in, m->qp, deth_qkey(m));
	deliver(sn, rt.node, in, &rx);
}

/* ---- sending ------------------------------------------------------------------ */

/* The reply (wire, mad_make_reply already applied) to req, which arrived
 * at (n, port): DR back along its return path, else LID routed to the
 * requester's SLID and QP. */
static void send_reply(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port,
		       const mai_mad_t *req, const uint8_t *wire)
{
	mai_mad_t r = *req;

	if (mai_fromwire(wire, MAD_SIZE, &r) != MAD_SIZE)
		return;
	if (n->type == SIB_NODE_SWITCH && req->mgmt_class != MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		port = 0; /* LID routed back through the switch's LFT */
	r.type = MAI_TYPE_MAD;
	r.port = port;
	r.remote_qpn = req->remote_qpn;
	r.remote_qkey = req->qp ? GSI_QKEY : 0; /* the agent's QP1 sends with its own */
	r.lrh.dlid = req->lrh.slid;
	r.lrh.slid = req->lrh.dlid == MAD_PERMISSIVE_LID ? sib_mad_port_lid(n, port) : req->lrh.dlid;
	if (req->has_grh) {
		memcpy(r.grh.dgid, req->grh.sgid, 16);
		memcpy(r.grh.sgid, req->grh.dgid, 16);
	}
	sib_mad_send(sn, n, port, &r);
}

void sib_mad_send(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, const mai_mad_t *m)
{
	if (!n || port > n->num_ports || m->type == MAI_TYPE_OOB || m->type == MAI_TYPE_TIMEOUT)
		return;
	sib_subnet_mad_ctr(sn)->sent++;
	if (!header_ok(sn, n, port, m))
		return;
	trace(sn, n, port, m, true);
	if (m->mgmt_class == MAD_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		dr_send(sn, n, port, m);
	else
		lid_send(sn, n, port, m);
}

void sib_mad_out(struct sib_subnet *sn, struct sib_fab_node *n, uint8_t port, mai_mad_t *m)
{
	uint32_t chan = m->mgmt_class == MAD_MGMT_CLASS_PERF_MGMT ? SIB_MAD_CHAN_PMA
								  : SIB_MAD_CHAN_SMA;

	/* an agent's request (a Trap) carries the agent's channel in TID bits
	 * 63..40, as a channel's does, so its TrapRepress comes back to it */
	if (!is_response(m))
		m->tid = (m->tid & ((1ull << MAI_TID_CHAN_SHIFT) - 1)) |
			 (uint64_t)chan << MAI_TID_CHAN_SHIFT;
	m->port = port;
	if (!m->lrh.slid)
		m->lrh.slid = sib_mad_port_lid(n, port);
	sib_mad_send(sn, n, port, m);
}

int sib_mad_init(struct sib_subnet *sn)
{
	sn->mad_out = sib_mad_out;
	return 0;
}

void sib_mad_fini(struct sib_subnet *sn)
{
	sn->mad_out = NULL;
}

/* The host's MAD events (subnet_api.h) on the router's counters: where
 * each counts, as an offset into struct sib_mad_counters. */
#define MAD_CTR(f) offsetof(struct sib_mad_counters, f)
static const size_t mad_event_ctr[] = {
	[SIB_MAD_EV_DELIVERED] = MAD_CTR(delivered), [SIB_MAD_EV_RESENT] = MAD_CTR(resent),
	[SIB_MAD_EV_TIMEOUT] = MAD_CTR(timeouts), [SIB_MAD_EV_OOB] = MAD_CTR(oob),
	[SIB_MAD_EV_DUP_TID] = MAD_CTR(dup_tid), [SIB_MAD_EV_BAD_MESSAGE] = MAD_CTR(bad_messages),
	[SIB_MAD_EV_QUEUE_FULL] = MAD_CTR(drop[SIB_MAD_DROP_QUEUE_FULL]),
	[SIB_MAD_EV_NOT_PRIV] = MAD_CTR(drop[SIB_MAD_DROP_NOT_PRIV]),
	[SIB_MAD_EV_QP_MISMATCH] = MAD_CTR(drop[SIB_MAD_DROP_QP_MISMATCH]),
};
#undef MAD_CTR
_Static_assert(sizeof(mad_event_ctr) / sizeof(mad_event_ctr[0]) == SIB_MAD_EV_MAX,
	       "a counter for every sib_mad_event");

void sib_subnet_mad_count(struct sib_subnet *sn, enum sib_mad_event ev, uint64_t n)
{
	if ((unsigned int)ev < SIB_MAD_EV_MAX)
		*(uint64_t *)((char *)&sn->mad + mad_event_ctr[ev]) += n;
}

const struct sib_mad_counters *sib_subnet_mad_counters(const struct sib_subnet *sn)
{
	return &sn->mad;
}
