// SPDX-License-Identifier: MIT
/*
 * Multicast groups of the rdma_cm (cma.h sib_cma_join_mcast, docs/rdmacm.md
 * "Multicast"): the MGID of a group address, the SA MCMemberRecord join
 * (SubnAdmSet) and leave (SubnAdmDelete) from the id's port to its SM
 * through the MAD router, with the route query's MAD client (cma_sa_mad:
 * channel SIB_MAD_CHAN_CMA, TIDs, answers through sib_cma_sa_receive), and
 * the MULTICAST_JOIN / MULTICAST_ERROR events.  The rules are linux cma.c's
 * (cma_join_ib_multicast, cma_set_mgid, cma_ib_mc_handler,
 * cma_make_mc_event), include/net/ip.h's ip_ib_mc_map and ipv6_ib_mc_map;
 * facts only (research/rdmacm.md §2 "Multicast").
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "iba/mad.h"
#include "iba/sa.h"
#include "subnet/cma_int.h"

#define JOIN_FULL          0x1u /* MCMemberRecord.JoinState (IBA 15.2.5.17) */
#define JOIN_SENDONLY_FULL 0x8u
#define MC_QPN             0xFFFFFFu /* the multicast QPN (IBA 10.5.2.1) */

/* ---- addresses ---- */

bool cma_addr_mcast(const struct cma_addr *a)
{
	if (a->family == CMA_AF_INET)
		return (a->ip[0] & 0xF0) == 0xE0; /* 224.0.0.0/4 */
	return (a->family == CMA_AF_INET6 || a->family == CMA_AF_IB) && a->ip[0] == 0xFF;
}

void cma_mc_mgid(const struct sib_cma_id *id, const struct cma_addr *a, uint8_t mgid[16])
{
	uint16_t pkey = id->pkey | 0x8000u; /* the IPoIB broadcast address's P_Key */
	bool v6 = a->family == CMA_AF_INET6;

	memset(mgid, 0, 16);
	if (cma_addr_any(a))
		return; /* the SA assigns one */
	/* AF_IB, and IPv6 addresses that are an SA-assigned MGID (ff1x:a01b) */
	if (a->family == CMA_AF_IB ||
	    (v6 && a->ip[0] == 0xFF && (a->ip[1] & 0xF0) == 0x10 && a->ip[2] == 0xA0 &&
	     a->ip[3] == 0x1B)) {
		memcpy(mgid, a->ip, 16);
		return;
	}
	/* ip_ib_mc_map / ipv6_ib_mc_map: ff1<scope 2>:<40|60>1b:PKEY:: and the
	 * group's low 28 bits (IPv4) or its last 10 bytes (IPv6) */
	mgid[0] = 0xFF;
	mgid[1] = 0x12;
	mgid[2] = v6 ? 0x60 : 0x40;
	mgid[3] = id->ps == SIB_CMA_PS_UDP ? 0x01 : 0x1B; /* the RDMA CM signature */
	mgid[4] = (uint8_t)(pkey >> 8);
	mgid[5] = (uint8_t)pkey;
	if (v6) {
		memcpy(mgid + 6, a->ip + 6, 10);
	} else {
		mgid[12] = a->ip[0] & 0x0F;
		memcpy(mgid + 13, a->ip + 1, 3);
	}
}

/* ---- the SA requests ---- */

static uint32_t mc_qkey(const struct sib_cma_id *id)
{
	return id->ps == SIB_CMA_PS_IPOIB ? SIB_CMA_IPOIB_QKEY : SIB_CMA_UDP_QKEY;
}

/* SubnAdmSet (join) or SubnAdmDelete (leave) of mc's membership. */
static int mc_send(struct sib_cma_id *id, struct cma_mc *mc, bool join)
{
	const struct sa_layout *l = sa_layout_find(SA_ATTR_MCMEMBER_RECORD);
	struct sa_mcmember_record r;
	uint8_t data[MAD_SA_DATA_SIZE];
	uint64_t mask;
	mai_mad_t m;
	int ret;

	memset(&r, 0, sizeof(r));
	memcpy(r.mgid, mc->mgid, 16);
	memcpy(r.port_gid, id->sgid, 16);
	r.join_state = mc->join_state;
	mask = sa_comp_mask(l, "MGID") | sa_comp_mask(l, "PortGID") |
	       sa_comp_mask(l, "JoinState");
	if (join) { /* cma_join_ib_multicast's mask */
		r.pkey = id->pkey | 0x8000u;
		r.qkey = mc_qkey(id);
		mask |= sa_comp_mask(l, "P_Key") | sa_comp_mask(l, "Q_Key") |
			sa_comp_mask(l, "SL") | sa_comp_mask(l, "FlowLabel") |
			sa_comp_mask(l, "TClass");
	}
	memset(data, 0, sizeof(data));
	sa_mcmember_record_encode(&r, data);
	if ((ret = cma_sa_mad(id, join ? MAD_METHOD_SET : MAD_METHOD_DELETE,
			      SA_ATTR_MCMEMBER_RECORD, mask, data, &m)))
		return ret;
	if (join) {
		mc->pending = true;
		mc->answered = false;
		mc->tid = m.tid;
		mc->deadline = id->cma->host->now_ns(id->cma->host_ctx) +
			       (uint64_t)SIB_CMA_MC_TIMEOUT_MS * 1000000u;
		id->cma->ctr.mc_joins++;
	} else {
		id->cma->ctr.mc_leaves++;
	}
	/* the built-in SA answers before this returns (sib_cma_sa_receive) */
	sib_mad_send(id->cma->sn, id->node, id->port, &m);
	return 0;
}

static struct cma_mc *mc_find(struct sib_cma_id *id, const void *addr, uint32_t len,
			      struct cma_mc ***pp)
{
	for (*pp = &id->mcs; **pp; *pp = &(**pp)->next)
		if ((**pp)->addr_len == len && !memcmp((**pp)->addr, addr, len))
			return **pp;
	return NULL;
}

int sib_cma_join_mcast(struct sib_cma_id *id, uint64_t cookie, const void *addr, uint32_t len,
		       uint32_t join_flags)
{
	struct cma_addr a;
	struct cma_mc *mc, **pp;
	int ret;

	if ((ret = cma_addr_decode(addr, len, &a)))
		return ret == -EAFNOSUPPORT ? -EINVAL : ret;
	if (!id->dev_set || !id->node || (id->state != CMA_ADDR_BOUND &&
					  id->state != CMA_ADDR_RESOLVED))
		return -EINVAL;
	if (id->qp_type != IBV_QPT_UD || join_flags > 1) /* FULLMEMBER 0, SENDONLY_FULLMEMBER 1 */
		return -EINVAL;
	if (!cma_addr_mcast(&a) && !cma_addr_any(&a))
		return -EINVAL;
	if (mc_find(id, addr, len, &pp))
		return -EADDRINUSE;
	if (id->nmcs >= SIB_CMA_MC_MAX)
		return -ENOBUFS;
	if (!(mc = calloc(1, sizeof(*mc))))
		return -ENOMEM;
	mc->cookie = cookie;
	memcpy(mc->addr, addr, len);
	mc->addr_len = (uint16_t)len;
	mc->join_state = join_flags ? JOIN_SENDONLY_FULL : JOIN_FULL;
	cma_mc_mgid(id, &a, mc->mgid);
	/* listed first: the built-in SA answers inside mc_send */
	mc->next = id->mcs;
	id->mcs = mc;
	id->nmcs++;
	if ((ret = mc_send(id, mc, true))) {
		id->mcs = mc->next;
		id->nmcs--;
		free(mc);
		return ret;
	}
	return 0;
}

/* Drop mc's queued events (left, or its id destroyed). */
static void mc_drop_events(struct sib_cma_id *id, const struct cma_mc *mc)
{
	struct sib_cma *cma = id->cma;
	struct cma_ev **pp = &cma->ev_head, *e;

	cma->ev_tail = NULL;
	while ((e = *pp)) {
		if (e->id == id && e->ev.listen_uid == mc->cookie &&
		    (e->ev.event == SIB_CMA_EV_MULTICAST_JOIN ||
		     e->ev.event == SIB_CMA_EV_MULTICAST_ERROR)) {
			*pp = e->next;
			free(e);
			continue;
		}
		cma->ev_tail = e;
		pp = &e->next;
	}
}

static const uint8_t zero_gid[16];

/* May mc be a member at the SA (joined, or a join in flight whose MGID is
 * known)? */
static bool mc_member(const struct cma_mc *mc)
{
	return mc->joined || (mc->pending && memcmp(mc->mgid, zero_gid, 16));
}

/* The JoinState bits the other ids on id's port hold in mc's group: the
 * SA knows one membership per port (PortGID), shared by every process on
 * it, as the kernel's multicast.c keeps one per port and group. */
static uint8_t mc_port_bits(const struct sib_cma_id *id, const struct cma_mc *mc)
{
	uint8_t bits = 0;

	for (const struct sib_cma_id *o = id->cma->ids; o; o = o->next) {
		if (o->node != id->node || o->port != id->port)
			continue;
		for (const struct cma_mc *x = o->mcs; x; x = x->next)
			if (x != mc && mc_member(x) && !memcmp(x->mgid, mc->mgid, 16))
				bits |= x->join_state;
	}
	return bits;
}

/* mc goes: a Delete of the JoinState bits no other id on the port still
 * holds (none if every bit is held: another process's membership stays),
 * its events dropped. */
static void mc_free(struct sib_cma_id *id, struct cma_mc *mc, bool send)
{
	if (send && id->node && mc_member(mc)) {
		uint8_t leave = (uint8_t)(mc->join_state & ~mc_port_bits(id, mc));

		if (leave) {
			mc->join_state = leave;
			(void)mc_send(id, mc, false);
		}
	}
	mc_drop_events(id, mc);
	id->nmcs--;
	free(mc);
}

int sib_cma_leave_mcast(struct sib_cma_id *id, const void *addr, uint32_t len, uint64_t *cookie)
{
	struct cma_mc *mc, **pp;

	if (len < 2 || len > SIB_CM_ADDR_LEN || !(mc = mc_find(id, addr, len, &pp)))
		return -EADDRNOTAVAIL;
	if (cookie)
		*cookie = mc->cookie;
	*pp = mc->next;
	mc_free(id, mc, true);
	return 0;
}

void cma_mc_destroy(struct sib_cma_id *id, bool send)
{
	struct cma_mc *mc;

	while ((mc = id->mcs)) {
		id->mcs = mc->next;
		mc_free(id, mc, send);
	}
}

/* ---- answers, events, timeouts ---- */

bool cma_mc_sa_receive(struct sib_cma *cma, const struct sib_fab_node *n, uint8_t port,
		       const struct mai_mad *m, const uint8_t *wire)
{
	for (struct sib_cma_id *id = cma->ids; id; id = id->next) {
		if (id->node != n || id->port != port)
			continue;
		for (struct cma_mc *mc = id->mcs; mc; mc = mc->next) {
			if (!mc->pending || mc->answered || mc->tid != m->tid)
				continue;
			if (m->mgmt_class != MAD_MGMT_CLASS_SUBN_ADM ||
			    m->method != MAD_METHOD_GET_RESP ||
			    m->attr_id != SA_ATTR_MCMEMBER_RECORD) {
				cma->ctr.mc_bad_answers++;
				return true; /* malformed: dropped; the timeout ends the join */
			}
			mc->answered = true;
			mc->status = m->status;
			if (!m->status)
				sa_mcmember_record_decode(&mc->rec, wire + MAD_SA_HDR_SIZE);
			return true;
		}
	}
	return false;
}

/* The event of mc's answer (cma_ib_mc_handler, cma_make_mc_event). */
static void mc_answer(struct sib_cma_id *id, struct cma_mc *mc)
{
	struct sib_ctl_cm_event *ev;
	int32_t status = 0;

	mc->pending = false;
	if (mc->status)
		status = -EINVAL; /* an SA error status (sa_query.c) */
	else if (mc->rec.qkey != mc_qkey(id) || memcmp(mc->rec.port_gid, id->sgid, 16))
		status = -EINVAL; /* cma_set_qkey: another Q_Key; not our membership */
	else if (mc->rec.mlid < 0xC000u || mc->rec.mlid == 0xFFFFu || mc->rec.mgid[0] != 0xFF)
		status = -EINVAL; /* not a group (IBA 4.1.1, 4.1.2): an SA's answer is input */
	if (!status) {
		mc->joined = true;
		memcpy(mc->mgid, mc->rec.mgid, 16);
	}
	if (!(ev = cma_post(id, status ? SIB_CMA_EV_MULTICAST_ERROR : SIB_CMA_EV_MULTICAST_JOIN,
			    status)))
		return;
	ev->listen_uid = mc->cookie;
	if (status) {
		id->cma->ctr.mc_errors++;
		return;
	}
	id->cma->ctr.mc_joined++;
	memcpy(ev->ah.dgid, mc->rec.mgid, 16);
	ev->ah.dlid = mc->rec.mlid;
	ev->ah.sl = mc->rec.sl;
	ev->ah.flow_label = mc->rec.flow_label;
	ev->ah.hop_limit = mc->rec.hop_limit;
	ev->ah.traffic_class = mc->rec.tclass;
	ev->ah.static_rate = mc->rec.rate; /* IBA rate codes are ibv_rate's */
	ev->ah.sgid_index = 0;
	ev->ah.is_global = 1;
	ev->ah.port_num = id->port;
	ev->ud_qp_num = MC_QPN;
	ev->ud_qkey = mc->rec.qkey;
}

void cma_mc_dispatch(struct sib_cma *cma)
{
	for (struct sib_cma_id *id = cma->ids; id; id = id->next)
		for (struct cma_mc *mc = id->mcs; mc; mc = mc->next)
			if (mc->pending && mc->answered)
				mc_answer(id, mc);
}

uint64_t cma_mc_tick(struct sib_cma *cma, uint64_t now_ns)
{
	uint64_t next = 0;

	for (struct sib_cma_id *id = cma->ids; id; id = id->next)
		for (struct cma_mc *mc = id->mcs; mc; mc = mc->next) {
			struct sib_ctl_cm_event *ev;

			if (!mc->pending || mc->answered)
				continue;
			if (mc->deadline > now_ns) {
				if (!next || mc->deadline < next)
					next = mc->deadline;
				continue;
			}
			mc->pending = false;
			cma->ctr.mc_timeouts++;
			if ((ev = cma_post(id, SIB_CMA_EV_MULTICAST_ERROR, -ETIMEDOUT)))
				ev->listen_uid = mc->cookie;
		}
	return next;
}
