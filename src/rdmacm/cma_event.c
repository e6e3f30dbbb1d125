/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's events: rdma_get_cm_event reads one SIB_CTL_CM_EVENT message
 * from the channel's socket (blocking unless the fd is O_NONBLOCK: EAGAIN),
 * checks it (softibd's messages are bounded like any input), and does what
 * rdma-core's librdmacm does in user space before handing it out (rdma-core
 * v44 cma.c rdma_get_cm_event): QUERY after address and route resolution,
 * a new id for CONNECT_REQUEST, the RTR/RTS and RTU of an active RC id on
 * CONNECT_RESPONSE, QP to ERR on REJECTED, the UD parameters of SIDR and
 * multicast.  rdma_ack_cm_event counts the ack for rdma_destroy_id.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "common/ctl.h"
#include "rdmacm/cma_priv.h"

/* Messages from softibd that failed the checks (counted, dropped). */
static _Atomic unsigned long cma_bad_events;

static int set_errno(int e)
{
	errno = e;
	return -1;
}

/*
 * The active side after the REP (rdma-core ucma_process_conn_resp): with a
 * QP, RTR and RTS from rdma_init_qp_attr; then ACCEPT, which softibd sends
 * as the RTU.  On failure the QP goes to ERR and the connection is
 * rejected.  0 or -1/errno.
 */
int cma_process_conn_resp(struct cma_id *p)
{
	struct sib_ctl_cm c;
	int e;

	if (p->id.qp && (cma_modify_qp_rtr(p, RDMA_MAX_RESP_RES) ||
			 cma_modify_qp_rts(p, RDMA_MAX_INIT_DEPTH)))
		goto err;
	cma_id_cmd(p, &c, SIB_CM_CMD_ACCEPT);
	if (p->id.qp)
		c.conn.qp_num = p->id.qp->qp_num;
	c.conn.qp_type = p->id.qp_type;
	if (cma_call(&c, NULL))
		goto err;
	return 0;
err:
	e = errno;
	(void)cma_modify_qp_err(p);
	cma_id_cmd(p, &c, SIB_CM_CMD_REJECT);
	(void)cma_call(&c, NULL);
	return set_errno(e);
}

static void copy_conn(struct cma_event *evt, const struct sib_ctl_cm_event *w)
{
	struct rdma_conn_param *c = &evt->event.param.conn;

	c->qp_num = w->conn.qp_num & 0xffffff;
	c->responder_resources = w->conn.responder_resources;
	c->initiator_depth = w->conn.initiator_depth;
	c->flow_control = w->conn.flow_control;
	c->retry_count = w->conn.retry_count & 7;
	c->rnr_retry_count = w->conn.rnr_retry_count & 7;
	c->srq = w->conn.srq;
	if (w->pdata_len) {
		memcpy(evt->private_data, w->pdata, w->pdata_len);
		c->private_data = evt->private_data;
		c->private_data_len = (uint8_t)(w->pdata_len > 255 ? 255 : w->pdata_len);
	}
}

static void copy_ud(struct cma_event *evt, const struct sib_ctl_cm_event *w)
{
	struct rdma_ud_param *u = &evt->event.param.ud;

	cma_ah_from_wire(&u->ah_attr, &w->ah);
	u->qp_num = w->ud_qp_num & 0xffffff;
	u->qkey = w->ud_qkey;
	if (w->pdata_len) {
		memcpy(evt->private_data, w->pdata, w->pdata_len);
		u->private_data = evt->private_data;
		u->private_data_len = (uint8_t)(w->pdata_len > 255 ? 255 : w->pdata_len);
	}
}

/* CONNECT_REQUEST: the new id on the listener's channel, context inherited;
 * a synchronous listener's new id gets its own channel.  0, or -1: drop. */
static int conn_req(struct cma_event *evt, struct cma_id *listen, const struct sib_ctl_cm_event *w)
{
	struct cma_device *d;
	struct cma_id *p;

	p = cma_alloc_id(listen->id.channel, listen->id.context, listen->id.ps, listen->id.qp_type);
	if (!p)
		return -1;
	if (listen->sync) {
		/* the listener's private channel is not the new id's to close */
		p->sync = false;
	}
	p->handle = w->id;
	p->id.route.addr.src_storage = listen->id.route.addr.src_storage;
	d = cma_dev_from_map(w->dev_index, w->dev_gen);
	if (d)
		cma_id_set_dev(p, d, w->port_num);
	(void)cma_query(p);
	if (!p->dev && listen->dev)
		cma_id_set_dev(p, listen->dev, listen->id.port_num);
	cma_id_insert(p);
	if (listen->sync && cma_migrate(p, NULL)) {
		struct sib_ctl_cm c;

		cma_id_cmd(p, &c, SIB_CM_CMD_REJECT);
		(void)cma_call(&c, NULL);
		rdma_destroy_id(&p->id);
		return -1;
	}
	p->initiator_depth = w->conn.initiator_depth;
	p->responder_resources = w->conn.responder_resources;
	evt->event.id = &p->id;
	evt->event.listen_id = &listen->id;
	if (listen->id.qp_type == IBV_QPT_UD)
		copy_ud(evt, w);
	else
		copy_conn(evt, w);
	return 0;
}

/* A group's event (ucma_process_join): the group is the one whose cookie
 * softibd echoes in listen_uid (one we still have, else the event is
 * dropped: -1); on JOIN the id's UD QP is attached to it before the user
 * sees the event (not for a send-only member), and a failed attach turns
 * the event into MULTICAST_ERROR. */
static int mc_event(struct cma_event *evt, struct cma_id *p, const struct sib_ctl_cm_event *w)
{
	struct ibv_ah_attr *ah = &evt->event.param.ud.ah_attr;
	struct cma_mc *mc;

	pthread_mutex_lock(&p->mut);
	for (mc = p->mc_list; mc && (uint64_t)(uintptr_t)mc != w->listen_uid; mc = mc->next)
		;
	if (!mc) {
		pthread_mutex_unlock(&p->mut);
		return -1;
	}
	evt->event.param.ud.private_data = mc->context;
	evt->event.param.ud.private_data_len = 0;
	evt->mc = mc;
	if (evt->event.event == RDMA_CM_EVENT_MULTICAST_JOIN) {
		mc->mgid = ah->grh.dgid;
		mc->mlid = ah->dlid;
		if (p->id.qp && !mc->attached &&
		    mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
			int e = ibv_attach_mcast(p->id.qp, &mc->mgid, mc->mlid);

			if (e) {
				evt->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
				evt->event.status = -e;
			} else {
				mc->attached = true;
			}
		}
	}
	pthread_mutex_unlock(&p->mut);
	return 0;
}

/* Do the library's part of event w for id p.  0: hand it out; -1: drop. */
static int process(struct cma_event *evt, struct cma_id *p, const struct sib_ctl_cm_event *w)
{
	bool ud = p->id.qp_type == IBV_QPT_UD;

	switch (w->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (cma_query(p)) {
			evt->event.event = RDMA_CM_EVENT_ADDR_ERROR;
			evt->event.status = -errno;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (cma_query(p)) {
			evt->event.event = RDMA_CM_EVENT_ROUTE_ERROR;
			evt->event.status = -errno;
		}
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return conn_req(evt, p, w);
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		copy_conn(evt, w);
		if (!p->id.qp || w->status)
			break;
		if (cma_process_conn_resp(p)) {
			p->connect_error = true;
			evt->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
			evt->event.status = -errno;
		} else {
			evt->event.event = RDMA_CM_EVENT_ESTABLISHED;
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (ud)
			copy_ud(evt, w);
		else
			copy_conn(evt, w);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (p->connect_error)
			return -1;
		copy_conn(evt, w);
		(void)cma_modify_qp_err(p);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (p->connect_error)
			return -1;
		copy_conn(evt, w);
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		copy_ud(evt, w);
		return mc_event(evt, p, w);
	default:
		copy_conn(evt, w);
		break;
	}
	return 0;
}

/* Is m a well-formed event of n bytes?  (softibd's input is checked too.) */
static bool event_ok(const struct sib_ctl_msg *m, int n)
{
	size_t head = offsetof(struct sib_ctl_msg, u) + offsetof(struct sib_ctl_cm_event, pdata);
	const struct sib_ctl_cm_event *w = &m->u.cm_event;

	if ((size_t)n < head || m->hdr.magic != SIB_CTL_MAGIC || m->hdr.op != SIB_CTL_CM_EVENT)
		return false;
	if (w->pdata_len > SIB_CM_PDATA_MAX || (size_t)n < head + w->pdata_len)
		return false;
	return w->event <= RDMA_CM_EVENT_TIMEWAIT_EXIT;
}

RDMACM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct sib_ctl_msg *m;
	struct cma_event *evt;
	struct cma_id *p;
	int fd, n, e;

	if (!channel || !event)
		return set_errno(EINVAL);
	/* the channel may be destroyed while we block: never look at it again */
	fd = channel->fd;
	if (cma_init())
		return -1;
	m = malloc(sizeof(*m));
	evt = malloc(sizeof(*evt));
	if (!m || !evt) {
		e = ENOMEM;
		goto err;
	}
	for (;;) {
		const struct sib_ctl_cm_event *w = &m->u.cm_event;

		n = sib_ctl_recv(fd, m, NULL);
		if (n < 0 && n != -EMSGSIZE && n != -EBADF) {
			e = -n;
			goto err;
		}
		/* the channel's socket ended (0), or the library closed the fd
		 * before this read began (EBADF): the same destroy, seen earlier */
		if (n == 0 || n == -EBADF) {
			int fl = fcntl(fd, F_GETFL); /* -1: closed meanwhile */

			if (cma_channel_was_closed(fd) && (fl < 0 || !(fl & O_NONBLOCK))) {
				free(m);
				free(evt);
				/* destroyed under a blocked reader: as with the
				 * kernel, the read never returns (a cancellation
				 * point, like read) */
				for (;;)
					pause();
			}
			e = n ? EBADF : ENODEV; /* never ours, or softibd closed it */
			goto err;
		}
		if (n < 0 || !event_ok(m, n)) {
			atomic_fetch_add(&cma_bad_events, 1);
			continue;
		}
		/* CONNECT_REQUEST belongs to the listener until it is acked */
		if (w->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			p = cma_id_lookup_deliver(w->listen_id, w->listen_uid);
		else
			p = cma_id_lookup_deliver(w->id, w->uid);
		if (!p) {
			if (w->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				/* its listener is gone: refuse the orphan */
				struct sib_ctl_cm c = { .cmd = SIB_CM_CMD_DESTROY_ID, .id = w->id };

				(void)cma_call(&c, NULL);
			}
			continue;
		}
		memset(evt, 0, sizeof(*evt));
		evt->id_priv = p;
		evt->event.id = &p->id;
		evt->event.event = w->event;
		evt->event.status = w->status;
		if (process(evt, p, w)) {
			cma_complete_event(p);
			continue;
		}
		break;
	}
	free(m);
	*event = &evt->event;
	return 0;
err:
	free(m);
	free(evt);
	return set_errno(e);
}

RDMACM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *evt = (struct cma_event *)event;

	if (!event)
		return set_errno(EINVAL);
	cma_complete_event(evt->id_priv);
	free(evt);
	return 0;
}
