/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues and XRC domains of the software HCA (IBA vol 1
 * ch. 10 shared receive queues and their limit, ch. 11 events, the XRC
 * annex; ibv_create_srq(3),
 * ibv_modify_srq(3), ibv_open_xrcd(3), ibv_create_srq_ex(3)).  Owns the
 * SRQ ring, its limit event, SRQ numbers (the index in ctx->srqs) and the
 * XRC domain handles (softibd numbers the domains, one per device and
 * file).  It places no data: the responder takes WQEs through the RWQE
 * source of transport.h.  Locking: posters take srq->lock (this process
 * only); the owning context's engine (progress_lock) is the only consumer.
 * Lifetime: SRQs live in ctx->srqs; destroy unpublishes and waits for the
 * references (a packet naming it, a QP holding one of its WQEs).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hca/srq.h"
#include "hca/transport.h"

#define SIB_DESTROY_WAIT_NS 5000000000ull

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* The record naming an SRQ in the async pipe: index and generation. */
static void srq_async_event(struct sib_srq *srq, enum ibv_event_type type)
{
	sib_async_event(srq->ctx, type, SIB_OBJTAB_INDEX(srq->tab_handle),
			SIB_OBJTAB_GEN(srq->tab_handle));
}

/*
 * Create checks as mlx5 (rdma-core providers/mlx5 create_srq and the
 * kernel): max_wr above max_srq_wr or max_sge above max_srq_sge give
 * EINVAL; XRC SRQs need an XRC domain and a CQ of the same context.
 */
static struct ibv_srq *srq_create(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	struct sib_context *ctx = to_sctx(context);
	struct sib_srq *srq;
	bool xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC;
	int rc = EINVAL;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd || attr->pd->context != context)
		goto fail;
	if (attr->attr.max_wr > SIB_MAX_SRQ_WR || attr->attr.max_sge > SIB_MAX_SGE)
		goto fail;
	if (xrc && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
		    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq ||
		    attr->cq->context != context || attr->xrcd->context != context))
		goto fail;
	if (sib_ctx_fatal(ctx)) {
		rc = EIO;
		goto fail;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		rc = ENOMEM;
		goto fail;
	}
	srq->ctx = ctx;
	srq->size = roundup_pow2(attr->attr.max_wr ? attr->attr.max_wr : 1);
	srq->max_wr = srq->size;
	srq->max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
	srq->type = xrc ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	srq->rq = calloc(srq->size, sizeof(*srq->rq));
	if (!srq->rq) {
		rc = ENOMEM;
		goto err_free;
	}
	rc = xrc ? sib_xfwd_ctx_init(ctx) : 0; /* where forwarded messages are placed (xrc_fwd.c) */
	if (!rc)
		rc = sib_host->obj_create(ctx->dev_handle, SIB_OBJ_SRQ, 0, &srq->obj_handle, NULL);
	if (rc)
		goto err_free;
	rc = sib_objtab_reserve(&ctx->srqs, &srq->tab_handle);
	if (rc) {
		rc = rc == ENOSPC ? ENOMEM : rc;
		goto err_obj;
	}
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	srq->ibv.context = context;
	srq->ibv.srq_context = attr->srq_context;
	srq->ibv.pd = attr->pd;
	srq->ibv.handle = srq->obj_handle;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	if (xrc) {
		srq->xrcd = (struct sib_xrcd *)attr->xrcd;
		srq->cq = attr->cq;
		atomic_fetch_add(&srq->xrcd->usecnt, 1);
		atomic_fetch_add(&to_scq(srq->cq)->usecnt, 1);
	}
	atomic_fetch_add(&((struct sib_pd *)attr->pd)->usecnt, 1);
	attr->attr.max_wr = srq->max_wr;
	attr->attr.max_sge = srq->max_sge;
	sib_objtab_publish(&ctx->srqs, srq->tab_handle, srq);
	return &srq->ibv;

err_obj:
	sib_host->obj_destroy(srq->obj_handle);
err_free:
	free(srq->rq);
	free(srq);
fail:
	errno = rc;
	return NULL;
}

struct ibv_srq *sib_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	struct ibv_srq *srq;

	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ex.pd = pd;
	srq = srq_create(pd->context, &ex);
	if (srq)
		attr->attr = ex.attr;
	return srq;
}

struct ibv_srq *sib_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
					  IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)) {
		errno = EOPNOTSUPP; /* e.g. TM (tag matching) SRQs */
		return NULL;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC &&
	    attr->srq_type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return srq_create(context, attr);
}

/*
 * As mlx5: no resize (IBV_SRQ_MAX_WR gives EINVAL; the device does not
 * claim IBV_DEVICE_SRQ_RESIZE); IBV_SRQ_LIMIT arms the low watermark,
 * EINVAL above max_wr; 0 disarms.  Other bits: EINVAL.
 */
int sib_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct sib_srq *srq = (struct sib_srq *)ibsrq;

	if (sib_ctx_fatal(srq->ctx))
		return EIO;
	if (attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (attr_mask & IBV_SRQ_MAX_WR)
		return EINVAL;
	if ((attr_mask & IBV_SRQ_LIMIT) && attr->srq_limit > srq->max_wr)
		return EINVAL;
	if (attr_mask & IBV_SRQ_LIMIT)
		atomic_store_explicit(&srq->limit, attr->srq_limit, memory_order_release);
	return 0;
}

int sib_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct sib_srq *srq = (struct sib_srq *)ibsrq;

	if (sib_ctx_fatal(srq->ctx))
		return EIO;
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = atomic_load_explicit(&srq->limit, memory_order_acquire);
	return 0;
}

/* EBUSY while QPs use it (the kernel's usecnt rule); then, as
 * ibv_cmd_destroy_srq, wait until every delivered event was acknowledged. */
int sib_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sib_srq *srq = (struct sib_srq *)ibsrq;
	struct sib_context *ctx = srq->ctx;

	if (atomic_load(&srq->usecnt))
		return EBUSY;
	if (sib_objtab_unpublish(&ctx->srqs, srq->tab_handle))
		return EINVAL;
	if (sib_objtab_wait(&ctx->srqs, srq->tab_handle, SIB_DESTROY_WAIT_NS, sib_engine_poke, ctx)) {
		/* A QP still holds one of its WQEs: keep it, as destroy_qp. */
		sib_objtab_republish(&ctx->srqs, srq->tab_handle, srq, &srq->tab_handle);
		return EBUSY;
	}
	sib_objtab_release(&ctx->srqs, srq->tab_handle);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != atomic_load(&srq->events_reported))
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	sib_host->obj_destroy(srq->obj_handle);
	atomic_fetch_sub(&((struct sib_pd *)ibsrq->pd)->usecnt, 1);
	if (srq->xrcd) {
		atomic_fetch_sub(&srq->xrcd->usecnt, 1);
		atomic_fetch_sub(&to_scq(srq->cq)->usecnt, 1);
	}
	pthread_spin_destroy(&srq->lock);
	free(srq->rq);
	free(srq);
	return 0;
}

void sib_rwqe_fill(struct sib_rwqe *r, const struct ibv_recv_wr *wr)
{
	uint64_t len = 0;

	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	r->wr_id = wr->wr_id;
	r->num_sge = (uint32_t)wr->num_sge;
	r->length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	if (wr->num_sge) /* sg_list may be NULL then */
		memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
}

/* rdma-core's post_srq_recv: ENOMEM when full, EINVAL for more SGEs than
 * max_sge; *bad_wr names the first WR not posted.  No syscall, no sleep. */
int sib_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sib_srq *srq = (struct sib_srq *)ibsrq;
	int rc = 0;

	pthread_spin_lock(&srq->lock);
	uint32_t head = atomic_load_explicit(&srq->head, memory_order_relaxed);
	for (; wr; wr = wr->next) {
		if (head - atomic_load_explicit(&srq->tail, memory_order_acquire) >= srq->max_wr) {
			rc = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge) {
			rc = EINVAL;
			break;
		}
		sib_rwqe_fill(&srq->rq[head & (srq->size - 1)], wr);
		head++;
		atomic_store_explicit(&srq->head, head, memory_order_release);
	}
	pthread_spin_unlock(&srq->lock);
	if (rc)
		*bad_wr = wr;
	return rc;
}

/*
 * SRQ numbers (the XRCETH's XRCSRQ, 24 bits) are unique fabric-wide: the
 * context's inbox index (< SIB_MAX_INBOXES, 8 bits) above the SRQ's index
 * in ctx->srqs (< SIB_MAX_SRQ, 16 bits).  So a number obtained from another
 * process never lands in a different SRQ of this one that happens to have
 * the same index: the demux drops it (xrc_srqn) instead.
 */
_Static_assert(SIB_MAX_INBOXES <= 256 && SIB_MAX_SRQ <= (1 << 16), "SRQ numbers fit 24 bits");
#define SRQN_MAKE(inbox, idx) ((uint32_t)(inbox) << 16 | (uint32_t)(idx))

int sib_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct sib_srq *srq = (struct sib_srq *)ibsrq;

	*srq_num = SRQN_MAKE(srq->ctx->inbox_idx, SIB_OBJTAB_INDEX(srq->tab_handle));
	return 0;
}

bool sib_srq_take(struct sib_srq *srq, struct sib_rwqe *out)
{
	uint32_t tail = atomic_load_explicit(&srq->tail, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&srq->head, memory_order_acquire);
	const struct sib_rwqe *r;
	uint32_t limit;

	if (head == tail)
		return false;
	r = &srq->rq[tail & (srq->size - 1)];
	memcpy(out, r, offsetof(struct sib_rwqe, sge) + r->num_sge * sizeof(r->sge[0]));
	atomic_store_explicit(&srq->tail, tail + 1, memory_order_release);
	limit = atomic_load_explicit(&srq->limit, memory_order_acquire);
	if (limit && head - (tail + 1) < limit &&
	    atomic_compare_exchange_strong(&srq->limit, &limit, 0))
		srq_async_event(srq, IBV_EVENT_SRQ_LIMIT_REACHED);
	return true;
}

void sib_srq_qp_error(struct sib_qp *qp)
{
	if (qp->srq)
		sib_qp_async_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

struct sib_srq *sib_srq_async_deliver(struct sib_context *ctx, uint32_t id, uint32_t gen)
{
	uint64_t h;
	struct sib_srq *srq = sib_objtab_get_index(&ctx->srqs, id, &h);

	if (!srq)
		return NULL;
	if (SIB_OBJTAB_GEN(h) == gen)
		atomic_fetch_add(&srq->events_reported, 1);
	else
		srq = NULL; /* a later SRQ with the same number */
	sib_objtab_put(&ctx->srqs, h);
	return srq;
}

bool sib_xrc_srq_resolve(struct sib_qp *qp, uint32_t srqn)
{
	struct sib_qp_xrc *x = qp->xrc;
	struct sib_srq *srq;

	if (srqn >> 16 != qp->ctx->inbox_idx)
		return false; /* another context's SRQ: not reachable from here */
	if (!x || !x->xrcd)
		return false; /* not an XRC_RECV QP */
	srq = sib_objtab_get_index(&qp->ctx->srqs, srqn & 0xffff, &x->srq_h);
	if (!srq)
		return false;
	if (srq->type != IBV_SRQT_XRC || srq->xrcd->num != x->xrcd_num) {
		sib_objtab_put(&qp->ctx->srqs, x->srq_h);
		return false;
	}
	x->srq = srq;
	return true;
}

void sib_xrc_srq_release(struct sib_qp *qp)
{
	struct sib_qp_xrc *x = qp->xrc;

	if (!x)
		return;
	x->fwd.raw = NULL; /* a forwarded packet (xrc_fwd.c) is done too */
	if (x->srq) {
		x->srq = NULL;
		sib_objtab_put(&qp->ctx->srqs, x->srq_h);
	}
}

/* ---- XRC domains ---- */

/*
 * ibv_open_xrcd(3) with the kernel's rules (ib_uverbs_open_xrcd): FD and
 * OFLAGS must both be given (EINVAL), oflags only O_CREAT | O_EXCL
 * (EINVAL); fd -1 makes a private domain; a file's domain is found by
 * softibd (its st_dev/st_ino, on the fd passed along): none and no
 * O_CREAT gives EAGAIN, one and O_EXCL gives EINVAL; a bad fd EBADF.
 */
struct ibv_xrcd *sib_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	struct sib_context *ctx = to_sctx(context);
	struct sib_xrcd *x;
	struct stat st;
	int rc;

	if (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ||
	    (attr->oflags & ~(O_CREAT | O_EXCL))) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->fd != -1 && fstat(attr->fd, &st)) {
		errno = EBADF;
		return NULL;
	}
	if (!sib_host->xrcd_open) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	rc = sib_host->xrcd_open(ctx->dev_handle, attr->fd, attr->oflags, &x->obj_handle, &x->num);
	if (rc) {
		free(x);
		errno = rc;
		return NULL;
	}
	x->ibv.context = context;
	return &x->ibv;
}

/* EBUSY while SRQs or QPs are in it (the kernel's usecnt rule). */
int sib_close_xrcd(struct ibv_xrcd *ibx)
{
	struct sib_xrcd *x = (struct sib_xrcd *)ibx;

	if (atomic_load(&x->usecnt))
		return EBUSY;
	sib_host->obj_destroy(x->obj_handle);
	free(x);
	return 0;
}

/* ---- QPs on an SRQ, XRC QPs ---- */

int sib_qp_check_srq_xrc(struct sib_context *ctx, const struct ibv_qp_init_attr_ex *attr)
{
	const struct sib_srq *srq = (const struct sib_srq *)attr->srq;

	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) && attr->xrcd &&
		       attr->xrcd->context == &ctx->vctx.context ? 0 : EINVAL;
	if (srq && (attr->qp_type == IBV_QPT_XRC_SEND || srq->ctx != ctx || srq->type != IBV_SRQT_BASIC))
		return EINVAL;
	return 0;
}

int sib_qp_create_xrc_tgt(struct sib_context *ctx, const struct ibv_qp_init_attr_ex *attr,
			  uint32_t *handle, uint32_t *qpn)
{
	const struct sib_xrcd *x = (const struct sib_xrcd *)attr->xrcd;

	if (!sib_host->xrc_tgt_create)
		return EOPNOTSUPP;
	return sib_host->xrc_tgt_create(ctx->dev_handle, x->obj_handle, handle, qpn);
}

void sib_qp_attach_srq_xrc(struct sib_qp *qp, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *b = &qp->ibv.qp_base;
	bool xrc = attr->qp_type == IBV_QPT_XRC_SEND || attr->qp_type == IBV_QPT_XRC_RECV;

	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		/* A receive-only target: no PD (the SRQ's is used), no CQs, no SQ. */
		qp->xrc->xrcd = (struct sib_xrcd *)attr->xrcd;
		qp->xrc->xrcd_num = qp->xrc->xrcd->num;
		atomic_fetch_add(&qp->xrc->xrcd->usecnt, 1);
		b->pd = NULL;
		b->send_cq = NULL;
		attr->cap.max_send_wr = attr->cap.max_send_sge = attr->cap.max_inline_data = 0;
	}
	if (xrc)
		b->recv_cq = NULL;
	if (attr->srq && !xrc) {
		qp->srq = (struct sib_srq *)attr->srq;
		b->srq = attr->srq;
		atomic_fetch_add(&qp->srq->usecnt, 1);
	}
	if (qp->srq || xrc)
		attr->cap.max_recv_wr = attr->cap.max_recv_sge = 0; /* no RQ of its own */
	qp->cap = attr->cap;
}

void sib_qp_detach_srq_xrc(struct sib_qp *qp)
{
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->usecnt, 1);
	if (qp->xrc && qp->xrc->xrcd)
		atomic_fetch_sub(&qp->xrc->xrcd->usecnt, 1);
}
