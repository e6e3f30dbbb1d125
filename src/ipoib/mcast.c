// SPDX-License-Identifier: MIT
/*
 * IPv4 multicast of an IPoIB endpoint (ep.h; RFC 4391 §4, as the kernel's
 * ipoib_multicast.c): each group maps to MGID ff12:401b:PKEY::IPv4 (low 28
 * bits), joined through the SA with the broadcast group's Q_Key, MTU, TClass,
 * rate, SL, FlowLabel and HopLimit ("The MGID MUST use the same P_Key, Q_Key,
 * SL, MTU, and HopLimit as those used in the broadcast-GID").  A TUN has no
 * multicast filter the kernel tells us about, so the groups to receive are
 * read from /proc/net/igmp of our network namespace; a group we only send to
 * is joined as a SendOnlyNonMember, and when that fails (nobody listens: the
 * group does not exist) datagrams go to the broadcast group, the join tried
 * again after IPOIB_MC_RETRY_MS.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipoib/ep.h"

#define JOIN_FULL	0x1
#define JOIN_SENDONLY	0x4	/* SendOnlyNonMember (IBA 15.2.5.17 JoinState bit 2) */

#define MC_MASK (MCM_COMP_MGID | MCM_COMP_PORT_GID | MCM_COMP_QKEY | MCM_COMP_MTU_SEL | \
		 MCM_COMP_MTU | MCM_COMP_TCLASS | MCM_COMP_PKEY | MCM_COMP_RATE_SEL | \
		 MCM_COMP_RATE | MCM_COMP_SL | MCM_COMP_FLOW | MCM_COMP_HOP | MCM_COMP_JOIN_STATE)

static struct ipoib_mc *mc_find(struct ipoib_ep *ep, uint32_t ip)
{
	for (unsigned int i = 0; i < ep->nmc; i++)
		if (ep->mc[i].ip == ip)
			return &ep->mc[i];
	return NULL;
}

/* SubnAdmSet or Delete of our membership in m with join state bits. */
static int mc_sa(struct ipoib_ep *ep, struct ipoib_mc *m, uint8_t method, uint8_t state,
		 struct ipoib_mcm *rec)
{
	const struct ipoib_mcm *b = &ep->bcast_rec;
	struct ipoib_mcm req = {
		.qkey = b->qkey, .mtu_sel = 2, .mtu = b->mtu, .tclass = b->tclass,
		.pkey = b->pkey, .rate_sel = 2, .rate = b->rate, .sl = b->sl,
		.flow_label = b->flow_label, .hop_limit = b->hop_limit, .scope = 2,
		.join_state = state,
	};
	struct ibv_port_attr pa;
	uint16_t st;

	memcpy(req.mgid, m->mgid, 16);
	memcpy(req.port_gid, ep->gid, 16);
	if (ibv_query_port(ep->ctx, ep->port, &pa))
		return -1;
	return ipoib_sa_mcm(&ep->sa, pa.sm_lid, pa.sm_sl, method, MC_MASK, &req, rec, &st);
}

/* Join m (state bits), make its AH and, for a FullMember, attach. */
static int mc_join(struct ipoib_ep *ep, struct ipoib_mc *m, uint8_t state, uint64_t now)
{
	struct ipoib_mcm rec;
	struct ibv_ah_attr a = { .sl = ep->bcast_rec.sl, .port_num = ep->port, .is_global = 1,
				 .grh = { .hop_limit = 1 } };
	union ibv_gid g;

	if (mc_sa(ep, m, SA_METHOD_SET, state, &rec)) {
		ep->st.mc_join_errors++;
		m->join_state = 0;
		m->retry = now + IPOIB_MC_RETRY_MS;
		return -1;
	}
	ep->st.mc_joins++;
	m->join_state |= state;
	m->mlid = rec.mlid;
	memcpy(g.raw, m->mgid, 16);
	if (!m->ah) {
		a.dlid = m->mlid;
		a.grh.dgid = g;
		m->ah = ibv_create_ah(ep->pd, &a);
	}
	if ((state & JOIN_FULL) && !m->attached && !ibv_attach_mcast(ep->qp, &g, m->mlid))
		m->attached = true;
	return m->ah ? 0 : -1;
}

static void mc_drop(struct ipoib_ep *ep, struct ipoib_mc *m)
{
	union ibv_gid g;

	memcpy(g.raw, m->mgid, 16);
	if (m->attached)
		ibv_detach_mcast(ep->qp, &g, m->mlid);
	if (m->join_state)
		mc_sa(ep, m, SA_METHOD_DELETE, m->join_state, NULL);
	if (m->ah)
		ibv_destroy_ah(m->ah);
	*m = ep->mc[--ep->nmc];
}

static struct ipoib_mc *mc_add(struct ipoib_ep *ep, uint32_t ip)
{
	struct ipoib_mc *m;

	if (ep->nmc == IPOIB_MC_MAX)
		return NULL;
	m = &ep->mc[ep->nmc++];
	memset(m, 0, sizeof(*m));
	m->ip = ip;
	ipoib_ipv4_mc_mgid(ep->pkey, ip, m->mgid);
	return m;
}

/* The IPv4 groups of ifname in /proc/net/igmp: "IDX\tDEV : ..." then one
 * "\t\t\t\tGROUP ..." line per group, GROUP the __be32 printed as %08X. */
static void mark_seen(struct ipoib_ep *ep, uint64_t now)
{
	FILE *f = fopen("/proc/net/igmp", "r");
	char line[256], dev[32];
	bool ours = false;
	unsigned int v;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] >= '0' && line[0] <= '9') {
			ours = sscanf(line, "%*d %31s", dev) == 1 && !strcmp(dev, ep->ifname);
		} else if (ours && sscanf(line, " %8x", &v) == 1) {
			uint32_t ip = ntohl(v);
			struct ipoib_mc *m = mc_find(ep, ip);

			if (!m)
				m = mc_add(ep, ip);
			if (!m)
				continue;
			m->seen = true;
			if (!(m->join_state & JOIN_FULL) && now >= m->retry)
				mc_join(ep, m, JOIN_FULL, now);
		}
	}
	fclose(f);
}

void ipoib_mc_sync(struct ipoib_ep *ep, uint64_t now)
{
	for (unsigned int i = 0; i < ep->nmc; i++)
		ep->mc[i].seen = false;
	if (ep->ifname[0])
		mark_seen(ep, now);
	for (unsigned int i = 0; i < ep->nmc;) {
		struct ipoib_mc *m = &ep->mc[i];

		if (!m->seen && (m->join_state & JOIN_FULL)) {
			mc_drop(ep, m);	/* the kernel left it: the last one moves here */
			continue;
		}
		i++;
	}
}

struct ibv_ah *ipoib_mc_sender(struct ipoib_ep *ep, uint32_t ip, uint64_t now)
{
	struct ipoib_mc *m = mc_find(ep, ip);

	if (!m)
		m = mc_add(ep, ip);
	if (!m)
		return NULL;
	if (!m->join_state && now >= m->retry)
		mc_join(ep, m, JOIN_SENDONLY, now);
	return m->join_state ? m->ah : NULL;
}

void ipoib_mc_leave_all(struct ipoib_ep *ep)
{
	while (ep->nmc)
		mc_drop(ep, &ep->mc[ep->nmc - 1]);
}
