/* SPDX-License-Identifier: MIT */
/*
 * rdma-core's bookkeeping around the provider's ops (libibverbs verbs.c,
 * dummy_ops.c, verbs_set_ops): a fallback for every op that fails the
 * documented way, attaching the HCA's table to a context (the inline
 * post/poll entries point straight at the HCA's functions), and the
 * exported verbs that call through it.  Never touches HCA fields or locks:
 * only public verbs.h structs and src/hca/provider.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/export.h"
#include "verbs/sib_verbs.h"

#define sib_container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* ---- fallbacks (dummy_ops.c): int ops return EOPNOTSUPP, pointer ops
 * set errno and return NULL, post ops also point *bad_wr at the WR ---- */

static struct ibv_mw *dummy_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type t) { errno = EOPNOTSUPP; return NULL; }
static struct ibv_pd *dummy_alloc_pd(struct ibv_context *c) { errno = EOPNOTSUPP; return NULL; }
static int dummy_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b) { return EOPNOTSUPP; }
static int dummy_dealloc_mw(struct ibv_mw *mw) { return EOPNOTSUPP; }
static struct ibv_ah *dummy_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{ errno = EOPNOTSUPP; return NULL; }
static struct ibv_cq *dummy_create_cq(struct ibv_context *c, int cqe, struct ibv_comp_channel *ch, int v)
{ errno = EOPNOTSUPP; return NULL; }
static struct ibv_cq_ex *dummy_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a)
{ errno = EOPNOTSUPP; return NULL; }
static struct ibv_qp *dummy_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{ errno = EOPNOTSUPP; return NULL; }
static struct ibv_qp *dummy_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a)
{ errno = EOPNOTSUPP; return NULL; }
static int dummy_close_xrcd(struct ibv_xrcd *x) { return EOPNOTSUPP; }
static struct ibv_srq *dummy_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *a)
{ errno = EOPNOTSUPP; return NULL; }
static struct ibv_srq *dummy_create_srq_ex(struct ibv_context *c, struct ibv_srq_init_attr_ex *a)
{ errno = EOPNOTSUPP; return NULL; }
static int dummy_dealloc_pd(struct ibv_pd *pd) { return EOPNOTSUPP; }
static int dummy_destroy_srq(struct ibv_srq *srq) { return EOPNOTSUPP; }
static int dummy_get_srq_num(struct ibv_srq *srq, uint32_t *n) { return EOPNOTSUPP; }
static int dummy_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *a, int m) { return EOPNOTSUPP; }
static struct ibv_qp *dummy_open_qp(struct ibv_context *c, struct ibv_qp_open_attr *a)
{ errno = EOPNOTSUPP; return NULL; }
static struct ibv_xrcd *dummy_open_xrcd(struct ibv_context *c, struct ibv_xrcd_init_attr *a)
{ errno = EOPNOTSUPP; return NULL; }
static int dummy_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *a) { return EOPNOTSUPP; }
static int dummy_dereg_mr(struct ibv_mr *mr) { return EOPNOTSUPP; }
static int dummy_destroy_ah(struct ibv_ah *ah) { return EOPNOTSUPP; }
static int dummy_destroy_cq(struct ibv_cq *cq) { return EOPNOTSUPP; }
static int dummy_destroy_qp(struct ibv_qp *qp) { return EOPNOTSUPP; }
static void dummy_free_context(struct ibv_context *c) { }
static int dummy_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int m) { return EOPNOTSUPP; }
static int dummy_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid) { return EOPNOTSUPP; }
static int dummy_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) { return EOPNOTSUPP; }
static int dummy_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{ *bad = wr; return EOPNOTSUPP; }
static int dummy_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{ *bad = wr; return EOPNOTSUPP; }
static int dummy_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{ *bad = wr; return EOPNOTSUPP; }
static int dummy_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
				 struct ibv_device_attr_ex *a, size_t sz) { return EOPNOTSUPP; }
static int dummy_query_port(struct ibv_context *c, uint8_t p, struct ibv_port_attr *a) { return EOPNOTSUPP; }
static int dummy_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int m, struct ibv_qp_init_attr *i)
{ return EOPNOTSUPP; }
static struct ibv_mr *dummy_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t va, int acc)
{ errno = EOPNOTSUPP; return NULL; }
static int dummy_req_notify_cq(struct ibv_cq *cq, int s) { return EOPNOTSUPP; }
static int dummy_rereg_mr(struct ibv_mr *mr, int f, struct ibv_pd *pd, void *a, size_t l, int acc)
{ return EOPNOTSUPP; }
static int dummy_resize_cq(struct ibv_cq *cq, int cqe) { return EOPNOTSUPP; }

static const struct sib_hca_ops dummy_ops = {
	.alloc_mw = dummy_alloc_mw,
	.alloc_pd = dummy_alloc_pd,
	.bind_mw = dummy_bind_mw,
	.attach_mcast = dummy_mcast,
	.close_xrcd = dummy_close_xrcd,
	.create_ah = dummy_create_ah,
	.create_cq = dummy_create_cq,
	.create_cq_ex = dummy_create_cq_ex,
	.create_qp = dummy_create_qp,
	.create_qp_ex = dummy_create_qp_ex,
	.create_srq = dummy_create_srq,
	.create_srq_ex = dummy_create_srq_ex,
	.dealloc_mw = dummy_dealloc_mw,
	.dealloc_pd = dummy_dealloc_pd,
	.dereg_mr = dummy_dereg_mr,
	.destroy_ah = dummy_destroy_ah,
	.destroy_cq = dummy_destroy_cq,
	.destroy_qp = dummy_destroy_qp,
	.detach_mcast = dummy_mcast,
	.destroy_srq = dummy_destroy_srq,
	.free_context = dummy_free_context,
	.get_srq_num = dummy_get_srq_num,
	.modify_qp = dummy_modify_qp,
	.modify_srq = dummy_modify_srq,
	.open_qp = dummy_open_qp,
	.open_xrcd = dummy_open_xrcd,
	.poll_cq = dummy_poll_cq,
	.post_recv = dummy_post_recv,
	.post_send = dummy_post_send,
	.post_srq_recv = dummy_post_srq_recv,
	.query_device_ex = dummy_query_device_ex,
	.query_port = dummy_query_port,
	.query_qp = dummy_query_qp,
	.query_srq = dummy_query_srq,
	.reg_mr = dummy_reg_mr,
	.req_notify_cq = dummy_req_notify_cq,
	.rereg_mr = dummy_rereg_mr,
	.resize_cq = dummy_resize_cq,
};

const struct sib_hca_ops *sib_get_ops(struct ibv_context *context)
{
	return &sib_verbs_priv(context)->ops;
}

/* vctx->query_port: the inline ibv_query_port of verbs.h passes its own size. */
static int lib_query_port(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr a;
	int rc = sib_get_ops(context)->query_port(context, port_num, &a);

	if (rc)
		return rc;
	memcpy(port_attr, &a, port_attr_len < sizeof(a) ? port_attr_len : sizeof(a));
	return 0;
}

/* verbs_init_context + verbs_set_ops: copy the provider's non-NULL ops
 * over the fallbacks and wire the inline entry points.  0 or ENOMEM. */
int sib_verbs_set_ops(struct ibv_context *context, const struct sib_hca_ops *hca)
{
	struct verbs_context *vctx = sib_container_of(context, struct verbs_context, context);
	struct sib_verbs_priv *priv = calloc(1, sizeof(*priv));
	char *dst;
	const char *src = (const char *)hca;
	static const void *const null_op;

	if (!priv)
		return ENOMEM;
	/* Every member is one function pointer: copy slot by slot (memcpy,
	 * not a cast, so no aliasing rule is bent). */
	priv->ops = dummy_ops;
	dst = (char *)&priv->ops;
	for (size_t off = 0; off < sizeof(*hca); off += sizeof(void (*)(void)))
		if (memcmp(src + off, &null_op, sizeof(void (*)(void))))
			memcpy(dst + off, src + off, sizeof(void (*)(void)));
	vctx->priv = (struct verbs_ex_private *)priv;
	context->cmd_fd = -1; /* ibv_open_device gives it its fd (device.c cmd_fd_open) */
	context->abi_compat = __VERBS_ABI_IS_EXTENDED;
	vctx->sz = sizeof(struct verbs_context);
	/* Inlined into applications: the HCA's own functions, no extra hop. */
	context->ops.poll_cq = priv->ops.poll_cq;
	context->ops.req_notify_cq = priv->ops.req_notify_cq;
	context->ops.post_send = priv->ops.post_send;
	context->ops.post_recv = priv->ops.post_recv;
	context->ops.post_srq_recv = priv->ops.post_srq_recv;
	/* verbs.h's inline ibv_alloc_mw / ibv_bind_mw / ibv_dealloc_mw */
	context->ops.alloc_mw = priv->ops.alloc_mw;
	context->ops.bind_mw = priv->ops.bind_mw;
	context->ops.dealloc_mw = priv->ops.dealloc_mw;
	context->ops._compat_query_device = ibv_query_device;
	context->ops._compat_query_port = ibv_query_port;
	vctx->create_qp_ex = priv->ops.create_qp_ex;
	vctx->create_cq_ex = priv->ops.create_cq_ex;
	vctx->query_device_ex = priv->ops.query_device_ex;
	vctx->query_port = lib_query_port;
	vctx->create_srq_ex = priv->ops.create_srq_ex;
	vctx->get_srq_num = priv->ops.get_srq_num;
	vctx->open_xrcd = priv->ops.open_xrcd;
	vctx->close_xrcd = priv->ops.close_xrcd;
	vctx->open_qp = priv->ops.open_qp;
	return 0;
}

void sib_verbs_unset_ops(struct ibv_context *context)
{
	struct verbs_context *vctx = verbs_get_ctx(context);

	free(vctx->priv);
	vctx->priv = NULL;
}

/* ---- the exported verbs (rdma-core verbs.c) ---- */

SIB_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	return sib_get_ops(context)->alloc_pd(context);
}

SIB_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	return sib_get_ops(pd->context)->dealloc_pd(pd);
}

/* rdma-core ibv_reg_mr_iova2; iova is what remote peers address. */
SIB_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					   uint64_t iova, unsigned int access)
{
	struct ibv_mr *mr = sib_get_ops(pd->context)->reg_mr(pd, addr, length, iova, (int)access);

	if (mr) {
		mr->context = pd->context;
		mr->pd = pd;
		mr->addr = addr;
		mr->length = length;
	}
	return mr;
}

SIB_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

SIB_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

SIB_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	return sib_get_ops(mr->context)->dereg_mr(mr);
}

/*
 * rdma-core ibv_rereg_mr (libibverbs verbs.c): libibverbs' own input checks
 * give IBV_REREG_MR_ERR_INPUT with errno EINVAL (flags outside
 * IBV_REREG_MR_FLAGS_SUPPORTED, CHANGE_TRANSLATION with a NULL addr or a
 * zero length, access bits without CHANGE_ACCESS); a provider failure is
 * IBV_REREG_MR_ERR_CMD with errno its error.  There are no fork ranges to
 * move: softib pins nothing.  On success the bookkeeping follows: mr->pd,
 * mr->addr and mr->length.
 */
SIB_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			    size_t length, int access)
{
	int rc;

	if (((unsigned int)flags & ~(unsigned int)IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	rc = sib_get_ops(mr->context)->rereg_mr(mr, flags, pd, addr, length, access);
	if (rc) {
		errno = rc;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
	}
	return 0;
}

SIB_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq *cq = sib_get_ops(context)->create_cq(context, cqe, channel, comp_vector);

	if (cq)
		cq->cq_context = cq_context; /* verbs_init_cq's part */
	return cq;
}

SIB_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return sib_get_ops(cq->context)->resize_cq(cq, cqe);
}

SIB_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	return sib_get_ops(cq->context)->destroy_cq(cq);
}

SIB_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return sib_get_ops(pd->context)->create_qp(pd, attr);
}

/* rdma-core: a QP made with create_qp_ex and send_ops_flags has the
 * ibv_wr_* API; ibv_qp_ex starts with the ibv_qp (verbs.h layout). */
SIB_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct ibv_qp_ex *x = sib_container_of(qp, struct ibv_qp_ex, qp_base);

	return x->wr_start ? x : NULL;
}

/* rdma-core: qp->state follows only a successful transition. */
SIB_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	int rc = sib_get_ops(qp->context)->modify_qp(qp, attr, attr_mask);

	if (!rc && (attr_mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	return rc;
}

SIB_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			    struct ibv_qp_init_attr *init_attr)
{
	int rc = sib_get_ops(qp->context)->query_qp(qp, attr, attr_mask, init_attr);

	if (!rc && (attr_mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	return rc;
}

SIB_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	return sib_get_ops(qp->context)->destroy_qp(qp);
}

/* ibv_query_device@@IBVERBS_1.1: query_device_ex at the old struct's size. */
SIB_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	return sib_get_ops(context)->query_device_ex(context, NULL,
						     (struct ibv_device_attr_ex *)device_attr,
						     sizeof(*device_attr));
}

/* ibv_query_port@@IBVERBS_1.1: old binaries pass the 48-byte compat struct. */
SIB_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			      struct _compat_ibv_port_attr *port_attr)
{
	return lib_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			      SIB_COMPAT_PORT_ATTR_BYTES);
}

/* ---- SRQs (rdma-core verbs.c; create_srq_ex, get_srq_num and the XRC
 * domain verbs are inline in verbs.h and reach the vctx entries) ---- */

SIB_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr)
{
	struct ibv_srq *srq = sib_get_ops(pd->context)->create_srq(pd, srq_init_attr);

	if (srq) {
		srq->context = pd->context;
		srq->srq_context = srq_init_attr->srq_context;
		srq->pd = pd;
	}
	return srq;
}

SIB_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)
{
	return sib_get_ops(srq->context)->modify_srq(srq, srq_attr, srq_attr_mask);
}

SIB_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	return sib_get_ops(srq->context)->query_srq(srq, srq_attr);
}

SIB_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	return sib_get_ops(srq->context)->destroy_srq(srq);
}
