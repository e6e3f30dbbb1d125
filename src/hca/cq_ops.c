/* SPDX-License-Identifier: MIT */
/*
 * Completion queues of the software HCA (provider ops; IBA 11.4.2): create
 * (plain and _ex), resize, destroy, poll (drives progress inline: no engine
 * thread wakeup needed while the application polls), notify, and the
 * ibv_cq_ex poll API.  poll_cq and req_notify_cq never sleep and make no
 * system call.  CQs are named in event records by their sib_cq_tab handle
 * (objtab: a destroyed CQ's records resolve to nothing).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "hca/hca.h"

#define SIB_CQ_DESTROY_WAIT_NS 5000000000ull

int sib_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct sib_cq *cq = to_scq(ibcq);
	struct sib_context *ctx = to_sctx(ibcq->context);
	int n = 0;

	atomic_fetch_add_explicit(&ctx->eng.poll_count, 1, memory_order_relaxed);
	sib_progress(ctx);
	if (num_entries <= 0)
		return 0;
	pthread_spin_lock(&cq->lock);
	while (n < num_entries && cq->head != cq->tail) {
		wc[n++] = cq->wc[cq->head & (cq->size - 1)];
		cq->head++;
	}
	pthread_spin_unlock(&cq->lock);
	if (n)
		cq->empty_polls = 0;
	else if (++cq->empty_polls % SIB_POLL_SPIN == 0)
		/* A software HCA's peer needs CPU time to answer: when there are
		 * more spinners than cores, give it up now and then instead of
		 * burning a whole time slice.  Never while completions flow. */
		sched_yield();
	return n;
}

int sib_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sib_cq *cq = to_scq(ibcq);
	struct sib_context *ctx = to_sctx(ibcq->context);

	atomic_store_explicit(&cq->armed, solicited_only ? SIB_CQ_ARM_SOLICITED : SIB_CQ_ARM_NEXT,
			      memory_order_seq_cst);
	/* An armed CQ means the application may go to sleep on the channel
	 * (ibv_get_cq_event, or epoll on its fd as UCX does): the engine must
	 * not nap through the packets that will raise the event. */
	atomic_fetch_add_explicit(&ctx->eng.notify_count, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&ctx->eng.napping, memory_order_seq_cst))
		sib_engine_kick(ctx);
	return 0;
}

/* ---- ibv_cq_ex poll API (verbs.h ibv_start_poll etc.) ----
 * cq->lock is taken per call, not across start..end: the application may
 * post (which runs the engine, which pushes to this CQ) inside a batch,
 * as rc_pingpong -t does.  The batch itself has one consumer by API rule. */

static int cqx_next(struct ibv_cq_ex *ibcq)
{
	struct sib_cq *cq = (struct sib_cq *)ibcq;
	int rc = ENOENT;

	pthread_spin_lock(&cq->lock);
	if (cq->head != cq->tail) {
		cq->cur = cq->wc[cq->head & (cq->size - 1)];
		cq->head++;
		rc = 0;
	}
	pthread_spin_unlock(&cq->lock);
	if (!rc) {
		ibcq->wr_id = cq->cur.wr_id;
		ibcq->status = cq->cur.status;
	}
	return rc;
}

static int cqx_start(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	if (attr->comp_mask)
		return EINVAL;
	atomic_fetch_add_explicit(&to_sctx(ibcq->context)->eng.poll_count, 1, memory_order_relaxed);
	sib_progress(to_sctx(ibcq->context));
	return cqx_next(ibcq);
}

static void cqx_end(struct ibv_cq_ex *ibcq)
{
}

#define CQX_READ(name, type, expr) \
	static type cqx_read_##name(struct ibv_cq_ex *ibcq) \
	{ \
		struct ibv_wc *w = &((struct sib_cq *)ibcq)->cur; \
		return (type)(expr); \
	}
CQX_READ(opcode, enum ibv_wc_opcode, w->opcode)
CQX_READ(vendor_err, uint32_t, w->vendor_err)
CQX_READ(byte_len, uint32_t, w->byte_len)
CQX_READ(imm_data, __be32, w->imm_data)
CQX_READ(qp_num, uint32_t, w->qp_num)
CQX_READ(src_qp, uint32_t, w->src_qp)
CQX_READ(wc_flags, unsigned int, w->wc_flags)
CQX_READ(slid, uint32_t, w->slid)
CQX_READ(sl, uint8_t, w->sl)
CQX_READ(dlid_path_bits, uint8_t, w->dlid_path_bits)

/* ---- the CQ table: event records name CQs by (index, generation) ---- */

struct sib_objtab sib_cq_tab;
static pthread_once_t cq_tab_once = PTHREAD_ONCE_INIT;
static int cq_tab_rc;

static void cq_tab_setup(void)
{
	cq_tab_rc = sib_objtab_init(&sib_cq_tab, "cq", 0, SIB_CQ_TAB_MAX);
}

int sib_cq_tab_init(void)
{
	pthread_once(&cq_tab_once, cq_tab_setup);
	return cq_tab_rc;
}

static uint64_t cq_handle(const struct sib_cq *cq)
{
	return (uint64_t)cq->reg_gen << 32 | cq->reg_id;
}

/* The CQ a completion record names, counting the delivery; NULL if the CQ
 * was destroyed since (the event is dropped, as rdma-core does). */
static struct sib_cq *cq_deliver(uint32_t id, uint32_t gen, bool async)
{
	uint64_t h = (uint64_t)gen << 32 | id;
	struct sib_cq *cq = sib_objtab_get(&sib_cq_tab, h);

	if (!cq)
		return NULL;
	atomic_fetch_add(async ? &cq->async_reported : &cq->events_reported, 1);
	sib_objtab_put(&sib_cq_tab, h);
	return cq;
}

struct ibv_cq *sib_cq_event(const struct sib_comp_rec *rec)
{
	struct sib_cq *cq = cq_deliver(rec->cq_id, rec->cq_gen, false);

	return cq ? (struct ibv_cq *)&cq->ibv : NULL;
}

/* CQ_ERR async records (provider.c). */
struct sib_cq *sib_cq_async_deliver(uint32_t id, uint32_t gen)
{
	return cq_deliver(id, gen, true);
}

#define SIB_CQ_WC_FLAGS_SUPPORTED (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
	IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | \
	IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS)

/* comp_vector is unsigned as in uverbs, so a negative int is out of range
 * too: EINVAL unless below num_comp_vectors (ib_uverbs_create_cq). */
static struct sib_cq *cq_alloc(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
			       uint32_t comp_vector, void *cq_context, uint64_t wc_flags)
{
	struct sib_context *ctx = to_sctx(context);
	struct sib_cq *cq;
	uint32_t size = 1;
	int rc;

	if (cqe < 1 || cqe > SIB_MAX_CQE || comp_vector >= (uint32_t)context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	while (size < (uint32_t)cqe + 1)
		size <<= 1;
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->wc = calloc(size, sizeof(*cq->wc));
	if (!cq->wc) {
		rc = ENOMEM;
		goto err;
	}
	uint64_t h;

	rc = sib_cq_tab_init();
	if (rc)
		goto err;
	rc = sib_host->obj_create(ctx->dev_handle, SIB_OBJ_CQ, 0, &cq->obj_handle, NULL);
	if (rc)
		goto err;
	rc = sib_objtab_reserve(&sib_cq_tab, &h);
	if (rc) {
		sib_host->obj_destroy(cq->obj_handle);
		goto err;
	}
	cq->reg_id = SIB_OBJTAB_INDEX(h);
	cq->reg_gen = SIB_OBJTAB_GEN(h);
	cq->size = size;
	cq->wc_flags = wc_flags;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ibv.context = context;
	cq->ibv.channel = channel;
	cq->ibv.cq_context = cq_context;
	cq->ibv.handle = cq->obj_handle;
	cq->ibv.cqe = (int)size - 1;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	cq->ibv.start_poll = cqx_start;
	cq->ibv.next_poll = cqx_next;
	cq->ibv.end_poll = cqx_end;
	cq->ibv.read_opcode = cqx_read_opcode;
	cq->ibv.read_vendor_err = cqx_read_vendor_err;
	cq->ibv.read_wc_flags = cqx_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cq->ibv.read_byte_len = cqx_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		cq->ibv.read_imm_data = cqx_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cq->ibv.read_qp_num = cqx_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cq->ibv.read_src_qp = cqx_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		cq->ibv.read_slid = cqx_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		cq->ibv.read_sl = cqx_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cq->ibv.read_dlid_path_bits = cqx_read_dlid_path_bits;
	if (channel)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
	sib_objtab_publish(&sib_cq_tab, h, cq); /* built: events may name it now */
	return cq;
err:
	free(cq->wc);
	free(cq);
	errno = rc;
	return NULL;
}

/* rdma-core's create_cq op has no cq_context: ibv_create_cq sets it after. */
struct ibv_cq *sib_create_cq(struct ibv_context *context, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct sib_cq *cq = cq_alloc(context, cqe, channel, (uint32_t)comp_vector, NULL,
				     IBV_WC_STANDARD_FLAGS);

	return cq ? (struct ibv_cq *)&cq->ibv : NULL;
}

struct ibv_cq_ex *sib_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct sib_cq *cq;

	if (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS || attr->flags ||
	    (attr->wc_flags & ~(uint64_t)SIB_CQ_WC_FLAGS_SUPPORTED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = cq_alloc(context, (int)attr->cqe, attr->channel, attr->comp_vector, attr->cq_context,
		      attr->wc_flags);
	return cq ? &cq->ibv : NULL;
}

int sib_destroy_cq(struct ibv_cq *ibcq)
{
	struct sib_cq *cq = to_scq(ibcq);

	/* No QP uses it (usecnt), so the engine cannot be pushing to it: a
	 * QP's destroy waits until the engine let go of the QP. */
	if (atomic_load(&cq->usecnt))
		return EBUSY;
	/* No more deliveries; events still queued are dropped when read.  As
	 * rdma-core: wait until every delivered event was acknowledged. */
	if (sib_objtab_destroy(&sib_cq_tab, cq_handle(cq), SIB_CQ_DESTROY_WAIT_NS))
		return EBUSY; /* an event reader never let go: leak, never free */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != atomic_load(&cq->events_reported) ||
	       ibcq->async_events_completed != atomic_load(&cq->async_reported))
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	if (ibcq->channel)
		__atomic_sub_fetch(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
	sib_host->obj_destroy(cq->obj_handle);
	pthread_spin_destroy(&cq->lock);
	free(cq->wc);
	free(cq);
	return 0;
}

/* IBA 11.2.5.3 Resize CQ: keeps queued completions; EINVAL if they do not fit. */
int sib_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct sib_cq *cq = to_scq(ibcq);
	struct ibv_wc *nwc;
	uint32_t size = 1, n;

	if (cqe < 1 || cqe > SIB_MAX_CQE)
		return EINVAL;
	while (size < (uint32_t)cqe + 1)
		size <<= 1;
	nwc = calloc(size, sizeof(*nwc));
	if (!nwc)
		return ENOMEM;
	pthread_spin_lock(&cq->lock);
	n = cq->tail - cq->head;
	if (n > size - 1) {
		pthread_spin_unlock(&cq->lock);
		free(nwc);
		return EINVAL; /* fewer entries than completions queued */
	}
	for (uint32_t i = 0; i < n; i++)
		nwc[i] = cq->wc[(cq->head + i) & (cq->size - 1)];
	free(cq->wc);
	cq->wc = nwc;
	cq->size = size;
	cq->head = 0;
	cq->tail = n;
	cq->ibv.cqe = (int)size - 1;
	pthread_spin_unlock(&cq->lock);
	return 0;
}
