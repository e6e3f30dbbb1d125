// SPDX-License-Identifier: MIT
/*
 * The SA of the built-in SM (IBA 1.4 vol 1, 15 Subnet Administration; class
 * 0x03 on QP1 of the SM's port, default mode only): ClassPortInfo,
 * NodeRecord, PortInfoRecord, PathRecord, LinkRecord, SwitchInfoRecord and
 * GUIDInfoRecord here; MCMemberRecord (sa_mcast.c), ServiceRecord
 * (sa_service.c), InformInfo and InformInfoRecord with the Reports of the
 * SM's traps (sa_inform.c).  Records by SubnAdmGet (one record,
 * GetResp) and SubnAdmGetTable (every match, GetTableResp, RMPP Active),
 * with ComponentMask matching over the record layouts of iba/sa.c.  It
 * answers from the subnet state the SM programmed (what an SM keeps in its
 * database), as OpenSM's SA answers (research mad-formats.md 4.1-4.5):
 * status 0x0300 for a Get without a match, 0x0400 for a Get with several,
 * a 56-byte GetTableResp with AttributeOffset 0 for a table without one,
 * 0x000C for an attribute or method it does not serve.  The whole message
 * goes back to the router (mad_router.c), which cuts it into RMPP segments.
 * Single-threaded; no locks.
 */
#include <stdlib.h>
#include <string.h>

#include "common/sib_shm.h" /* SIB_PKEY_TBL_LEN: NodeInfo.PartitionCap of a CA */
#include "iba/sa.h"
#include "subnet/sma.h"
#include "subnet/sa_int.h"
#include "subnet/subnet_int.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define SA_RESP_TIME		16	/* ClassPortInfo.RespTimeValue: OpenSM's 200 ms */
#define SA_CAP_GETSET_NOTICE	(1u << 1)	/* ClassPortInfo.CapabilityMask (15.2.1.1) */
#define SA_CAP_PI_CAPMASK_MATCH	(1u << 13)	/* PortInfoRecord CapabilityMask bitwise */
#define SA_MAX_FIELDS		128	/* flattened fields of one record layout */
#define GSI_QKEY		0x80010000u
#define SA_ATTR_SERVICE_RECORD		0x0031
#define SA_ATTR_INFORM_INFO		0x0003
#define SA_ATTR_INFORM_INFO_RECORD	0x00F3

/* ---- comparing records under a ComponentMask (15.2.4.1) ------------------ */

uint64_t sa_be_get(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* Does field f hold the same value in records a and b? */
static bool field_eq(const struct mad_field *f, const uint8_t *a, const uint8_t *b)
{
	for (unsigned int i = 0; i < f->count; i++) {
		unsigned int off = f->off + i * f->stride;

		if (((sa_be_get(a + off, f->bytes) >> f->shift) & f->mask) !=
		    ((sa_be_get(b + off, f->bytes) >> f->shift) & f->mask))
			return false;
	}
	return true;
}

/* The bytes of the embedded attribute named name (NodeRecord's bit 14
 * "NodeDescription" compares the whole 64 bytes). */
static bool embed_eq(const struct sa_layout *l, const char *name, const uint8_t *a,
		     const uint8_t *b, bool *found)
{
	for (size_t e = 0; e < l->nembeds; e++) {
		size_t len;

		if (strcmp(l->embeds[e].layout, name))
			continue;
		*found = true;
		len = (size_t)(e + 1 < l->nembeds ? l->embeds[e + 1].off : l->size) -
		      l->embeds[e].off;
		return !memcmp(a + l->embeds[e].off, b + l->embeds[e].off, len);
	}
	return true;
}

/*
 * Does record have match want on every ComponentMask bit of mask that this
 * layout names (IBA 15.2.4.1: a selected field must be equal)?  Bits of
 * reserved fields and bits past the layout's known ones are ignored.
 */
static bool comp_match(const struct sa_layout *l, uint64_t mask, const uint8_t *want,
		       const uint8_t *have)
{
	struct mad_field f[SA_MAX_FIELDS];
	size_t nf = sa_layout_flatten(l, f, N(f));

	if (nf > N(f))
		nf = N(f);
	for (size_t bit = 0; bit < l->ncomp && bit < 64; bit++) {
		const char *name = l->comp[bit];
		bool found = false;

		if (!(mask >> bit & 1) || !strcmp(name, "reserved"))
			continue;
		for (size_t i = 0; i < nf; i++) {
			if (strcmp(f[i].name, name))
				continue;
			found = true;
			if (!field_eq(&f[i], want, have))
				return false;
		}
		if (!found && !embed_eq(l, name, want, have, &found))
			return false;
	}
	return true;
}

/* Append record rec (l->size bytes) if it matches the request. */
void sa_add_record(struct sa_req *q, const uint8_t *rec)
{
	size_t at = MAD_SA_HDR_SIZE + (size_t)q->count * q->l->size;

	if (!comp_match(q->l, q->sa.comp_mask & ~q->skip, q->wire + MAD_SA_HDR_SIZE, rec))
		return;
	if (at + q->l->size > q->cap) {
		q->overflow = true;
		return;
	}
	memcpy(q->out + at, rec, q->l->size);
	q->count++;
}

/* ---- the SM's database: nodes and end ports ------------------------------- */

static bool is_switch(const struct sib_fab_node *n)
{
	return n->type == SIB_NODE_SWITCH;
}

const struct mad_port_info *sa_pinfo(const struct sib_fab_node *n, uint8_t pn)
{
	return &n->mgmt->port[pn].pi;
}

/* Is port pn of n an end port the SM gave a LID (a CA port, switch port 0)? */
bool sa_endport(const struct sib_fab_node *n, uint8_t pn)
{
	if (!n->mgmt || !n->mgmt->port || pn > n->num_ports || (is_switch(n) ? pn != 0 : pn == 0))
		return false;
	return sa_pinfo(n, pn)->lid != 0;
}

static uint64_t port_guid(const struct sib_fab_node *n, uint8_t pn)
{
	if (is_switch(n))
		return n->ports[0].guid ? n->ports[0].guid : n->node_guid;
	return n->ports[pn].guid;
}

/* The GID of an end port: the subnet prefix and its GUID (4.1.1). */
void sa_port_gid(const struct sib_fab_node *n, uint8_t pn, uint8_t gid[16])
{
	uint64_t pre = sa_pinfo(n, pn)->gid_prefix, guid = port_guid(n, pn);

	for (int i = 0; i < 8; i++) {
		gid[i] = (uint8_t)(pre >> (56 - 8 * i));
		gid[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
	}
}

bool sa_port_by_lid(struct sib_subnet *sn, uint16_t lid, struct sib_fab_node **n, uint8_t *pn)
{
	for (unsigned int i = 0; lid && i < sn->fab.n_nodes; i++)
		for (unsigned int p = 0; p <= sn->fab.nodes[i]->num_ports; p++)
			if (sa_endport(sn->fab.nodes[i], (uint8_t)p) &&
			    sib_subnet_owns(sa_pinfo(sn->fab.nodes[i], (uint8_t)p), lid)) {
				*n = sn->fab.nodes[i];
				*pn = (uint8_t)p;
				return true;
			}
	return false;
}

bool sa_port_by_guid(struct sib_subnet *sn, uint64_t guid, struct sib_fab_node **n, uint8_t *pn)
{
	for (unsigned int i = 0; guid && i < sn->fab.n_nodes; i++) {
		struct sib_fab_node *x = sn->fab.nodes[i];

		for (unsigned int p = is_switch(x) ? 0 : 1; p <= (is_switch(x) ? 0u : x->num_ports); p++)
			if (x->mgmt && x->mgmt->port && port_guid(x, (uint8_t)p) == guid) {
				*n = x;
				*pn = (uint8_t)p;
				return true;
			}
	}
	return false;
}

bool sa_share_pkey(const struct sib_fab_node *a, uint8_t ap, const struct sib_fab_node *b,
		   uint8_t bp)
{
	const uint16_t *t = a->mgmt->port[is_switch(a) ? 0 : ap].pkey;

	for (unsigned int i = 0; i < SIB_SUBN_PKEYS; i++) {
		bool fa = t[i] & 0x8000, fb;

		if ((t[i] & 0x7FFF) && sa_has_pkey(b, bp, t[i], &fb) && (fa || fb))
			return true;
	}
	return false;
}

/* ---- ClassPortInfo (15.2.5.1 / 13.4.8.1) --------------------------------- */

static uint16_t class_port_info(struct sa_req *q)
{
	struct mad_class_port_info cpi = {
		.base_version = MAD_BASE_VERSION, .class_version = MAD_SA_CLASS_VERSION,
		.capability_mask = SA_CAP_GETSET_NOTICE | SA_CAP_PI_CAPMASK_MATCH, .resp_time_value = SA_RESP_TIME,
		.redirect_qp = 1, .redirect_qkey = GSI_QKEY, .trap_qkey = GSI_QKEY,
	};

	if (q->sa.hdr.method != MAD_METHOD_GET)
		return MAD_STATUS_UNSUP_METHOD_ATTR;
	mad_class_port_info_encode(&cpi, q->out + MAD_SA_HDR_SIZE);
	q->count = 1;
	return MAD_STATUS_SUCCESS;
}

/* ---- NodeRecord (15.2.5.2), PortInfoRecord (15.2.5.3) -------------------- */

/* The NodeRecord of n as reached through its end port pn. */
static void node_record(const struct sib_fab_node *n, uint8_t pn, uint8_t *rec)
{
	struct sa_node_record r;

	memset(&r, 0, sizeof(r));
	r.lid = sa_pinfo(n, pn)->lid;
	r.node_info = (struct mad_node_info){
		.base_version = MAD_BASE_VERSION, .class_version = MAD_SMP_CLASS_VERSION,
		.node_type = (uint8_t)n->type, .num_ports = n->num_ports,
		.sys_guid = n->sys_image_guid, .node_guid = n->node_guid,
		.port_guid = port_guid(n, pn),
		.partition_cap = is_switch(n) ? SIB_SUBN_PKEYS : SIB_PKEY_TBL_LEN,
		.device_id = (uint16_t)n->device_id,
		.local_port_num = pn, .vendor_id = n->vendor_id & 0xFFFFFF,
	};
	memcpy(r.node_desc.description, n->desc, strnlen(n->desc, sizeof(r.node_desc.description)));
	sa_node_record_encode(&r, rec);
}

static void node_records(struct sa_req *q)
{
	uint8_t rec[128];

	for (unsigned int i = 0; i < q->sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = q->sn->fab.nodes[i];

		for (unsigned int pn = 0; pn <= n->num_ports; pn++)
			if (sa_endport(n, (uint8_t)pn)) {
				node_record(n, (uint8_t)pn, rec);
				sa_add_record(q, rec);
			}
	}
}

/* PortInfoRecords: every port of every node; a switch's carry port 0's
 * LID as EndportLID (15.2.5.3), its external ports only what they have. */
static void port_info_records(struct sa_req *q)
{
	uint64_t capbit = sa_comp_mask(q->l, "CapabilityMask");
	uint32_t want_cap = (uint32_t)sa_be_get(q->wire + MAD_SA_HDR_SIZE + 4 + 20, 4);
	uint8_t rec[128];

	/* CapabilityMask matches bitwise: every bit asked is set (OpenSM's
	 * IsPortInfoCapMaskMatchSupported, ClassPortInfo bit 13; saquery -s) */
	q->skip = capbit;

	for (unsigned int i = 0; i < q->sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = q->sn->fab.nodes[i];
		uint8_t lid_port = 0;

		if (!n->mgmt || !n->mgmt->port)
			continue;
		for (unsigned int pn = is_switch(n) ? 0 : 1; pn <= n->num_ports; pn++) {
			struct sa_port_info_record r;

			if (!is_switch(n))
				lid_port = (uint8_t)pn;
			if (!sa_endport(n, lid_port))
				continue;
			memset(&r, 0, sizeof(r));
			r.endport_lid = sa_pinfo(n, lid_port)->lid;
			r.port_num = (uint8_t)pn;
			r.port_info = *sa_pinfo(n, (uint8_t)pn);
			r.port_info.m_key = 0; /* the SA shows no M_Key (15.2.5.3) */
			r.port_info.local_port_num = (uint8_t)pn;
			if ((q->sa.comp_mask & capbit) &&
			    (r.port_info.capability_mask & want_cap) != want_cap)
				continue;
			sa_port_info_record_encode(&r, rec);
			sa_add_record(q, rec);
		}
	}
}

/* ---- LinkRecord (15.2.5.7), SwitchInfoRecord (15.2.5.4), GUIDInfoRecord
 * (15.2.5.18) ---------------------------------------------------------------- */

/* The LID a port of n answers for: a switch's port 0's, a CA port's own. */
static uint16_t node_port_lid(const struct sib_fab_node *n, uint8_t pn)
{
	return sa_pinfo(n, is_switch(n) ? 0 : pn)->lid;
}

/* One per linked port in each direction whose both ends have a LID. */
static void link_records(struct sa_req *q)
{
	uint8_t rec[8];

	for (unsigned int i = 0; i < q->sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = q->sn->fab.nodes[i];

		for (unsigned int pn = 1; n->mgmt && n->mgmt->port && pn <= n->num_ports; pn++) {
			const struct sib_fab_port *peer = n->ports[pn].peer;
			struct sa_link_record r;

			if (!peer || !peer->node->mgmt || !peer->node->mgmt->port)
				continue;
			r = (struct sa_link_record){
				.from_lid = node_port_lid(n, (uint8_t)pn), .from_port = (uint8_t)pn,
				.to_port = peer->num, .to_lid = node_port_lid(peer->node, peer->num),
			};
			if (!r.from_lid || !r.to_lid)
				continue;
			sa_link_record_encode(&r, rec);
			sa_add_record(q, rec);
		}
	}
}

static void switch_info_records(struct sa_req *q)
{
	uint8_t rec[24];

	for (unsigned int i = 0; i < q->sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = q->sn->fab.nodes[i];
		struct sa_switch_info_record r;

		if (!is_switch(n) || !sa_endport(n, 0) || !n->mgmt->sw)
			continue;
		r.lid = sa_pinfo(n, 0)->lid;
		r.switch_info = n->mgmt->sw->si;
		sa_switch_info_record_encode(&r, rec);
		sa_add_record(q, rec);
	}
}

/* One block (GUIDCap 1) per end port: its port GUID at index 0. */
static void guid_info_records(struct sa_req *q)
{
	uint8_t rec[72];

	for (unsigned int i = 0; i < q->sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = q->sn->fab.nodes[i];

		for (unsigned int pn = 0; pn <= n->num_ports; pn++) {
			struct sa_guid_info_record r;

			if (!sa_endport(n, (uint8_t)pn))
				continue;
			memset(&r, 0, sizeof(r));
			r.lid = sa_pinfo(n, (uint8_t)pn)->lid;
			r.guid_info.guid[0] = port_guid(n, (uint8_t)pn);
			sa_guid_info_record_encode(&r, rec);
			sa_add_record(q, rec);
		}
	}
}

/* ---- PathRecord (15.2.5.16) -------------------------------------------------- */

/* PathRecord.Rate (15.2.5.16 table 205) of a link's width and speed. */
static uint8_t link_rate(const struct mad_port_info *pi)
{
	static const struct { uint16_t gbps10; uint8_t code; } rates[] = {
		{ 25, 2 }, { 50, 5 }, { 100, 3 }, { 200, 6 }, { 300, 4 }, { 400, 7 },
		{ 600, 8 }, { 800, 9 }, { 1200, 10 }, { 140, 11 }, { 560, 12 },
		{ 1120, 13 }, { 1680, 14 }, { 250, 15 }, { 1000, 16 }, { 2000, 17 },
		{ 3000, 18 },
	};
	unsigned int width = pi->link_width_active == 2 ? 4 : pi->link_width_active == 4 ? 8 :
			     pi->link_width_active == 8 ? 12 : 1;
	unsigned int lane = pi->link_speed_active == 4 ? 100 : pi->link_speed_active == 2 ? 50 : 25;

	if (pi->link_speed_ext_active == 1)
		lane = 140;
	else if (pi->link_speed_ext_active == 2)
		lane = 250;
	for (size_t i = 0; i < N(rates); i++)
		if (rates[i].gbps10 == width * lane)
			return rates[i].code;
	return 2;
}

/* A link leaving by a port with PortInfo pi: the path's MTU and rate go
 * down to it (0: nothing yet). */
void sa_link_min(const struct mad_port_info *pi, uint8_t *mtu, uint8_t *rate)
{
	uint8_t r = link_rate(pi);

	if (pi->neighbor_mtu && (!*mtu || pi->neighbor_mtu < *mtu))
		*mtu = pi->neighbor_mtu;
	if (!*rate || r < *rate)
		*rate = r;
}

/* The MTU and rate of a route of hops links from (n, port) to dlid: the
 * smallest of every link it crosses (each switch's LFT picks the next);
 * a route of 0 links (a port to itself) takes its own link's. */
static void path_links(const struct sib_fab_node *n, uint8_t port, uint16_t dlid, uint16_t hops,
		       uint8_t *mtu, uint8_t *rate)
{
	*mtu = *rate = 0;
	if (!hops && (!is_switch(n) || n->ports[0].peer))
		sa_link_min(sa_pinfo(n, port), mtu, rate);
	for (uint16_t h = 0; h < hops; h++) {
		const struct sib_switch_mgmt *sw = n->mgmt ? n->mgmt->sw : NULL;
		const struct sib_fab_port *peer;

		if (is_switch(n))
			port = sw && sw->lft && dlid < SIB_SUBN_LFT_CAP ? sw->lft[dlid] : 0;
		if (port == 0 || port > n->num_ports || !(peer = n->ports[port].peer))
			break;
		sa_link_min(sa_pinfo(n, port), mtu, rate);
		n = peer->node;
	}
	if (!*mtu)
		*mtu = MAD_MTU_4096; /* a switch to itself: no link, no limit */
	if (!*rate)
		*rate = 7;
}

/* A selector (2 bits) and value of the request against what the path has. */
bool sa_sel_ok(uint8_t sel, uint8_t want, uint8_t have)
{
	switch (sel) {
	case 0: return have > want;
	case 1: return have < want;
	case 2: return have == want;
	default: return true;
	}
}

/* Does port (n, pn)'s P_KeyTable hold a key of partition pkey (low 15
 * bits)?  *full: a full member (bit 15).  A switch's external ports and
 * port 0 share port 0's table as far as an end port goes. */
bool sa_has_pkey(const struct sib_fab_node *n, uint8_t pn, uint16_t pkey, bool *full)
{
	const uint16_t *t = n->mgmt->port[is_switch(n) ? 0 : pn].pkey;

	for (unsigned int i = 0; i < SIB_SUBN_PKEYS; i++)
		if ((t[i] & 0x7FFF) && (t[i] & 0x7FFF) == (pkey & 0x7FFF)) {
			*full = t[i] & 0x8000;
			return true;
		}
	return false;
}

/*
 * The P_Key of a path (IBA 15.2.5.16, 10.9.3): a partition both ends are
 * members of, at least one as a full member: the asked one as asked (want,
 * with ask) or the first such entry of the source's table.  0: none.
 */
static uint16_t path_pkey(const struct sib_fab_node *s, uint8_t sp, const struct sib_fab_node *d,
			  uint8_t dp, bool ask, uint16_t want)
{
	const uint16_t *t = s->mgmt->port[is_switch(s) ? 0 : sp].pkey;

	for (unsigned int i = 0; i < SIB_SUBN_PKEYS; i++) {
		uint16_t k = ask ? want : t[i];
		bool fs, fd;

		if ((k & 0x7FFF) && sa_has_pkey(s, sp, k, &fs) && sa_has_pkey(d, dp, k, &fd) &&
		    (fs || fd))
			return k;
		if (ask)
			break;
	}
	return 0;
}

/* The path from (s, sp) to (d, dp), if the fabric routes it. */
static bool path_record(struct sa_req *q, const struct sib_fab_node *s, uint8_t sp,
			const struct sib_fab_node *d, uint8_t dp, uint8_t *rec)
{
	const struct sa_path_record *w = NULL;
	struct sa_path_record want, r;
	struct sib_route rt;
	uint64_t cm = q->sa.comp_mask;

	rt = sib_subnet_route(&q->sn->fab, s, sp, sa_pinfo(d, dp)->lid, false);
	if (rt.verdict != SIB_ROUTE_OK || rt.node != d)
		return false;
	memset(&r, 0, sizeof(r));
	sa_path_record_decode(&want, q->wire + MAD_SA_HDR_SIZE);
	w = &want;
	if (cm & 3)
		r.service_id = w->service_id;
	sa_port_gid(d, dp, r.dgid);
	sa_port_gid(s, sp, r.sgid);
	r.dlid = sa_pinfo(d, dp)->lid;
	r.slid = sa_pinfo(s, sp)->lid;
	r.reversible = 1;
	r.pkey = path_pkey(s, sp, d, dp, cm & sa_comp_mask(q->l, "P_Key"), w->pkey);
	if (!r.pkey)
		return false;
	if (cm & sa_comp_mask(q->l, "SL"))
		r.sl = w->sl; /* any SL: SL2VL maps none to VL15 here */
	r.mtu_selector = r.rate_selector = r.packet_life_time_selector = SA_SEL_EXACT;
	path_links(s, sp, r.dlid, rt.hops, &r.mtu, &r.rate);
	r.packet_life_time = SA_PKT_LIFE;
	if (((cm & sa_comp_mask(q->l, "MTU")) &&
	     !sa_sel_ok((cm & sa_comp_mask(q->l, "MTUSelector")) ? w->mtu_selector : 2, w->mtu, r.mtu)) ||
	    ((cm & sa_comp_mask(q->l, "Rate")) &&
	     !sa_sel_ok((cm & sa_comp_mask(q->l, "RateSelector")) ? w->rate_selector : 2, w->rate,
		     r.rate)) ||
	    ((cm & sa_comp_mask(q->l, "PacketLifeTime")) &&
	     !sa_sel_ok((cm & sa_comp_mask(q->l, "PacketLifeTimeSelector")) ?
		     w->packet_life_time_selector : 2, w->packet_life_time, r.packet_life_time)) ||
	    ((cm & sa_comp_mask(q->l, "Reversible")) && w->reversible && !r.reversible))
		return false;
	sa_path_record_encode(&r, rec);
	return true;
}

/* Is end port (n, pn) a possible source / destination under the mask?
 * (SGID/SLID, DGID/DLID; the mask's other fields are checked per path.) */
static bool end_ok(struct sa_req *q, const struct sib_fab_node *n, uint8_t pn, bool src)
{
	uint64_t cm = q->sa.comp_mask;
	const uint8_t *w = q->wire + MAD_SA_HDR_SIZE;
	uint8_t gid[16];

	if (!sa_endport(n, pn))
		return false;
	sa_port_gid(n, pn, gid);
	if ((cm & sa_comp_mask(q->l, src ? "SGID" : "DGID")) &&
	    memcmp(gid, w + (src ? 24 : 8), 16))
		return false;
	if ((cm & sa_comp_mask(q->l, src ? "SLID" : "DLID")) &&
	    !sib_subnet_owns(sa_pinfo(n, pn), (uint16_t)sa_be_get(w + (src ? 42 : 40), 2)))
		return false;
	return true;
}

/*
 * Every path of every (source, destination) pair the mask allows, one per
 * pair: the built-in SM gives every port LMC 0, one LID, so there is one
 * path per pair whatever NumbPath asks, as under OpenSM at LMC 0
 * (osm_sa_path_record.c: a GetTable with NumbPath in the mask returns up
 * to NumbPath, its low 7 bits, per pair, NumbPath 0 none; a Get takes
 * NumbPath 1, the IBA 1.2 erratum).  The record's fields other than the
 * ends and the selectors are matched after it is built.
 */
static void path_records(struct sa_req *q)
{
	const struct sib_fabric *f = &q->sn->fab;
	uint64_t ends = sa_comp_mask(q->l, "SGID") | sa_comp_mask(q->l, "SLID") |
			sa_comp_mask(q->l, "DGID") | sa_comp_mask(q->l, "DLID") |
			sa_comp_mask(q->l, "MTU") | sa_comp_mask(q->l, "Rate") |
			sa_comp_mask(q->l, "PacketLifeTime") | sa_comp_mask(q->l, "NumbPath") |
			sa_comp_mask(q->l, "Reversible") | sa_comp_mask(q->l, "P_Key") |
			sa_comp_mask(q->l, "SL") | sa_comp_mask(q->l, "ServiceID") |
			sa_comp_mask(q->l, "MTUSelector") | sa_comp_mask(q->l, "RateSelector") |
			sa_comp_mask(q->l, "PacketLifeTimeSelector");
	uint8_t rec[64];
	struct sa_path_record w;

	sa_path_record_decode(&w, q->wire + MAD_SA_HDR_SIZE);
	if (q->sa.hdr.method == MAD_METHOD_GETTABLE &&
	    (q->sa.comp_mask & sa_comp_mask(q->l, "NumbPath")) && !(w.numb_path & 0x7F))
		return;
	for (unsigned int i = 0; i < f->n_nodes; i++)
		for (unsigned int sp = 0; sp <= f->nodes[i]->num_ports; sp++) {
			if (!end_ok(q, f->nodes[i], (uint8_t)sp, true))
				continue;
			for (unsigned int j = 0; j < f->n_nodes && !q->overflow; j++)
				for (unsigned int dp = 0; dp <= f->nodes[j]->num_ports; dp++) {
					if (!end_ok(q, f->nodes[j], (uint8_t)dp, false) ||
					    !path_record(q, f->nodes[i], (uint8_t)sp, f->nodes[j],
							 (uint8_t)dp, rec))
						continue;
					/* the rest of the mask: equality on what is left */
					q->skip = ends;
					sa_add_record(q, rec);
				}
		}
}

/* ---- dispatch ------------------------------------------------------------------ */

typedef void (*records_fn)(struct sa_req *q);

static const struct {
	uint16_t attr;
	records_fn fn;
} record_attrs[] = {
	{ SA_ATTR_NODE_RECORD, node_records },
	{ SA_ATTR_PORT_INFO_RECORD, port_info_records },
	{ SA_ATTR_PATH_RECORD, path_records },
	{ SA_ATTR_LINK_RECORD, link_records },
	{ SA_ATTR_SWITCH_INFO_RECORD, switch_info_records },
	{ SA_ATTR_GUID_INFO_RECORD, guid_info_records },
};

/* A record attribute: Get wants exactly one match, GetTable every one. */
static uint16_t records(struct sa_req *q, records_fn fn)
{
	uint8_t m = q->sa.hdr.method;

	if (m != MAD_METHOD_GET && m != MAD_METHOD_GETTABLE)
		return MAD_STATUS_UNSUP_METHOD_ATTR;
	q->l = sa_layout_find(q->sa.hdr.attr_id);
	if (!q->l)
		return MAD_STATUS_UNSUP_METHOD_ATTR;
	fn(q);
	if (q->overflow)
		return MAD_SA_STATUS_NO_RESOURCES;
	if (m == MAD_METHOD_GET && q->count == 0)
		return MAD_SA_STATUS_NO_RECORDS;
	if (m == MAD_METHOD_GET && q->count > 1)
		return MAD_SA_STATUS_TOO_MANY_RECORDS;
	return MAD_STATUS_SUCCESS;
}

bool sib_sa_at(const struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port)
{
	/* a switch answers its LID for the port a MAD came in on (lid_arrival) */
	return !sn->sm_external && sn->sm.node && sn->sm.node == n &&
	       (sn->sm.port == port || (is_switch(n) && sn->sm.port == 0));
}

/* The answer's 56-byte header: the request's, R set, status, SM_Key 0,
 * AttributeOffset; GetTableResp RMPP Active (the router segments it). */
static void answer_header(struct sa_req *q, uint16_t status, size_t *len)
{
	struct mad_sa h = q->sa;
	bool table = h.hdr.method == MAD_METHOD_GETTABLE;
	size_t recs = status == MAD_STATUS_SUCCESS ? q->count : 0;
	size_t rsize = q->l ? q->l->size : 72; /* ClassPortInfo: 72 bytes */
	uint8_t hdr[MAD_SIZE];

	h.hdr.r = 1;
	if (h.hdr.method == MAD_METHOD_SET)
		h.hdr.method = MAD_METHOD_GET; /* there is no SetResp (13.4.5) */
	h.hdr.status = status;
	h.sm_key = 0;
	memset(&h.rmpp, 0, sizeof(h.rmpp));
	h.attr_offset = recs ? (uint16_t)(rsize / 8) : 0;
	if (table) {
		h.rmpp.rmpp_version = SA_RMPP_VERSION;
		h.rmpp.rmpp_type = MAD_RMPP_TYPE_DATA;
		h.rmpp.rmpp_flags = MAD_RMPP_FLAG_ACTIVE;
		h.rmpp.rmpp_resp_time = 0x1F;
	}
	memset(h.data, 0, sizeof(h.data));
	mad_sa_encode(&h, hdr);
	memcpy(q->out, hdr, MAD_SA_HDR_SIZE);
	if (table) {
		*len = MAD_SA_HDR_SIZE + recs * rsize;
	} else {
		*len = MAD_SIZE; /* one MAD: the record (or zeros) in its data */
		if (!recs)
			memset(q->out + MAD_SA_HDR_SIZE, 0, MAD_SIZE - MAD_SA_HDR_SIZE);
		else if (rsize < MAD_SA_DATA_SIZE)
			memset(q->out + MAD_SA_HDR_SIZE + rsize, 0, MAD_SA_DATA_SIZE - rsize);
	}
}

int sib_sa_process(struct sib_subnet *sn, const uint8_t *req, uint16_t req_lid, uint8_t *out,
		   size_t cap, size_t *len)
{
	struct sa_req q = { .sn = sn, .wire = req, .req_lid = req_lid, .out = out, .cap = cap };
	uint16_t status = MAD_STATUS_UNSUP_METHOD_ATTR;

	if (cap < MAD_SIZE || mad_sa_decode(&q.sa, req) < 0 || q.sa.hdr.r ||
	    (q.sa.rmpp.rmpp_flags & MAD_RMPP_FLAG_ACTIVE) ||
	    q.sa.hdr.method == MAD_METHOD_SEND || q.sa.hdr.method == MAD_METHOD_TRAP) {
		/* a response, a method that has none (Send, Trap: 13.4.7), a
		 * segment of a multi-MAD request (not taken yet) or no SA MAD
		 * at all: no answer */
		sn->sma.sa_dropped++;
		return 0;
	}
	memset(out, 0, MAD_SIZE);
	if (q.sa.hdr.class_version != MAD_SA_CLASS_VERSION) {
		status = MAD_STATUS_BAD_VERSION;
	} else if (q.sa.hdr.method != MAD_METHOD_GET && q.sa.hdr.method != MAD_METHOD_GETTABLE &&
		   q.sa.hdr.method != MAD_METHOD_SET && q.sa.hdr.method != MAD_METHOD_DELETE &&
		   q.sa.hdr.method != MAD_METHOD_GETMULTI) {
		status = MAD_STATUS_UNSUP_METHOD;
	} else if (q.sa.hdr.attr_id == MAD_ATTR_CLASS_PORT_INFO) {
		status = class_port_info(&q);
	} else if (q.sa.hdr.attr_id == SA_ATTR_MCMEMBER_RECORD) {
		status = sa_mcmember(&q);
	} else if (q.sa.hdr.attr_id == SA_ATTR_SERVICE_RECORD) {
		status = sa_service(&q);
	} else if (q.sa.hdr.attr_id == SA_ATTR_INFORM_INFO) {
		status = sa_inform(&q);
	} else if (q.sa.hdr.attr_id == SA_ATTR_INFORM_INFO_RECORD) {
		status = sa_inform_record(&q);
	} else {
		for (size_t i = 0; i < N(record_attrs); i++)
			if (record_attrs[i].attr == q.sa.hdr.attr_id)
				status = records(&q, record_attrs[i].fn);
	}
	if (status == MAD_STATUS_SUCCESS)
		sn->sma.sa_answers++;
	else
		sn->sma.sa_errors++;
	answer_header(&q, status, len);
	if (status != MAD_STATUS_SUCCESS && q.echo && *len == MAD_SIZE)
		memcpy(out + MAD_SA_HDR_SIZE, q.echo_data, MAD_SA_DATA_SIZE);
	return 1;
}
