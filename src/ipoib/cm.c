// SPDX-License-Identifier: MIT
/*
 * IPoIB connected mode (cm.h, RFC 4755, the kernel's ipoib_cm.c): RC
 * connections through softib's librdmacm (AF_IB, RDMA_PS_IB, ServiceID
 * 0x1000000000000000 | UD QPN, the 8-byte ipoib_cm_data raw in REQ and REP).
 * The QPs are the endpoint's own (its PD, one CQ, one SRQ), moved through
 * INIT/RTR/RTS with rdma_init_qp_attr's values as the kernel's ipoib_cm moves
 * them with ib_cm_init_qp_attr.  Single-threaded: the endpoint's loop.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

#include "ipoib/cm.h"
#include "ipoib/ep.h"

#define TX_BIT		(1ull << 63)
#define TX_WRID(gen, i)	(TX_BIT | (uint64_t)(gen) << 32 | (i))

static uint8_t *srq_buf(struct ipoib_cm *cm, uint32_t i)
{
	return cm->buf + (size_t)i * IPOIB_CM_BUF_SIZE;
}

static uint8_t *tx_buf(struct ipoib_cm *cm, uint32_t i)
{
	return cm->buf + (size_t)(IPOIB_CM_SRQ_RING + i) * IPOIB_CM_BUF_SIZE;
}

static int post_srq(struct ipoib_cm *cm, uint32_t i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)srq_buf(cm, i), .length = IPOIB_CM_BUF_SIZE,
			       .lkey = cm->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(cm->srq, &wr, &bad);
}

static void sib_of(struct sockaddr_ib *a, const uint8_t gid[16], uint16_t pkey, uint64_t sid)
{
	memset(a, 0, sizeof(*a));
	a->sib_family = AF_IB;
	a->sib_pkey = htons(pkey);
	memcpy(&a->sib_addr, gid, 16);
	a->sib_sid = htobe64(sid);
	a->sib_sid_mask = htobe64(sid ? ~0ull : 0);
}

static int make_listener(struct ipoib_ep *ep)
{
	struct ipoib_cm *cm = &ep->cm;
	struct sockaddr_ib a;

	cm->ch = rdma_create_event_channel();
	if (!cm->ch)
		return -errno;
	fcntl(cm->ch->fd, F_SETFL, fcntl(cm->ch->fd, F_GETFL) | O_NONBLOCK);
	if (rdma_create_id(cm->ch, &cm->listen, NULL, RDMA_PS_IB))
		return -errno;
	sib_of(&a, ep->gid, ep->pkey | 0x8000, ipoib_cm_service_id(ep->qp->qp_num));
	if (rdma_bind_addr(cm->listen, (struct sockaddr *)&a) || rdma_listen(cm->listen, 64))
		return -errno;
	return 0;
}

static int make_queues(struct ipoib_ep *ep)
{
	struct ipoib_cm *cm = &ep->cm;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = IPOIB_CM_SRQ_RING, .max_sge = 1 } };
	size_t total = (size_t)(IPOIB_CM_SRQ_RING + IPOIB_CM_TX_RING) * IPOIB_CM_BUF_SIZE;

	cm->cch = ibv_create_comp_channel(ep->ctx);
	if (!cm->cch)
		return -errno;
	fcntl(cm->cch->fd, F_SETFL, fcntl(cm->cch->fd, F_GETFL) | O_NONBLOCK);
	/* room for the flushes of a destroyed connection's sends beside a full
	 * pool and SRQ */
	cm->cq = ibv_create_cq(ep->ctx, 2 * (IPOIB_CM_SRQ_RING + IPOIB_CM_TX_RING) + 1, NULL,
			       cm->cch, 0);
	if (!cm->cq || ibv_req_notify_cq(cm->cq, 0))
		return -errno;
	cm->srq = ibv_create_srq(ep->pd, &sa);
	if (!cm->srq)
		return -errno;
	cm->buf = calloc(1, total);
	if (!cm->buf)
		return -ENOMEM;
	cm->mr = ibv_reg_mr(ep->pd, cm->buf, total, IBV_ACCESS_LOCAL_WRITE);
	if (!cm->mr)
		return -errno;
	for (uint32_t i = 0; i < IPOIB_CM_SRQ_RING; i++)
		if (post_srq(cm, i))
			return -EIO;
	for (uint32_t i = 0; i < IPOIB_CM_TX_RING; i++)
		cm->tx_free[cm->tx_nfree++] = i;
	return 0;
}

int ipoib_cm_open(struct ipoib_ep *ep)
{
	struct ipoib_cm *cm = &ep->cm;
	int ret;

	memset(cm, 0, sizeof(*cm));
	cm->connect_ms = IPOIB_CM_CONNECT_MS;
	if ((ret = make_queues(ep)) || (ret = make_listener(ep))) {
		fprintf(stderr, "ipoib: connected mode on %s port %u: %s\n", ep->dev, ep->port,
			strerror(-ret));
		ipoib_cm_close(ep);
		return ret;
	}
	cm->enabled = true;
	ep->hw.flags = IPOIB_FLAGS_RC;
	ep->if_mtu = IPOIB_CM_MTU;
	return 0;
}

/* ---- connections ---- */

static struct ipoib_cm_conn *conn_of_id(struct ipoib_cm *cm, const struct rdma_cm_id *id)
{
	for (int i = 0; i < IPOIB_CM_MAX_TX; i++)
		if (cm->tx[i].state != IPOIB_CM_FREE && cm->tx[i].id == id)
			return &cm->tx[i];
	for (int i = 0; i < IPOIB_CM_MAX_RX; i++)
		if (cm->rx[i].state != IPOIB_CM_FREE && cm->rx[i].id == id)
			return &cm->rx[i];
	return NULL;
}

static bool is_tx(const struct ipoib_cm *cm, const struct ipoib_cm_conn *c)
{
	return c >= cm->tx && c < cm->tx + IPOIB_CM_MAX_TX;
}

static struct ibv_qp *make_qp(struct ipoib_ep *ep)
{
	struct ipoib_cm *cm = &ep->cm;
	struct ibv_qp_init_attr ia = {
		.send_cq = cm->cq, .recv_cq = cm->cq, .srq = cm->srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = IPOIB_CM_TX_RING, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(ep->pd, &ia);

	if (qp)
		cm->st.qps_created++;
	return qp;
}

/* Move qp to state with rdma_init_qp_attr's values for id. */
static int qp_to(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };
	int mask;

	if (rdma_init_qp_attr(id, &a, &mask))
		return -errno;
	if (state == IBV_QPS_RTS) {	/* as ipoib_cm: retries, RNR retries unbounded */
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
	}
	return -ibv_modify_qp(qp, &a, mask);
}

/* Destroy c: the rdma_cm id (a DREQ when it was up), the QP, the TX buffers
 * still posted on it, the datagrams waiting. */
static void conn_destroy(struct ipoib_ep *ep, struct ipoib_cm_conn *c)
{
	struct ipoib_cm *cm = &ep->cm;

	if (c->state == IPOIB_CM_FREE)
		return;
	if (c->id) {
		if (c->state == IPOIB_CM_UP)
			rdma_disconnect(c->id);
		rdma_destroy_id(c->id);
	}
	if (c->qp) {
		ibv_destroy_qp(c->qp);
		cm->st.qps_destroyed++;
	}
	if (is_tx(cm, c)) {
		uint8_t owner = (uint8_t)(c - cm->tx + 1);

		for (uint32_t i = 0; i < IPOIB_CM_TX_RING; i++)
			if (cm->tx_owner[i] == owner) {	/* its completion never comes now */
				cm->tx_owner[i] = 0;
				cm->tx_gen[i]++;
				cm->tx_free[cm->tx_nfree++] = i;
			}
	}
	for (unsigned int i = 0; i < c->qn; i++)
		free(c->q[i].data);
	cm->st.teardowns++;
	memset(c, 0, sizeof(*c));
}

/* A TX connection could not be had: UD for IPOIB_CM_RETRY_MS; what waited
 * goes over UD now (or gets its ICMP too-big). */
static void tx_failed(struct ipoib_ep *ep, struct ipoib_cm_conn *c, uint64_t now)
{
	struct ipoib_hwaddr peer = c->peer;
	struct neigh_pkt q[IPOIB_CM_QLEN];
	unsigned int qn = c->qn;

	memcpy(q, c->q, sizeof(q));
	c->qn = 0;
	conn_destroy(ep, c);
	c->state = IPOIB_CM_FAILED;
	c->peer = peer;
	c->deadline = now + IPOIB_CM_RETRY_MS;
	ep->cm.st.fallbacks++;
	for (unsigned int i = 0; i < qn; i++) {
		ipoib_ep_send_ip(ep, q[i].data, q[i].len, now);
		free(q[i].data);
	}
}

static int tx_connect(struct ipoib_ep *ep, struct ipoib_cm_conn *c)
{
	struct sockaddr_ib src, dst;

	if (rdma_create_id(ep->cm.ch, &c->id, c, RDMA_PS_IB))
		return -errno;
	c->qp = make_qp(ep);
	if (!c->qp)
		return -errno;
	sib_of(&src, ep->gid, ep->pkey | 0x8000, 0);
	sib_of(&dst, c->peer.gid, ep->pkey | 0x8000, ipoib_cm_service_id(c->peer.qpn));
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
		return -errno;
	return 0;
}

static struct ipoib_cm_conn *tx_find(struct ipoib_cm *cm, const struct ipoib_hwaddr *peer)
{
	for (int i = 0; i < IPOIB_CM_MAX_TX; i++)
		if (cm->tx[i].state != IPOIB_CM_FREE && cm->tx[i].peer.qpn == peer->qpn &&
		    !memcmp(cm->tx[i].peer.gid, peer->gid, 16))
			return &cm->tx[i];
	return NULL;
}

static int post_tx(struct ipoib_ep *ep, struct ipoib_cm_conn *c, uint16_t et,
		   const uint8_t *pkt, size_t len)
{
	struct ipoib_cm *cm = &ep->cm;
	uint32_t i = cm->tx_free[--cm->tx_nfree];
	struct ibv_sge sge = { .addr = (uintptr_t)tx_buf(cm, i),
			       .length = (uint32_t)(len + IPOIB_ENCAP_LEN), .lkey = cm->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = TX_WRID(cm->tx_gen[i], i), .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int ret;

	ipoib_hdr_encode(et, tx_buf(cm, i));
	memcpy(tx_buf(cm, i) + IPOIB_ENCAP_LEN, pkt, len);
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret) {
		cm->tx_free[cm->tx_nfree++] = i;
		return -ret;
	}
	cm->tx_owner[i] = (uint8_t)(c - cm->tx + 1);
	cm->st.tx_packets++;
	cm->st.tx_bytes += len;
	return 0;
}

int ipoib_cm_send(struct ipoib_ep *ep, const struct ipoib_hwaddr *peer, uint16_t et,
		  const uint8_t *pkt, size_t len, uint64_t now)
{
	struct ipoib_cm *cm = &ep->cm;
	struct ipoib_cm_conn *c = tx_find(cm, peer);
	int ret;

	if (!cm->enabled || (c && c->state == IPOIB_CM_FAILED))
		return -ENOTCONN;
	if (!c) {
		for (int i = 0; i < IPOIB_CM_MAX_TX && !c; i++)
			if (cm->tx[i].state == IPOIB_CM_FREE)
				c = &cm->tx[i];
		if (!c)
			return -ENOTCONN;	/* too many: UD */
		c->state = IPOIB_CM_CONNECTING;
		c->peer = *peer;
		c->deadline = now + cm->connect_ms;
		c->last_use = now;
		if ((ret = tx_connect(ep, c))) {
			tx_failed(ep, c, now);
			return -ENOTCONN;
		}
	}
	c->last_use = now;
	if (c->state == IPOIB_CM_CONNECTING) {
		uint8_t *copy = malloc(len);

		if (!copy)
			return -ENOBUFS;
		if (c->qn == IPOIB_CM_QLEN) {	/* the oldest goes, as neigh's queue */
			free(c->q[0].data);
			memmove(&c->q[0], &c->q[1], (IPOIB_CM_QLEN - 1) * sizeof(c->q[0]));
			c->qn--;
		}
		memcpy(copy, pkt, len);
		c->q[c->qn++] = (struct neigh_pkt){ .data = copy, .len = len };
		return 0;
	}
	if (len > c->mtu) {
		cm->st.too_big++;
		ipoib_ep_too_big(ep, pkt, len, c->mtu);
		return -EMSGSIZE;
	}
	if (!ipoib_cm_can_send(ep))
		return -ENOBUFS;
	return post_tx(ep, c, et, pkt, len);
}

/* ---- rdma_cm events ---- */

/* The REP came (CONNECT_RESPONSE): the peer's buffer size, RTR, RTS, RTU. */
static void tx_established(struct ipoib_ep *ep, struct ipoib_cm_conn *c,
			   const struct ipoib_cm_data *d, bool ok, uint64_t now)
{
	if (!ok || !(c->mtu = ipoib_cm_peer_mtu(d->mtu)) || qp_to(c->id, c->qp, IBV_QPS_RTR) ||
	    qp_to(c->id, c->qp, IBV_QPS_RTS) || rdma_establish(c->id)) {
		tx_failed(ep, c, now);
		return;
	}
	c->state = IPOIB_CM_UP;
	ep->cm.st.tx_conns++;
	for (unsigned int i = 0; i < c->qn; i++) {
		const uint8_t *p = c->q[i].data;
		uint16_t et = p[0] >> 4 == 6 ? ETH_P_IPV6_ : ETH_P_IPV4;

		if (c->q[i].len > c->mtu) {
			ep->cm.st.too_big++;
			ipoib_ep_too_big(ep, p, c->q[i].len, c->mtu);
		} else if (!ipoib_cm_can_send(ep) || post_tx(ep, c, et, p, c->q[i].len)) {
			ep->st.tx_dropped++;
		}
		free(c->q[i].data);
	}
	c->qn = 0;
}

/* A REQ for our ServiceID: private data checked, an RX QP on the SRQ moved
 * to RTS, the REP with our own ipoib_cm_data. */
static void rx_request(struct ipoib_ep *ep, struct rdma_cm_id *id, const uint8_t *pd,
		       size_t len, uint64_t now)
{
	struct ipoib_cm *cm = &ep->cm;
	struct ipoib_cm_data d, mine = { .qpn = ep->qp->qp_num, .mtu = IPOIB_CM_BUF_SIZE };
	struct ipoib_cm_conn *c = NULL;
	uint8_t out[IPOIB_CM_DATA_LEN];
	struct rdma_conn_param p = { .private_data = out, .private_data_len = sizeof(out),
				     .responder_resources = 0, .initiator_depth = 0,
				     .rnr_retry_count = 7, .srq = 1 };

	for (int i = 0; i < IPOIB_CM_MAX_RX && !c; i++)
		if (cm->rx[i].state == IPOIB_CM_FREE)
			c = &cm->rx[i];
	if (ipoib_cm_data_decode(pd, len, &d) || !c) {
		cm->st.rejected++;
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c->state = IPOIB_CM_CONNECTING;
	c->id = id;
	id->context = c;
	c->peer.qpn = d.qpn;
	c->last_use = now;
	c->deadline = now + cm->connect_ms;
	c->qp = make_qp(ep);
	ipoib_cm_data_encode(&mine, out);
	p.qp_num = c->qp ? c->qp->qp_num : 0;
	if (!c->qp || qp_to(id, c->qp, IBV_QPS_INIT) || qp_to(id, c->qp, IBV_QPS_RTR) ||
	    qp_to(id, c->qp, IBV_QPS_RTS) || rdma_accept(id, &p)) {
		cm->st.rejected++;
		rdma_reject(id, NULL, 0);
		conn_destroy(ep, c);
	}
}

/* What an event did to connection c. */
static void conn_event(struct ipoib_ep *ep, struct ipoib_cm_conn *c, enum rdma_cm_event_type t,
		       const struct ipoib_cm_data *d, bool d_ok, uint64_t now)
{
	bool tx = is_tx(&ep->cm, c);

	switch (t) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (tx && c->state == IPOIB_CM_CONNECTING && !rdma_resolve_route(c->id, 2000))
			return;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (tx && c->state == IPOIB_CM_CONNECTING && !qp_to(c->id, c->qp, IBV_QPS_INIT)) {
			struct ipoib_cm_data mine = { .qpn = ep->qp->qp_num,
						      .mtu = IPOIB_CM_BUF_SIZE };
			uint8_t out[IPOIB_CM_DATA_LEN];
			struct rdma_conn_param p = {
				.private_data = out, .private_data_len = sizeof(out),
				.retry_count = 7, .rnr_retry_count = 7, .qp_num = c->qp->qp_num,
				.srq = 1,	/* no receive queue of its own, as ipoib_cm's */
			};

			ipoib_cm_data_encode(&mine, out);
			if (!rdma_connect(c->id, &p))
				return;
		}
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		if (tx && c->state == IPOIB_CM_CONNECTING) {
			tx_established(ep, c, d, d_ok, now);
			return;
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!tx && c->state == IPOIB_CM_CONNECTING) {
			c->state = IPOIB_CM_UP;
			c->last_use = now;
			ep->cm.st.rx_conns++;
			return;
		}
		if (c->state == IPOIB_CM_UP)
			return;
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return;
	default:	/* errors, REJECTED, UNREACHABLE, DISCONNECTED, DEVICE_REMOVAL */
		break;
	}
	if (tx && c->state == IPOIB_CM_CONNECTING)
		tx_failed(ep, c, now);
	else
		conn_destroy(ep, c);
}

void ipoib_cm_events(struct ipoib_ep *ep, uint64_t now)
{
	struct ipoib_cm *cm = &ep->cm;
	struct rdma_cm_event *ev;

	for (int k = 0; k < 64 && cm->ch && !rdma_get_cm_event(cm->ch, &ev); k++) {
		enum rdma_cm_event_type t = ev->event;
		struct rdma_cm_id *id = ev->id;
		uint8_t pd[IPOIB_CM_DATA_LEN];
		size_t len = ev->param.conn.private_data_len;
		struct ipoib_cm_data d;
		bool d_ok;

		if (len > sizeof(pd))
			len = sizeof(pd);
		if (len)
			memcpy(pd, ev->param.conn.private_data, len);
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
			rx_request(ep, id, len ? pd : NULL, len, now);
			continue;
		}
		d_ok = !ipoib_cm_data_decode(len ? pd : NULL, len, &d);
		struct ipoib_cm_conn *c = conn_of_id(cm, id);

		if (c)
			conn_event(ep, c, t, &d, d_ok, now);
	}
}

/* ---- completions ---- */

static struct ipoib_cm_conn *rx_of_qpn(struct ipoib_cm *cm, uint32_t qpn)
{
	for (int i = 0; i < IPOIB_CM_MAX_RX; i++)
		if (cm->rx[i].state != IPOIB_CM_FREE && cm->rx[i].qp && cm->rx[i].qp->qp_num == qpn)
			return &cm->rx[i];
	return NULL;
}

static void tx_done(struct ipoib_ep *ep, const struct ibv_wc *wc)
{
	struct ipoib_cm *cm = &ep->cm;
	uint32_t i = (uint32_t)wc->wr_id, gen = (uint32_t)(wc->wr_id >> 32) & 0x7fffffff;
	uint8_t owner;

	if (i >= IPOIB_CM_TX_RING || (cm->tx_gen[i] & 0x7fffffff) != gen || !cm->tx_owner[i])
		return;		/* taken back when its connection went */
	owner = cm->tx_owner[i];
	cm->tx_owner[i] = 0;
	cm->tx_free[cm->tx_nfree++] = i;
	if (wc->status != IBV_WC_SUCCESS) {
		cm->st.tx_errors++;
		ep->st.tx_dropped++;
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			conn_destroy(ep, &cm->tx[owner - 1]);	/* the next datagram connects again */
	}
}

static void rx_done(struct ipoib_ep *ep, const struct ibv_wc *wc, uint64_t now)
{
	struct ipoib_cm *cm = &ep->cm;
	uint32_t i = (uint32_t)wc->wr_id;
	struct ipoib_cm_conn *c = rx_of_qpn(cm, wc->qp_num);

	if (i >= IPOIB_CM_SRQ_RING)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		/* a peer's packet larger than our buffers (LOC_LEN_ERR) or its
		 * QP gone: the connection is dead, the buffer goes back */
		if (wc->status != IBV_WC_WR_FLUSH_ERR)
			cm->st.rx_errors++;
		if (c && wc->status != IBV_WC_WR_FLUSH_ERR)
			conn_destroy(ep, c);
	} else if (wc->byte_len > IPOIB_CM_BUF_SIZE) {
		cm->st.rx_errors++;
	} else {
		if (c) {
			c->last_use = now;
			if (c->state == IPOIB_CM_CONNECTING) {	/* data before the RTU (COMM_EST) */
				c->state = IPOIB_CM_UP;
				cm->st.rx_conns++;
			}
		}
		cm->st.rx_packets++;
		cm->st.rx_bytes += wc->byte_len;
		ipoib_ep_rx_frame(ep, srq_buf(cm, i), wc->byte_len, wc->slid, now);
	}
	if (post_srq(cm, i))
		ep->st.rx_errors++;
}

static int drain(struct ipoib_ep *ep, uint64_t now)
{
	struct ibv_wc wc[32];
	int n;

	while ((n = ibv_poll_cq(ep->cm.cq, 32, wc)) > 0)
		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id & TX_BIT)
				tx_done(ep, &wc[k]);
			else
				rx_done(ep, &wc[k], now);
		}
	return n < 0 ? -EIO : 0;
}

int ipoib_cm_poll(struct ipoib_ep *ep, uint64_t now)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!ep->cm.enabled)
		return 0;
	while (!ibv_get_cq_event(ep->cm.cch, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(ep->cm.cq, 0))
		return -errno;
	return drain(ep, now);
}

bool ipoib_cm_can_send(struct ipoib_ep *ep)
{
	if (!ep->cm.enabled)
		return true;
	if (!ep->cm.tx_nfree)
		drain(ep, ep->now);
	return ep->cm.tx_nfree > 0;
}

void ipoib_cm_tick(struct ipoib_ep *ep, uint64_t now)
{
	struct ipoib_cm *cm = &ep->cm;

	for (int i = 0; i < IPOIB_CM_MAX_TX + IPOIB_CM_MAX_RX; i++) {
		bool tx = i < IPOIB_CM_MAX_TX;
		struct ipoib_cm_conn *c = tx ? &cm->tx[i] : &cm->rx[i - IPOIB_CM_MAX_TX];

		if (c->state == IPOIB_CM_CONNECTING && now >= c->deadline) {
			cm->st.timeouts++;	/* no REP, or no RTU: nothing leaks */
			if (tx)
				tx_failed(ep, c, now);
			else
				conn_destroy(ep, c);
		} else if (c->state == IPOIB_CM_FAILED && now >= c->deadline) {
			memset(c, 0, sizeof(*c));	/* the next datagram tries again */
		} else if (c->state == IPOIB_CM_UP &&
			   now >= c->last_use + (tx ? IPOIB_CM_TX_IDLE_MS : IPOIB_CM_RX_IDLE_MS)) {
			conn_destroy(ep, c);
		}
	}
}

void ipoib_cm_forget(struct ipoib_ep *ep, const struct ipoib_hwaddr *peer)
{
	struct ipoib_cm_conn *c = tx_find(&ep->cm, peer);

	if (!c)
		return;
	if (c->state == IPOIB_CM_FAILED)
		memset(c, 0, sizeof(*c));
	else
		conn_destroy(ep, c);
}

void ipoib_cm_flush(struct ipoib_ep *ep)
{
	for (int i = 0; i < IPOIB_CM_MAX_TX; i++) {
		if (ep->cm.tx[i].state == IPOIB_CM_FAILED)
			memset(&ep->cm.tx[i], 0, sizeof(ep->cm.tx[i]));
		conn_destroy(ep, &ep->cm.tx[i]);
	}
	for (int i = 0; i < IPOIB_CM_MAX_RX; i++)
		conn_destroy(ep, &ep->cm.rx[i]);
}

uint64_t ipoib_cm_live_qps(const struct ipoib_ep *ep)
{
	return ep->cm.st.qps_created - ep->cm.st.qps_destroyed;
}

int ipoib_cm_event_fd(const struct ipoib_ep *ep)
{
	return ep->cm.ch ? ep->cm.ch->fd : -1;
}

int ipoib_cm_comp_fd(const struct ipoib_ep *ep)
{
	return ep->cm.cch ? ep->cm.cch->fd : -1;
}

void ipoib_cm_close(struct ipoib_ep *ep)
{
	struct ipoib_cm *cm = &ep->cm;

	for (int i = 0; i < IPOIB_CM_MAX_TX; i++)
		conn_destroy(ep, &cm->tx[i]);
	for (int i = 0; i < IPOIB_CM_MAX_RX; i++)
		conn_destroy(ep, &cm->rx[i]);
	if (cm->listen)
		rdma_destroy_id(cm->listen);
	if (cm->ch)
		rdma_destroy_event_channel(cm->ch);
	if (cm->srq)
		ibv_destroy_srq(cm->srq);
	if (cm->mr)
		ibv_dereg_mr(cm->mr);
	free(cm->buf);
	if (cm->cq)
		ibv_destroy_cq(cm->cq);
	if (cm->cch)
		ibv_destroy_comp_channel(cm->cch);
	cm->listen = NULL;
	cm->ch = NULL;
	cm->srq = NULL;
	cm->mr = NULL;
	cm->buf = NULL;
	cm->cq = NULL;
	cm->cch = NULL;
	cm->enabled = false;
}
