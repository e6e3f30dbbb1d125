// SPDX-License-Identifier: MIT
/*
 * The rdma_cm's connections (cma.h, docs/rdmacm.md): LISTEN, CONNECT,
 * ACCEPT, REJECT, DISCONNECT, NOTIFY over the IB CM agent (cm.h), the CM's
 * events turned into rdma_cm events, and rdma_init_qp_attr's values.  The
 * rules are linux cma.c's and cm.c's (research/rdmacm.md §2 "Events",
 * "rdma_init_qp_attr", §3 "CMA header", "PSNs", "Timers"); no code carried
 * over.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "common/sib_shm.h"
#include "subnet/cma_int.h"

#define CA_ACK_DELAY     15   /* the verbs device's local_ca_ack_delay (hca/provider.c) */
#define REQ_PDATA        92   /* private data fields (IBA 12.6) */
#define REP_PDATA        196
#define REJ_PDATA        148
#define SIDR_REQ_PDATA   216
#define SIDR_REP_PDATA   136
#define REJ_CONSUMER     28   /* IBA 12.6.7.2 */
#define REJ_ECE          35   /* rdma_reject_ece */
#define SIDR_REJECT      2    /* SIDR_REP status (12.6.12) */

bool cma_is_ud(const struct sib_cma_id *id)
{
	return id->qp_type == IBV_QPT_UD;
}

/* A UD id's Q_Key (cma_set_qkey): RDMA_UDP_QKEY in the UDP port space,
 * the broadcast group's in IPOIB's, else the one given (or UDP's). */
static uint32_t default_qkey(const struct sib_cma_id *id, uint32_t given)
{
	if (id->ps == SIB_CMA_PS_UDP)
		return SIB_CMA_UDP_QKEY;
	if (id->ps == SIB_CMA_PS_IPOIB)
		return SIB_CMA_IPOIB_QKEY;
	return given ? given : SIB_CMA_UDP_QKEY;
}

static uint64_t service_id(const struct sib_cma_id *id, uint16_t port)
{
	if (id->dst.family == CMA_AF_IB && id->dst.sid)
		return id->dst.sid;
	return (uint64_t)id->ps << 16 | port;
}

/* ---- the CMA header (research §3): 36 bytes before the user's data ---- */

static void hdr_build(const struct sib_cma_id *id, uint8_t *h)
{
	memset(h, 0, CMA_HDR_LEN);
	h[0] = 0; /* cma_version */
	h[1] = (uint8_t)((id->src.family == CMA_AF_INET ? 4 : 6) << 4);
	h[2] = (uint8_t)(id->src.port >> 8);
	h[3] = (uint8_t)id->src.port;
	if (id->src.family == CMA_AF_INET) {
		memcpy(h + 4 + 12, id->src.ip, 4);
		memcpy(h + 20 + 12, id->dst.ip, 4);
	} else {
		memcpy(h + 4, id->src.ip, 16);
		memcpy(h + 20, id->dst.ip, 16);
	}
}

/* Parse a header into src (the active side's address and port) and dst
 * (the address it asked for).  false: no valid header (dropped). */
static bool hdr_parse(const uint8_t *h, uint32_t len, struct cma_addr *src, struct cma_addr *dst)
{
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (len < CMA_HDR_LEN || h[0] != 0)
		return false;
	switch (h[1] >> 4) {
	case 4:
		src->family = dst->family = CMA_AF_INET;
		memcpy(src->ip, h + 4 + 12, 4);
		memcpy(dst->ip, h + 20 + 12, 4);
		break;
	case 6:
		src->family = dst->family = CMA_AF_INET6;
		memcpy(src->ip, h + 4, 16);
		memcpy(dst->ip, h + 20, 16);
		break;
	default:
		return false;
	}
	src->port = (uint16_t)(h[2] << 8 | h[3]);
	return true;
}

/* ---- paths ---- */

static void path_to_av(const struct sib_cm_path *p, struct sib_cm_av *av)
{
	memset(av, 0, sizeof(*av));
	av->slid = p->slid;
	av->dlid = p->dlid;
	memcpy(av->sgid, p->sgid, 16);
	memcpy(av->dgid, p->dgid, 16);
	av->flow_label = p->flow_label;
	av->traffic_class = p->traffic_class;
	av->hop_limit = p->hop_limit;
	av->sl = p->sl;
	av->rate = p->rate;
	av->packet_life_time = p->packet_life_time;
	av->global = p->hop_limit > 1;
}

/* The passive side's path from the REQ's primary path (the other way). */
static void av_to_path_rev(const struct sib_cm_av *av, uint8_t mtu, uint16_t pkey,
			   struct sib_cm_path *p)
{
	memset(p, 0, sizeof(*p));
	p->slid = av->dlid;
	p->dlid = av->slid;
	memcpy(p->sgid, av->dgid, 16);
	memcpy(p->dgid, av->sgid, 16);
	p->flow_label = av->flow_label;
	p->traffic_class = av->traffic_class;
	p->hop_limit = av->hop_limit;
	p->sl = av->sl;
	p->rate = av->rate;
	p->packet_life_time = av->packet_life_time;
	p->mtu = mtu;
	p->pkey = pkey;
	p->reversible = 1;
	p->numb_path = 1;
}

static void path_to_ah(const struct sib_cma_id *id, const struct sib_cm_path *p,
		       struct sib_cm_ah *ah)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->dgid, p->dgid, 16);
	ah->flow_label = p->flow_label;
	ah->dlid = p->dlid;
	ah->hop_limit = p->hop_limit;
	ah->traffic_class = p->traffic_class;
	ah->sl = p->sl;
	ah->static_rate = p->rate;
	ah->is_global = p->hop_limit > 1;
	ah->port_num = id->port;
}

/* linux cm.c cm_ack_timeout: the QP's Local ACK Timeout from the peer's
 * CA ACK delay and the path's packet life time. */
static uint8_t ack_timeout(uint8_t ca_ack_delay, uint8_t plt)
{
	unsigned int t = plt + 1u;

	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1u);
	return (uint8_t)(t > 31 ? 31 : t);
}

/* ---- events from the CM ---- */

static void fill_conn(const struct sib_cma_id *id, struct sib_ctl_cm_event *e)
{
	e->conn.qp_num = id->remote_qpn;
	e->conn.responder_resources = id->resp_res;
	e->conn.initiator_depth = id->init_depth;
	e->conn.retry_count = id->retry_cnt;
	e->conn.rnr_retry_count = id->rnr_retry;
	e->conn.qp_type = (uint8_t)id->qp_type;
}

static void fill_pdata(struct sib_ctl_cm_event *e, const uint8_t *p, uint32_t len, uint32_t skip)
{
	if (!p || len <= skip) {
		e->pdata_len = 0;
		return;
	}
	len -= skip;
	if (len > SIB_CM_PDATA_MAX)
		len = SIB_CM_PDATA_MAX;
	memcpy(e->pdata, p + skip, len);
	e->pdata_len = len;
}

static void ev_unreachable(struct sib_cma_id *id, int32_t status)
{
	id->state = CMA_DONE;
	id->cma->ctr.unreachable++;
	cma_post(id, SIB_CMA_EV_UNREACHABLE, status);
}

static void on_rep(struct sib_cma_id *id, const struct sib_cm_event *ev)
{
	const struct sib_cm_rep_param *r = &ev->u.rep;
	struct sib_ctl_cm_event *e;

	if (id->state != CMA_CONNECT)
		return;
	id->remote_qpn = r->qpn;
	id->remote_psn = r->starting_psn & 0xffffff;
	/* the peer's view turned round (cm.c cm_rep_handler) */
	id->init_depth = r->responder_resources;
	id->resp_res = r->initiator_depth;
	id->rnr_retry = r->rnr_retry_count;
	id->target_ack_delay = r->target_ack_delay;
	id->state = CMA_CONN_RESPONSE;
	if ((e = cma_post(id, SIB_CMA_EV_CONNECT_RESPONSE, 0))) {
		fill_conn(id, e);
		e->conn.flow_control = r->flow_control;
		e->conn.srq = r->srq;
		fill_pdata(e, ev->pdata, ev->pdata_len, 0);
	}
}

static void on_sidr_rep(struct sib_cma_id *id, const struct sib_cm_event *ev)
{
	const struct sib_cm_sidr_rep_param *r = &ev->u.sidr_rep;
	struct sib_ctl_cm_event *e;

	if (id->state != CMA_CONNECT)
		return;
	if (r->status) {
		ev_unreachable(id, r->status);
		return;
	}
	if (r->qkey != default_qkey(id, r->qkey)) { /* cma_sidr_rep_handler's Q_Key check */
		ev_unreachable(id, -EINVAL);
		return;
	}
	id->remote_qpn = r->qpn;
	id->qkey = r->qkey;
	id->state = CMA_ESTABLISHED;
	id->cma->ctr.established++;
	if ((e = cma_post(id, SIB_CMA_EV_ESTABLISHED, 0))) {
		path_to_ah(id, &id->path[0], &e->ah);
		e->ud_qp_num = r->qpn;
		e->ud_qkey = r->qkey;
		e->conn.qp_num = r->qpn;
		e->conn.qkey = r->qkey;
		e->conn.qp_type = (uint8_t)id->qp_type;
		fill_pdata(e, ev->pdata, ev->pdata_len, 0);
	}
}

/* A passive id's request is answered (accepted, rejected, or ended by the
 * peer): its listener's backlog frees. */
static void listener_done(struct sib_cma_id *id)
{
	if (id->listener && id->listener->pending)
		id->listener->pending--;
	id->listener = NULL;
}

/* A REJ: REJECTED on an id in the handshake, the passive one too while its
 * CONNECT_REQUEST waits for rdma_accept (the peer died after its REQ), and
 * an active one that sent its RTU when the passive side went before the
 * RTU reached it (its REP_SENT id sends a REJ; the IB CM passes a REJ on
 * in ESTABLISHED, cm.c cm_rej_handler): the kernel's cma_ib_handler
 * reports them all in RDMA_CM_CONNECT.  A later ACCEPT is EINVAL. */
static void on_rej(struct sib_cma_id *id, const struct sib_cm_event *ev)
{
	struct sib_ctl_cm_event *e;

	if (id->state != CMA_CONNECT && id->state != CMA_ACCEPTED &&
	    id->state != CMA_CONN_RESPONSE && id->state != CMA_REQ_RCVD &&
	    id->state != CMA_ESTABLISHED)
		return;
	if (id->state == CMA_REQ_RCVD)
		listener_done(id);
	id->state = CMA_DONE;
	id->cma->ctr.rejected++;
	if ((e = cma_post(id, SIB_CMA_EV_REJECTED, ev->u.rej.reason)))
		fill_pdata(e, ev->pdata, ev->pdata_len, 0);
}

static void on_established(struct sib_cma_id *id)
{
	struct sib_ctl_cm_event *e;

	if (id->state != CMA_ACCEPTED)
		return;
	id->state = CMA_ESTABLISHED;
	id->cma->ctr.established++;
	if ((e = cma_post(id, SIB_CMA_EV_ESTABLISHED, 0)))
		fill_conn(id, e);
}

/* The handler of every connection's CM id (ctx: the cma id). */
static int conn_handler(struct sib_cm_id *cm, const struct sib_cm_event *ev, void *ctx)
{
	struct sib_cma_id *id = ctx;

	(void)cm;
	switch (ev->type) {
	case SIB_CM_REP_RECEIVED:
		on_rep(id, ev);
		break;
	case SIB_CM_SIDR_REP_RECEIVED:
		on_sidr_rep(id, ev);
		break;
	case SIB_CM_REJ_RECEIVED:
		on_rej(id, ev);
		break;
	case SIB_CM_RTU_RECEIVED:
	case SIB_CM_USER_ESTABLISHED:
		on_established(id);
		break;
	case SIB_CM_REQ_ERROR:
	case SIB_CM_REP_ERROR:
	case SIB_CM_SIDR_REQ_ERROR:
		if (id->state == CMA_CONNECT || id->state == CMA_ACCEPTED)
			ev_unreachable(id, -ETIMEDOUT);
		break;
	case SIB_CM_DREQ_RECEIVED:
		if (id->state == CMA_ESTABLISHED || id->state == CMA_CONN_RESPONSE ||
		    id->state == CMA_ACCEPTED) {
			id->state = CMA_DISCONNECT;
			id->dreq_rcvd = true;
			id->cma->ctr.disconnects++;
			cma_post(id, SIB_CMA_EV_DISCONNECTED, 0);
		}
		break;
	case SIB_CM_DREP_RECEIVED:
	case SIB_CM_DREQ_ERROR: /* no DREP: DISCONNECTED -ETIMEDOUT (cma_ib_handler) */
		/* after our rdma_disconnect, or a DREQ the CM sent by itself
		 * (a stale connection, IBA 12.9.8.3.1): cma_ib_handler moves a
		 * connected id to DISCONNECT either way and reports it once */
		if ((id->state == CMA_DISCONNECT && !id->dreq_rcvd) || id->state == CMA_ESTABLISHED ||
		    id->state == CMA_CONN_RESPONSE || id->state == CMA_ACCEPTED) {
			if (id->state != CMA_DISCONNECT)
				id->cma->ctr.disconnects++;
			id->state = CMA_DONE;
			cma_post(id, SIB_CMA_EV_DISCONNECTED,
				 ev->type == SIB_CM_DREQ_ERROR ? -ETIMEDOUT : 0);
		}
		break;
	case SIB_CM_TIMEWAIT_EXIT:
		cma_post(id, SIB_CMA_EV_TIMEWAIT_EXIT, 0);
		break;
	default: /* MRA: the CM waits longer itself */
		break;
	}
	return 0;
}

/* ---- the passive side: a REQ or SIDR_REQ for a listened ServiceID ---- */

/* Does listener l take a connection to dst arriving at (n, port)?
 * 2: its own address, 1: wildcard or IPv4 loopback (cma_match_private_data),
 * 0: no. */
static int listen_match(struct sib_cma *cma, const struct sib_cma_id *l, const struct cma_addr *dst,
			const struct sib_fab_node *n, uint8_t port)
{
	uint32_t d;
	uint8_t p;

	if (l->state != CMA_LISTEN)
		return 0;
	if (l->src.family == CMA_AF_IB || !dst)
		return l->dev_set && (l->node != n || l->port != port) ? 0 : 1;
	if (l->afonly && l->src.family != dst->family)
		return 0;
	if (cma_addr_any(&l->src))
		return 1;
	if (l->src.family != dst->family)
		return 0;
	if (l->src.family == CMA_AF_INET && cma_addr_loopback(&l->src) &&
	    !cma_addr_owner(cma, &l->src, &d, &p))
		return 1;
	if (memcmp(l->src.ip, dst->ip, l->src.family == CMA_AF_INET ? 4 : 16))
		return 0;
	return l->dev_set && (l->node != n || l->port != port) ? 0 : 2;
}

static struct sib_cma_id *find_listener(struct cma_bucket *b, const struct cma_addr *dst,
					const struct sib_fab_node *n, uint8_t port)
{
	struct sib_cma_id *best = NULL;
	int score = 0, s;

	for (struct sib_cma_id *l = b->owners; l; l = l->bnext)
		if ((s = listen_match(b->cma, l, dst, n, port)) > score) {
			score = s;
			best = l;
		}
	return best;
}

/* The new id of a REQ/SIDR_REQ: the listener's owner, attached where it
 * arrived; src = the address asked for, dst = the requester's. */
static struct sib_cma_id *new_conn_id(struct sib_cma_id *l, const struct sib_cm_event *ev,
				      const struct cma_addr *src, const struct cma_addr *dst)
{
	struct sib_cma *cma = l->cma;
	struct sib_cma_id *id;
	struct sib_fab_node *n = (struct sib_fab_node *)ev->node;
	uint32_t dev, gen;

	if (!n || !cma_node_dev(cma, n, &dev, &gen) || ev->port_num == 0 ||
	    ev->port_num > n->num_ports)
		return NULL;
	if (!(id = cma_id_alloc(cma, l->owner, 0, l->ps, l->qp_type)))
		return NULL;
	cma_attach(id, dev, gen, n, ev->port_num);
	id->passive = true;
	id->listener = l;
	id->reuseaddr = l->reuseaddr;
	id->afonly = l->afonly;
	id->tos = l->tos;
	id->tos_set = l->tos_set;
	id->ack_timeout = l->ack_timeout;
	id->ack_timeout_set = l->ack_timeout_set;
	if (src) {
		id->src = *src;
		id->dst = *dst;
		id->src.port = l->src.port;
	} else { /* AF_IB: no header */
		id->src = l->src;
		id->dst.family = CMA_AF_IB;
		memcpy(id->src.ip, id->sgid, 16);
	}
	id->state = CMA_REQ_RCVD;
	id->local_psn = cma_random(cma) & 0xffffff;
	l->pending++;
	return id;
}

static int on_req(struct cma_bucket *b, struct sib_cm_id *cm, const struct sib_cm_event *ev)
{
	struct sib_cma *cma = b->cma;
	bool ud = ev->type == SIB_CM_SIDR_REQ_RECEIVED;
	struct cma_addr src, dst;
	struct sib_cma_id *l, *id;
	struct sib_ctl_cm_event *e;
	bool hdr = true;

	/* an AF_IB listener takes data without a header; others need one */
	l = find_listener(b, NULL, ev->node, ev->port_num);
	if (l && l->src.family == CMA_AF_IB)
		hdr = false;
	else if (!hdr_parse(ev->pdata, ev->pdata_len, &src, &dst) ||
		 !(l = find_listener(b, &dst, ev->node, ev->port_num)))
		l = NULL;
	if (!l || l->pending >= l->backlog || cma_is_ud(l) != ud) {
		cma->ctr.req_dropped++;
		if (ud)
			sib_cm_send_sidr_rep(cm, &(struct sib_cm_sidr_rep_param){ .status = 1 });
		else
			sib_cm_send_rej(cm, l ? REJ_CONSUMER : 8, NULL, 0, NULL, 0);
		return 1;
	}
	if (!(id = new_conn_id(l, ev, hdr ? &dst : NULL, hdr ? &src : NULL)))
		return 1;
	id->cm = cm;
	sib_cm_id_set_handler(cm, conn_handler, id);
	if (ud) {
		const struct sib_cm_sidr_req_param *r = &ev->u.sidr_req;

		av_to_path_rev(&r->path, 0, r->pkey, &id->path[0]);
		id->num_paths = 1;
		memcpy(id->dgid, id->path[0].dgid, 16);
	} else {
		const struct sib_cm_req_param *r = &ev->u.req;

		av_to_path_rev(&r->primary, r->path_mtu, r->pkey, &id->path[0]);
		id->num_paths = 1;
		memcpy(id->dgid, id->path[0].dgid, 16);
		id->remote_qpn = r->qpn;
		id->remote_psn = r->starting_psn & 0xffffff;
		/* the requester's view turned round (cm.c cm_format_req_event) */
		id->resp_res = r->initiator_depth;
		id->init_depth = r->responder_resources;
		id->retry_cnt = r->retry_count;
		id->rnr_retry = r->rnr_retry_count;
		id->plt = r->primary.packet_life_time;
	}
	if ((e = cma_post(id, SIB_CMA_EV_CONNECT_REQUEST, 0))) {
		fill_conn(id, e);
		if (ud) {
			path_to_ah(id, &id->path[0], &e->ah);
			e->conn.qp_type = IBV_QPT_UD;
		} else {
			e->conn.flow_control = ev->u.req.flow_control;
			e->conn.srq = ev->u.req.srq;
		}
		fill_pdata(e, ev->pdata, ev->pdata_len, hdr ? CMA_HDR_LEN : 0);
	}
	return 0;
}

/* The handler of a bucket's CM listener (ctx: the bucket). */
static int listen_handler(struct sib_cm_id *cm, const struct sib_cm_event *ev, void *ctx)
{
	struct cma_bucket *b = ctx;

	(void)cm;
	if (ev->type == SIB_CM_REQ_RECEIVED || ev->type == SIB_CM_SIDR_REQ_RECEIVED)
		return on_req(b, ev->id, ev);
	return 0;
}

int cma_conn_listen(struct cma_bucket *b)
{
	struct sib_cma *cma = b->cma;
	struct sib_fab_node *n = NULL;
	uint32_t gen;
	int ret;

	if (b->cm)
		return 0;
	for (uint32_t d = 0; d < SIB_MAX_DEVICES && !n; d++)
		n = cma->host->device(cma->host_ctx, d, &gen);
	if (!n)
		return -ENODEV;
	if (!(b->cm = sib_cm_id_new(cma->sn, n, 1, listen_handler, b)))
		return -ENOMEM;
	b->cm_node = n;
	ret = sib_cm_listen(b->cm, b->sid ? b->sid : (uint64_t)b->ps << 16 | b->port, ~0ull);
	if (ret) {
		sib_cm_id_destroy(b->cm);
		b->cm = NULL;
	}
	return ret;
}

int sib_cma_listen(struct sib_cma_id *id, uint32_t backlog)
{
	int ret;

	if (backlog == 0 || backlog > 1024) /* ucma's max_backlog */
		backlog = 1024;
	if (id->state == CMA_LISTEN) {
		id->backlog = backlog;
		return 0;
	}
	if (id->state == CMA_IDLE) {
		uint8_t any[16] = { CMA_AF_INET }; /* sockaddr_in 0.0.0.0:0 */

		if ((ret = sib_cma_bind(id, any, sizeof(any))))
			return ret;
	}
	if (id->state != CMA_ADDR_BOUND)
		return -EINVAL;
	if ((ret = cma_listen_check(id)))
		return ret;
	id->backlog = backlog;
	id->state = CMA_LISTEN;
	ret = cma_conn_listen(id->bucket);
	if (ret)
		id->state = CMA_ADDR_BOUND;
	return ret;
}

/* ---- the active side ---- */

int sib_cma_connect(struct sib_cma_id *id, const struct sib_cm_conn *conn, const uint8_t *pdata,
		    uint32_t len)
{
	struct sib_cma *cma = id->cma;
	bool hdr = id->src.family != CMA_AF_IB, ud = cma_is_ud(id);
	uint32_t room = (ud ? SIDR_REQ_PDATA : REQ_PDATA) - (hdr ? CMA_HDR_LEN : 0);
	uint8_t buf[SIDR_REQ_PDATA];
	uint32_t off = hdr ? CMA_HDR_LEN : 0;
	int ret;

	if (id->state != CMA_ROUTE_RESOLVED || !id->num_paths)
		return -EINVAL;
	if (len > room || (!ud && (conn->qp_num == 0 || conn->qp_num > 0xffffff)))
		return -EINVAL;
	if (hdr)
		hdr_build(id, buf);
	if (len)
		memcpy(buf + off, pdata, len);
	if (!(id->cm = sib_cm_id_new(cma->sn, id->node, id->port, conn_handler, id)))
		return -ENOMEM;
	if (ud) {
		struct sib_cm_sidr_req_param p = {
			.service_id = service_id(id, id->dst.port), .pkey = id->pkey,
			.timeout = SIB_CMA_CM_RESPONSE_TIMEOUT,
			.max_cm_retries = SIB_CMA_MAX_CM_RETRIES,
			.pdata_len = (uint8_t)(off + len), .pdata = buf,
		};

		path_to_av(&id->path[0], &p.path);
		ret = sib_cm_send_sidr_req(id->cm, &p);
	} else {
		struct sib_cm_req_param p = {
			.service_id = service_id(id, id->dst.port), .qpn = conn->qp_num,
			.qp_type = (uint8_t)id->qp_type,
			.responder_resources = conn->responder_resources,
			.initiator_depth = conn->initiator_depth,
			.retry_count = conn->retry_count & 7,
			.rnr_retry_count = conn->rnr_retry_count & 7,
			.flow_control = conn->flow_control ? 1 : 0, .srq = conn->srq ? 1 : 0,
			.path_mtu = id->path[0].mtu,
			.local_cm_response_timeout = SIB_CMA_CM_RESPONSE_TIMEOUT,
			.remote_cm_response_timeout = SIB_CMA_CM_RESPONSE_TIMEOUT,
			.max_cm_retries = SIB_CMA_MAX_CM_RETRIES, .pkey = id->pkey,
			.pdata_len = (uint8_t)(off + len), .pdata = buf,
		};

		id->local_psn = cma_random(cma) & 0xffffff;
		p.starting_psn = id->local_psn;
		path_to_av(&id->path[0], &p.primary);
		id->local_qpn = conn->qp_num;
		id->resp_res = conn->responder_resources;
		id->init_depth = conn->initiator_depth;
		id->retry_cnt = conn->retry_count & 7;
		id->rnr_retry = conn->rnr_retry_count & 7;
		id->plt = id->path[0].packet_life_time;
		ret = sib_cm_send_req(id->cm, &p);
	}
	if (ret) {
		sib_cm_id_destroy(id->cm);
		id->cm = NULL;
		return ret;
	}
	id->state = CMA_CONNECT;
	cma->ctr.connects++;
	return 0;
}

int sib_cma_accept(struct sib_cma_id *id, const struct sib_cm_conn *conn, const uint8_t *pdata,
		   uint32_t len)
{
	struct sib_cma *cma = id->cma;
	int ret;

	if (id->state == CMA_CONN_RESPONSE) { /* the active side's RTU (cma_rep_recv) */
		if ((ret = sib_cm_send_rtu(id->cm, NULL, 0)))
			return ret;
		id->state = CMA_ESTABLISHED;
		cma->ctr.established++;
		return 0;
	}
	if (id->state != CMA_REQ_RCVD || !id->cm)
		return -EINVAL;
	if (cma_is_ud(id)) {
		struct sib_cm_sidr_rep_param p = {
			.status = 0, .qpn = conn->qp_num,
			.qkey = default_qkey(id, conn->qkey),
			.pdata_len = (uint8_t)len, .pdata = pdata,
		};

		/* a controlled Q_Key (bit 31, IBA 10.2.4) is not the consumer's to give */
		if (len > SIDR_REP_PDATA || conn->qp_num == 0 || conn->qp_num > 0xffffff ||
		    (p.qkey & 0x80000000u))
			return -EINVAL;
		if ((ret = sib_cm_send_sidr_rep(id->cm, &p)))
			return ret;
		id->qkey = p.qkey;
		id->local_qpn = conn->qp_num;
		id->state = CMA_ESTABLISHED;
	} else {
		struct sib_cm_rep_param p = {
			.qpn = conn->qp_num, .starting_psn = id->local_psn,
			.responder_resources = conn->responder_resources,
			.initiator_depth = conn->initiator_depth,
			.target_ack_delay = CA_ACK_DELAY, .failover_accepted = 0,
			.flow_control = conn->flow_control ? 1 : 0,
			.rnr_retry_count = conn->rnr_retry_count > 7 ? 7 : conn->rnr_retry_count,
			.srq = conn->srq ? 1 : 0, .pdata_len = (uint8_t)len, .pdata = pdata,
		};

		if (len > REP_PDATA || conn->qp_num == 0 || conn->qp_num > 0xffffff)
			return -EINVAL;
		if ((ret = sib_cm_send_rep(id->cm, &p)))
			return ret;
		id->local_qpn = conn->qp_num;
		id->resp_res = conn->responder_resources;
		id->init_depth = conn->initiator_depth;
		id->state = CMA_ACCEPTED;
	}
	listener_done(id);
	cma->ctr.accepts++;
	return 0;
}

int sib_cma_reject(struct sib_cma_id *id, uint32_t reason, const uint8_t *pdata, uint32_t len)
{
	int ret;

	if (reason == 0)
		reason = REJ_CONSUMER;
	if (reason != REJ_CONSUMER && reason != REJ_ECE)
		return -EINVAL;
	if (!id->cm || (id->state != CMA_REQ_RCVD && id->state != CMA_CONN_RESPONSE))
		return -EINVAL;
	if (cma_is_ud(id)) {
		struct sib_cm_sidr_rep_param p = {
			.status = SIDR_REJECT, .pdata_len = (uint8_t)len, .pdata = pdata,
		};

		if (len > SIDR_REP_PDATA || id->state != CMA_REQ_RCVD)
			return -EINVAL;
		ret = sib_cm_send_sidr_rep(id->cm, &p);
	} else {
		if (len > REJ_PDATA)
			return -EINVAL;
		ret = sib_cm_send_rej(id->cm, (uint16_t)reason, NULL, 0, pdata, (uint8_t)len);
	}
	if (ret)
		return ret;
	listener_done(id);
	id->state = CMA_DONE;
	id->cma->ctr.rejects_sent++;
	return 0;
}

int sib_cma_disconnect(struct sib_cma_id *id)
{
	int ret;

	if (!id->cm || cma_is_ud(id))
		return -EINVAL;
	if (id->state == CMA_DISCONNECT && id->dreq_rcvd) {
		ret = sib_cm_send_drep(id->cm, NULL, 0);
		if (!ret)
			id->state = CMA_DONE;
		return ret;
	}
	if (id->state != CMA_ESTABLISHED && id->state != CMA_ACCEPTED &&
	    id->state != CMA_CONN_RESPONSE)
		return -EINVAL;
	ret = sib_cm_send_dreq(id->cm, NULL, 0);
	if (ret)
		return ret;
	id->state = CMA_DISCONNECT;
	id->cma->ctr.disconnects++;
	return 0;
}

int sib_cma_notify(struct sib_cma_id *id, uint32_t event)
{
	if (!id->cm)
		return -EINVAL;
	if (event == IBV_EVENT_COMM_EST && id->state == CMA_ACCEPTED)
		return sib_cm_establish(id->cm);
	return 0;
}

void cma_conn_destroy(struct sib_cma_id *id)
{
	if (id->cm) {
		sib_cm_id_destroy(id->cm);
		id->cm = NULL;
	}
}

/* ---- rdma_init_qp_attr (cma.c cma_ib_init_qp_attr, cm.c cm_init_qp_*) ---- */

static void attr_ah(const struct sib_cma_id *id, struct sib_cm_qp_attr *a)
{
	const struct sib_cm_path *p = &id->path[0];

	path_to_ah(id, p, &a->ah);
	a->ah.src_path_bits = 0;
}

int sib_cma_init_qp_attr(const struct sib_cma_id *id, uint32_t qp_state,
			 struct sib_cm_qp_attr *a)
{
	bool ud = cma_is_ud(id), conn = id->cm && !ud;

	memset(a, 0, sizeof(*a));
	if (!id->dev_set)
		return -EINVAL;
	a->qp_state = qp_state;
	switch (qp_state) {
	case IBV_QPS_INIT:
		a->mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->pkey_index = 0;
		a->port_num = id->port;
		if (ud) {
			a->mask |= IBV_QP_QKEY;
			a->qkey = default_qkey(id, id->qkey);
		} else {
			a->mask |= IBV_QP_ACCESS_FLAGS;
			if (conn)
				a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
					(id->resp_res ? IBV_ACCESS_REMOTE_READ |
							IBV_ACCESS_REMOTE_ATOMIC : 0);
		}
		return 0;
	case IBV_QPS_RTR:
		if (ud) {
			a->mask = IBV_QP_STATE;
			return 0;
		}
		if (!conn || (id->state != CMA_CONN_RESPONSE && id->state != CMA_REQ_RCVD &&
			      id->state != CMA_ACCEPTED && id->state != CMA_ESTABLISHED))
			return -EINVAL;
		a->mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN;
		attr_ah(id, a);
		a->path_mtu = id->path[0].mtu;
		a->dest_qp_num = id->remote_qpn;
		a->rq_psn = id->local_psn;
		if (id->qp_type == IBV_QPT_RC) {
			a->mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			a->max_dest_rd_atomic = id->resp_res;
			a->min_rnr_timer = 0;
		}
		return 0;
	case IBV_QPS_RTS:
		if (ud) {
			a->mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
			a->sq_psn = 0;
			return 0;
		}
		/* REQ_RCVD too: rdma_accept moves the QP to RTS before the REP
		 * (linux cm_init_qp_rts_attr allows it; found by wip-rdmacm's rping) */
		if (!conn || (id->state != CMA_CONN_RESPONSE && id->state != CMA_REQ_RCVD &&
			      id->state != CMA_ACCEPTED && id->state != CMA_ESTABLISHED))
			return -EINVAL;
		a->mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		a->sq_psn = id->remote_psn;
		if (id->qp_type == IBV_QPT_RC) {
			a->mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_MAX_QP_RD_ATOMIC;
			a->timeout = id->passive ? (uint8_t)(id->plt + 1 > 31 ? 31 : id->plt + 1)
						 : ack_timeout(id->target_ack_delay, id->plt);
			if (id->ack_timeout_set)
				a->timeout = id->ack_timeout;
			a->retry_cnt = id->retry_cnt;
			a->rnr_retry = id->rnr_retry;
			a->max_rd_atomic = id->init_depth;
		}
		return 0;
	default:
		return -EINVAL;
	}
}
