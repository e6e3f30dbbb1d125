/* SPDX-License-Identifier: MIT */
/*
 * Verbs objects of the drop-in libibverbs: context setup, PD, MR,
 * completion channels, CQs, async events.  QPs live in qp.c.
 *
 * Return conventions (rdma-core): int verbs return 0 or a positive errno;
 * pointer verbs return NULL with errno set.  Objects are registered with
 * softibd (resource tracking, `softib status`); the data path never is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hca/hca.h"
#include "verbs/export.h"
#include "verbs/sib_verbs.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

int sib_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int sib_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int sib_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int sib_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
struct ibv_qp *sib_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_cq_ex *sib_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);

static int sib_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return EOPNOTSUPP;
}

int sib_context_init(struct sib_context *ctx)
{
	struct ibv_context *c = &ctx->vctx.context;
	int pfd[2], rc;
	const char *v = getenv("SOFTIB_VCRC");

	c->device = &ctx->dev->ibv;
	c->cmd_fd = -1;
	c->num_comp_vectors = 1;  /* any comp_vector is accepted (UCX passes CPU ids) */
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.sz = sizeof(struct verbs_context);
	c->ops.poll_cq = sib_poll_cq;
	c->ops.req_notify_cq = sib_req_notify_cq;
	c->ops.post_send = sib_post_send;
	c->ops.post_recv = sib_post_recv;
	c->ops.post_srq_recv = sib_post_srq_recv;
	ctx->vctx.create_qp_ex = sib_create_qp_ex;
	ctx->vctx.create_cq_ex = sib_create_cq_ex;
	sib_device_ops_init(ctx);
	ctx->vcrc = v && *v == '1';

	pthread_mutex_init(&c->mutex, NULL);
	pthread_mutex_init(&ctx->progress_lock, NULL);
	pthread_mutex_init(&ctx->obj_lock, NULL);
	ctx->mr_next = 1;
	rc = sib_key_seed(ctx);
	if (rc)
		fprintf(stderr, "softib: getrandom failed (%s): memory keys are guessable\n", strerror(rc));
	ctx->pid = getpid();

	if (pipe2(pfd, O_CLOEXEC))
		return errno;
	c->async_fd = pfd[0];
	ctx->async_wfd = pfd[1];
	(void)fcntl(ctx->async_wfd, F_SETFL, O_NONBLOCK);

	rc = sib_engine_start(ctx);
	if (rc) {
		close(pfd[0]);
		close(pfd[1]);
	}
	return rc;
}

void sib_context_fini(struct sib_context *ctx)
{
	sib_engine_stop(ctx);
	if (getenv("SOFTIB_STATS")) {
		fprintf(stderr, "softib %s: rx_drop:", ctx->dev->ibv.name);
		for (unsigned int i = 0; i < SIB_RX_DROP_COUNT; i++)
			fprintf(stderr, " %s=%llu", sib_rx_drop_name(i), (unsigned long long)ctx->rx_drop[i]);
		fprintf(stderr,
			" tx_no_dest=%llu tx_ring_full=%llu rx_skipped_slots=%llu inbox_dropped=%llu "
			"ack_timeouts=%llu rnr_naks=%llu seq_naks=%llu\n",
			(unsigned long long)ctx->tx_no_dest, (unsigned long long)ctx->tx_ring_full,
			(unsigned long long)ctx->rx_skipped_slots,
			(unsigned long long)atomic_load(&ctx->inbox.hdr->dropped),
			(unsigned long long)ctx->ack_timeouts, (unsigned long long)ctx->rnr_naks,
			(unsigned long long)ctx->seq_naks);
	}
	close(ctx->vctx.context.async_fd);
	close(ctx->async_wfd);
	for (unsigned int i = 0; i < 256; i++)
		free(ctx->qp_tbl[i]);
	for (unsigned int i = 0; i < SIB_MR_DIR; i++)
		free(ctx->mr_dir[i]);
}

/* ---- async events: one sib_async_rec per event on a pipe ---- */

void sib_async_event(struct sib_context *ctx, enum ibv_event_type type, uint32_t id, uint32_t gen)
{
	struct sib_async_rec r = { .type = type, .id = id, .gen = gen };

	/* Non-blocking: a consumer that never reads loses events, not progress. */
	if (write(ctx->async_wfd, &r, sizeof(r)) != sizeof(r))
		return;
}

static bool is_qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return true;
	default:
		return false;
	}
}

SIB_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sib_context *ctx = to_sctx(context);
	struct sib_async_rec r;

	for (;;) {
		ssize_t n = read(context->async_fd, &r, sizeof(r));

		if (n != sizeof(r)) {
			if (n >= 0)
				errno = EIO;
			return -1;
		}
		memset(event, 0, sizeof(*event));
		event->event_type = r.type;
		if (is_qp_event(r.type)) {
			struct sib_qp *qp;

			pthread_mutex_lock(&ctx->obj_lock);
			qp = sib_qp_lookup(ctx, r.id);
			if (qp && qp->obj_handle == r.gen)
				atomic_fetch_add(&qp->events_reported, 1);
			else
				qp = NULL;
			pthread_mutex_unlock(&ctx->obj_lock);
			if (!qp)
				continue; /* the QP was destroyed: drop its event */
			event->element.qp = &qp->ibv.qp_base;
		} else if (r.type == IBV_EVENT_CQ_ERR) {
			struct sib_cq *cq = sib_cq_deliver(r.id, r.gen, true);

			if (!cq)
				continue;
			event->element.cq = (struct ibv_cq *)&cq->ibv;
		} else {
			event->element.port_num = (int)r.id;
		}
		return 0;
	}
}

/* Count acknowledged events and wake a destroy waiting for them (rdma-core). */
static void ack_events(pthread_mutex_t *mutex, pthread_cond_t *cond, uint32_t *completed, unsigned int n)
{
	pthread_mutex_lock(mutex);
	*completed += n;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mutex);
}

SIB_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	if (event->event_type == IBV_EVENT_CQ_ERR) {
		struct ibv_cq *cq = event->element.cq;

		ack_events(&cq->mutex, &cq->cond, &cq->async_events_completed, 1);
	} else if (is_qp_event(event->event_type)) {
		struct ibv_qp *qp = event->element.qp;

		ack_events(&qp->mutex, &qp->cond, &qp->events_completed, 1);
	}
}

/* ---- protection domains ---- */

SIB_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct sib_context *ctx = to_sctx(context);
	struct sib_pd *pd = calloc(1, sizeof(*pd));
	int rc;

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	rc = sib_obj_create(ctx->dev_handle, SIB_OBJ_PD, 0, &pd->ibv.handle, NULL);
	if (rc) {
		free(pd);
		errno = rc;
		return NULL;
	}
	pd->ibv.context = context;
	return &pd->ibv;
}

SIB_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sib_pd *pd = (struct sib_pd *)ibpd;

	if (atomic_load(&pd->usecnt))
		return EBUSY;
	sib_obj_destroy(pd->ibv.handle);
	free(pd);
	return 0;
}

/* ---- memory regions ---- */

static int mr_publish(struct sib_context *ctx, struct sib_mr *mr)
{
	uint32_t limit = SIB_MR_DIR * SIB_MR_PAGE;
	int rc = ENOMEM;

	pthread_mutex_lock(&ctx->obj_lock);
	for (uint32_t tries = 0; tries < limit; tries++) {
		uint32_t idx = ctx->mr_next;
		struct sib_mr ***page = &ctx->mr_dir[idx / SIB_MR_PAGE];

		ctx->mr_next = idx + 1 < limit ? idx + 1 : 1;
		if (!*page) {
			*page = calloc(SIB_MR_PAGE, sizeof(**page));
			if (!*page)
				break;
		}
		if ((*page)[idx % SIB_MR_PAGE])
			continue;
		/* An unpredictable key byte (hca/keys.c): keys cannot be
		 * guessed, and a stale key for a reused index fails the (2)
		 * key check but once in 256 (and indices are reused only
		 * after mr_next has gone round). */
		mr->ibv.lkey = mr->ibv.rkey = idx << 8 | sib_key_byte(ctx);
		atomic_store_explicit((_Atomic(struct sib_mr *) *)&(*page)[idx % SIB_MR_PAGE], mr,
				      memory_order_release);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&ctx->obj_lock);
	return rc;
}

struct sib_mr *sib_mr_lookup(struct sib_context *ctx, uint32_t key)
{
	uint32_t idx = key >> 8;
	struct sib_mr **page;
	struct sib_mr *mr;

	if (idx >= SIB_MR_DIR * SIB_MR_PAGE)
		return NULL;
	page = ctx->mr_dir[idx / SIB_MR_PAGE];
	if (!page)
		return NULL;
	mr = atomic_load_explicit((_Atomic(struct sib_mr *) *)&page[idx % SIB_MR_PAGE],
				  memory_order_acquire);
	/* (1) index live, (2) key byte matches */
	if (!mr || mr->ibv.lkey != key)
		return NULL;
	return mr;
}

/* rdma-core ibv_reg_mr_iova2 semantics; iova is what remote peers address. */
SIB_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length,
					   uint64_t iova, unsigned int access)
{
	struct sib_context *ctx = to_sctx(ibpd->context);
	struct sib_pd *pd = (struct sib_pd *)ibpd;
	struct sib_mr *mr;
	int rc;

	access &= ~IBV_ACCESS_OPTIONAL_RANGE;
	rc = sib_mr_access_check(access);
	if (!rc && (access & IBV_ACCESS_ON_DEMAND))
		rc = EOPNOTSUPP; /* no ODP (device caps say so) */
	if (!rc && (length == 0 || (uint64_t)length > UINT64_MAX - iova))
		rc = EINVAL;
	if (rc) {
		errno = rc;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	rc = sib_obj_create(ctx->dev_handle, SIB_OBJ_MR, 0, &mr->handle, NULL);
	if (rc)
		goto err_free;
	mr->ibv.context = ibpd->context;
	mr->ibv.pd = ibpd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = mr->handle;
	mr->range.pd = ibpd->handle;
	mr->range.iova = iova;
	mr->range.length = length;
	mr->range.access = access;
	rc = mr_publish(ctx, mr);
	if (rc)
		goto err_obj;
	atomic_fetch_add(&pd->usecnt, 1);
	return &mr->ibv;
err_obj:
	sib_obj_destroy(mr->handle);
err_free:
	free(mr);
	errno = rc;
	return NULL;
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

SIB_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct sib_context *ctx = to_sctx(ibmr->context);
	struct sib_mr *mr = to_smr(ibmr);
	uint32_t idx = ibmr->lkey >> 8;

	/* Unpublish under the progress lock: no packet is using it after. */
	pthread_mutex_lock(&ctx->progress_lock);
	pthread_mutex_lock(&ctx->obj_lock);
	ctx->mr_dir[idx / SIB_MR_PAGE][idx % SIB_MR_PAGE] = NULL;
	pthread_mutex_unlock(&ctx->obj_lock);
	for (struct sib_qp *qp = ctx->qp_list; qp; qp = qp->next_in_ctx)
		sib_qp_transport_mr_gone(qp, mr);
	pthread_mutex_unlock(&ctx->progress_lock);
	atomic_fetch_sub(&((struct sib_pd *)ibmr->pd)->usecnt, 1);
	sib_obj_destroy(mr->handle);
	free(mr);
	return 0;
}

/* ---- completion channels ---- */

SIB_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sib_context *ctx = to_sctx(context);
	struct sib_comp_channel *ch = calloc(1, sizeof(*ch));
	int pfd[2], rc;

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		rc = errno;
		goto err;
	}
	rc = sib_obj_create(ctx->dev_handle, SIB_OBJ_COMP_CHANNEL, 0, &ch->handle, NULL);
	if (rc) {
		close(pfd[0]);
		close(pfd[1]);
		goto err;
	}
	(void)fcntl(pfd[1], F_SETFL, O_NONBLOCK);
	ch->ibv.context = context;
	ch->ibv.fd = pfd[0];
	ch->wfd = pfd[1];
	return &ch->ibv;
err:
	free(ch);
	errno = rc;
	return NULL;
}

SIB_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sib_comp_channel *ch = (struct sib_comp_channel *)channel;

	if (channel->refcnt)
		return EBUSY;
	sib_obj_destroy(ch->handle);
	close(ch->ibv.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

SIB_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct sib_context *ctx = to_sctx(channel->context);
	struct sib_comp_rec rec;
	struct sib_cq *c;
	ssize_t n;

	/* The app stops polling: let the engine sleep on the inbox futex
	 * (woken by packets) instead of napping. */
	atomic_fetch_add(&ctx->app_blocked, 1);
	sib_engine_kick(ctx);
	do {
		n = read(channel->fd, &rec, sizeof(rec));
		c = n == sizeof(rec) ? sib_cq_deliver(rec.cq_id, rec.cq_gen, false) : NULL;
	} while (n == sizeof(rec) && !c); /* events of destroyed CQs are dropped */
	atomic_fetch_sub(&ctx->app_blocked, 1);
	if (!c) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	*cq = (struct ibv_cq *)&c->ibv;
	*cq_context = c->ibv.cq_context;
	return 0;
}

SIB_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	ack_events(&cq->mutex, &cq->cond, &cq->comp_events_completed, nevents);
}

/* ---- fork, rdma-core compatibility helpers ---- */

SIB_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
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
