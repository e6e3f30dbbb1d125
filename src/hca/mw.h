/* SPDX-License-Identifier: MIT */
/*
 * Memory windows of the software HCA (IBA 10.6.7; ibv_alloc_mw(3),
 * ibv_bind_mw(3), ibv_post_send(3) BIND_MW / LOCAL_INV / SEND_WITH_INV):
 * the window object, its R_Key space (distinct from MR keys), the bind and
 * invalidate operations and the R_Key check that goes through a window.
 * Windows live in ctx->mws (objtab) by key index; their binding changes
 * only in engine context (progress_lock held), where it is also read.
 */
#ifndef SIB_HCA_MW_H
#define SIB_HCA_MW_H

#include "hca/hca.h"

/* Window R_Keys: this bit | index << 8 | key byte.  MR keys never have it
 * (their index is below 2^20), so a key names an MR or a window. */
#define SIB_MW_KEY_BIT 0x80000000u
#define SIB_MW_MAX     (1u << 20)       /* windows per context (indices 1..) */

static inline bool sib_key_is_mw(uint32_t key)
{
	return key & SIB_MW_KEY_BIT;
}

/* A memory window.  ibv.rkey is what the application sees (the next key
 * for type 1, set by ibv_bind_mw); `key` is the one the binding answers to. */
struct sib_mw {
	struct ibv_mw ibv;
	uint64_t tab_handle;           /* in ctx->mws */
	/* the binding: engine context only */
	bool bound;
	uint32_t key;                  /* R_Key of the binding */
	uint32_t mr_key;               /* L_Key of the MR it lies in */
	uint32_t qpn;                  /* type 2: the QP that bound it (IBA 10.6.7.2, type 2B) */
	struct sib_mr_range range;     /* the window's PD, VA, length and access */
};

/* The context's window table: 0 or ENOMEM / free it. */
int sib_mw_ctx_init(struct sib_context *ctx);
void sib_mw_ctx_fini(struct sib_context *ctx);

/* Provider ops (rdma-core alloc_mw / bind_mw / dealloc_mw).  alloc: type
 * 1 or 2, else EINVAL (errno); dealloc: any time, bound or not (0, or
 * EINVAL for a window that is not this context's).  bind_mw: the type 1
 * Bind verb, posted on qp as a BIND_MW WQE with key ibv_inc_rkey(rkey);
 * on success mw->rkey is the new key (rdma-core's rule); post_send's
 * errors (EINVAL, ENOMEM). */
struct ibv_mw *sib_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int sib_dealloc_mw(struct ibv_mw *mw);
int sib_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);

/* post_send's part of a BIND_MW WR: record the bind in w.  type1_ok: the
 * Bind verb (type 1); IBV_WR_BIND_MW from post_send binds type 2 only.
 * 0 or EINVAL (no window, another type, an access bit a window cannot
 * have, a key whose index is not the window's).  IBV_ACCESS_LOCAL_WRITE
 * is accepted and ignored (rxe, mlx5); other bits (ZERO_BASED...) are refused. */
int sib_mw_wqe_fill(struct sib_qp *qp, struct sib_swqe *w, const struct ibv_send_wr *wr, bool type1_ok);

/* Requester: carry out a local WQE (BIND_MW, LOCAL_INV) in SQ order.
 * IBV_WC_SUCCESS, IBV_WC_MW_BIND_ERR (a bind that breaks a rule of IBA
 * 10.6.7: PD, MR access MW_BIND and LOCAL_WRITE, range, type 2 already
 * bound) or IBV_WC_LOC_QP_OP_ERR (an invalidate of a key that names no
 * bound type 2 window: user MRs cannot be invalidated, as rxe). */
enum ibv_wc_status sib_mw_local_wqe(struct sib_qp *qp, const struct sib_swqe *w);

/* Responder: R_Key `key` (a window key) for [va, va + len) with `need`
 * access on qp: the window is bound with this key, of qp's PD, bound by
 * qp if type 2, and grants need over the range; then its MR, which must
 * still cover it.  True with *mr referenced (*mr_h), else false. */
bool sib_mw_rkey_ok(struct sib_qp *qp, uint32_t key, uint64_t va, uint64_t len, unsigned int need,
		    struct sib_mr **mr, uint64_t *mr_h);

/* A QP is destroyed: the type 2 windows bound to it are invalid from now
 * on (rxe keeps the QP with the window; here its QPN could be reused). */
void sib_mw_qp_gone(struct sib_qp *qp);

/* Is window key `key` still bound to the same binding (not invalidated,
 * rebound or deallocated since the responder looked it up)?  True for an
 * MR's key.  Engine context: a WRITE or READ under way through a window
 * stops once the window goes (IBA 10.6.7: invalidation takes effect for
 * later accesses). */
bool sib_mw_key_live(struct sib_qp *qp, uint32_t key);

/* Responder: SEND_WITH_INV's remote invalidation of `key`: a bound type 2
 * window of qp's PD bound by qp.  True if it was invalidated. */
bool sib_mw_remote_invalidate(struct sib_qp *qp, uint32_t key);

#endif
