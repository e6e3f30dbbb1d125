/* SPDX-License-Identifier: MIT */
/*
 * rdma_getaddrinfo / rdma_freeaddrinfo (man rdma_getaddrinfo; rdma-core
 * v44 librdmacm/addrinfo.c semantics): a wrapper of getaddrinfo(3) that
 * keeps its first answer, RAI_PASSIVE -> AI_PASSIVE, QP type <-> socket
 * type, port space <-> protocol; returns getaddrinfo's EAI code.  And the
 * endpoint calls built on it: rdma_create_ep, rdma_destroy_ep.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <endian.h>
#include <netinet/in.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rdmacm/cma_priv.h"

static void hints_to_ai(const struct rdma_addrinfo *h, struct addrinfo *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (!h)
		return;
	if (h->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (h->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (h->ai_family != AF_IB)
		ai->ai_family = h->ai_family;
	if (h->ai_qp_type == IBV_QPT_RC || h->ai_port_space == RDMA_PS_TCP) {
		ai->ai_socktype = SOCK_STREAM;
		ai->ai_protocol = IPPROTO_TCP;
	} else if (h->ai_qp_type == IBV_QPT_UD || h->ai_port_space == RDMA_PS_UDP) {
		ai->ai_socktype = SOCK_DGRAM;
		ai->ai_protocol = IPPROTO_UDP;
	}
}

static struct sockaddr *dup_addr(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *c = malloc(len);

	if (c)
		memcpy(c, sa, len);
	return c;
}

/* An IPv6 answer as AF_IB (RAI_FAMILY + AF_IB + RAI_NUMERICHOST in the
 * hints): the GID from the IPv6 address, P_Key 0xFFFF, the ServiceID of
 * the port space and port, its mask covering the port space and, when a
 * port is given, the port (rdma-core addrinfo.c ucma_convert_in6,
 * ucma_set_sid). */
static struct sockaddr *in6_to_ib(uint16_t ps, const struct sockaddr *sa, socklen_t len,
				  socklen_t *out_len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	struct sockaddr_ib *ib;
	uint16_t port;

	if (sa->sa_family != AF_INET6 || len < (socklen_t)sizeof(*s6))
		return NULL;
	if (!(ib = calloc(1, sizeof(*ib))))
		return NULL;
	port = ntohs(s6->sin6_port);
	ib->sib_family = AF_IB;
	ib->sib_pkey = htobe16(0xFFFF);
	ib->sib_flowinfo = s6->sin6_flowinfo;
	memcpy(&ib->sib_addr, &s6->sin6_addr, 16);
	ib->sib_sid = htobe64((uint64_t)ps << 16 | port);
	ib->sib_sid_mask = htobe64((ps ? RDMA_IB_IP_PS_MASK : 0) | (port ? RDMA_IB_IP_PORT_MASK : 0));
	ib->sib_scope_id = s6->sin6_scope_id;
	*out_len = sizeof(*ib);
	return (struct sockaddr *)ib;
}

/* getaddrinfo's first answer into r: the QP type and port space from the
 * hints, else from the socket type and protocol; a passive answer is the
 * source (flags RAI_PASSIVE only), another the destination (flags 0), as
 * rdma-core's ucma_convert_to_rai. */
static int copy_ai(struct rdma_addrinfo *r, const struct addrinfo *ai, const struct rdma_addrinfo *h)
{
	bool passive = ai->ai_flags & AI_PASSIVE;
	bool to_ib = h && (h->ai_flags & RAI_FAMILY) && h->ai_family == AF_IB &&
		     (h->ai_flags & RAI_NUMERICHOST);
	struct sockaddr *a;
	socklen_t alen = ai->ai_addrlen;
	char *canon = NULL;

	if (h && h->ai_qp_type)
		r->ai_qp_type = h->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		r->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		r->ai_qp_type = IBV_QPT_UD;
	if (h && h->ai_port_space)
		r->ai_port_space = h->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		r->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		r->ai_port_space = RDMA_PS_UDP;
	r->ai_flags = passive ? RAI_PASSIVE : 0;
	if (to_ib) {
		r->ai_family = AF_IB;
		a = in6_to_ib((uint16_t)r->ai_port_space, ai->ai_addr, ai->ai_addrlen, &alen);
	} else {
		r->ai_family = ai->ai_family;
		a = dup_addr(ai->ai_addr, ai->ai_addrlen);
	}
	if (!a)
		return to_ib ? EAI_FAMILY : EAI_MEMORY;
	if (ai->ai_canonname && !(canon = strdup(ai->ai_canonname))) {
		free(a);
		return EAI_MEMORY;
	}
	if (passive) {
		r->ai_src_addr = a;
		r->ai_src_len = alen;
		r->ai_src_canonname = canon;
	} else {
		r->ai_dst_addr = a;
		r->ai_dst_len = alen;
		r->ai_dst_canonname = canon;
	}
	return 0;
}

/*
 * rdma_getaddrinfo (man rdma_getaddrinfo; rdma-core addrinfo.c): with a
 * node or a service, getaddrinfo's first answer; with neither, the hints'
 * flags, family, QP type, port space and destination as they are (no
 * hints either: EINVAL).  Then, when the answer has no source, the hints'
 * source address (libfabric's verbs provider passes its endpoint's
 * address that way, node and service NULL).  getaddrinfo's errors come
 * back as its EAI code; ENODEV without a device.
 */
RDMACM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				   const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r;
	struct addrinfo hint, *ai;
	int rc = 0;

	if (!res || (!node && !service && !hints)) {
		errno = EINVAL;
		return -1;
	}
	if (cma_init())
		return -1;
	r = calloc(1, sizeof(*r));
	if (!r)
		return EAI_MEMORY;
	if (node || service) {
		hints_to_ai(hints, &hint);
		rc = getaddrinfo(node, service, &hint, &ai);
		if (rc) {
			free(r);
			return rc;
		}
		rc = copy_ai(r, ai, hints);
		freeaddrinfo(ai);
	} else {
		r->ai_flags = hints->ai_flags;
		r->ai_family = hints->ai_family;
		r->ai_qp_type = hints->ai_qp_type;
		r->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_addr && hints->ai_dst_len) {
			if (!(r->ai_dst_addr = dup_addr(hints->ai_dst_addr, hints->ai_dst_len)))
				rc = EAI_MEMORY;
			r->ai_dst_len = hints->ai_dst_len;
		}
	}
	if (!rc && !r->ai_src_len && hints && hints->ai_src_addr && hints->ai_src_len) {
		if (!(r->ai_src_addr = dup_addr(hints->ai_src_addr, hints->ai_src_len)))
			rc = EAI_MEMORY;
		r->ai_src_len = hints->ai_src_len;
	}
	if (rc) {
		rdma_freeaddrinfo(r);
		return rc;
	}
	*res = r;
	return 0;
}

RDMACM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res; res = next) {
		next = res->ai_next;
		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
	}
}

/*
 * rdma_create_ep (man page): a synchronous id; passive: bound, and the QP
 * attributes kept for rdma_get_request; active: address and route
 * resolved (2000 ms each) and the QP created when asked.
 */
RDMACM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
				 struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct cma_id *p;
	int e;

	if (!id || !res)
		return errno = EINVAL, -1;
	if (rdma_create_id(NULL, &cm_id, NULL, (enum rdma_port_space)res->ai_port_space))
		return -1;
	p = (struct cma_id *)cm_id;
	if (res->ai_qp_type)
		cm_id->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm_id, res->ai_src_addr))
			goto err;
		if (qp_init_attr) {
			p->qp_init_attr = malloc(sizeof(*qp_init_attr));
			if (!p->qp_init_attr)
				goto err;
			*p->qp_init_attr = *qp_init_attr;
			p->qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		}
		if (pd)
			cm_id->pd = pd;
		goto out;
	}
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, CMA_EP_TIMEOUT_MS))
		goto err;
	if (res->ai_route_len && res->ai_route &&
	    rdma_set_option(cm_id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route, res->ai_route_len))
		goto err;
	if (rdma_resolve_route(cm_id, CMA_EP_TIMEOUT_MS))
		goto err;
	if (qp_init_attr) {
		/* the QP type comes from the address (rdma-core does the same) */
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr))
			goto err;
	}
out:
	*id = cm_id;
	return 0;
err:
	e = errno;
	rdma_destroy_ep(cm_id);
	errno = e;
	return -1;
}

RDMACM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
