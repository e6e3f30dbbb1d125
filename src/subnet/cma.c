// SPDX-License-Identifier: MIT
/*
 * The rdma_cm of the subnet (cma.h, docs/rdmacm.md): the context, the
 * addresses of CA ports, ids, port spaces and binding, address and route
 * resolution, options, QUERY, and the event queue.  Connections are in
 * cma_conn.c.  The rules are linux cma.c's (research/rdmacm.md §2, §4).
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "iba/mad.h"
#include "iba/sa.h"
#include "common/sib_shm.h"
#include "subnet/cma_int.h"

#define PORT_ACTIVE 4 /* PortInfo.PortState (IBA 14.2.5.6) */

/* ---- small helpers ---- */

uint32_t cma_random(struct sib_cma *cma)
{
	uint64_t x = cma->rnd; /* xorshift64* */

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	cma->rnd = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

uint32_t sib_cma_default_ip4(uint32_t dev_index, uint8_t port)
{
	return 127u << 24 | 1u << 16 | (dev_index & 0xff) << 8 | port;
}

/* ---- addresses ---- */

/* Decode sockaddr bytes (AF_INET 16, AF_INET6 28, AF_IB 48).  0 or -EINVAL,
 * -EAFNOSUPPORT. */
int cma_addr_decode(const void *sa, uint32_t len, struct cma_addr *a)
{
	const uint8_t *p = sa;
	uint16_t fam;

	memset(a, 0, sizeof(*a));
	if (len < 2 || len > SIB_CM_ADDR_LEN)
		return -EINVAL;
	memcpy(&fam, p, 2); /* sa_family is host order */
	switch (fam) {
	case CMA_AF_INET:
		if (len < 16)
			return -EINVAL;
		a->port = get16(p + 2);
		memcpy(a->ip, p + 4, 4);
		break;
	case CMA_AF_INET6:
		if (len < 28)
			return -EINVAL;
		a->port = get16(p + 2);
		memcpy(a->ip, p + 8, 16);
		break;
	case CMA_AF_IB:
		if (len < 48)
			return -EINVAL;
		a->pkey = get16(p + 2);
		memcpy(a->ip, p + 8, 16);
		a->sid = get64(p + 24);
		a->sid_mask = get64(p + 32);
		/* the port is the masked ServiceID's low 16 bits (cma_port) */
		a->port = (uint16_t)(a->sid & a->sid_mask);
		break;
	default:
		return -EAFNOSUPPORT;
	}
	a->family = fam;
	return 0;
}

uint16_t cma_addr_encode(const struct cma_addr *a, uint8_t *out)
{
	memset(out, 0, SIB_CM_ADDR_LEN);
	memcpy(out, &a->family, 2);
	switch (a->family) {
	case CMA_AF_INET:
		put16(out + 2, a->port);
		memcpy(out + 4, a->ip, 4);
		return 16;
	case CMA_AF_INET6:
		put16(out + 2, a->port);
		memcpy(out + 8, a->ip, 16);
		return 28;
	case CMA_AF_IB:
		put16(out + 2, a->pkey);
		memcpy(out + 8, a->ip, 16);
		put64(out + 24, a->sid);
		put64(out + 32, a->sid ? ~0ull : 0);
		return 48;
	default:
		return 0;
	}
}

bool cma_addr_any(const struct cma_addr *a)
{
	static const uint8_t zero[16];

	if (a->family == CMA_AF_INET)
		return !memcmp(a->ip, zero, 4);
	return !memcmp(a->ip, zero, 16);
}

bool cma_addr_loopback(const struct cma_addr *a)
{
	static const uint8_t v6lo[16] = { [15] = 1 };

	if (a->family == CMA_AF_INET)
		return a->ip[0] == 127;
	if (a->family == CMA_AF_INET6)
		return !memcmp(a->ip, v6lo, 16);
	return false;
}

static bool addr_eq(const struct cma_addr *a, const struct cma_addr *b)
{
	if (a->family != b->family)
		return false;
	return !memcmp(a->ip, b->ip, a->family == CMA_AF_INET ? 4 : 16);
}

void cma_port_gid(const struct sib_fab_node *n, uint8_t p, uint8_t gid[16])
{
	put64(gid, n->mgmt->port[p].pi.gid_prefix);
	put64(gid + 8, n->ports[p].guid);
}

bool cma_node_dev(struct sib_cma *cma, const struct sib_fab_node *n, uint32_t *dev, uint32_t *gen)
{
	for (uint32_t d = 0; d < SIB_MAX_DEVICES; d++)
		if (cma->host->device(cma->host_ctx, d, gen) == n) {
			*dev = d;
			return true;
		}
	return false;
}

/* Does CA port (dev d of node n, port p) own address a? */
static bool port_owns(struct sib_cma *cma, uint32_t d, const struct sib_fab_node *n, uint8_t p,
		      const struct cma_addr *a)
{
	uint8_t gid[16];

	if (a->family == CMA_AF_INET) {
		uint32_t ip = (uint32_t)a->ip[0] << 24 | a->ip[1] << 16 | a->ip[2] << 8 | a->ip[3];

		if (ip == sib_cma_default_ip4(d, p))
			return true;
	} else {
		cma_port_gid(n, p, gid);
		if (!memcmp(gid, a->ip, 16))
			return true;
	}
	for (uint32_t i = 0; i < cma->nips; i++)
		if (cma->ips[i].dev_index == d && cma->ips[i].port == p &&
		    cma->ips[i].family == a->family &&
		    !memcmp(cma->ips[i].ip, a->ip, a->family == CMA_AF_INET ? 4 : 16))
			return true;
	return false;
}

bool cma_addr_owner(struct sib_cma *cma, const struct cma_addr *a, uint32_t *dev, uint8_t *port)
{
	struct sib_fab_node *n;
	uint32_t gen;

	if (cma_addr_any(a))
		return false;
	for (uint32_t d = 0; d < SIB_MAX_DEVICES; d++) {
		if (!(n = cma->host->device(cma->host_ctx, d, &gen)) || !n->mgmt)
			continue;
		for (uint8_t p = 1; p <= n->num_ports; p++)
			if (port_owns(cma, d, n, p, a)) {
				*dev = d;
				*port = p;
				return true;
			}
	}
	return false;
}

/* Not a unicast address a port may be given: 127.0.0.0/8 (loopback,
 * which resolves to the first ACTIVE port, and 127.1.d.p, the ports'
 * defaults, also of devices added later), 0.0.0.0/8, IPv4 multicast and
 * the limited broadcast; IPv6 loopback, multicast, link-local (fe80::/10:
 * a port's link-local address is its GID, also of devices added later),
 * IPv4-mapped and IPv4-compatible (other spellings of IPv4 addresses). */
static bool addr_reserved(const struct cma_addr *a)
{
	static const uint8_t zero12[12];
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (a->family == CMA_AF_INET)
		return a->ip[0] == 127 || a->ip[0] == 0 || (a->ip[0] & 0xf0) == 0xe0 ||
		       (a->ip[0] == 255 && a->ip[1] == 255 && a->ip[2] == 255 && a->ip[3] == 255);
	return a->ip[0] == 0xff || (a->ip[0] == 0xfe && (a->ip[1] & 0xc0) == 0x80) ||
	       !memcmp(a->ip, v4mapped, sizeof(v4mapped)) || !memcmp(a->ip, zero12, sizeof(zero12));
}

int sib_cma_addr_add(struct sib_cma *cma, uint32_t dev_index, uint8_t port, const void *addr,
		     uint32_t len, uint8_t prefix)
{
	struct cma_addr a;
	struct cma_ip *ip;
	uint32_t d;
	uint8_t p;

	if (cma_addr_decode(addr, len, &a) || a.family == CMA_AF_IB || port == 0 ||
	    port > SIB_MAX_PORTS || prefix == 0 || prefix > (a.family == CMA_AF_INET ? 32 : 128) ||
	    cma_addr_any(&a) || dev_index >= SIB_MAX_DEVICES)
		return -EINVAL;
	if (cma_addr_owner(cma, &a, &d, &p)) /* a default included: it exists */
		return -EEXIST;
	if (addr_reserved(&a))
		return -EINVAL;
	if (cma->nips >= SIB_CMA_ADDRS_MAX)
		return -ENOSPC;
	ip = &cma->ips[cma->nips++];
	ip->dev_index = dev_index;
	ip->port = port;
	ip->prefix = prefix;
	ip->family = a.family;
	memcpy(ip->ip, a.ip, 16);
	return 0;
}

/* Is a the default address of (d, p): 127.1.d.p or the IPv6 address equal
 * to its GID 0? */
static bool default_addr(struct sib_cma *cma, uint32_t d, uint8_t p, const struct cma_addr *a)
{
	struct sib_fab_node *n;
	uint8_t gid[16];
	uint32_t gen;

	if (a->family == CMA_AF_INET)
		return ((uint32_t)a->ip[0] << 24 | a->ip[1] << 16 | a->ip[2] << 8 | a->ip[3]) ==
		       sib_cma_default_ip4(d, p);
	if (!(n = cma->host->device(cma->host_ctx, d, &gen)) || !n->mgmt || p > n->num_ports)
		return false;
	cma_port_gid(n, p, gid);
	return !memcmp(gid, a->ip, 16);
}

int sib_cma_addr_del(struct sib_cma *cma, uint32_t dev_index, uint8_t port, const void *addr,
		     uint32_t len, uint8_t prefix)
{
	struct cma_addr a;

	if (cma_addr_decode(addr, len, &a) || a.family == CMA_AF_IB || port == 0 ||
	    port > SIB_MAX_PORTS || cma_addr_any(&a) || dev_index >= SIB_MAX_DEVICES ||
	    (prefix != SIB_CMA_PREFIX_ANY && prefix > (a.family == CMA_AF_INET ? 32 : 128)))
		return -EINVAL;
	if (default_addr(cma, dev_index, port, &a))
		return -EPERM;
	for (uint32_t i = 0; i < cma->nips; i++) {
		struct cma_ip *ip = &cma->ips[i];

		if (ip->dev_index != dev_index || ip->port != port || ip->family != a.family ||
		    memcmp(ip->ip, a.ip, a.family == CMA_AF_INET ? 4 : 16) ||
		    (prefix != SIB_CMA_PREFIX_ANY && prefix != ip->prefix))
			continue;
		/* ids bound to it keep it (their connections, listeners): as
		 * an address removed from a netdev, only new binds fail */
		memmove(ip, ip + 1, (cma->nips - i - 1) * sizeof(*ip));
		cma->nips--;
		return 0;
	}
	return -EADDRNOTAVAIL;
}

void sib_cma_addr_flush(struct sib_cma *cma, uint32_t dev_index)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < cma->nips; i++)
		if (cma->ips[i].dev_index != dev_index)
			cma->ips[j++] = cma->ips[i];
	cma->nips = j;
}

int sib_cma_addr_get(struct sib_cma *cma, uint32_t dev_index, uint8_t port, uint32_t index,
		     struct sib_cma_addr_info *out)
{
	struct sib_fab_node *n;
	uint32_t gen, k = 0;

	memset(out, 0, sizeof(*out));
	if (dev_index >= SIB_MAX_DEVICES || !(n = cma->host->device(cma->host_ctx, dev_index, &gen)) ||
	    !n->mgmt || port == 0 || port > n->num_ports)
		return -EINVAL;
	if (index == 0) { /* 127.1.d.p in 127.0.0.0/8 */
		uint32_t v = sib_cma_default_ip4(dev_index, port);

		out->family = CMA_AF_INET;
		out->prefix = 8;
		out->is_default = true;
		for (int b = 0; b < 4; b++)
			out->addr[b] = (uint8_t)(v >> (24 - 8 * b));
		return 0;
	}
	if (index == 1) { /* GID 0: fe80::/64 + the port GUID (link-local as the GID prefix) */
		out->family = CMA_AF_INET6;
		out->prefix = 64;
		out->is_default = true;
		cma_port_gid(n, port, out->addr);
		return 0;
	}
	for (uint32_t i = 0; i < cma->nips; i++) {
		const struct cma_ip *ip = &cma->ips[i];

		if (ip->dev_index != dev_index || ip->port != port || k++ != index - 2)
			continue;
		out->family = ip->family;
		out->prefix = ip->prefix;
		memcpy(out->addr, ip->ip, 16);
		return 0;
	}
	return -ENOENT;
}

uint32_t sib_cma_addr_count(const struct sib_cma *cma)
{
	return cma->nips;
}

void cma_attach(struct sib_cma_id *id, uint32_t dev, uint32_t gen, struct sib_fab_node *n,
		uint8_t port)
{
	id->dev_set = true;
	id->dev_index = dev;
	id->dev_gen = gen;
	id->node = n;
	id->port = port;
	id->pkey = n->mgmt->port[port].pkey[0];
	cma_port_gid(n, port, id->sgid);
}

/* Attach to the CA port owning a (or fail), or for loopback/wildcard to
 * the first ACTIVE CA port (cma_bind_loopback).  0 or -EADDRNOTAVAIL,
 * -ENODEV (no active port). */
static int attach_addr(struct sib_cma_id *id, const struct cma_addr *a, bool loopback_ok)
{
	struct sib_cma *cma = id->cma;
	struct sib_fab_node *n;
	uint32_t d, gen;
	uint8_t p;

	if (a->family == CMA_AF_IB) {
		for (d = 0; d < SIB_MAX_DEVICES; d++) {
			if (!(n = cma->host->device(cma->host_ctx, d, &gen)) || !n->mgmt)
				continue;
			for (p = 1; p <= n->num_ports; p++) {
				uint8_t gid[16];

				cma_port_gid(n, p, gid);
				if (!memcmp(gid, a->ip, 16)) {
					cma_attach(id, d, gen, n, p);
					return 0;
				}
			}
		}
		if (!cma_addr_any(a))
			return -EADDRNOTAVAIL;
	} else if (cma_addr_owner(cma, a, &d, &p)) {
		n = cma->host->device(cma->host_ctx, d, &gen);
		cma_attach(id, d, gen, n, p);
		return 0;
	}
	if (!loopback_ok || !(cma_addr_any(a) || cma_addr_loopback(a)))
		return -EADDRNOTAVAIL;
	for (d = 0; d < SIB_MAX_DEVICES; d++) {
		if (!(n = cma->host->device(cma->host_ctx, d, &gen)) || !n->mgmt)
			continue;
		for (p = 1; p <= n->num_ports; p++)
			if (n->mgmt->port[p].pi.port_state == PORT_ACTIVE) {
				cma_attach(id, d, gen, n, p);
				return 0;
			}
	}
	return -ENODEV;
}

/* ---- events ---- */

struct sib_ctl_cm_event *cma_post(struct sib_cma_id *id, enum sib_cma_event_type type,
				  int32_t status)
{
	struct sib_cma *cma = id->cma;
	struct cma_ev *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->id = id;
	e->ev.event = type;
	e->ev.status = status;
	e->ev.uid = id->uid;
	e->ev.dev_index = id->dev_set ? id->dev_index : SIB_CM_NO_DEVICE;
	e->ev.dev_gen = id->dev_gen;
	e->ev.port_num = id->port;
	if (cma->ev_tail)
		cma->ev_tail->next = e;
	else
		cma->ev_head = e;
	cma->ev_tail = e;
	return &e->ev;
}

/* Drop id's queued events (it is destroyed). */
static void drop_events(struct sib_cma_id *id)
{
	struct sib_cma *cma = id->cma;
	struct cma_ev **pp = &cma->ev_head, *e;

	cma->ev_tail = NULL;
	while ((e = *pp)) {
		if (e->id == id) {
			*pp = e->next;
			free(e);
			continue;
		}
		cma->ev_tail = e;
		pp = &e->next;
	}
}

static void route_done(struct sib_cma_id *id);

void sib_cma_dispatch(struct sib_cma *cma)
{
	struct cma_ev *e;

	if (cma->dispatching)
		return;
	cma->dispatching = true;
	for (;;) {
		sib_cm_dispatch(cma->sn);
		for (struct sib_cma_id *id = cma->ids; id; id = id->next)
			if (id->rq_pending && id->rq_answered)
				route_done(id);
		cma_mc_dispatch(cma);
		if (!(e = cma->ev_head))
			break;
		cma->ev_head = e->next;
		if (!cma->ev_head)
			cma->ev_tail = NULL;
		e->id->events++;
		cma->ctr.events++;
		if (e->ev.event == SIB_CMA_EV_CONNECT_REQUEST) {
			struct sib_cma_id *id = e->id;

			e->ev.uid = 0;
			e->ev.listen_uid = id->listener ? id->listener->uid : 0;
			if (cma->host->event(cma->host_ctx, id, &e->ev)) {
				id->events--; /* never given */
				sib_cma_destroy_id(id);
			}
		} else {
			cma->host->event(cma->host_ctx, e->id, &e->ev);
		}
		free(e);
	}
	cma->dispatching = false;
}

/* ---- the context ---- */

struct sib_cma *sib_cma_new(struct sib_subnet *sn, const struct sib_cma_host *h, void *host_ctx)
{
	struct sib_cma *cma = calloc(1, sizeof(*cma));

	if (!cma)
		return NULL;
	cma->sn = sn;
	cma->host = h;
	cma->host_ctx = host_ctx;
	cma->rnd = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)cma;
	sn->cma = cma;
	sn->cma_sa_receive = sib_cma_sa_receive;
	return cma;
}

void sib_cma_delete(struct sib_cma *cma)
{
	struct cma_ev *e;

	if (!cma)
		return;
	while (cma->ids)
		sib_cma_destroy_id(cma->ids);
	while ((e = cma->ev_head)) {
		cma->ev_head = e->next;
		free(e);
	}
	if (cma->sn->cma == cma) {
		cma->sn->cma = NULL;
		cma->sn->cma_sa_receive = NULL;
	}
	free(cma);
}

void sib_cma_seed(struct sib_cma *cma, uint64_t seed)
{
	cma->rnd = seed ? seed : 1;
}

const struct sib_cma_counters *sib_cma_counters(const struct sib_cma *cma)
{
	return &cma->ctr;
}

unsigned int sib_cma_listening(const struct sib_cma *cma)
{
	unsigned int n = 0;

	for (const struct sib_cma_id *id = cma->ids; id; id = id->next)
		n += id->state == CMA_LISTEN;
	return n;
}

/* ---- ids ---- */

struct sib_cma_id *cma_id_alloc(struct sib_cma *cma, uint64_t owner, uint64_t uid, uint32_t ps,
				uint32_t qp_type)
{
	struct sib_cma_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->cma = cma;
	id->owner = owner;
	id->uid = uid;
	id->ps = ps;
	id->qp_type = qp_type;
	id->dev_index = SIB_CM_NO_DEVICE;
	id->next = cma->ids;
	if (cma->ids)
		cma->ids->prev = id;
	cma->ids = id;
	cma->ctr.ids++;
	cma->ctr.created++;
	return id;
}

int sib_cma_create_id(struct sib_cma *cma, uint64_t owner, uint64_t uid, uint32_t ps,
		      uint32_t qp_type, struct sib_cma_id **out)
{
	struct sib_cma_id *id;

	switch (ps) {
	case SIB_CMA_PS_TCP:
	case SIB_CMA_PS_IB:
		if (qp_type != IBV_QPT_RC && qp_type != IBV_QPT_UC && qp_type != IBV_QPT_UD)
			return -EINVAL;
		break;
	case SIB_CMA_PS_UDP:
	case SIB_CMA_PS_IPOIB:
		if (qp_type != IBV_QPT_UD)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (!(id = cma_id_alloc(cma, owner, uid, ps, qp_type)))
		return -ENOMEM;
	*out = id;
	return 0;
}

static void bucket_leave(struct sib_cma_id *id)
{
	struct cma_bucket *b = id->bucket, **bp;
	struct sib_cma_id **pp;

	if (!b)
		return;
	for (pp = &b->owners; *pp; pp = &(*pp)->bnext)
		if (*pp == id) {
			*pp = id->bnext;
			break;
		}
	id->bucket = NULL;
	id->bnext = NULL;
	if (b->cm) { /* the CM listener stays while an owner listens */
		struct sib_cma_id *o;

		for (o = b->owners; o && o->state != CMA_LISTEN; o = o->bnext)
			;
		if (!o) {
			sib_cm_id_destroy(b->cm);
			b->cm = NULL;
		}
	}
	if (b->owners)
		return;
	for (bp = &b->cma->buckets; *bp; bp = &(*bp)->next)
		if (*bp == b) {
			*bp = b->next;
			break;
		}
	free(b);
}

uint32_t sib_cma_destroy_id(struct sib_cma_id *id)
{
	struct sib_cma *cma = id->cma;
	uint32_t events = id->events;

	drop_events(id);
	/* passive ids not yet accepted: their listener's backlog frees */
	if (id->listener && id->listener->pending)
		id->listener->pending--;
	for (struct sib_cma_id *o = cma->ids; o; o = o->next)
		if (o->listener == id)
			o->listener = NULL;
	cma_conn_destroy(id);
	cma_mc_destroy(id, true);
	bucket_leave(id);
	if (id->prev)
		id->prev->next = id->next;
	else
		cma->ids = id->next;
	if (id->next)
		id->next->prev = id->prev;
	cma->ctr.ids--;
	cma->ctr.destroyed++;
	free(id);
	return events;
}

void sib_cma_node_gone(struct sib_cma *cma, const struct sib_fab_node *n)
{
	for (struct sib_cma_id *id = cma->ids; id; id = id->next) {
		if (!id->dev_set || id->node != n)
			continue;
		cma_conn_destroy(id);
		cma_mc_destroy(id, false); /* the port is gone: no Delete to send */
		id->dev_set = false;
		id->node = NULL;
		id->dev_index = SIB_CM_NO_DEVICE;
		id->num_paths = 0;
		id->rq_pending = false;
		if (id->state != CMA_LISTEN && id->state != CMA_ADDR_BOUND && id->state != CMA_IDLE)
			id->state = CMA_DONE;
		cma_post(id, SIB_CMA_EV_DEVICE_REMOVAL, 0);
	}
	for (struct cma_bucket *b = cma->buckets; b; b = b->next)
		if (b->cm && b->cm_node == n) {
			sib_cm_id_destroy(b->cm);
			b->cm = NULL;
			cma_conn_listen(b); /* on a CA still there, if any */
		}
}

void sib_cma_destroy_owner(struct sib_cma *cma, uint64_t owner)
{
	struct sib_cma_id *id, *next;

	for (id = cma->ids; id; id = next) {
		next = id->next;
		if (id->owner == owner) {
			sib_cma_destroy_id(id);
			next = cma->ids; /* the list may have changed: start over */
		}
	}
}

void sib_cma_id_set_host(struct sib_cma_id *id, void *host) { id->host = host; }
void *sib_cma_id_host(const struct sib_cma_id *id) { return id->host; }
uint64_t sib_cma_id_owner(const struct sib_cma_id *id) { return id->owner; }
void sib_cma_id_set_owner(struct sib_cma_id *id, uint64_t owner) { id->owner = owner; }
void sib_cma_id_set_uid(struct sib_cma_id *id, uint64_t uid) { id->uid = uid; }
uint64_t sib_cma_id_uid(const struct sib_cma_id *id) { return id->uid; }
uint32_t sib_cma_id_events(const struct sib_cma_id *id) { return id->events; }
uint32_t sib_cma_id_ps(const struct sib_cma_id *id) { return id->ps; }
uint32_t sib_cma_id_qp_type(const struct sib_cma_id *id) { return id->qp_type; }
struct sib_cma_id *sib_cma_id_listener(const struct sib_cma_id *id) { return id->listener; }
uint32_t sib_cma_id_dev(const struct sib_cma_id *id)
{
	return id->dev_set ? id->dev_index : SIB_CM_NO_DEVICE;
}

/* ---- binding (linux cma.c cma_get_port, cma_check_port) ---- */

static struct cma_bucket *bucket_find(struct sib_cma *cma, uint32_t ps, uint16_t port,
				      uint64_t sid)
{
	for (struct cma_bucket *b = cma->buckets; b; b = b->next)
		if (b->ps == ps && b->port == port && b->sid == sid)
			return b;
	return NULL;
}

/* The ServiceID of an AF_IB id in RDMA_PS_IB that lies outside rdma_cm's
 * own range (ps << 16) | port, e.g. IPoIB-CM's 0x1000000000000000 | QPN: the
 * id's bucket is that ServiceID alone and its CM listener listens on it.
 * The kernel's cma_get_port refuses such an id (cma_select_ib_ps finds no
 * port space: EPROTONOSUPPORT); softib takes it, as ib_ucm once let user
 * space listen on any ServiceID (docs/rdmacm.md "AF_IB ServiceIDs").  0 for
 * every other id. */
static uint64_t cma_raw_sid(const struct sib_cma_id *id)
{
	const struct cma_addr *a = &id->src;

	if (a->family != CMA_AF_IB || id->ps != SIB_CMA_PS_IB || !a->sid ||
	    a->sid >> 16 == id->ps)
		return 0;
	return a->sid;
}

void cma_bucket_join(struct cma_bucket *b, struct sib_cma_id *id)
{
	id->bucket = b;
	id->bnext = b->owners;
	b->owners = id;
}

/* May id use port b?  (cma_check_port: reuseaddr both sides and nobody
 * listening, AFONLY of other families, a wildcard beside anything is
 * EADDRNOTAVAIL, the same address EADDRINUSE.) */
static int check_port(const struct cma_bucket *b, const struct sib_cma_id *id, bool reuse)
{
	for (const struct sib_cma_id *o = b->owners; o; o = o->bnext) {
		if (o == id)
			continue;
		if (reuse && o->reuseaddr)
			continue;
		if (id->afonly && o->afonly && o->src.family != id->src.family)
			continue;
		if (cma_addr_any(&id->src) || cma_addr_any(&o->src))
			return -EADDRNOTAVAIL;
		if (addr_eq(&id->src, &o->src))
			return -EADDRINUSE;
	}
	return 0;
}

/* LISTEN on a shared port: checked again without REUSEADDR (cma_bind_listen). */
int cma_listen_check(const struct sib_cma_id *id)
{
	return id->bucket ? check_port(id->bucket, id, false) : 0;
}

static int bind_port(struct sib_cma_id *id)
{
	struct sib_cma *cma = id->cma;
	struct cma_bucket *b;
	uint32_t range = SIB_CMA_EPHEMERAL_HI - SIB_CMA_EPHEMERAL_LO + 1;
	uint64_t sid = cma_raw_sid(id);

	if (id->src.port == 0 && !sid) { /* ephemeral: a random start, the first free */
		uint32_t start = cma_random(cma) % range;

		for (uint32_t i = 0; i < range; i++) {
			uint16_t port = (uint16_t)(SIB_CMA_EPHEMERAL_LO + (start + i) % range);

			if (!bucket_find(cma, id->ps, port, 0)) {
				id->src.port = port;
				break;
			}
		}
		if (id->src.port == 0)
			return -EADDRNOTAVAIL;
	}
	b = bucket_find(cma, id->ps, id->src.port, sid);
	if (b) {
		int ret = check_port(b, id, id->reuseaddr);

		if (ret)
			return ret;
	} else {
		if (!(b = calloc(1, sizeof(*b))))
			return -ENOMEM;
		b->cma = cma;
		b->ps = id->ps;
		b->port = id->src.port;
		b->sid = sid;
		b->next = cma->buckets;
		cma->buckets = b;
	}
	cma_bucket_join(b, id);
	return 0;
}

/* Bind id to a (decoded): attach the device a names (none for loopback
 * and wildcard), take the port. */
static int bind_addr(struct sib_cma_id *id, const struct cma_addr *a)
{
	struct cma_addr save = id->src;
	int ret;

	if (a->family == CMA_AF_IB && a->sid && (uint32_t)(a->sid >> 16 & 0xffff) != id->ps &&
	    id->ps != SIB_CMA_PS_IB)
		return -EINVAL;
	/* An RDMA_PS_IB id on a ServiceID of the TCP or UDP port space
	 * (RDMA_IB_IP_PS_TCP/UDP | port): the kernel's cma_select_ib_ps moves
	 * it into that space, where it meets that space's binds.  softib
	 * refuses it instead: taken as a raw ServiceID (below) it would listen
	 * beside that space's owner of the port and take its REQs. */
	if (a->family == CMA_AF_IB && id->ps == SIB_CMA_PS_IB &&
	    ((a->sid >> 16) == SIB_CMA_PS_TCP || (a->sid >> 16) == SIB_CMA_PS_UDP))
		return -EPROTONOSUPPORT;
	/* a port's own address attaches its device; other loopback
	 * addresses and the wildcard attach none (cma_bind_loopback later) */
	if (!cma_addr_any(a)) {
		ret = attach_addr(id, a, false);
		if (ret && !(ret == -EADDRNOTAVAIL && cma_addr_loopback(a)))
			return ret;
	}
	id->src = *a;
	ret = bind_port(id);
	if (ret) {
		id->src = save;
		id->dev_set = false;
		id->dev_index = SIB_CM_NO_DEVICE;
		return ret;
	}
	if (id->src.family == CMA_AF_IB) {
		/* the bound port goes into the ServiceID's low 16 bits, under
		 * the port space's bits (cma_bind_port: (sid & mask) | port,
		 * mask all ones), so that rdma_get_local_addr names the port
		 * an ephemeral bind took (libfabric's fi_getname) */
		uint64_t sid = id->src.sid & id->src.sid_mask & ~0xffffull;

		if (!sid)
			sid = (uint64_t)id->ps << 16;
		id->src.sid = sid | id->src.port;
		id->src.sid_mask = ~0ull;
	}
	id->state = CMA_ADDR_BOUND;
	return 0;
}

int sib_cma_bind(struct sib_cma_id *id, const void *addr, uint32_t len)
{
	struct cma_addr a;
	int ret;

	if (id->state != CMA_IDLE)
		return -EINVAL;
	ret = cma_addr_decode(addr, len, &a);
	if (ret)
		return ret;
	return bind_addr(id, &a);
}

/* ---- address resolution ---- */

/* The destination's GID: a CA port owning dst (its GID), loopback or
 * wildcard (DGID = SGID), an AF_IB GID; else -ENETUNREACH. */
static int dst_gid(struct sib_cma_id *id, uint8_t dgid[16])
{
	struct sib_cma *cma = id->cma;
	struct sib_fab_node *n;
	uint32_t d, gen;
	uint8_t p;

	if (id->dst.family == CMA_AF_IB) {
		memcpy(dgid, id->dst.ip, 16);
		return 0;
	}
	if (cma_addr_owner(cma, &id->dst, &d, &p)) {
		if (!(n = cma->host->device(cma->host_ctx, d, &gen)))
			return -ENETUNREACH;
		cma_port_gid(n, p, dgid);
		return 0;
	}
	if (cma_addr_mcast(&id->dst)) { /* a group: its MGID (the kernel's neighbour
					 * of a multicast IP is ip_ib_mc_map's) */
		cma_mc_mgid(id, &id->dst, dgid);
		return 0;
	}
	if (cma_addr_any(&id->dst) || cma_addr_loopback(&id->dst)) {
		memcpy(dgid, id->sgid, 16);
		return 0;
	}
	return -ENETUNREACH;
}

int sib_cma_resolve_addr(struct sib_cma_id *id, const void *src, uint32_t slen, const void *dst,
			 uint32_t dlen, uint32_t timeout_ms)
{
	struct cma_addr s, d;
	int ret, status = 0;

	(void)timeout_ms; /* resolution is immediate (a static table) */
	if ((ret = cma_addr_decode(dst, dlen, &d)))
		return ret;
	if (id->state == CMA_IDLE) {
		if (slen) {
			if ((ret = cma_addr_decode(src, slen, &s)))
				return ret;
		} else {
			memset(&s, 0, sizeof(s));
			s.family = d.family;
			if (d.family == CMA_AF_IB)
				s.pkey = d.pkey;
		}
		if (s.family != d.family)
			return -EINVAL;
		if ((ret = bind_addr(id, &s)))
			return ret;
	}
	if (id->state != CMA_ADDR_BOUND || id->src.family != d.family)
		return -EINVAL;
	id->dst = d;
	if (d.family == CMA_AF_IB && !d.sid)
		id->dst.sid = (uint64_t)id->ps << 16 | d.port;
	/* the source device: the bound one, else the one owning dst (a local
	 * address: the kernel routes it through that port's netdev), else
	 * the first ACTIVE port */
	if (!id->dev_set) {
		struct cma_addr lo = { .family = d.family };

		ret = attach_addr(id, &d, true);
		if (ret == -EADDRNOTAVAIL)
			ret = attach_addr(id, &lo, true);
		if (ret)
			status = ret;
	}
	if (!status)
		status = dst_gid(id, id->dgid);
	id->state = status ? CMA_ADDR_BOUND : CMA_ADDR_RESOLVED;
	if (status)
		id->dst.family = 0;
	if (!cma_post(id, status ? SIB_CMA_EV_ADDR_ERROR : SIB_CMA_EV_ADDR_RESOLVED, status))
		return -ENOMEM;
	return 0;
}

/* ---- route resolution: an SA PathRecord query (cma_query_ib_route) ---- */

void sib_cma_sa_receive(struct sib_subnet *sn, const struct sib_fab_node *n, uint8_t port,
			const struct mai_mad *m)
{
	struct sib_cma *cma = sn->cma;
	struct sa_path_record r;
	uint8_t wire[MAD_SIZE];

	if (!cma || mai_towire(m, wire, sizeof(wire)) != MAD_SIZE)
		return;
	if (cma_mc_sa_receive(cma, n, port, m, wire))
		return;
	for (struct sib_cma_id *id = cma->ids; id; id = id->next) {
		if (!id->rq_pending || id->rq_answered || id->rq_tid != m->tid || id->node != n ||
		    id->port != port)
			continue;
		if (m->mgmt_class != MAD_MGMT_CLASS_SUBN_ADM || m->method != MAD_METHOD_GET_RESP ||
		    m->attr_id != SA_ATTR_PATH_RECORD)
			return;
		id->rq_answered = true;
		id->rq_status = m->status;
		if (m->status)
			return;
		sa_path_record_decode(&r, wire + MAD_SA_HDR_SIZE);
		memset(&id->rq_path, 0, sizeof(id->rq_path));
		memcpy(id->rq_path.dgid, r.dgid, 16);
		memcpy(id->rq_path.sgid, r.sgid, 16);
		id->rq_path.dlid = r.dlid;
		id->rq_path.slid = r.slid;
		id->rq_path.pkey = r.pkey;
		id->rq_path.sl = r.sl;
		id->rq_path.mtu = r.mtu;
		id->rq_path.rate = r.rate;
		id->rq_path.packet_life_time = r.packet_life_time;
		id->rq_path.hop_limit = r.hop_limit;
		id->rq_path.traffic_class = r.tclass;
		id->rq_path.flow_label = r.flow_label;
		id->rq_path.reversible = r.reversible;
		id->rq_path.numb_path = 1;
		return;
	}
}

/* The query's answer (or its status) becomes ROUTE_RESOLVED / ROUTE_ERROR. */
static void route_done(struct sib_cma_id *id)
{
	id->rq_pending = false;
	if (id->state != CMA_ROUTE_QUERY)
		return;
	if (id->rq_status) {
		id->state = CMA_ADDR_RESOLVED;
		cma_post(id, SIB_CMA_EV_ROUTE_ERROR, -EHOSTUNREACH);
		return;
	}
	id->cma->ctr.route_answers++;
	id->path[0] = id->rq_path;
	id->num_paths = 1;
	id->state = CMA_ROUTE_RESOLVED;
	cma_post(id, SIB_CMA_EV_ROUTE_RESOLVED, 0);
}

int cma_sa_mad(struct sib_cma_id *id, uint8_t method, uint16_t attr_id, uint64_t comp_mask,
	       const uint8_t *data, mai_mad_t *m)
{
	struct sib_cma *cma = id->cma;
	struct mad_sa s;
	uint8_t wire[MAD_SIZE];

	memset(&s, 0, sizeof(s));
	s.hdr.base_version = MAD_BASE_VERSION;
	s.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
	s.hdr.class_version = MAD_SA_CLASS_VERSION;
	s.hdr.method = method;
	s.hdr.tid = (uint64_t)SIB_MAD_CHAN_CMA << MAI_TID_CHAN_SHIFT | ++cma->tid_next;
	s.hdr.attr_id = attr_id;
	s.comp_mask = comp_mask;
	memcpy(s.data, data, sizeof(s.data));
	mad_sa_encode(&s, wire);
	memset(m, 0, sizeof(*m));
	if (mai_fromwire(wire, MAD_SIZE, m) != MAD_SIZE)
		return -EINVAL;
	m->type = MAI_TYPE_MAD;
	m->qp = 1;
	m->port = id->port;
	m->remote_qpn = 1;
	m->remote_qkey = 0x80010000u;
	m->lrh.dlid = id->node->mgmt->port[id->port].pi.master_sm_lid;
	m->lrh.slid = id->node->mgmt->port[id->port].pi.lid;
	return 0;
}

int sib_cma_resolve_route(struct sib_cma_id *id, uint32_t timeout_ms)
{
	struct sib_cma *cma = id->cma;
	const struct sa_layout *l = sa_layout_find(SA_ATTR_PATH_RECORD);
	struct sa_path_record r;
	uint8_t data[MAD_SA_DATA_SIZE];
	mai_mad_t m;
	int ret;

	if (id->state != CMA_ADDR_RESOLVED || !id->dev_set)
		return -EINVAL;
	if (id->num_paths) { /* set by RDMA_OPTION_IB_PATH: nothing to ask */
		id->state = CMA_ROUTE_RESOLVED;
		return cma_post(id, SIB_CMA_EV_ROUTE_RESOLVED, 0) ? 0 : -ENOMEM;
	}
	if (timeout_ms > SIB_CMA_ROUTE_TIMEOUT_MAX)
		timeout_ms = SIB_CMA_ROUTE_TIMEOUT_MAX;
	memset(&r, 0, sizeof(r));
	memcpy(r.sgid, id->sgid, 16);
	memcpy(r.dgid, id->dgid, 16);
	r.pkey = id->pkey;
	r.numb_path = 1;
	r.reversible = 1;
	r.service_id = (uint64_t)id->ps << 16 | id->dst.port;
	r.qos_class = id->tos;
	memset(data, 0, sizeof(data));
	sa_path_record_encode(&r, data);
	if ((ret = cma_sa_mad(id, MAD_METHOD_GET, SA_ATTR_PATH_RECORD,
			      sa_comp_mask(l, "SGID") | sa_comp_mask(l, "DGID") |
				      sa_comp_mask(l, "P_Key") | sa_comp_mask(l, "NumbPath") |
				      sa_comp_mask(l, "Reversible") | sa_comp_mask(l, "ServiceID"),
			      data, &m)))
		return ret;
	id->state = CMA_ROUTE_QUERY;
	id->rq_pending = true;
	id->rq_answered = false;
	id->rq_tid = m.tid;
	id->rq_deadline = cma->host->now_ns(cma->host_ctx) + (uint64_t)timeout_ms * 1000000u;
	cma->ctr.route_queries++;
	/* synchronous: the built-in SA's answer is stored before this returns
	 * (sib_cma_sa_receive); dispatch turns it into the event */
	sib_mad_send(cma->sn, id->node, id->port, &m);
	return 0;
}

uint64_t sib_cma_tick(struct sib_cma *cma, uint64_t now_ns)
{
	uint64_t next, d, mc_next;

	cma->now_ns = now_ns;
	mc_next = cma_mc_tick(cma, now_ns); /* join timeouts */
	for (struct sib_cma_id *id = cma->ids; id; id = id->next)
		if (id->rq_pending && !id->rq_answered && id->rq_deadline <= now_ns) {
			id->rq_pending = false;
			cma->ctr.route_timeouts++;
			if (id->state == CMA_ROUTE_QUERY) {
				id->state = CMA_ADDR_RESOLVED;
				cma_post(id, SIB_CMA_EV_ROUTE_ERROR, -ETIMEDOUT);
			}
		}
	next = sib_cm_tick(cma->sn, now_ns);
	if (mc_next && (!next || mc_next < next))
		next = mc_next;
	sib_cma_dispatch(cma);
	for (struct sib_cma_id *id = cma->ids; id; id = id->next)
		if (id->rq_pending && !id->rq_answered) {
			d = id->rq_deadline;
			if (!next || d < next)
				next = d;
		}
	return next;
}

/* ---- QUERY and options ---- */

void sib_cma_query(const struct sib_cma_id *id, struct sib_ctl_cm *out)
{
	out->src_len = cma_addr_encode(&id->src, out->src_addr);
	out->dst_len = cma_addr_encode(&id->dst, out->dst_addr);
	out->dev_index = id->dev_set ? id->dev_index : SIB_CM_NO_DEVICE;
	out->dev_gen = id->dev_gen;
	out->port_num = id->port;
	out->pkey = id->pkey;
	memcpy(out->sgid, id->sgid, 16);
	memcpy(out->dgid, id->dgid, 16);
	out->num_paths = id->num_paths;
	memcpy(out->paths, id->path, sizeof(out->paths));
}

/* RDMA_OPTION_IB_PATH: struct ibv_path_data (72 bytes) does not fit
 * optval, so the library sends its path record as one struct sib_cm_path
 * (host order; sib_ctl_cm.h). */
static int set_ib_path(struct sib_cma_id *id, const uint8_t *v, uint32_t len)
{
	struct sib_cm_path *p = &id->path[0];

	if (len != sizeof(*p) || id->state != CMA_ADDR_RESOLVED)
		return -EINVAL;
	memcpy(p, v, sizeof(*p));
	p->flow_label &= 0xfffff;
	p->sl &= 0xf;
	p->packet_life_time &= 0x1f;
	p->numb_path = 1;
	p->pad = 0;
	id->num_paths = 1;
	/* the kernel's ucma_set_ib_path resolves the route at once */
	id->state = CMA_ROUTE_RESOLVED;
	return cma_post(id, SIB_CMA_EV_ROUTE_RESOLVED, 0) ? 0 : -ENOMEM;
}

int sib_cma_set_option(struct sib_cma_id *id, uint32_t level, uint32_t optname,
		       const void *optval, uint32_t optlen)
{
	const uint8_t *v = optval;
	int iv = 0;

	if (optlen > 64)
		return -EINVAL;
	if (level == 1) { /* RDMA_OPTION_IB */
		if (optname != 1) /* RDMA_OPTION_IB_PATH */
			return -ENOSYS;
		return set_ib_path(id, v, optlen);
	}
	if (level != 0)
		return -EINVAL;
	switch (optname) {
	case 0: /* RDMA_OPTION_ID_TOS: uint8_t */
		if (optlen != 1)
			return -EINVAL;
		id->tos = v[0];
		id->tos_set = true;
		return 0;
	case 1: /* RDMA_OPTION_ID_REUSEADDR: int (rdma_set_reuseaddr) */
		if (optlen != sizeof(int))
			return -EINVAL;
		memcpy(&iv, v, sizeof(iv));
		if (!((iv && id->state != CMA_LISTEN) || id->state == CMA_IDLE))
			return -EINVAL;
		id->reuseaddr = iv != 0;
		return 0;
	case 2: /* RDMA_OPTION_ID_AFONLY: int (rdma_set_afonly) */
		if (optlen != sizeof(int))
			return -EINVAL;
		memcpy(&iv, v, sizeof(iv));
		if (id->state != CMA_IDLE && id->state != CMA_ADDR_BOUND)
			return -EINVAL;
		id->afonly = iv != 0;
		return 0;
	case 3: /* RDMA_OPTION_ID_ACK_TIMEOUT: uint8_t, 5 bits */
		if (optlen != 1)
			return -EINVAL;
		id->ack_timeout = v[0] & 0x1f;
		id->ack_timeout_set = true;
		return 0;
	default:
		return -ENOSYS;
	}
}
