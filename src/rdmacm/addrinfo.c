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

#include <netinet/in.h>
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

/* A wildcard address of family for a passive answer with no node. */
static int copy_ai(struct rdma_addrinfo *r, const struct addrinfo *ai, const struct rdma_addrinfo *h)
{
	bool passive = h && (h->ai_flags & RAI_PASSIVE);
	struct sockaddr *a;

	r->ai_flags = h ? h->ai_flags : 0;
	r->ai_family = ai->ai_family;
	if (ai->ai_socktype == SOCK_DGRAM) {
		r->ai_qp_type = IBV_QPT_UD;
		r->ai_port_space = RDMA_PS_UDP;
	} else {
		r->ai_qp_type = IBV_QPT_RC;
		r->ai_port_space = RDMA_PS_TCP;
	}
	if (h && h->ai_port_space)
		r->ai_port_space = h->ai_port_space;
	if (h && h->ai_qp_type)
		r->ai_qp_type = h->ai_qp_type;
	a = dup_addr(ai->ai_addr, ai->ai_addrlen);
	if (!a)
		return EAI_MEMORY;
	if (passive) {
		r->ai_src_addr = a;
		r->ai_src_len = ai->ai_addrlen;
		if (ai->ai_canonname && !(r->ai_src_canonname = strdup(ai->ai_canonname)))
			return EAI_MEMORY;
	} else {
		r->ai_dst_addr = a;
		r->ai_dst_len = ai->ai_addrlen;
		if (ai->ai_canonname && !(r->ai_dst_canonname = strdup(ai->ai_canonname)))
			return EAI_MEMORY;
		if (h && h->ai_src_addr && h->ai_src_len) {
			r->ai_src_addr = dup_addr(h->ai_src_addr, h->ai_src_len);
			if (!r->ai_src_addr)
				return EAI_MEMORY;
			r->ai_src_len = h->ai_src_len;
		}
	}
	return 0;
}

RDMACM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				   const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r;
	struct addrinfo hint, *ai;
	int rc;

	if (!res || (!node && !service)) {
		errno = EINVAL;
		return EAI_NONAME;
	}
	if (cma_init())
		return -1;
	r = calloc(1, sizeof(*r));
	if (!r)
		return EAI_MEMORY;
	hints_to_ai(hints, &hint);
	rc = getaddrinfo(node, service, &hint, &ai);
	if (rc) {
		free(r);
		return rc;
	}
	rc = copy_ai(r, ai, hints);
	freeaddrinfo(ai);
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
