/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs of the software HCA (provider ops): create (plain and _ex
 * with the ibv_wr_* send API), modify through the IBA state machine (IBA
 * 10.3.1; check, then apply: qp_state.c's table decides, nothing changes on
 * failure), query, destroy, and the post verbs.  Posting only queues WQEs
 * and runs the engine inline when it is free: no system call, no sleep
 * (seed 004).  Lifetime: QPs live in ctx->qps (objtab) by QPN; the
 * receive path holds a reference per packet and the engine's schedule one
 * per scheduled QP.  destroy unpublishes, then waits for them all (the
 * engine drops its own, and the QP's MR and peer inbox references, once
 * it sees the QP unpublished), then frees: no lock keeps a QP alive.
 * modify/query take the progress lock only to serialize with the engine,
 * which owns the transport fields.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>

#include "common/fabric_view.h"
#include "hca/direct.h"
#include "hca/hca.h"
#include "hca/mw.h"
#include "hca/qp_state.h"
#include "hca/srq.h"
#include "hca/ud.h"
#include "hca/wr.h"

#define SIB_DESTROY_WAIT_NS 5000000000ull /* bound on waiting for in-flight users */

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Make the QP visible: by QPN to the receive path and event readers (the
 * table now owns a reference), and to the engine's schedule, which holds
 * a reference of its own until it sees the QP unpublished. */
static void qp_publish(struct sib_context *ctx, struct sib_qp *qp)
{
	sib_objtab_publish(&ctx->qps, qp->tab_handle, qp);
	/* Cannot fail: published, and only this thread can destroy it. */
	(void)sib_objtab_get(&ctx->qps, qp->tab_handle);
	qp->sched_handle = qp->tab_handle;
	sib_engine_schedule(ctx, qp);
}

/* Unpublish (lookups fail from here), then wait for every reference:
 * packets in flight, and the engine's schedule, which lets go on its next
 * pass (poked from the wait) together with what the QP holds (MR
 * references, its peer inbox).  0, or ETIMEDOUT: still in use, keep it;
 * a later destroy only waits again (the QP is already unpublished), so a
 * holder that lets go late does not pin the QP, its PD and CQs forever. */
static int qp_unpublish(struct sib_context *ctx, struct sib_qp *qp)
{
	int rc;

	if (!qp->unpublished) {
		rc = sib_objtab_unpublish(&ctx->qps, qp->tab_handle);
		if (rc)
			return rc;
		qp->unpublished = true;
	}
	rc = sib_objtab_wait(&ctx->qps, qp->tab_handle, SIB_DESTROY_WAIT_NS, sib_engine_poke, ctx);
	if (!rc)
		sib_objtab_release(&ctx->qps, qp->tab_handle);
	return rc;
}

struct sib_qp *sib_qp_get(struct sib_context *ctx, uint32_t qpn, uint64_t *handle)
{
	return sib_objtab_get_index(&ctx->qps, qpn, handle);
}

/* The QP's completions leave its send and receive CQs (sib_cq_clean: on
 * modify to RESET and on destroy, as mlx5).  An XRC_RECV QP has no CQ of
 * its own: what it delivered stays in the XRC SRQ's CQ, as mlx5's. */
static void qp_cq_clean(struct sib_qp *qp)
{
	struct ibv_qp *b = &qp->ibv.qp_base;

	if (b->recv_cq)
		sib_cq_clean(to_scq(b->recv_cq), b->qp_num);
	if (b->send_cq && b->send_cq != b->recv_cq)
		sib_cq_clean(to_scq(b->send_cq), b->qp_num);
}

/* The ibv_wr_* batch in progress (ibv_wr_post(3)), under sq_lock: the SQ
 * index of the WQE being built, the first error, and whether a WQE is
 * open.  Only a QP created with send_ops_flags has one (qp->wrb). */
struct sib_wr_batch {
	uint32_t head;
	int err;
	bool open;
};

/* The per-transport parts of a QP (hca.h), allocated for the QPs that
 * need them: UD, receiving from an SRQ (one it was created on, or
 * XRC_RECV's), the ibv_wr_* batch.  0 or ENOMEM (qp_free frees them). */
static int qp_parts_alloc(struct sib_qp *qp, const struct ibv_qp_init_attr_ex *attr)
{
	if (attr->qp_type == IBV_QPT_UD && !(qp->ud = calloc(1, sizeof(*qp->ud))))
		return ENOMEM;
	if ((attr->srq || attr->qp_type == IBV_QPT_XRC_RECV) && !(qp->xrc = calloc(1, sizeof(*qp->xrc))))
		return ENOMEM;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && !(qp->wrb = calloc(1, sizeof(*qp->wrb))))
		return ENOMEM;
	return 0;
}

static void qp_free(struct sib_qp *qp)
{
	free(qp->sq);
	free(qp->sq_inline);
	free(qp->rq);
	sib_qp_transport_fini(qp);
	free(qp->ud);
	free(qp->xrc);
	free(qp->wrb);
	free(qp);
}

static void wr_api_init(struct sib_qp *qp, uint64_t ops);

/* The PD and CQs a QP counts in their usecnt (XRC_RECV has none, XRC_SEND
 * no receive CQ). */
static void qp_usecnt(struct ibv_qp *b, int d)
{
	if (b->pd)
		atomic_fetch_add(&((struct sib_pd *)b->pd)->usecnt, d);
	if (b->send_cq)
		atomic_fetch_add(&to_scq(b->send_cq)->usecnt, d);
	if (b->recv_cq)
		atomic_fetch_add(&to_scq(b->recv_cq)->usecnt, d);
}

static struct ibv_qp *qp_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct sib_context *ctx = to_sctx(context);
	struct ibv_qp_cap *cap = &attr->cap;
	struct sib_qp *qp;
	uint32_t qpn;
	int rc = EINVAL;

	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD &&
	    attr->qp_type != IBV_QPT_XRC_SEND && attr->qp_type != IBV_QPT_XRC_RECV) {
		rc = EOPNOTSUPP; /* raw packet and driver QPs */
		goto fail;
	}
	rc = sib_qp_check_srq_xrc(ctx, attr); /* SRQ and XRC rules (srq.c) */
	if (rc)
		goto fail;
	rc = EINVAL;
	if (attr->qp_type != IBV_QPT_XRC_RECV &&
	    (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || !attr->send_cq))
		goto fail;
	if (attr->qp_type != IBV_QPT_XRC_RECV && attr->qp_type != IBV_QPT_XRC_SEND && !attr->recv_cq)
		goto fail;
	if (cap->max_send_wr > SIB_MAX_QP_WR || cap->max_recv_wr > SIB_MAX_QP_WR ||
	    cap->max_send_sge > SIB_MAX_SGE || cap->max_recv_sge > SIB_MAX_SGE ||
	    cap->max_inline_data > SIB_MAX_INLINE)
		goto fail;

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		rc = ENOMEM;
		goto fail;
	}
	qp->ctx = ctx;
	qp->sq_size = roundup_pow2(cap->max_send_wr ? cap->max_send_wr : 1);
	qp->rq_size = roundup_pow2(cap->max_recv_wr ? cap->max_recv_wr : 1);
	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	qp->sq_inline = malloc((size_t)qp->sq_size * SIB_MAX_INLINE);
	qp->rq = calloc(qp->rq_size, sizeof(*qp->rq));
	if (!qp->sq || !qp->sq_inline || !qp->rq || sib_qp_transport_init(qp) || qp_parts_alloc(qp, attr)) {
		rc = ENOMEM;
		goto err_free;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV) /* softibd learns its domain (srq.c) */
		rc = sib_qp_create_xrc_tgt(ctx, attr, &qp->obj_handle, &qpn);
	else
		rc = sib_host->obj_create(ctx->dev_handle, SIB_OBJ_QP, attr->qp_type, &qp->obj_handle, &qpn);
	if (rc)
		goto err_free;
	if (qpn >= SIB_MAX_QPN) {
		rc = EPROTO;
		goto err_obj;
	}
	rc = sib_objtab_reserve_at(&ctx->qps, qpn, &qp->tab_handle);
	if (rc) {
		rc = rc == EEXIST ? EPROTO : rc; /* softibd handed out a live QPN */
		goto err_obj;
	}
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);

	cap->max_send_wr = qp->sq_size;
	cap->max_recv_wr = qp->rq_size;
	cap->max_send_sge = SIB_MAX_SGE;
	cap->max_recv_sge = SIB_MAX_SGE;
	cap->max_inline_data = SIB_MAX_INLINE;
	qp->cap = *cap;
	qp->sq_sig_all = attr->sq_sig_all ? 1 : 0;
	qp->state = IBV_QPS_RESET;
	qp->mtu = 256;
	qp->path_mtu = IBV_MTU_256;

	struct ibv_qp *b = &qp->ibv.qp_base;
	b->context = context;
	b->qp_context = attr->qp_context;
	b->pd = attr->pd;
	b->send_cq = attr->send_cq;
	b->recv_cq = attr->recv_cq;
	b->handle = qp->obj_handle;
	b->qp_num = qpn;
	b->state = IBV_QPS_RESET;
	b->qp_type = attr->qp_type;
	pthread_mutex_init(&b->mutex, NULL);
	pthread_cond_init(&b->cond, NULL);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		wr_api_init(qp, attr->send_ops_flags);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS)
		qp->ud->block_self_mcast = attr->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;

	sib_qp_attach_srq_xrc(qp, attr); /* srq.c: cap, usecnt, xrcd */
	qp_usecnt(b, 1);
	qp_publish(ctx, qp);
	return b;

err_obj:
	sib_host->obj_destroy(qp->obj_handle);
err_free:
	qp_free(qp);
fail:
	errno = rc;
	return NULL;
}

struct ibv_qp *sib_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = qp_create(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

#define SIB_SEND_OPS_SUPPORTED (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | \
	IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
	IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV)

struct ibv_qp *sib_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	/* UD: BLOCK_SELF_MCAST_LB keeps a QP's own multicast sends from it. */
	uint32_t flags_ok = attr->qp_type == IBV_QPT_UD ? IBV_QP_CREATE_BLOCK_SELF_MCAST_LB : 0;

	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && (attr->create_flags & ~flags_ok))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    ((attr->send_ops_flags & ~(uint64_t)SIB_SEND_OPS_SUPPORTED) ||
	     /* UC: no READ (mlx5 refuses the op for the QP type alike) */
	     ((attr->send_ops_flags & IBV_QP_EX_WITH_RDMA_READ) &&
	      sib_wr_check(attr->qp_type, IBV_WR_RDMA_READ)))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return qp_create(context, attr);
}

int sib_destroy_qp(struct ibv_qp *ibqp)
{
	struct sib_qp *qp = to_sqp(ibqp);
	struct sib_context *ctx = qp->ctx;

	sib_qp_ud_drain(qp); /* mckey destroys right after unsignaled sends */
	/* Unpublish first (events still queued are dropped when read), then,
	 * as rdma-core, wait until every delivered event was acknowledged. */
	if (qp_unpublish(ctx, qp))
		return EBUSY; /* a user never let go: leak it rather than free it */
	sib_dx_qp_unexport(qp);
	sib_mcast_qp_gone(qp); /* softibd drops its attachments with the object */
	sib_mw_qp_gone(qp);    /* its type 2 windows go invalid */
	qp_cq_clean(qp);       /* the engine let go of it: nothing more is pushed */
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != atomic_load(&qp->events_reported))
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
	sib_host->obj_destroy(qp->obj_handle);
	qp_usecnt(ibqp, -1);
	sib_qp_detach_srq_xrc(qp);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	qp_free(qp);
	return 0;
}

/* ---- modify: check everything, then apply (STYLE 6.6) ---- */

static int check_attr(struct sib_qp *qp, struct ibv_qp_attr *a, int mask, enum ibv_qp_state next)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[qp->ctx->dev->index];
	uint8_t port = (mask & IBV_QP_PORT) ? a->port_num : qp->port_num;

	if ((mask & IBV_QP_PORT) && (a->port_num < 1 || a->port_num > sib_fabric_num_ports(sd)))
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= SIB_PKEY_TBL_LEN)
		return EINVAL;
	if (mask & IBV_QP_PATH_MTU) {
		if (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096)
			return EINVAL;
		if (port >= 1 && port <= sib_fabric_num_ports(sd) && a->path_mtu > sd->ports[port - 1].max_mtu)
			return EINVAL;
	}
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > SIB_MAX_RD_ATOMIC)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > SIB_MAX_RD_ATOMIC)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags & ~(unsigned int)(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
						  IBV_ACCESS_MW_BIND)))
		return EINVAL;
	if (mask & IBV_QP_AV) {
		if (a->ah_attr.dlid == 0 || a->ah_attr.dlid >= SIB_UNICAST_LIDS)
			return EINVAL; /* multicast DLIDs are for UD */
		if (a->ah_attr.is_global && a->ah_attr.grh.sgid_index >= SIB_GID_TBL_LEN)
			return EINVAL;
		if (a->ah_attr.sl > 15)
			return EINVAL;
	}
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return EINVAL;
	if ((mask & IBV_QP_ALT_PATH) &&
	    (a->alt_port_num < 1 || a->alt_port_num > sib_fabric_num_ports(sd) ||
	     a->alt_pkey_index >= SIB_PKEY_TBL_LEN || a->alt_timeout > 31 ||
	     a->alt_ah_attr.sl > 15 || a->alt_ah_attr.dlid >= SIB_UNICAST_LIDS ||
	     (a->alt_ah_attr.is_global && a->alt_ah_attr.grh.sgid_index >= SIB_GID_TBL_LEN)))
		return EINVAL; /* as the primary path's checks */
	if (next == IBV_QPS_RTR && !(port >= 1 && port <= sib_fabric_num_ports(sd)))
		return EINVAL;
	return 0;
}

/* Reset the transport state (IBA 10.3.1: RESET empties the queues, no completions). */
static void qp_reset(struct sib_qp *qp)
{
	atomic_store(&qp->sq_head, 0);
	qp->sq_tail = 0;
	atomic_store(&qp->rq_head, 0);
	qp->rq_tail = 0;
	sib_qp_transport_reset(qp);
	qp->sqd_event_pending = false;
	sib_qp_dest_release(qp);
	qp->peer_gone_deadline = 0;
}

static void apply_attr(struct sib_qp *qp, struct ibv_qp_attr *a, int mask, enum ibv_qp_state next)
{
	enum ibv_qp_state cur = qp->state;

	if (mask & IBV_QP_PORT)
		qp->port_num = a->port_num;
	if (mask & IBV_QP_PKEY_INDEX)
		qp->pkey_index = a->pkey_index;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	if (mask & IBV_QP_QKEY)
		qp->qkey = a->qkey;
	if (mask & IBV_QP_AV) {
		qp->ah = a->ah_attr;
		sib_qp_dest_release(qp);
		qp->peer_gone_deadline = 0;
	}
	if (mask & IBV_QP_ALT_PATH) {
		qp->alt_ah = a->alt_ah_attr;
		qp->alt_pkey_index = a->alt_pkey_index;
		qp->alt_port_num = a->alt_port_num;
		qp->alt_timeout = a->alt_timeout;
	}
	if (mask & IBV_QP_PATH_MTU) {
		qp->path_mtu = a->path_mtu;
		qp->mtu = iba_mtu_bytes(a->path_mtu);
	}
	if (mask & IBV_QP_TIMEOUT)
		qp->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->rnr_retry = a->rnr_retry;
	sib_qp_transport_modify(qp, a, mask);
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->mig_state = a->path_mig_state;
	if (mask & IBV_QP_DEST_QPN) {
		qp->dest_qpn = a->dest_qp_num;
		sib_qp_dest_release(qp);
		qp->peer_gone_deadline = 0;
	}
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->en_sqd_async_notify = a->en_sqd_async_notify;

	if (next == cur)
		return;
	qp->state = next;
	qp->ibv.qp_base.state = next;
	switch (next) {
	case IBV_QPS_RESET:
		qp_reset(qp);
		qp_cq_clean(qp); /* progress_lock held: no completion of it meanwhile */
		break;
	case IBV_QPS_ERR:
		sib_qp_flush(qp);
		sib_srq_qp_error(qp);
		break;
	case IBV_QPS_SQD:
		qp->sqd_event_pending = qp->en_sqd_async_notify;
		break;
	default:
		break;
	}
}

int sib_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct sib_qp *qp = to_sqp(ibqp);
	struct sib_context *ctx = qp->ctx;
	enum ibv_qp_state cur, next;
	int rc;

	if (sib_ctx_fatal(ctx))
		return EIO; /* rdma-core after DEVICE_FATAL: the kernel answers EIO */
	/* Controlled Q_Keys (IBA 10.2.5) are privileged: uverbs gives them
	 * only to a caller with CAP_NET_RAW (linux drivers/infiniband/core/
	 * uverbs_cmd.c modify_qp), before the driver sees the attributes.
	 * softibd says whether this process has it (never the process
	 * itself, docs/threat-model.md "Privilege"); asked outside the
	 * progress lock, as it is a round trip. */
	if ((attr_mask & IBV_QP_QKEY) && (attr->qkey & SIB_QKEY_CONTROLLED) &&
	    (!sib_host->capable || sib_host->capable(CAP_NET_RAW)))
		return EPERM;
	/* What the kernel's uverbs ignores before checking the mask: XRC
	 * initiators have no responder, XRC targets no requester (perftest
	 * -c XRC sets the RC attributes on both). */
	if (ibqp->qp_type == IBV_QPT_XRC_SEND)
		attr_mask &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	else if (ibqp->qp_type == IBV_QPT_XRC_RECV)
		attr_mask &= ~(IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY);
	pthread_mutex_lock(&ctx->progress_lock);
	cur = qp->state;
	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		rc = EINVAL;
		goto out;
	}
	next = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if (!sib_qp_modify_is_ok(cur, next, ibqp->qp_type, attr_mask)) {
		rc = EINVAL;
		goto out;
	}
	rc = check_attr(qp, attr, attr_mask, next);
	if (!rc) {
		apply_attr(qp, attr, attr_mask, next);
		sib_dx_qp_export(qp); /* what peers' direct placement checks (direct.c) */
	}
out:
	pthread_mutex_unlock(&ctx->progress_lock);
	if (!rc && next >= IBV_QPS_RTR && next != IBV_QPS_ERR && cur < IBV_QPS_RTR &&
	    (ibqp->qp_type == IBV_QPT_RC || ibqp->qp_type == IBV_QPT_UC ||
	     ibqp->qp_type == IBV_QPT_XRC_SEND))
		sib_qp_dest_resolve_now(qp); /* a verb may wait: the data path does not */
	if (!rc)
		sib_progress(ctx);
	return rc;
}

int sib_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int attr_mask,
			    struct ibv_qp_init_attr *init)
{
	struct sib_qp *qp = to_sqp(ibqp);

	if (sib_ctx_fatal(qp->ctx))
		return EIO; /* as ibv_modify_qp */
	memset(a, 0, sizeof(*a));
	pthread_mutex_lock(&qp->ctx->progress_lock);
	a->qp_state = qp->state;
	a->cur_qp_state = qp->state;
	a->path_mtu = qp->path_mtu;
	a->path_mig_state = qp->mig_state;
	a->qkey = qp->qkey;
	a->rq_psn = qp->resp.epsn;
	a->sq_psn = qp->req.psn;
	a->dest_qp_num = qp->dest_qpn;
	a->qp_access_flags = qp->access;
	a->cap = qp->cap;
	a->ah_attr = qp->ah;
	a->alt_ah_attr = qp->alt_ah;
	a->alt_pkey_index = qp->alt_pkey_index;
	a->alt_port_num = qp->alt_port_num;
	a->alt_timeout = qp->alt_timeout;
	a->pkey_index = qp->pkey_index;
	a->en_sqd_async_notify = qp->en_sqd_async_notify;
	a->sq_draining = qp->state == IBV_QPS_SQD && !sib_sq_drained(qp);
	a->max_rd_atomic = qp->max_rd_atomic;
	a->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	a->min_rnr_timer = qp->min_rnr_timer;
	a->port_num = qp->port_num;
	a->timeout = qp->timeout;
	a->retry_cnt = qp->retry_cnt;
	a->rnr_retry = qp->rnr_retry;
	pthread_mutex_unlock(&qp->ctx->progress_lock);
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = ibqp->qp_context;
		init->send_cq = ibqp->send_cq;
		init->recv_cq = ibqp->recv_cq;
		init->srq = ibqp->srq;
		init->cap = qp->cap;
		init->qp_type = ibqp->qp_type;
		init->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}

/* ---- posting ---- */

/* Fill one send WQE from a WR.  Caller holds sq_lock and checked room.
 * type1_ok: the Bind verb's WR (a type 1 window). */
static int swqe_fill(struct sib_qp *qp, struct sib_swqe *w, uint32_t slot, const struct ibv_send_wr *wr,
		     bool type1_ok)
{
	/* Local operations (LOCAL_INV, BIND_MW) carry no gather list:
	 * providers ignore sg_list and num_sge there, whatever they hold. */
	int nsge = 0;
	uint64_t len = 0;

	if (sib_wr_check(qp->ibv.qp_base.qp_type, wr->opcode))
		return EINVAL;
	if (!(sib_wr_info(wr->opcode)->flags & SIB_WR_LOCAL)) {
		nsge = wr->num_sge;
		if (nsge < 0 || (uint32_t)nsge > qp->cap.max_send_sge)
			return EINVAL;
	}
	for (int i = 0; i < nsge; i++)
		len += wr->sg_list[i].length;
	if (len > SIB_MAX_MSG_SZ)
		return EINVAL;
	/* rxe: an atomic's local buffer is 8 bytes, else EINVAL at post. */
	if ((sib_wr_info(wr->opcode)->flags & SIB_WR_ATOMIC) && len != 8)
		return EINVAL;
	memset(w, 0, offsetof(struct sib_swqe, sge)); /* every field but sge[] (hca.h) */
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm_be = wr->imm_data;
	w->remote_addr = wr->wr.rdma.remote_addr;
	w->rkey = wr->wr.rdma.rkey;
	w->length = (uint32_t)len;
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	if (sib_wr_info(wr->opcode)->flags & SIB_WR_ATOMIC) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	}
	if (wr->opcode == IBV_WR_LOCAL_INV || wr->opcode == IBV_WR_SEND_WITH_INV)
		w->inv_rkey = wr->invalidate_rkey;
	if (wr->opcode == IBV_WR_BIND_MW)
		return sib_mw_wqe_fill(qp, w, wr, type1_ok);
	if (qp->ibv.qp_base.qp_type == IBV_QPT_UD && sib_ud_swqe_fill(qp, w, wr))
		return EINVAL;
	if (qp->ibv.qp_base.qp_type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn; /* the XRCETH (srq.c) */
	/* Inline is meaningless where the local buffer is a sink (ignored). */
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    !(sib_wr_info(wr->opcode)->flags & (SIB_WR_READ | SIB_WR_ATOMIC))) {
		uint8_t *dst = qp->sq_inline + (size_t)slot * SIB_MAX_INLINE;

		if (len > SIB_MAX_INLINE)
			return EINVAL;
		/* A zero-length piece names no memory: UCX's is at address NULL. */
		for (int i = 0; i < nsge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->inline_data = qp->sq_inline + (size_t)slot * SIB_MAX_INLINE;
		w->num_sge = 0;
	} else {
		w->num_sge = (uint32_t)nsge;
		if (nsge) /* sg_list may be NULL otherwise (an empty SEND) */
			memcpy(w->sge, wr->sg_list, (size_t)nsge * sizeof(struct ibv_sge));
	}
	return 0;
}

static int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr,
		     bool type1_ok)
{
	struct sib_qp *qp = to_sqp(ibqp);
	int rc = 0;

	/* rxe: posting before RTS is an error; in ERR the WRs are flushed. */
	if (qp->state < IBV_QPS_RTS && qp->state != IBV_QPS_ERR) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq_lock);
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	for (; wr; wr = wr->next) {
		if (head - __atomic_load_n(&qp->sq_tail, __ATOMIC_ACQUIRE) >= qp->sq_size) {
			rc = ENOMEM;
			break;
		}
		uint32_t slot = head & (qp->sq_size - 1);
		rc = swqe_fill(qp, &qp->sq[slot], slot, wr, type1_ok);
		if (rc)
			break;
		head++;
	}
	/* One store for the whole list: the engine sees it whole, and the
	 * requester sets AckReq on its last packet only (req.c). */
	atomic_store_explicit(&qp->sq_head, head, memory_order_release);
	pthread_spin_unlock(&qp->sq_lock);
	if (rc)
		*bad_wr = wr;
	sib_progress(qp->ctx);
	return rc;
}

int sib_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	return post_send(ibqp, wr, bad_wr, false);
}

int sib_qp_post_bind(struct ibv_qp *ibqp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->next = NULL;
	return post_send(ibqp, wr, &bad, true);
}

int sib_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sib_qp *qp = to_sqp(ibqp);
	int rc = 0;

	/* rdma-core providers: a QP on an SRQ (or XRC) has no receive queue. */
	if (qp->state == IBV_QPS_RESET || ibqp->srq || !qp->cap.max_recv_wr) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq_lock);
	uint32_t head = atomic_load_explicit(&qp->rq_head, memory_order_relaxed);
	for (; wr; wr = wr->next) {
		if (head - __atomic_load_n(&qp->rq_tail, __ATOMIC_ACQUIRE) >= qp->rq_size) {
			rc = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			rc = EINVAL;
			break;
		}
		sib_rwqe_fill(&qp->rq[head & (qp->rq_size - 1)], wr);
		head++;
		atomic_store_explicit(&qp->rq_head, head, memory_order_release);
	}
	pthread_spin_unlock(&qp->rq_lock);
	if (rc)
		*bad_wr = wr;
	if (qp->state == IBV_QPS_ERR)
		sib_progress(qp->ctx); /* flush what was just posted */
	return rc;
}

/* ---- ibv_wr_* send API (verbs.h ibv_qp_ex) ----
 * wr_start takes sq_lock; each wr_<op> opens one WQE, wr_set_* fill it,
 * wr_complete publishes them all (or none after an error), wr_abort drops.
 * The batch state lives in qp->wrb, under sq_lock (ibv_wr_post(3): one
 * batch per QP at a time, batches on different QPs may interleave). */

static void wrx_start(struct ibv_qp_ex *ibqp)
{
	struct sib_qp *qp = (struct sib_qp *)ibqp;

	pthread_spin_lock(&qp->sq_lock);
	qp->wrb->head = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	qp->wrb->err = 0;
	qp->wrb->open = false;
}

/* Close the WQE being built: an atomic's local buffer must be 8 bytes
 * (EINVAL from ibv_wr_complete, as post_send). */
static void wrx_close(struct sib_qp *qp)
{
	const struct sib_swqe *w = &qp->sq[qp->wrb->head & (qp->sq_size - 1)];

	if (!qp->wrb->open)
		return;
	if (!qp->wrb->err && (sib_wr_info(w->opcode)->flags & SIB_WR_ATOMIC) && w->length != 8)
		qp->wrb->err = EINVAL;
	qp->wrb->head++;
}

static struct sib_swqe *wrx_new(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode op)
{
	struct sib_qp *qp = (struct sib_qp *)ibqp;
	struct sib_swqe *w;

	wrx_close(qp);
	qp->wrb->open = false;
	if (qp->wrb->err)
		return NULL;
	if (qp->wrb->head - __atomic_load_n(&qp->sq_tail, __ATOMIC_ACQUIRE) >= qp->sq_size) {
		qp->wrb->err = ENOMEM;
		return NULL;
	}
	w = &qp->sq[qp->wrb->head & (qp->sq_size - 1)];
	memset(w, 0, offsetof(struct sib_swqe, sge)); /* every field but sge[] (hca.h) */
	w->wr_id = ibqp->wr_id;
	w->send_flags = ibqp->wr_flags;
	w->opcode = op;
	w->signaled = qp->sq_sig_all || (ibqp->wr_flags & IBV_SEND_SIGNALED);
	qp->wrb->open = true;
	return w;
}

static struct sib_swqe *wrx_cur(struct ibv_qp_ex *ibqp)
{
	struct sib_qp *qp = (struct sib_qp *)ibqp;

	if (!qp->wrb->open || qp->wrb->err)
		return NULL;
	return &qp->sq[qp->wrb->head & (qp->sq_size - 1)];
}

static void wrx_send(struct ibv_qp_ex *q) { wrx_new(q, IBV_WR_SEND); }

static void wrx_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	struct sib_swqe *w = wrx_new(q, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_be = imm;
}

static void wrx_rdma(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct sib_swqe *w = wrx_new(q, op);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->imm_be = imm;
	}
}

static void wrx_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	wrx_rdma(q, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wrx_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm)
{
	wrx_rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wrx_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	wrx_rdma(q, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void wrx_atomic(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		       uint64_t compare_add, uint64_t swap)
{
	struct sib_swqe *w = wrx_new(q, op);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->compare_add = compare_add;
		w->swap = swap;
	}
}

static void wrx_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t compare,
			       uint64_t swap)
{
	wrx_atomic(q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wrx_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t add)
{
	wrx_atomic(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wrx_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	struct sib_swqe *w = wrx_new(q, IBV_WR_SEND_WITH_INV);

	if (w)
		w->inv_rkey = rkey;
}

static void wrx_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	struct sib_swqe *w = wrx_new(q, IBV_WR_LOCAL_INV);

	if (w)
		w->inv_rkey = rkey;
}

/* ibv_wr_bind_mw: a type 2 window, as IBV_WR_BIND_MW of post_send. */
static void wrx_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
			const struct ibv_mw_bind_info *bind_info)
{
	struct sib_qp *qp = (struct sib_qp *)q;
	struct sib_swqe *w = wrx_new(q, IBV_WR_BIND_MW);
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };

	if (!w)
		return;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = *bind_info;
	if (sib_mw_wqe_fill(qp, w, &wr, false))
		qp->wrb->err = EINVAL;
}

static void wrx_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
	struct sib_qp *qp = (struct sib_qp *)q;
	struct sib_swqe *w = wrx_cur(q);
	uint64_t len = 0;

	if (!w)
		return;
	if (n > qp->cap.max_send_sge) {
		qp->wrb->err = EINVAL;
		return;
	}
	for (size_t i = 0; i < n; i++)
		len += sg[i].length;
	if (len > SIB_MAX_MSG_SZ) {
		qp->wrb->err = EINVAL;
		return;
	}
	memcpy(w->sge, sg, n * sizeof(*sg));
	w->inline_data = NULL; /* the last data setter wins */
	w->num_sge = (uint32_t)n;
	w->length = (uint32_t)len;
}

static void wrx_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge s = { .addr = addr, .length = length, .lkey = lkey };

	wrx_set_sge_list(q, 1, &s);
}

static void wrx_set_inline_data_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *buf)
{
	struct sib_qp *qp = (struct sib_qp *)q;
	struct sib_swqe *w = wrx_cur(q);
	uint32_t slot = qp->wrb->head & (qp->sq_size - 1);
	uint8_t *dst = qp->sq_inline + (size_t)slot * SIB_MAX_INLINE;
	size_t len = 0;

	if (!w)
		return;
	for (size_t i = 0; i < n; i++)
		len += buf[i].length;
	if (len > SIB_MAX_INLINE || (sib_wr_info(w->opcode)->flags & (SIB_WR_READ | SIB_WR_ATOMIC))) {
		qp->wrb->err = EINVAL;
		return;
	}
	w->inline_data = dst;
	for (size_t i = 0; i < n; i++) {
		if (!buf[i].length) /* may be NULL, as in swqe_fill */
			continue;
		memcpy(dst, buf[i].addr, buf[i].length);
		dst += buf[i].length;
	}
	w->num_sge = 0;
	w->length = (uint32_t)len;
}

static void wrx_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wrx_set_inline_data_list(q, 1, &b);
}

/* ibv_wr_set_ud_addr: the AV is copied now (the AH may go once posted). */
static void wrx_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct sib_swqe *w = wrx_cur(q);

	if (!w)
		return;
	if (!ah) {
		((struct sib_qp *)q)->wrb->err = EINVAL;
		return;
	}
	w->ud_av = ((struct sib_ah *)ah)->attr;
	w->ud_qpn = remote_qpn & 0xffffff;
	w->ud_qkey = remote_qkey;
}

/* ibv_wr_complete: publish the batch, or nothing and the first error.  A QP
 * in RESET, INIT or RTR takes nothing: EINVAL, as post_send here and as
 * rxe's and EFA's wr_complete (rdma-core v44 providers/rxe/rxe.c,
 * providers/efa/verbs.c); in ERR the batch is posted and flushed. */
static int wrx_complete(struct ibv_qp_ex *ibqp)
{
	struct sib_qp *qp = (struct sib_qp *)ibqp;
	int rc;

	wrx_close(qp);
	rc = qp->wrb->err;
	if (!rc && qp->state < IBV_QPS_RTS && qp->state != IBV_QPS_ERR)
		rc = EINVAL;
	if (!rc && qp->ibv.qp_base.qp_type == IBV_QPT_UD)
		for (uint32_t i = atomic_load_explicit(&qp->sq_head, memory_order_relaxed); !rc && i != qp->wrb->head; i++)
			rc = sib_ud_wqe_check(qp, &qp->sq[i & (qp->sq_size - 1)]);
	if (!rc)
		atomic_store_explicit(&qp->sq_head, qp->wrb->head, memory_order_release);
	pthread_spin_unlock(&qp->sq_lock);
	if (!rc)
		sib_progress(qp->ctx);
	return rc;
}

static void wrx_abort(struct ibv_qp_ex *ibqp)
{
	pthread_spin_unlock(&((struct sib_qp *)ibqp)->sq_lock);
}

/* ibv_wr_set_xrc_srqn: the XRCETH of the open XRC_SEND WQE (srq.c). */
static void wrx_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t remote_srqn)
{
	struct sib_swqe *w = wrx_cur(q);

	if (w)
		w->xrc_srqn = remote_srqn;
}

static void wr_api_init(struct sib_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *x = &qp->ibv;

	x->comp_mask = 0;
	x->wr_start = wrx_start;
	x->wr_complete = wrx_complete;
	x->wr_abort = wrx_abort;
	x->wr_set_sge = wrx_set_sge;
	x->wr_set_sge_list = wrx_set_sge_list;
	x->wr_set_inline_data = wrx_set_inline_data;
	x->wr_set_inline_data_list = wrx_set_inline_data_list;
	if (qp->ibv.qp_base.qp_type == IBV_QPT_XRC_SEND)
		x->wr_set_xrc_srqn = wrx_set_xrc_srqn;
	if (ops & IBV_QP_EX_WITH_SEND)
		x->wr_send = wrx_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = wrx_send_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = wrx_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = wrx_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = wrx_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = wrx_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = wrx_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = wrx_bind_mw;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		x->wr_local_inv = wrx_local_inv;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		x->wr_send_inv = wrx_send_inv;
	if (qp->ibv.qp_base.qp_type == IBV_QPT_UD)
		x->wr_set_ud_addr = wrx_set_ud_addr;
}
