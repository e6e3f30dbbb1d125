/* SPDX-License-Identifier: MIT */
/*
 * What libibverbs itself owns in rdma-core: completion channels and the
 * reading and acknowledging of async and completion events (the records
 * come from the HCA, provider.h; the HCA resolves them to objects).  The
 * verbs that reach the provider are in ops.c.
 *
 * Return conventions (rdma-core): int verbs return 0 or a positive errno;
 * pointer verbs return NULL with errno set.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs/export.h"
#include "verbs/sib_verbs.h"

SIB_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sib_async_rec r;

	for (;;) {
		ssize_t n = read(context->async_fd, &r, sizeof(r));

		if (n != sizeof(r)) {
			if (n >= 0)
				errno = EIO;
			return -1;
		}
		/* Records of objects destroyed since are skipped. */
		if (sib_hca_device_ops.async_event(context, &r, event))
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
	} else if (sib_is_qp_event(event->event_type)) {
		struct ibv_qp *qp = event->element.qp;

		ack_events(&qp->mutex, &qp->cond, &qp->events_completed, 1);
	} else if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED ||
		   event->event_type == IBV_EVENT_SRQ_ERR) {
		struct ibv_srq *srq = event->element.srq;

		ack_events(&srq->mutex, &srq->cond, &srq->events_completed, 1);
	}
}

/* ---- completion channels ---- */

SIB_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
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
	rc = sib_obj_create(sib_hca_device_ops.dev_handle(context), SIB_OBJ_COMP_CHANNEL, 0,
			    &ch->handle, NULL);
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
	struct sib_comp_rec rec;
	struct ibv_cq *c;
	ssize_t n;

	/* The app stops polling: the engine must serve the inbox itself. */
	sib_hca_device_ops.app_blocking(channel->context, 1);
	do {
		n = read(channel->fd, &rec, sizeof(rec));
		c = n == sizeof(rec) ? sib_hca_device_ops.cq_event(&rec) : NULL;
	} while (n == sizeof(rec) && !c); /* events of destroyed CQs are dropped */
	sib_hca_device_ops.app_blocking(channel->context, -1);
	if (!c) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	*cq = c;
	*cq_context = c->cq_context;
	return 0;
}

SIB_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	ack_events(&cq->mutex, &cq->cond, &cq->comp_events_completed, nevents);
}

