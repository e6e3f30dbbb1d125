// SPDX-License-Identifier: MIT
/*
 * Multicast groups of the built-in SM's SA (IBA 1.4 vol 1, 15.2.5.17
 * MCMemberRecord): SubnAdmSet joins a port to a group (creating it when its
 * MGID is new or zero), SubnAdmDelete takes JoinState bits away (the group
 * goes with its last member, but for the IPoIB broadcast groups the SM made),
 * Get and GetTable read the groups.  Every change of a group's receivers
 * reprograms that MLID's MFT entries in every switch (sm_builtin.c,
 * sib_sm_mcast_update), so that packets reach members only, as OpenSM does.
 *
 * As OpenSM answers (measured against opensm 3.3, docs/subnet.md): the SM
 * creates the IPoIB broadcast group of each partition at its first sweep
 * (MGID ff12:401b:PKEY::ffff:ffff, Q_Key 0x0B1B, MTU 2048, 10 Gb/s, MLID
 * 0xC000 upwards; RFC 4391 §5); a query shows one record per group with
 * PortGID, JoinState and ProxyJoin zero (with PortGID in the ComponentMask,
 * the groups of that port), as for a requester without the SM_Key.  A new
 * group keeps the creating request's fields; MTU and rate follow its
 * selectors within the port's link, or are the link's.  Statuses: 0x0200 (ERR_REQ_INVALID) for a join that
 * contradicts the group or names another port (no proxy joins), a create
 * by a port that is not a FullMember, a leave of no member; 0x0700 (ERR_REQ_INSUFFICIENT_COMPONENTS) for a create without
 * Q_Key, P_Key, SL, FlowLabel and TClass (o15-0.2.3); 0x0100 when no MLID or
 * member slot is left.  Single-threaded, bounded: SA_MC_GROUPS_MAX groups of
 * at most SA_MC_MEMBERS_MAX ports.
 */
#include <stdlib.h>
#include <string.h>

#include "subnet/sa_int.h"
#include "subnet/sma.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define SA_MC_GROUPS_MAX	1024	/* groups the SA keeps (MLIDs 0xC000..) */
#define SA_MC_MEMBERS_MAX	256	/* ports per group */
#define SA_MC_MLID_BASE		0xC000u
#define SA_MC_BCAST_QKEY	0x00000B1Bu	/* OpenSM's IPoIB broadcast Q_Key */
#define SA_MC_BCAST_MTU		4		/* 2048 (OpenSM's default group MTU) */
#define SA_MC_BCAST_RATE	3		/* 10 Gb/s */
#define SA_STATUS_INSUFFICIENT	0x0700	/* ERR_REQ_INSUFFICIENT_COMPONENTS */

/* JoinState bits (15.2.5.17): who receives. */
#define JOIN_FULL		0x1
#define JOIN_NON		0x2
#define JOIN_SENDONLY_NON	0x4
#define JOIN_SENDONLY_FULL	0x8

struct sa_mc_member {
	struct sib_fab_node *node;
	uint8_t port;
	uint8_t join_state;
	uint8_t gid[16];
};

struct sa_mc_group {
	struct sa_mcmember_record rec;	/* the group's fields (PortGID, JoinState 0) */
	bool well_known;		/* the SM's: stays without members */
	unsigned int n;
	struct sa_mc_member m[SA_MC_MEMBERS_MAX];
};

struct sib_mcgroups {
	struct sa_mc_group *g[SA_MC_GROUPS_MAX];	/* by MLID - 0xC000 */
	uint32_t next_mgid;			/* SA-assigned MGIDs */
	struct sa_db db;			/* the SA's other records (sa_int.h) */
};

static struct sib_mcgroups *groups(struct sib_subnet *sn)
{
	if (!sn->mcg)
		sn->mcg = calloc(1, sizeof(*sn->mcg));
	return sn->mcg;
}

struct sa_db *sa_db(struct sib_subnet *sn)
{
	return groups(sn) ? &sn->mcg->db : NULL;
}

/* Full members (JoinState FullMember or SendOnlyFullMember): the group
 * "exists" for traps 66/67 while it has one (OpenSM's full_members). */
static unsigned int full_members(const struct sa_mc_group *g)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < g->n; i++)
		k += (g->m[i].join_state & (JOIN_FULL | JOIN_SENDONLY_FULL)) != 0;
	return k;
}

/* Trap 66 or 67 when a group's full members went from none to some or
 * back (osm_multicast.c: MGID created / deleted). */
static void full_notice(struct sib_subnet *sn, const struct sa_mcmember_record *r,
			unsigned int before, unsigned int after)
{
	if (!before != !after)
		sa_notice(sn, after ? SA_TRAP_MGID_CREATED : SA_TRAP_MGID_DELETED, r->mgid, r->pkey);
}

/* The group of mlid, NULL if none. */
static struct sa_mc_group *by_mlid(const struct sib_subnet *sn, uint16_t mlid)
{
	if (!sn->mcg || mlid < SA_MC_MLID_BASE || mlid - SA_MC_MLID_BASE >= SA_MC_GROUPS_MAX)
		return NULL;
	return sn->mcg->g[mlid - SA_MC_MLID_BASE];
}

static struct sa_mc_group *by_mgid(const struct sib_subnet *sn, const uint8_t mgid[16])
{
	for (unsigned int i = 0; sn->mcg && i < SA_MC_GROUPS_MAX; i++)
		if (sn->mcg->g[i] && !memcmp(sn->mcg->g[i]->rec.mgid, mgid, 16))
			return sn->mcg->g[i];
	return NULL;
}

/* The lowest free MLID within every switch's MFT capacity; 0: none. */
static uint16_t free_mlid(struct sib_subnet *sn)
{
	uint32_t cap = SA_MC_GROUPS_MAX;

	for (unsigned int i = 0; i < sn->fab.n_nodes; i++) {
		const struct sib_fab_node *n = sn->fab.nodes[i];

		if (n->type == SIB_NODE_SWITCH && n->mgmt && n->mgmt->sw &&
		    n->mgmt->sw->si.multicast_fdb_cap < cap)
			cap = n->mgmt->sw->si.multicast_fdb_cap;
	}
	for (uint32_t i = 0; i < cap; i++)
		if (!sn->mcg->g[i])
			return (uint16_t)(SA_MC_MLID_BASE + i);
	return 0;
}

static struct sa_mc_group *group_new(struct sib_subnet *sn, const struct sa_mcmember_record *r)
{
	struct sa_mc_group *g;
	uint16_t mlid;

	if (!groups(sn) || !(mlid = free_mlid(sn)) || !(g = calloc(1, sizeof(*g))))
		return NULL;
	g->rec = *r;
	g->rec.mlid = mlid;
	memset(g->rec.port_gid, 0, 16);
	g->rec.join_state = 0;
	g->rec.proxy_join = 0;
	sn->mcg->g[mlid - SA_MC_MLID_BASE] = g;
	return g;
}

static void group_delete(struct sib_subnet *sn, struct sa_mc_group *g)
{
	uint16_t mlid = g->rec.mlid;

	sn->mcg->g[mlid - SA_MC_MLID_BASE] = NULL;
	free(g);
	sib_sm_mcast_update(sn, mlid);
}

/* ---- the SM's groups ---- */

int sib_sa_mcast_init(struct sib_subnet *sn)
{
	/* the broadcast group of each partition the SM's port is in (the
	 * default partition: 0xFFFF) */
	const struct sib_fab_node *smn = sn->sm.node;
	const uint16_t *t;

	if (!smn || !smn->mgmt || !smn->mgmt->port || !groups(sn))
		return smn ? -1 : 0;
	t = smn->mgmt->port[smn->type == SIB_NODE_SWITCH ? 0 : sn->sm.port].pkey;
	for (unsigned int i = 0; i < SIB_SUBN_PKEYS; i++) {
		struct sa_mcmember_record r = {
			.mgid = { 0xff, 0x12, 0x40, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff },
			.qkey = SA_MC_BCAST_QKEY, .mtu_selector = SA_SEL_EXACT, .mtu = SA_MC_BCAST_MTU,
			.rate_selector = SA_SEL_EXACT, .rate = SA_MC_BCAST_RATE,
			.packet_life_time_selector = SA_SEL_EXACT, .packet_life_time = SA_PKT_LIFE,
			.scope = 2,
		};
		struct sa_mc_group *g;
		uint16_t pkey = t[i] | 0x8000;

		if (!(t[i] & 0x7FFF))
			continue;
		r.pkey = pkey;
		r.mgid[4] = (uint8_t)(pkey >> 8);
		r.mgid[5] = (uint8_t)pkey;
		if (by_mgid(sn, r.mgid))
			continue;
		if (!(g = group_new(sn, &r)))
			return -1;
		g->well_known = true;
		sib_sm_mcast_update(sn, g->rec.mlid);
	}
	return 0;
}

void sib_sa_mcast_free(struct sib_subnet *sn)
{
	if (sn->mcg) {
		sa_service_free(&sn->mcg->db);
		sa_inform_free(&sn->mcg->db);
	}
	for (unsigned int i = 0; sn->mcg && i < SA_MC_GROUPS_MAX; i++)
		free(sn->mcg->g[i]);
	free(sn->mcg);
	sn->mcg = NULL;
}

bool sib_sa_mcast_group(const struct sib_subnet *sn, uint16_t mlid)
{
	return by_mlid(sn, mlid) != NULL;
}

unsigned int sib_sa_mcast_members(const struct sib_subnet *sn, uint16_t mlid, unsigned int i,
				  struct sib_fab_node **node, uint8_t *port, bool *receives)
{
	const struct sa_mc_group *g = by_mlid(sn, mlid);

	if (!g || i >= g->n)
		return 0;
	*node = g->m[i].node;
	*port = g->m[i].port;
	*receives = g->m[i].join_state & (JOIN_FULL | JOIN_NON);
	return g->n;
}

/* ---- members whose port left ---- */

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Is member m's port still there: its node in the fabric (nodes: sorted,
 * compared by address only: a freed node is never read), its port GUID
 * the one it joined with, and (in != NULL) in service? */
static bool member_stays(const struct sa_mc_member *m, struct sib_fab_node *const *nodes,
			 unsigned int nn, const uint64_t *in, unsigned int nin)
{
	const void *key = m->node;
	uint64_t guid = sa_be_get(m->gid + 8, 8);
	uint8_t gid[16];

	if (!bsearch(&key, nodes, nn, sizeof(*nodes), cmp_ptr) || m->port > m->node->num_ports)
		return false;
	sa_port_gid(m->node, m->port, gid);
	if (sa_be_get(gid + 8, 8) != guid)
		return false;
	return !in || bsearch(&guid, in, nin, sizeof(*in), cmp_u64);
}

/* Drop every member that does not stay; a group that lost its last full
 * member loses the others too, and goes when empty (but the SM's); traps
 * 67 for those.  No MFT is
 * sent: the caller reprograms.  true if anything changed. */
static bool prune(struct sib_subnet *sn, const uint64_t *in, unsigned int nin)
{
	struct sib_fab_node **nodes;
	unsigned int nn = sn->fab.n_nodes;
	bool changed = false;

	if (!sn->mcg || !(nodes = calloc(nn + 1, sizeof(*nodes))))
		return false;
	memcpy(nodes, sn->fab.nodes, nn * sizeof(*nodes));
	qsort(nodes, nn, sizeof(*nodes), cmp_ptr);
	for (unsigned int i = 0; i < SA_MC_GROUPS_MAX; i++) {
		struct sa_mc_group *g = sn->mcg->g[i];
		struct sa_mcmember_record rec;
		unsigned int before, k0;

		if (!g)
			continue;
		before = full_members(g);
		k0 = g->n;
		for (unsigned int k = 0; k < g->n;)
			if (member_stays(&g->m[k], nodes, nn, in, nin))
				k++;
			else
				g->m[k] = g->m[--g->n];
		if (g->n == k0)
			continue;
		changed = true;
		rec = g->rec;
		if (before && !full_members(g))
			g->n = 0; /* no full member left: OpenSM's cleanup */
		full_notice(sn, &rec, before, full_members(g));
		if (!g->n && !g->well_known) {
			sn->mcg->g[i] = NULL;
			free(g);
		}
	}
	free(nodes);
	return changed;
}

void sib_sa_mcast_refresh(struct sib_subnet *sn)
{
	prune(sn, NULL, 0);
}

bool sa_mcast_ports_left(struct sib_subnet *sn, const uint64_t *in, unsigned int nin)
{
	return prune(sn, in, nin);
}

/* ---- requests ---- */

/* The end port whose GID is gid. */
static bool find_port(struct sib_subnet *sn, const uint8_t gid[16], struct sib_fab_node **n,
		      uint8_t *pn)
{
	uint8_t g[16];

	for (unsigned int i = 0; i < sn->fab.n_nodes; i++)
		for (unsigned int p = 0; p <= sn->fab.nodes[i]->num_ports; p++) {
			if (!sa_endport(sn->fab.nodes[i], (uint8_t)p))
				continue;
			sa_port_gid(sn->fab.nodes[i], (uint8_t)p, g);
			if (!memcmp(g, gid, 16)) {
				*n = sn->fab.nodes[i];
				*pn = (uint8_t)p;
				return true;
			}
		}
	return false;
}

static bool comp(const struct sa_req *q, const char *name)
{
	return q->sa.comp_mask & sa_comp_mask(q->l, name);
}

/* A value asked with a selector (or exactly, without one) against what
 * the group has (15.2.5.17: MTU, Rate, PacketLifeTime). */
static bool sel_match(const struct sa_req *q, const char *sel, const char *val, uint8_t s,
		      uint8_t want, uint8_t have)
{
	if (!comp(q, val))
		return true;
	return sa_sel_ok(comp(q, sel) ? s : SA_SEL_EXACT, want, have);
}

/* Does the join's record agree with group g's fields it names? */
static bool join_matches(const struct sa_req *q, const struct sa_mcmember_record *w,
			 const struct sa_mcmember_record *g)
{
	return (!comp(q, "Q_Key") || w->qkey == g->qkey) &&
	       (!comp(q, "MLID") || w->mlid == g->mlid) &&
	       (!comp(q, "TClass") || w->tclass == g->tclass) &&
	       (!comp(q, "P_Key") || (w->pkey & 0x7FFF) == (g->pkey & 0x7FFF)) &&
	       (!comp(q, "SL") || w->sl == g->sl) &&
	       (!comp(q, "FlowLabel") || w->flow_label == g->flow_label) &&
	       (!comp(q, "HopLimit") || w->hop_limit == g->hop_limit) &&
	       sel_match(q, "MTUSelector", "MTU", w->mtu_selector, w->mtu, g->mtu) &&
	       sel_match(q, "RateSelector", "Rate", w->rate_selector, w->rate, g->rate) &&
	       sel_match(q, "PacketLifeTimeSelector", "PacketLifeTime",
			 w->packet_life_time_selector, w->packet_life_time, g->packet_life_time);
}

/* MTU or rate of a new group (o15-0.2.3 leaves them to the SA; as
 * OpenSM picks them): the port's own unless asked with a selector; more
 * than asked: the port's (0 if the port cannot); less: one below, or the
 * port's if that is smaller; exactly: as asked. */
static uint8_t pick(bool asked, uint8_t sel, uint8_t want, uint8_t port)
{
	if (!asked || sel == 3)
		return port;
	switch (sel) {
	case 0: return want < port ? port : 0;
	case 1: return want > port ? port : (uint8_t)(want - 1);
	default: return want;
	}
}

/* A new group for a join whose MGID is new (or zero: the SA picks one).
 * The request's other fields (packet life, scope, HopLimit) are kept. */
static uint16_t create(struct sa_req *q, struct sa_mcmember_record *w,
		       const struct sib_fab_node *n, uint8_t pn, struct sa_mc_group **out)
{
	static const uint8_t zero[16];
	uint8_t mtu = 0, rate = 0;
	bool full;

	if (!(w->join_state & JOIN_FULL))
		return MAD_SA_STATUS_REQ_INVALID; /* only a full member creates (o15-0.1.9) */
	if (!comp(q, "Q_Key") || !comp(q, "P_Key") || !comp(q, "SL") || !comp(q, "FlowLabel") ||
	    !comp(q, "TClass"))
		return SA_STATUS_INSUFFICIENT;
	if (!sa_has_pkey(n, pn, w->pkey, &full))
		return MAD_SA_STATUS_REQ_INVALID;
	if (!memcmp(w->mgid, zero, 16)) {
		/* SA-assigned: ff1<scope>:a01b:<P_Key>::<number> (15.2.5.17.3) */
		uint32_t k = ++groups(q->sn)->next_mgid;

		w->mgid[0] = 0xff;
		w->mgid[1] = (uint8_t)(0x10 | (w->scope ? w->scope : 2));
		w->mgid[2] = 0xa0;
		w->mgid[3] = 0x1b;
		w->mgid[4] = (uint8_t)(w->pkey >> 8);
		w->mgid[5] = (uint8_t)w->pkey;
		w->mgid[12] = (uint8_t)(k >> 24);
		w->mgid[13] = (uint8_t)(k >> 16);
		w->mgid[14] = (uint8_t)(k >> 8);
		w->mgid[15] = (uint8_t)k;
	} else if (w->mgid[0] != 0xff) {
		return MAD_SA_STATUS_REQ_INVALID; /* o15-0.1.5 */
	}
	sa_link_min(sa_pinfo(n, pn), &mtu, &rate);
	w->mtu = pick(comp(q, "MTU") && comp(q, "MTUSelector"), w->mtu_selector, w->mtu, mtu);
	w->rate = pick(comp(q, "Rate") && comp(q, "RateSelector"), w->rate_selector, w->rate, rate);
	if (w->mtu < MAD_MTU_256 || w->mtu > mtu || !w->rate || w->rate > 63)
		return MAD_SA_STATUS_REQ_INVALID; /* not realizable on the port's link */
	w->mtu_selector = w->rate_selector = SA_SEL_EXACT;
	*out = group_new(q->sn, w);
	return *out ? MAD_STATUS_SUCCESS : MAD_SA_STATUS_NO_RESOURCES;
}

/* Can port (n, pn) carry group g (its MTU and rate, o15-0.2.4)? */
static bool port_caps_ok(const struct sa_mc_group *g, const struct sib_fab_node *n, uint8_t pn)
{
	uint8_t mtu = 0, rate = 0;

	sa_link_min(sa_pinfo(n, pn), &mtu, &rate);
	return g->rec.mtu <= mtu && g->rec.rate <= rate;
}

static struct sa_mc_member *member(struct sa_mc_group *g, const struct sib_fab_node *n, uint8_t pn)
{
	for (unsigned int i = 0; i < g->n; i++)
		if (g->m[i].node == n && g->m[i].port == pn)
			return &g->m[i];
	return NULL;
}

/* The answer: the group's record as this port's membership. */
static void answer(struct sa_req *q, const struct sa_mc_group *g, const struct sa_mc_member *m)
{
	struct sa_mcmember_record r = g->rec;

	if (m) {
		memcpy(r.port_gid, m->gid, 16);
		r.join_state = m->join_state;
	}
	sa_mcmember_record_encode(&r, q->out + MAD_SA_HDR_SIZE);
	q->count = 1;
}

static uint16_t join(struct sa_req *q, struct sa_mcmember_record *w, struct sib_fab_node *n,
		     uint8_t pn)
{
	struct sa_mc_group *g = NULL;
	struct sa_mc_member *m;
	uint16_t st;
	bool has, created = false;
	unsigned int full;
	uint8_t before;

	if (comp(q, "MGID"))
		g = by_mgid(q->sn, w->mgid);
	else if (comp(q, "MLID"))
		g = by_mlid(q->sn, w->mlid);
	if (!g) {
		if ((st = create(q, w, n, pn, &g)))
			return st;
		created = true;
	} else if (!join_matches(q, w, &g->rec) || !sa_has_pkey(n, pn, g->rec.pkey, &has) ||
		   !port_caps_ok(g, n, pn)) {
		return MAD_SA_STATUS_REQ_INVALID;
	}
	full = full_members(g);
	m = member(g, n, pn);
	if (!m) {
		if (g->n == SA_MC_MEMBERS_MAX) {
			if (created)
				group_delete(q->sn, g);
			return MAD_SA_STATUS_NO_RESOURCES;
		}
		m = &g->m[g->n++];
		*m = (struct sa_mc_member){ .node = n, .port = pn };
		memcpy(m->gid, w->port_gid, 16);
	}
	before = m->join_state;
	m->join_state |= w->join_state;
	if (m->join_state != before) { /* receivers or the tree (senders) changed */
		sib_sm_mcast_update(q->sn, g->rec.mlid);
		m = member(g, n, pn); /* members of removed CAs may have gone */
	}
	answer(q, g, m);
	full_notice(q->sn, &g->rec, full, full_members(g));
	return MAD_STATUS_SUCCESS;
}

static uint16_t leave(struct sa_req *q, const struct sa_mcmember_record *w, struct sib_fab_node *n,
		      uint8_t pn)
{
	struct sa_mc_group *g = comp(q, "MGID") ? by_mgid(q->sn, w->mgid) :
				comp(q, "MLID") ? by_mlid(q->sn, w->mlid) : NULL;
	struct sa_mc_member *m = g ? member(g, n, pn) : NULL;
	struct sa_mc_member left;
	struct sa_mcmember_record rec;
	unsigned int full, after;
	uint8_t before;

	if (!m || !(m->join_state & w->join_state))
		return MAD_SA_STATUS_REQ_INVALID;
	full = full_members(g);
	before = m->join_state;
	m->join_state &= (uint8_t)~w->join_state;
	left = *m;
	if (!m->join_state)
		*m = g->m[--g->n];
	answer(q, g, &left);
	rec = g->rec;
	after = full_members(g);
	if (full && !after && g->n) {
		/* the last full member left: the others go too, as OpenSM's
		 * osm_mgrp_cleanup (the group with them, but the SM's) */
		g->n = 0;
		before = (uint8_t)~left.join_state;
	}
	if (!g->n && !g->well_known)
		group_delete(q->sn, g);
	else if (left.join_state != before)
		sib_sm_mcast_update(q->sn, g->rec.mlid);
	full_notice(q->sn, &rec, full, after);
	return MAD_STATUS_SUCCESS;
}

/* Does (n, pn) hold a membership of g? */
static bool is_member(const struct sa_mc_group *g, const uint8_t gid[16])
{
	for (unsigned int k = 0; k < g->n; k++)
		if (!memcmp(g->m[k].gid, gid, 16))
			return true;
	return false;
}

/*
 * Get, GetTable: one record per group matching the mask (with PortGID in
 * it: the groups that port is a member of), PortGID, JoinState and
 * ProxyJoin zero, as IBA 15.2.5.17 wants them for a requester without the
 * SM_Key (OpenSM's answer to saquery).
 */
static void query(struct sa_req *q)
{
	const uint8_t *want = q->wire + MAD_SA_HDR_SIZE;
	uint8_t rec[56];

	q->skip = sa_comp_mask(q->l, "PortGID") | sa_comp_mask(q->l, "JoinState") |
		  sa_comp_mask(q->l, "ProxyJoin");
	for (unsigned int i = 0; q->sn->mcg && i < SA_MC_GROUPS_MAX && !q->overflow; i++) {
		const struct sa_mc_group *g = q->sn->mcg->g[i];

		if (!g || (comp(q, "PortGID") && !is_member(g, want + 16)))
			continue;
		sa_mcmember_record_encode(&g->rec, rec);
		sa_add_record(q, rec);
	}
}

uint16_t sa_mcmember(struct sa_req *q)
{
	uint8_t m = q->sa.hdr.method;
	struct sa_mcmember_record w;
	struct sib_fab_node *n;
	uint8_t pn;

	q->l = sa_layout_find(SA_ATTR_MCMEMBER_RECORD);
	if (!q->l)
		return MAD_STATUS_UNSUP_METHOD_ATTR;
	if (m == MAD_METHOD_GET || m == MAD_METHOD_GETTABLE) {
		query(q);
		if (q->overflow)
			return MAD_SA_STATUS_NO_RESOURCES;
		if (m == MAD_METHOD_GET && q->count != 1)
			return q->count ? MAD_SA_STATUS_TOO_MANY_RECORDS : MAD_SA_STATUS_NO_RECORDS;
		return MAD_STATUS_SUCCESS;
	}
	if (m != MAD_METHOD_SET && m != MAD_METHOD_DELETE)
		return MAD_STATUS_UNSUP_METHOD_ATTR;
	sa_mcmember_record_decode(&w, q->wire + MAD_SA_HDR_SIZE);
	if (!comp(q, "PortGID") || !comp(q, "JoinState") || !w.join_state ||
	    (m == MAD_METHOD_DELETE && !comp(q, "MGID") && !comp(q, "MLID")))
		return SA_STATUS_INSUFFICIENT;
	/* the port must be the requester's own (no proxy joins) */
	if (!find_port(q->sn, w.port_gid, &n, &pn) || !sib_subnet_owns(sa_pinfo(n, pn), q->req_lid))
		return MAD_SA_STATUS_REQ_INVALID;
	if (!comp(q, "MGID"))
		memset(w.mgid, 0, 16);
	return m == MAD_METHOD_SET ? join(q, &w, n, pn) : leave(q, &w, n, pn);
}
