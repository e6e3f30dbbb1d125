// SPDX-License-Identifier: MIT
/*
 * The process's event connection to softibd and its reader thread (DESIGN
 * principle 7, docs/events.md): pushed port and device events become verbs
 * async events on every context of the device (IBA 11.6.3; as the kernel's
 * ib_dispatch_event reaches every open ucontext).  The thread blocks in
 * recv (no CPU when idle) and is the only deliverer, so no event is ever
 * raised from inside the verb that caused it (seed 004).  The connection
 * comes from the host (sib_hca_host.subscribe); ports are re-read from the
 * map only through the bounded seqlock reader.  Locking: ev_lock
 * guards the context list and every context's port cache; it is taken
 * before a context's progress_lock, never after.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/ctl.h"
#include "common/fabric_view.h"
#include "hca/hca.h"

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sib_context *ev_ctxs;  /* registered contexts */
static int ev_fd = -1;               /* subscribed connection; -1 before or after */
static bool ev_running;              /* the reader thread runs */

bool sib_ctx_fatal(struct sib_context *ctx)
{
	return atomic_load_explicit(&ctx->ev.fatal, memory_order_acquire) != 0;
}


/*
 * DEVICE_FATAL (IBA 11.6.3.1, "CA catastrophic error"; rdma-core after a
 * device is unplugged): every QP not in RESET goes to ERR and its posted WRs
 * flush with IBV_WC_WR_FLUSH_ERR, as a driver does after an internal error;
 * the engine flushes what is posted later.  Once per context.  ev_lock held.
 */
static void ctx_fatal(struct sib_context *ctx)
{
	if (atomic_exchange_explicit(&ctx->ev.fatal, 1, memory_order_acq_rel))
		return;
	pthread_mutex_lock(&ctx->progress_lock);
	sib_engine_take_new(ctx); /* the schedule is complete under the lock */
	for (struct sib_qp *qp = ctx->eng.qp_list; qp; qp = qp->next_in_ctx)
		if (qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_ERR)
			sib_qp_enter_error(qp);
	pthread_mutex_unlock(&ctx->progress_lock);
	sib_async_event(ctx, IBV_EVENT_DEVICE_FATAL, 0, 0);
	sib_engine_kick(ctx);
}

/*
 * A port is now (state, lid, lmc, sm_lid): raise what changed since the
 * context last heard, as an SMA trap would tell the driver.  ev_lock held.
 */
static void port_update(struct sib_context *ctx, unsigned int pn, uint8_t state, uint16_t lid,
			uint8_t lmc, uint16_t sm_lid)
{
	struct sib_ctx_events *e = &ctx->ev;
	unsigned int i = pn - 1;

	if (i >= SIB_MAX_PORTS || sib_ctx_fatal(ctx))
		return;
	if (state != e->state[i]) {
		if (state == IBV_PORT_ACTIVE)
			sib_async_event(ctx, IBV_EVENT_PORT_ACTIVE, pn, 0);
		else if (e->state[i] == IBV_PORT_ACTIVE)
			sib_async_event(ctx, IBV_EVENT_PORT_ERR, pn, 0);
	}
	if (state == IBV_PORT_ACTIVE && (lid != e->lid[i] || lmc != e->lmc[i]))
		sib_async_event(ctx, IBV_EVENT_LID_CHANGE, pn, 0);
	if (state == IBV_PORT_ACTIVE && sm_lid != e->sm_lid[i])
		sib_async_event(ctx, IBV_EVENT_SM_CHANGE, pn, 0);
	e->state[i] = state;
	e->lid[i] = lid;
	e->lmc[i] = lmc;
	e->sm_lid[i] = sm_lid;
}

/*
 * Bring a context up to date with the map: after an OVERFLOW (events were
 * lost) and at attach.  baseline: only record, raise nothing.  ev_lock held.
 */
static void ctx_resync(struct sib_context *ctx, bool baseline)
{
	const struct sib_shm_device *sd = &sib_fabric->devs[ctx->dev->index];
	struct sib_shm_port p;

	if (atomic_load_explicit(&sd->gen, memory_order_acquire) != ctx->dev->gen) {
		ctx_fatal(ctx); /* removed (and perhaps replaced) meanwhile */
		return;
	}
	for (unsigned int pn = 1; pn <= sib_fabric_num_ports(sd); pn++) {
		/* bounded (fabric_view.h); a port that kept changing is left as last
		 * heard: the event that changed it is on its way or was counted lost */
		if (sib_fabric_port_read(sib_fabric, SIB_MAX_DEVICES, ctx->dev->index,
					 (uint8_t)pn, &p))
			continue;
		if (baseline) {
			ctx->ev.state[pn - 1] = p.state;
			ctx->ev.lid[pn - 1] = p.lid;
			ctx->ev.lmc[pn - 1] = p.lmc;
			ctx->ev.sm_lid[pn - 1] = p.sm_lid;
		} else {
			port_update(ctx, pn, p.state, p.lid, p.lmc, p.sm_lid);
		}
	}
}

static bool concerns(const struct sib_context *ctx, const struct sib_ctl_event *ev)
{
	return ctx->dev->index == ev->dev_index && ctx->dev->gen == ev->dev_gen;
}

void sib_events_dispatch(const struct sib_ctl_event *ev)
{
	struct sib_context *ctx;

	pthread_mutex_lock(&ev_lock);
	for (ctx = ev_ctxs; ctx; ctx = ctx->ev.next) {
		switch (ev->type) {
		case SIB_EV_PORT_CHANGE:
		case SIB_EV_LID_CHANGE:
		case SIB_EV_SM_CHANGE:
			if (concerns(ctx, ev))
				port_update(ctx, ev->port_num, ev->state, ev->lid, ev->lmc, ev->sm_lid);
			break;
		case SIB_EV_DEVICE_REMOVE:
			if (concerns(ctx, ev))
				ctx_fatal(ctx);
			break;
		case SIB_EV_OVERFLOW:
			ctx_resync(ctx, false);
			break;
		default:
			break; /* DEVICE_ADD: seen by the next ibv_get_device_list */
		}
	}
	pthread_mutex_unlock(&ev_lock);
}

/* softibd is gone: every device with it (rdma-core: the devices were unplugged). */
static void all_fatal(void)
{
	pthread_mutex_lock(&ev_lock);
	for (struct sib_context *ctx = ev_ctxs; ctx; ctx = ctx->ev.next)
		ctx_fatal(ctx);
	close(ev_fd);
	ev_fd = -1;
	ev_running = false;
	pthread_mutex_unlock(&ev_lock);
}

static void *reader_main(void *arg)
{
	struct sib_ctl_msg m;
	int n;

	(void)arg;
	for (;;) {
		n = sib_ctl_recv(ev_fd, &m, NULL); /* blocks: no CPU while nothing happens */
		if (n == 0 || (n < 0 && n != -EMSGSIZE))
			break;
		/* The daemon's bytes, checked as any message: whole, ours, an event. */
		if (n < (int)(sizeof(m.hdr) + sizeof(m.u.event)) || m.hdr.magic != SIB_CTL_MAGIC ||
		    m.hdr.op != SIB_CTL_EVENT || m.u.event.type == 0 ||
		    m.u.event.type >= SIB_EV_TYPE_MAX)
			continue;
		sib_events_dispatch(&m.u.event);
	}
	all_fatal();
	return NULL;
}

/*
 * Open the event connection (the host's subscribe hook) and start the
 * reader.  ev_lock held.  0 or errno; 0 without a reader when the host
 * pushes no events.
 */
static int reader_start(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t tid;
	int fd, rc;

	if (!sib_host || !sib_host->subscribe)
		return 0;
	fd = sib_host->subscribe();
	if (fd < 0)
		return -fd;
	ev_fd = fd;
	/* No application signal handler runs on our thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &attr, reader_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(fd);
		ev_fd = -1;
		return rc;
	}
	ev_running = true;
	return 0;
}

/*
 * fork(): the child has no reader thread (threads do not survive fork) and
 * must not share the parent's event connection (the parent's reader would
 * take the events, or both would read halves).  Keep ev_lock consistent
 * across the fork, and in the child forget the reader, its connection (our
 * copy of the fd is closed) and the parent's contexts, so that the child's
 * first open starts its own reader on its own connection.
 */
static void ev_prepare(void)
{
	pthread_mutex_lock(&ev_lock);
}

static void ev_parent(void)
{
	pthread_mutex_unlock(&ev_lock);
}

static void ev_child(void)
{
	if (ev_fd >= 0)
		close(ev_fd);
	ev_fd = -1;
	ev_running = false;
	ev_ctxs = NULL;
	pthread_mutex_init(&ev_lock, NULL);
}

static void ev_atfork(void)
{
	(void)pthread_atfork(ev_prepare, ev_parent, ev_child);
}

int sib_events_attach(struct sib_context *ctx)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int rc = 0;

	pthread_once(&once, ev_atfork);
	pthread_mutex_lock(&ev_lock);
	if (!ev_running)
		rc = reader_start();
	if (!rc) {
		ctx_resync(ctx, true);
		ctx->ev.next = ev_ctxs;
		ev_ctxs = ctx;
	}
	pthread_mutex_unlock(&ev_lock);
	return rc;
}

void sib_events_detach(struct sib_context *ctx)
{
	struct sib_context **pp;

	pthread_mutex_lock(&ev_lock);
	for (pp = &ev_ctxs; *pp; pp = &(*pp)->ev.next)
		if (*pp == ctx) {
			*pp = ctx->ev.next;
			break;
		}
	pthread_mutex_unlock(&ev_lock);
}
