/* SPDX-License-Identifier: MIT */
/*
 * Memory windows (IBA 10.6.7; rdma-core's alloc_mw / bind_mw / dealloc_mw
 * provider ops, IBV_WR_BIND_MW, IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV).
 * Type 1 windows are bound by the Bind verb, type 2 (2B: QP and PD
 * checked) by a BIND_MW work request; both are bound in send-queue order
 * by the requester, and checked by the responder when an R_Key names them.
 * Owns ctx->mws and every window's binding, which changes and is read
 * only in engine context (progress_lock held); alloc/dealloc run on any
 * thread and go through the table's publish/unpublish protocol.  Never
 * touches an MR's memory: the responder gets the MR reference back.
 */
#include <errno.h>
#include <stdlib.h>

#include "hca/mw.h"
#include "hca/srq.h"
#include "hca/transport.h"

#define SIB_MW_DESTROY_WAIT_NS 5000000000ull
/* Access a window can grant (ibv_bind_mw(3)); ZERO_BASED is not offered
 * (EINVAL, as mlx5's bind_mw). */
#define SIB_MW_ACCESS (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
/* What a bind may ask for: LOCAL_WRITE and MW_BIND too, which grant nothing
 * remote through a window and are dropped (rxe's RXE_ACCESS_SUPPORTED_MW and
 * mlx5 accept them; pyverbs' tests bind with LOCAL_WRITE, and programs pass
 * the MR's own flags). */
#define SIB_MW_ACCESS_ACCEPTED (SIB_MW_ACCESS | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)

int sib_mw_ctx_init(struct sib_context *ctx)
{
	return sib_objtab_init(&ctx->mws, "mw", 1, SIB_MW_MAX);
}

void sib_mw_ctx_fini(struct sib_context *ctx)
{
	sib_objtab_fini(&ctx->mws);
}

static uint32_t mw_index(uint32_t key)
{
	return (key & ~SIB_MW_KEY_BIT) >> 8;
}

struct ibv_mw *sib_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct sib_context *ctx = to_sctx(ibpd->context);
	struct sib_mw *mw;
	uint64_t h;
	int rc;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	rc = sib_objtab_reserve(&ctx->mws, &h);
	if (rc) {
		free(mw);
		errno = rc == ENOSPC ? ENOMEM : rc;
		return NULL;
	}
	mw->tab_handle = h;
	mw->ibv.context = ibpd->context;
	mw->ibv.pd = ibpd;
	mw->ibv.type = type;
	mw->ibv.handle = SIB_OBJTAB_INDEX(h);
	mw->ibv.rkey = SIB_MW_KEY_BIT | SIB_OBJTAB_INDEX(h) << 8 | sib_key_byte(ctx);
	mw->range.pd = ibpd->handle;
	atomic_fetch_add(&((struct sib_pd *)ibpd)->usecnt, 1);
	sib_objtab_publish(&ctx->mws, h, mw);
	return &mw->ibv;
}

/* A bound window may be deallocated (IBA 10.6.7: the binding goes with
 * it); lookups fail from the unpublish on, and dealloc waits for the
 * engine's references. */
int sib_dealloc_mw(struct ibv_mw *ibmw)
{
	struct sib_context *ctx = to_sctx(ibmw->context);
	struct sib_mw *mw = (struct sib_mw *)ibmw;
	int rc = sib_objtab_unpublish(&ctx->mws, mw->tab_handle);

	if (rc)
		return EINVAL;
	rc = sib_objtab_wait(&ctx->mws, mw->tab_handle, SIB_MW_DESTROY_WAIT_NS, sib_engine_poke, ctx);
	if (!rc)
		sib_objtab_release(&ctx->mws, mw->tab_handle);
	atomic_fetch_sub(&((struct sib_pd *)ibmw->pd)->usecnt, 1);
	if (!rc)
		free(mw); /* else a user never let go: unreachable, leaked */
	return 0;
}

int sib_mw_wqe_fill(struct sib_qp *qp, struct sib_swqe *w, const struct ibv_send_wr *wr, bool type1_ok)
{
	const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;
	struct ibv_mw *m = wr->bind_mw.mw;

	if (!m || m->context != qp->ibv.qp_base.context)
		return EINVAL;
	if (m->type == IBV_MW_TYPE_1 ? !type1_ok : m->type != IBV_MW_TYPE_2)
		return EINVAL;
	/* The key byte is the consumer's (ibv_inc_rkey); the index is the window's. */
	if ((wr->bind_mw.rkey & ~0xffu) != (m->rkey & ~0xffu))
		return EINVAL;
	if (bi->mw_access_flags & ~(unsigned int)SIB_MW_ACCESS_ACCEPTED)
		return EINVAL;
	w->mw_handle = ((struct sib_mw *)m)->tab_handle;
	w->bind_rkey = wr->bind_mw.rkey;
	w->bind_mr_key = bi->mr ? bi->mr->lkey : 0;
	w->bind_addr = bi->addr;
	w->bind_len = bi->mr ? bi->length : 0;
	w->bind_access = bi->mw_access_flags & SIB_MW_ACCESS; /* the remote rights only */
	if (m->type == IBV_MW_TYPE_2)
		m->rkey = wr->bind_mw.rkey; /* the key the window will answer to */
	return 0;
}

int sib_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = { 0 };
	int rc;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	rc = sib_qp_post_bind(qp, &wr);
	if (!rc)
		mw->rkey = wr.bind_mw.rkey;
	return rc;
}

/* The bind rules of IBA 10.6.7 (rxe's and mlx5's order): the window and
 * the QP share a PD; a type 2 window is not bound already; a zero-length
 * type 1 bind unbinds; else the MR is live, of the same PD, registered
 * with MW_BIND, with LOCAL_WRITE if the window grants remote write or
 * atomic, and covers the range. */
static enum ibv_wc_status bind(struct sib_qp *qp, struct sib_mw *mw, const struct sib_swqe *w)
{
	uint32_t pd = qp->ibv.qp_base.pd->handle;
	struct sib_mr *mr;
	uint64_t h;
	bool ok;

	if (mw->range.pd != pd || (mw->ibv.type == IBV_MW_TYPE_2 && mw->bound))
		return IBV_WC_MW_BIND_ERR;
	if (!w->bind_len) {
		if (mw->ibv.type == IBV_MW_TYPE_2)
			return IBV_WC_MW_BIND_ERR;
		mw->bound = false;
		mw->key = w->bind_rkey;
		return IBV_WC_SUCCESS;
	}
	mr = sib_mr_get(qp->ctx, w->bind_mr_key, &h);
	if (!mr)
		return IBV_WC_MW_BIND_ERR;
	ok = sib_mr_check(&mr->range, pd, w->bind_addr, w->bind_len, IBV_ACCESS_MW_BIND) == SIB_KEY_OK &&
	     (!(w->bind_access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) ||
	      (mr->range.access & IBV_ACCESS_LOCAL_WRITE));
	sib_objtab_put(&qp->ctx->mrs, h);
	if (!ok)
		return IBV_WC_MW_BIND_ERR;
	mw->bound = true;
	mw->key = w->bind_rkey;
	mw->mr_key = w->bind_mr_key;
	mw->qpn = qp->ibv.qp_base.qp_num;
	mw->range.iova = w->bind_addr;
	mw->range.length = w->bind_len;
	mw->range.access = w->bind_access;
	return IBV_WC_SUCCESS;
}

/* Invalidate the bound type 2 window `key` of qp's PD (by_qp: only if qp
 * bound it, as remote invalidation of a type 2B window requires). */
static bool invalidate(struct sib_qp *qp, uint32_t key, bool by_qp)
{
	struct sib_mw *mw;
	uint64_t h;
	bool ok;

	if (!sib_key_is_mw(key))
		return false; /* user MRs cannot be invalidated (rxe) */
	mw = sib_objtab_get_index(&qp->ctx->mws, mw_index(key), &h);
	if (!mw)
		return false;
	ok = mw->ibv.type == IBV_MW_TYPE_2 && mw->bound && mw->key == key &&
	     mw->range.pd == sib_resp_pd(qp) && (!by_qp || mw->qpn == qp->ibv.qp_base.qp_num);
	if (ok)
		mw->bound = false;
	sib_objtab_put(&qp->ctx->mws, h);
	return ok;
}

enum ibv_wc_status sib_mw_local_wqe(struct sib_qp *qp, const struct sib_swqe *w)
{
	enum ibv_wc_status st;
	struct sib_mw *mw;

	if (w->opcode == IBV_WR_LOCAL_INV)
		return invalidate(qp, w->inv_rkey, false) ? IBV_WC_SUCCESS : IBV_WC_LOC_QP_OP_ERR;
	mw = sib_objtab_get(&qp->ctx->mws, w->mw_handle);
	if (!mw)
		return IBV_WC_MW_BIND_ERR; /* deallocated since the post */
	st = bind(qp, mw, w);
	sib_objtab_put(&qp->ctx->mws, w->mw_handle);
	return st;
}

bool sib_mw_rkey_ok(struct sib_qp *qp, uint32_t key, uint64_t va, uint64_t len, unsigned int need,
		    struct sib_mr **out, uint64_t *out_h)
{
	uint32_t pd = sib_resp_pd(qp), mr_key = 0; /* XRC_RECV: the SRQ's PD */
	struct sib_mw *mw;
	struct sib_mr *mr;
	uint64_t h;
	bool ok;

	mw = sib_objtab_get_index(&qp->ctx->mws, mw_index(key), &h);
	if (!mw)
		return false;
	ok = mw->bound && mw->key == key &&
	     (mw->ibv.type == IBV_MW_TYPE_1 || mw->qpn == qp->ibv.qp_base.qp_num) &&
	     sib_mr_check(&mw->range, pd, va, len, need) == SIB_KEY_OK;
	if (ok)
		mr_key = mw->mr_key;
	sib_objtab_put(&qp->ctx->mws, h);
	if (!ok)
		return false;
	mr = sib_mr_get(qp->ctx, mr_key, &h);
	if (!mr)
		return false; /* the MR was deregistered under the window */
	/* Reregistered under the window: it must still cover the range. */
	if (sib_mr_check(&mr->range, pd, va, len, 0) != SIB_KEY_OK) {
		sib_objtab_put(&qp->ctx->mrs, h);
		return false;
	}
	*out = mr;
	*out_h = h;
	return true;
}

void sib_mw_qp_gone(struct sib_qp *qp)
{
	struct sib_context *ctx = qp->ctx;
	struct sib_mw *mw;
	uint32_t i = 0;

	pthread_mutex_lock(&ctx->progress_lock); /* `bound` is the engine's */
	while ((mw = sib_objtab_next(&ctx->mws, &i))) {
		if (mw->ibv.type == IBV_MW_TYPE_2 && mw->bound && mw->qpn == qp->ibv.qp_base.qp_num)
			mw->bound = false;
		sib_objtab_put(&ctx->mws, mw->tab_handle);
		i++;
	}
	pthread_mutex_unlock(&ctx->progress_lock);
}

bool sib_mw_key_live(struct sib_qp *qp, uint32_t key)
{
	struct sib_mw *mw;
	uint64_t h;
	bool ok;

	if (!sib_key_is_mw(key))
		return true;
	mw = sib_objtab_get_index(&qp->ctx->mws, mw_index(key), &h);
	if (!mw)
		return false;
	ok = mw->bound && mw->key == key;
	sib_objtab_put(&qp->ctx->mws, h);
	return ok;
}

bool sib_mw_remote_invalidate(struct sib_qp *qp, uint32_t key)
{
	return invalidate(qp, key, true);
}
