// SPDX-License-Identifier: MIT
/*
 * The IPoIB endpoint (ep.h): datagram mode on a UD QP through the public
 * verbs API, as the kernel's ipoib_ib.c / ipoib_main.c / ipoib_multicast.c
 * behave (RFC 4391): the broadcast join through the SA, ARP with 20-byte
 * hardware addresses, IPv6 NS/NA with the IPoIB link-layer option, the 4-byte encapsulation header, neighbours resolved
 * to address handles through PathRecords.  Single-threaded: one caller's
 * event loop drives it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipoib/ep.h"

#define RX_WRID(i)	((uint64_t)(i))
#define TX_WRID(i)	((uint64_t)(i) | (1ull << 32))

static void read_ip6(struct ipoib_ep *ep);

static void release_ah(void *ah, void *arg)
{
	(void)arg;
	ibv_destroy_ah(ah);
}

static uint8_t *rx_buf(struct ipoib_ep *ep, uint32_t i)
{
	return ep->buf + (size_t)i * ep->rx_slot;
}

static uint8_t *tx_buf(struct ipoib_ep *ep, uint32_t i)
{
	return ep->buf + (size_t)IPOIB_RX_RING * ep->rx_slot + (size_t)i * ep->tx_slot;
}

static int post_recv(struct ipoib_ep *ep, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rx_buf(ep, i), .length = (uint32_t)ep->rx_slot,
		.lkey = ep->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = RX_WRID(i), .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(ep->qp, &wr, &bad);
}

/* Wait until the port is ACTIVE with a LID and an SM, then read what we are. */
static int port_ready(struct ipoib_ep *ep, int wait_ms, struct ibv_port_attr *pa)
{
	union ibv_gid gid;
	__be16 pkey;

	for (int t = 0;; t += 100) {
		if (ibv_query_port(ep->ctx, ep->port, pa))
			return -errno;
		if (pa->state == IBV_PORT_ACTIVE && pa->lid && pa->sm_lid)
			break;
		if (t >= wait_ms) {
			fprintf(stderr, "ipoib: %s port %u is not ACTIVE (state %d)\n",
				ep->dev, ep->port, pa->state);
			return -ENETDOWN;
		}
		usleep(100 * 1000);
	}
	if (ibv_query_gid(ep->ctx, ep->port, 0, &gid) ||
	    ibv_query_pkey(ep->ctx, ep->port, 0, &pkey))
		return -errno;
	memcpy(ep->gid, gid.raw, 16);
	ep->pkey = ntohs(pkey);
	ep->lid = pa->lid;
	return 0;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	if (l)
		ibv_free_device_list(l);
	if (!l || !ctx)
		fprintf(stderr, "ipoib: no device %s\n", name);
	return ctx;
}

static int make_qp(struct ipoib_ep *ep)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = ep->cq, .recv_cq = ep->cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = IPOIB_TX_RING, .max_recv_wr = IPOIB_RX_RING,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				 .port_num = ep->port, .qkey = ep->qkey };

	ep->qp = ibv_create_qp(ep->pd, &ia);
	if (!ep->qp)
		return -errno;
	if (ibv_modify_qp(ep->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(ep->qp, &a, IBV_QP_STATE))
		return -errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(ep->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -errno;
	return 0;
}

/* Join the broadcast group as a full member with only MGID|PortGID|P_Key|
 * JoinState in the mask (ipoib_mcast_join): the SA says Q_Key, MTU, MLID. */
static int join_broadcast(struct ipoib_ep *ep, const struct ibv_port_attr *pa)
{
	struct ipoib_mcm req = { .pkey = ep->pkey | 0x8000, .join_state = 1 }, rec;
	uint16_t st;
	int ret;

	ipoib_bcast_mgid(ep->pkey, ep->mgid);
	memcpy(req.mgid, ep->mgid, 16);
	memcpy(req.port_gid, ep->gid, 16);
	ret = ipoib_sa_mcm(&ep->sa, pa->sm_lid, pa->sm_sl, SA_METHOD_SET,
			   MCM_COMP_MGID | MCM_COMP_PORT_GID | MCM_COMP_PKEY |
			   MCM_COMP_JOIN_STATE, &req, &rec, &st);
	if (ret) {
		fprintf(stderr, "ipoib: joining the broadcast group failed: %s (MAD status 0x%04x)\n",
			strerror(-ret), st);
		return ret;
	}
	ep->joined = true;
	ep->bcast_rec = rec;
	ep->qkey = rec.qkey;
	ep->mlid = rec.mlid;
	ep->mc_sl = rec.sl;
	if (!ipoib_mtu_bytes(rec.mtu)) {
		fprintf(stderr, "ipoib: the broadcast group has an invalid MTU %u\n", rec.mtu);
		return -EPROTO;
	}
	ep->mtu = ipoib_mtu_bytes(rec.mtu) - IPOIB_ENCAP_LEN;
	return 0;
}

static int make_bcast_ah(struct ipoib_ep *ep)
{
	struct ibv_ah_attr a = {
		.dlid = ep->mlid, .sl = ep->mc_sl, .port_num = ep->port, .is_global = 1,
		.grh = { .hop_limit = 1, .sgid_index = 0 },
	};
	union ibv_gid g;

	memcpy(g.raw, ep->mgid, 16);
	a.grh.dgid = g;
	ep->bcast_ah = ibv_create_ah(ep->pd, &a);
	if (!ep->bcast_ah)
		return -errno;
	if (ibv_attach_mcast(ep->qp, &g, ep->mlid))
		return -errno;
	ep->attached = true;
	return 0;
}

static int make_rings(struct ipoib_ep *ep)
{
	size_t total;

	ep->rx_slot = IPOIB_GRH_LEN + IPOIB_ENCAP_LEN + ep->mtu;
	ep->tx_slot = IPOIB_ENCAP_LEN + ep->mtu;
	total = IPOIB_RX_RING * ep->rx_slot + IPOIB_TX_RING * ep->tx_slot;
	ep->buf = calloc(1, total);
	if (!ep->buf)
		return -ENOMEM;
	ep->mr = ibv_reg_mr(ep->pd, ep->buf, total, IBV_ACCESS_LOCAL_WRITE);
	if (!ep->mr)
		return -errno;
	for (uint32_t i = 0; i < IPOIB_TX_RING; i++)
		ep->tx_free[ep->tx_nfree++] = i;
	for (uint32_t i = 0; i < IPOIB_RX_RING; i++)
		if (post_recv(ep, i))
			return -EIO;
	return 0;
}

int ipoib_ep_open(struct ipoib_ep *ep, const char *dev, int port, int wait_ms)
{
	struct ibv_port_attr pa;
	int ret;

	memset(ep, 0, sizeof(*ep));
	ep->sa.fd = -1;
	snprintf(ep->dev, sizeof(ep->dev), "%s", dev);
	ep->port = (uint8_t)port;
	if (neigh_init(&ep->neigh, IPOIB_NEIGH_MAX, IPOIB_NEIGH_TTL_MS, release_ah, ep))
		return -ENOMEM;
	ep->ctx = open_dev(dev);
	if (!ep->ctx)
		return -ENODEV;
	ret = port_ready(ep, wait_ms, &pa);
	if (ret)
		return ret;
	ret = ipoib_sa_open(&ep->sa, dev, port);
	if (ret) {
		fprintf(stderr, "ipoib: umad on %s port %d: %s\n", dev, port, strerror(-ret));
		return ret;
	}
	ret = join_broadcast(ep, &pa);
	if (ret)
		return ret;
	ep->pd = ibv_alloc_pd(ep->ctx);
	ep->ch = ep->pd ? ibv_create_comp_channel(ep->ctx) : NULL;
	ep->cq = ep->ch ? ibv_create_cq(ep->ctx, IPOIB_RX_RING + IPOIB_TX_RING + 1,
					NULL, ep->ch, 0) : NULL;
	if (!ep->cq)
		return -errno ? -errno : -ENOMEM;
	if ((ret = make_qp(ep)) || (ret = make_bcast_ah(ep)) || (ret = make_rings(ep)))
		return ret;
	fcntl(ep->ch->fd, F_SETFL, fcntl(ep->ch->fd, F_GETFL) | O_NONBLOCK);
	fcntl(ep->ctx->async_fd, F_SETFL, fcntl(ep->ctx->async_fd, F_GETFL) | O_NONBLOCK);
	if (ibv_req_notify_cq(ep->cq, 0))
		return -errno;
	ep->if_mtu = ep->mtu;
	ep->hw = (struct ipoib_hwaddr){ .qpn = ep->qp->qp_num };
	memcpy(ep->hw.gid, ep->gid, 16);
	return 0;
}

void ipoib_ep_close(struct ipoib_ep *ep)
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	ipoib_cm_close(ep);
	neigh_fini(&ep->neigh);
	if (ep->qp)
		ipoib_mc_leave_all(ep);
	if (ep->attached) {
		memcpy(g.raw, ep->mgid, 16);
		ibv_detach_mcast(ep->qp, &g, ep->mlid);
	}
	if (ep->joined && !ibv_query_port(ep->ctx, ep->port, &pa)) {
		struct ipoib_mcm req = { .pkey = ep->pkey | 0x8000, .join_state = 1 };
		uint16_t st;

		memcpy(req.mgid, ep->mgid, 16);
		memcpy(req.port_gid, ep->gid, 16);
		ipoib_sa_mcm(&ep->sa, pa.sm_lid, pa.sm_sl, SA_METHOD_DELETE,
			     MCM_COMP_MGID | MCM_COMP_PORT_GID | MCM_COMP_PKEY |
			     MCM_COMP_JOIN_STATE, &req, NULL, &st);
	}
	ipoib_sa_close(&ep->sa);
	if (ep->bcast_ah)
		ibv_destroy_ah(ep->bcast_ah);
	if (ep->qp)
		ibv_destroy_qp(ep->qp);
	if (ep->mr)
		ibv_dereg_mr(ep->mr);
	free(ep->buf);
	if (ep->cq)
		ibv_destroy_cq(ep->cq);
	if (ep->ch)
		ibv_destroy_comp_channel(ep->ch);
	if (ep->pd)
		ibv_dealloc_pd(ep->pd);
	if (ep->ctx)
		ibv_close_device(ep->ctx);
	memset(ep, 0, sizeof(*ep));
	ep->sa.fd = -1;
}

int ipoib_ep_fd(const struct ipoib_ep *ep)
{
	return ep->ch->fd;
}

/* Post one send from TX slot i (already filled, len bytes with the header). */
static int post_send(struct ipoib_ep *ep, uint32_t i, size_t len, struct ibv_ah *ah,
		     uint32_t qpn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)tx_buf(ep, i), .length = (uint32_t)len,
			       .lkey = ep->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = TX_WRID(i), .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = ep->qkey },
	}, *bad;
	int ret = ibv_post_send(ep->qp, &wr, &bad);

	if (ret) {
		ep->tx_free[ep->tx_nfree++] = i;
		ep->st.tx_dropped++;
		return -ret;
	}
	ep->st.tx_packets++;
	ep->st.tx_bytes += len;
	return 0;
}

/* Encapsulate and send payload (len bytes) with ethertype to ah/qpn. */
static int send_frame(struct ipoib_ep *ep, uint16_t ethertype, const uint8_t *payload,
		      size_t len, struct ibv_ah *ah, uint32_t qpn)
{
	uint32_t i;

	if (len > ep->mtu || !ipoib_ep_can_send(ep)) {
		ep->st.tx_dropped++;
		return len > ep->mtu ? -EMSGSIZE : -ENOBUFS;
	}
	i = ep->tx_free[--ep->tx_nfree];
	ipoib_hdr_encode(ethertype, tx_buf(ep, i));
	memcpy(tx_buf(ep, i) + IPOIB_ENCAP_LEN, payload, len);
	return post_send(ep, i, len + IPOIB_ENCAP_LEN, ah, qpn);
}

static int send_arp(struct ipoib_ep *ep, uint16_t op, uint32_t tpa,
		    const struct ipoib_hwaddr *tha, struct ibv_ah *ah, uint32_t qpn)
{
	struct ipoib_arp a = { .op = op, .sha = ep->hw, .spa = ep->ip, .tpa = tpa };
	uint8_t pkt[IPOIB_ARP_LEN];

	if (tha)
		a.tha = *tha;
	ipoib_arp_encode(&a, pkt);
	ep->st.arp_tx++;
	return send_frame(ep, ETH_P_ARP_, pkt, sizeof(pkt), ah, qpn);
}

/* The AH of a VALID neighbour, from a PathRecord by its GID (ipoib's path);
 * NULL and n removed when there is no path. */
static struct ibv_ah *neigh_ah(struct ipoib_ep *ep, struct neigh *n)
{
	struct ibv_port_attr pa;
	struct ipoib_path p;
	struct ibv_ah_attr a = { .port_num = ep->port };
	uint16_t st;

	if (n->ah)
		return n->ah;
	if (ibv_query_port(ep->ctx, ep->port, &pa))
		return NULL;
	ep->st.path_queries++;
	if (ipoib_sa_path(&ep->sa, pa.sm_lid, pa.sm_sl, ep->gid, n->hw.gid, ep->pkey | 0x8000,
			  &p, &st) || !p.dlid) {
		/* No path to that GID: forget the neighbour (its queue too), so
		 * that the next datagram asks again, at most once per ARP/ND
		 * probe, instead of asking the SA for every datagram. */
		ep->st.path_errors++;
		ep->st.tx_dropped += n->qn;
		neigh_remove(&ep->neigh, n);
		return NULL;
	}
	a.dlid = p.dlid;
	a.sl = p.sl;
	if (p.hop_limit > 1) {
		a.is_global = 1;
		memcpy(a.grh.dgid.raw, p.dgid, 16);
		a.grh.hop_limit = p.hop_limit;
		a.grh.traffic_class = p.tclass;
		a.grh.flow_label = p.flow_label;
	}
	n->ah = ibv_create_ah(ep->pd, &a);
	n->dlid = p.dlid;
	return n->ah;
}

static int send_valid(struct ipoib_ep *ep, struct neigh *n, uint16_t et, const uint8_t *pkt,
		      size_t len, uint64_t now);

/* A neighbour became VALID: send what waited for it (n may go meanwhile:
 * no path). */
static void flush_queue(struct ipoib_ep *ep, struct neigh *n)
{
	struct neigh_pkt q[NEIGH_QLEN];
	unsigned int qn = n->qn;

	memcpy(q, n->q, sizeof(q));
	n->qn = 0;
	for (unsigned int i = 0; i < qn; i++) {
		const uint8_t *d = q[i].data;
		uint16_t et = (d[0] >> 4) == 6 ? ETH_P_IPV6_ : ETH_P_IPV4;

		if (n->state == NEIGH_VALID)
			send_valid(ep, n, et, d, q[i].len, ep->now);
		else
			ep->st.tx_dropped++;
		free(q[i].data);
	}
}

static bool own_ip4(const struct ipoib_ep *ep, uint32_t ip)
{
	if (ip == ep->ip)
		return true;
	for (unsigned int i = 0; i < ep->nip4; i++)
		if (ep->ip4[i] == ip)
			return true;
	return false;
}

/* A neighbour heard from LID slid: an AH made for another LID, or an RC
 * connection made on a path to it, is stale (its port's LID changed), so the
 * next datagram asks for the path again (and connects again). */
static void check_path(struct ipoib_ep *ep, struct neigh *n, uint16_t slid)
{
	if (!n || !slid)
		return;
	if (n->dlid && n->dlid != slid) {
		if (n->ah)
			neigh_forget_ah(&ep->neigh, n);
		ipoib_cm_forget(ep, &n->hw);
	}
	n->dlid = slid;
}

static void handle_arp(struct ipoib_ep *ep, const uint8_t *p, size_t len, uint16_t slid,
		       uint64_t now)
{
	struct ipoib_arp a;
	struct neigh *n;
	uint8_t key[16];
	bool for_us;

	if (ipoib_arp_decode(p, len, &a) || !a.sha.qpn || a.sha.qpn == IPOIB_BCAST_QPN) {
		ep->st.rx_dropped++;
		return;
	}
	ep->st.arp_rx++;
	if (!ep->ip || !a.spa || own_ip4(ep, a.spa))
		return;
	for_us = own_ip4(ep, a.tpa);
	if (!for_us && a.op == ARP_OP_REQUEST && now >= ep->ip6_read + 100) {
		read_ip6(ep);	/* an address added since the last tick */
		ep->ip6_read = now;
		for_us = own_ip4(ep, a.tpa);
	}
	neigh_v4(a.spa, key);
	n = neigh_lookup(&ep->neigh, key, now);
	if (n || for_us) {	/* update known entries; learn askers */
		n = neigh_confirm(&ep->neigh, key, &a.sha, now);
		check_path(ep, n, slid);
		flush_queue(ep, n);
	}
	if (a.op == ARP_OP_REQUEST && for_us && n->state == NEIGH_VALID) {
		struct ibv_ah *ah = neigh_ah(ep, n);

		if (ah) {
			struct ipoib_arp r = { .op = ARP_OP_REPLY, .sha = ep->hw, .spa = a.tpa,
					       .tha = a.sha, .tpa = a.spa };
			uint8_t pkt[IPOIB_ARP_LEN];

			ipoib_arp_encode(&r, pkt);
			ep->st.arp_tx++;
			send_frame(ep, ETH_P_ARP_, pkt, sizeof(pkt), ah, a.sha.qpn);
		}
	}
}

static bool own_ip6(const struct ipoib_ep *ep, const uint8_t a[16])
{
	for (unsigned int i = 0; i < ep->nip6; i++)
		if (!memcmp(ep->ip6[i], a, 16))
			return true;
	return false;
}

/* Our address to send an NS for target from: a link-local one for a
 * link-local target, else another one; false if we have none. */
static bool ip6_source(const struct ipoib_ep *ep, const uint8_t target[16], uint8_t out[16])
{
	bool want_ll = target[0] == 0xfe && (target[1] & 0xc0) == 0x80;

	for (int pass = 0; pass < 2; pass++)
		for (unsigned int i = 0; i < ep->nip6; i++) {
			const uint8_t *a = ep->ip6[i];
			bool ll = a[0] == 0xfe && (a[1] & 0xc0) == 0x80;

			if (pass || ll == want_ll) {
				memcpy(out, a, 16);
				return true;
			}
		}
	return false;
}

static void send_nd(struct ipoib_ep *ep, const struct ipoib_nd *nd, struct ibv_ah *ah,
		    uint32_t qpn)
{
	uint8_t pkt[IPOIB_ND_LEN];
	size_t len = ipoib_nd_encode(nd, pkt);

	ep->st.nd_tx++;
	send_frame(ep, ETH_P_IPV6_, pkt, len, ah, qpn);
}

/* An NS or NA (RFC 4861 §7.2.3-7.2.5 as far as a host needs): true if it was
 * one (consumed), false to deliver the packet. */
static bool handle_nd(struct ipoib_ep *ep, const uint8_t *p, size_t len, uint16_t slid,
		      uint64_t now)
{
	struct ipoib_nd nd, na;
	struct neigh *n;
	int ret = ipoib_nd_decode(p, len, &nd);
	static const uint8_t unspec[16];

	if (ret == -ENOENT)
		return false;
	if (ret || !nd.has_lla || !nd.lla.qpn || nd.lla.qpn == IPOIB_BCAST_QPN) {
		ep->st.rx_dropped++;	/* malformed, or no address we could use */
		return true;
	}
	ep->st.nd_rx++;
	if (nd.type == ND_NA) {
		n = neigh_lookup(&ep->neigh, nd.target, now);
		if (n) {
			n = neigh_confirm(&ep->neigh, nd.target, &nd.lla, now);
			check_path(ep, n, slid);
			flush_queue(ep, n);
		}
		return true;
	}
	if (!own_ip6(ep, nd.target) && now >= ep->ip6_read + 100) {
		read_ip6(ep);	/* an address added since the last tick */
		ep->ip6_read = now;
	}
	if (!own_ip6(ep, nd.target) || !memcmp(nd.src, unspec, 16))
		return true;	/* not ours; DAD probes get no answer (no DAD here) */
	n = neigh_confirm(&ep->neigh, nd.src, &nd.lla, now);
	check_path(ep, n, slid);
	flush_queue(ep, n);
	na = (struct ipoib_nd){ .type = ND_NA, .flags = ND_NA_SOLICITED | ND_NA_OVERRIDE,
				.has_lla = true, .lla = ep->hw };
	memcpy(na.src, nd.target, 16);
	memcpy(na.dst, nd.src, 16);
	memcpy(na.target, nd.target, 16);
	if (neigh_ah(ep, n))
		send_nd(ep, &na, n->ah, nd.lla.qpn);
	return true;
}

void ipoib_ep_rx_frame(struct ipoib_ep *ep, const uint8_t *p, size_t len, uint16_t slid,
		       uint64_t now)
{
	int et = ipoib_hdr_decode(p, len);

	if (et == ETH_P_ARP_) {
		handle_arp(ep, p + IPOIB_ENCAP_LEN, len - IPOIB_ENCAP_LEN, slid, now);
	} else if (et == ETH_P_IPV6_ && handle_nd(ep, p + IPOIB_ENCAP_LEN,
						  len - IPOIB_ENCAP_LEN, slid, now)) {
		/* neighbour discovery: ours, not the kernel's (the TUN has no
		 * link-layer address) */
	} else if ((et == ETH_P_IPV4 || et == ETH_P_IPV6_) && len > IPOIB_ENCAP_LEN &&
		   (p[IPOIB_ENCAP_LEN] >> 4) == (et == ETH_P_IPV4 ? 4 : 6)) {
		ep->st.rx_packets++;
		ep->st.rx_bytes += len - IPOIB_ENCAP_LEN;
		if (ep->deliver)
			ep->deliver(ep->deliver_arg, p + IPOIB_ENCAP_LEN, len - IPOIB_ENCAP_LEN);
	} else {
		ep->st.rx_dropped++;
	}
}

static void handle_recv(struct ipoib_ep *ep, const struct ibv_wc *wc, uint64_t now)
{
	uint32_t i = (uint32_t)wc->wr_id;
	const uint8_t *p = rx_buf(ep, i) + IPOIB_GRH_LEN;
	size_t len = wc->byte_len >= IPOIB_GRH_LEN ? wc->byte_len - IPOIB_GRH_LEN : 0;

	if (wc->src_qp == ep->qp->qp_num && wc->slid == ep->lid) {
		/* our own multicast, looped back */
	} else {
		ipoib_ep_rx_frame(ep, p, len, wc->slid, now);
	}
	if (post_recv(ep, i))
		ep->st.rx_errors++;
}

static int drain(struct ipoib_ep *ep, uint64_t now)
{
	struct ibv_wc wc[32];
	int n, total = 0;

	while ((n = ibv_poll_cq(ep->cq, 32, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id >> 32) {
				ep->tx_free[ep->tx_nfree++] = (uint32_t)wc[k].wr_id;
				if (wc[k].status != IBV_WC_SUCCESS)
					ep->st.tx_dropped++;
			} else if ((uint32_t)wc[k].wr_id >= IPOIB_RX_RING) {
				ep->st.rx_errors++;
			} else if (wc[k].status != IBV_WC_SUCCESS ||
				   !(wc[k].opcode & IBV_WC_RECV)) {
				ep->st.rx_errors++;
				if (wc[k].status != IBV_WC_WR_FLUSH_ERR)
					post_recv(ep, (uint32_t)wc[k].wr_id);
			} else {
				handle_recv(ep, &wc[k], now);
			}
		}
		total += n;
	}
	return n < 0 ? -EIO : total;
}

int ipoib_ep_poll(struct ipoib_ep *ep, uint64_t now_ms)
{
	struct ibv_cq *cq;
	void *ctx;
	int ret;

	ep->now = now_ms;
	while (!ibv_get_cq_event(ep->ch, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(ep->cq, 0))
		return -errno;
	ret = drain(ep, now_ms);
	return ret < 0 ? ret : 0;
}

bool ipoib_ep_can_send(struct ipoib_ep *ep)
{
	if (!ep->tx_nfree)	/* receives found here are handled at the last time we were told */
		drain(ep, ep->now);
	return ep->tx_nfree > 0 && ipoib_cm_can_send(ep);
}

static bool is_v4(const uint8_t ip[16])
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(ip, pre, 12);
}

/* Ask for n's address: ARP (IPv4) or an NS to its solicited-node address
 * through the broadcast group (IPv6), both to QPN 0xFFFFFF. */
static void probe(struct ipoib_ep *ep, struct neigh *n, uint64_t now)
{
	struct ipoib_nd ns = { .type = ND_NS, .has_lla = true, .lla = ep->hw };

	n->probes++;
	n->expires = now + IPOIB_ARP_RETRY_MS;
	if (is_v4(n->ip)) {
		send_arp(ep, ARP_OP_REQUEST, (uint32_t)n->ip[12] << 24 | (uint32_t)n->ip[13] << 16 |
			 (uint32_t)n->ip[14] << 8 | n->ip[15], NULL, ep->bcast_ah, IPOIB_BCAST_QPN);
		return;
	}
	if (!ip6_source(ep, n->ip, ns.src))
		return;		/* no IPv6 address yet: the probe counts, it ends */
	memcpy(ns.target, n->ip, 16);
	ipoib_solicited_node(n->ip, ns.dst);
	send_nd(ep, &ns, ep->bcast_ah, IPOIB_BCAST_QPN);
}

void ipoib_ep_too_big(struct ipoib_ep *ep, const uint8_t *pkt, size_t len, unsigned int mtu)
{
	uint8_t icmp[IPOIB_TOO_BIG_MAX];
	size_t n = ipoib_icmp_too_big(pkt, len, mtu, icmp);

	if (n && ep->deliver)
		ep->deliver(ep->deliver_arg, icmp, n);
}

/* Larger than the UD MTU (connected mode's interface MTU is larger): an
 * ICMP too-big back, the datagram dropped. */
static int ud_too_big(struct ipoib_ep *ep, const uint8_t *pkt, size_t len)
{
	ep->st.tx_dropped++;
	ep->cm.st.too_big++;
	ipoib_ep_too_big(ep, pkt, len, ep->mtu);
	return -EMSGSIZE;
}

/* A datagram to the VALID neighbour n: over its RC connection (connected
 * mode, the neighbour has IPOIB_FLAGS_RC), else over UD. */
static int send_valid(struct ipoib_ep *ep, struct neigh *n, uint16_t et, const uint8_t *pkt,
		      size_t len, uint64_t now)
{
	struct ibv_ah *ah;

	if (ep->cm.enabled && (n->hw.flags & IPOIB_FLAGS_RC)) {
		int ret = ipoib_cm_send(ep, &n->hw, et, pkt, len, now);

		if (ret != -ENOTCONN) {
			if (ret && ret != -EMSGSIZE)
				ep->st.tx_dropped++;
			return ret;
		}
		/* no connection to be had now: UD */
	}
	if (len > ep->mtu)
		return ud_too_big(ep, pkt, len);
	ah = neigh_ah(ep, n);
	if (ah)
		return send_frame(ep, et, pkt, len, ah, n->hw.qpn);
	ep->st.tx_dropped++;
	return -EHOSTUNREACH;
}

/* A unicast datagram to neighbour ip: at once if resolved, else queued
 * behind a probe. */
static int send_unicast(struct ipoib_ep *ep, const uint8_t ip[16], uint16_t et,
			const uint8_t *pkt, size_t len, uint64_t now)
{
	struct neigh *n = neigh_get_incomplete(&ep->neigh, ip, now);

	if (n->state == NEIGH_VALID)
		return send_valid(ep, n, et, pkt, len, now);
	if (neigh_enqueue(&ep->neigh, n, pkt, len))
		return -ENOMEM;
	if (!n->probes)
		probe(ep, n, now);
	return 0;
}

/* 255.255.255.255, the subnet's broadcast address, or multicast (224/4). */
static bool ipv4_bcast(const struct ipoib_ep *ep, uint32_t dst)
{
	uint32_t host = ~ep->prefix_mask;

	return (dst >> 28) == 0xE || dst == 0xFFFFFFFF ||
	       (ep->prefix_mask && host && (dst & host) == host &&
		(dst & ep->prefix_mask) == (ep->ip & ep->prefix_mask));
}

int ipoib_ep_send_ip(struct ipoib_ep *ep, const uint8_t *pkt, size_t len, uint64_t now)
{
	struct ibv_ah *ah;
	uint8_t key[16];
	uint32_t dst;

	ep->now = now;
	if (len < 20 || len > ep->if_mtu) {
		ep->st.tx_dropped++;
		return -EMSGSIZE;
	}
	if (pkt[0] >> 4 == 6) {
		if (len < 40) {
			ep->st.tx_dropped++;
			return -EINVAL;
		}
		if (pkt[24] == 0xFF)
			return len > ep->mtu ? ud_too_big(ep, pkt, len) :
			       send_frame(ep, ETH_P_IPV6_, pkt, len, ep->bcast_ah, IPOIB_BCAST_QPN);
		return send_unicast(ep, pkt + 24, ETH_P_IPV6_, pkt, len, now);
	}
	if (pkt[0] >> 4 != 4) {
		ep->st.tx_dropped++;
		return -EPROTONOSUPPORT;
	}
	dst = (uint32_t)pkt[16] << 24 | (uint32_t)pkt[17] << 16 | (uint32_t)pkt[18] << 8 | pkt[19];
	if (len > ep->mtu && ((dst >> 28) == 0xE || ipv4_bcast(ep, dst)))
		return ud_too_big(ep, pkt, len);
	if ((dst >> 28) == 0xE && (ah = ipoib_mc_sender(ep, dst, now)))
		return send_frame(ep, ETH_P_IPV4, pkt, len, ah, IPOIB_BCAST_QPN);
	if (ipv4_bcast(ep, dst))
		return send_frame(ep, ETH_P_IPV4, pkt, len, ep->bcast_ah, IPOIB_BCAST_QPN);
	neigh_v4(dst, key);
	return send_unicast(ep, key, ETH_P_IPV4, pkt, len, now);
}

/* The interface's IPv6 and IPv4 addresses (its network namespace's
 * getifaddrs). */
static void read_ip6(struct ipoib_ep *ep)
{
	struct ifaddrs *ifa, *i;

	if (!ep->ifname[0] || getifaddrs(&ifa))
		return;
	ep->nip6 = ep->nip4 = 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ep->ifname))
			continue;
		if (i->ifa_addr->sa_family == AF_INET6 && ep->nip6 < IPOIB_MAX_IP6)
			memcpy(ep->ip6[ep->nip6++],
			       ((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr.s6_addr, 16);
		else if (i->ifa_addr->sa_family == AF_INET && ep->nip4 < IPOIB_MAX_IP6)
			ep->ip4[ep->nip4++] =
				ntohl(((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr);
	}
	freeifaddrs(ifa);
}

int ipoib_ep_async_fd(const struct ipoib_ep *ep)
{
	return ep->ctx->async_fd;
}

void ipoib_ep_async(struct ipoib_ep *ep)
{
	struct ibv_async_event ev;

	for (int k = 0; k < 64 && !ibv_get_async_event(ep->ctx, &ev); k++) {
		switch (ev.event_type) {
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
		case IBV_EVENT_PKEY_CHANGE:
			if (ev.element.port_num == ep->port) {
				ep->rejoin = true;
				ep->st.port_events++;
			}
			break;
		case IBV_EVENT_DEVICE_FATAL: /* softibd gone: the kernel's ipoib
					      * goes with its device */
			ep->fatal = true;
			break;
		default:
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

/* The flush after a port event: forget every path (AHs made for old LIDs),
 * join the broadcast group again (the SA may have dropped us while the port
 * was down) and re-attach, leave the IPv4 groups (the next sync joins the
 * kernel's again).  Retried by the next tick while the port is not ACTIVE. */
static void rejoin(struct ipoib_ep *ep)
{
	struct ibv_port_attr pa;
	union ibv_gid g;
	uint16_t old_mlid = ep->mlid;

	if (ibv_query_port(ep->ctx, ep->port, &pa) || pa.state != IBV_PORT_ACTIVE ||
	    !pa.lid || !pa.sm_lid)
		return;
	ep->rejoin = false;
	ep->st.rejoins++;
	ep->lid = pa.lid;
	ipoib_cm_flush(ep);	/* connections on paths from our old LID */
	neigh_fini(&ep->neigh);
	if (neigh_init(&ep->neigh, IPOIB_NEIGH_MAX, IPOIB_NEIGH_TTL_MS, release_ah, ep))
		abort();	/* 256 entries: no memory at all */
	ipoib_mc_leave_all(ep);
	if (join_broadcast(ep, &pa)) {
		ep->rejoin = true;	/* try again on the next tick */
		return;
	}
	memcpy(g.raw, ep->mgid, 16);
	if (ep->attached && old_mlid != ep->mlid) {
		ibv_detach_mcast(ep->qp, &g, old_mlid);
		ep->attached = false;
	}
	if (old_mlid != ep->mlid && ep->bcast_ah) {
		struct ibv_ah_attr a = {
			.dlid = ep->mlid, .sl = ep->mc_sl, .port_num = ep->port, .is_global = 1,
			.grh = { .dgid = g, .hop_limit = 1 },
		};
		struct ibv_ah *ah = ibv_create_ah(ep->pd, &a);

		if (ah) {
			ibv_destroy_ah(ep->bcast_ah);
			ep->bcast_ah = ah;
		}
	}
	if (!ep->attached && !ibv_attach_mcast(ep->qp, &g, ep->mlid))
		ep->attached = true;
	ep->ip6_read = 0;	/* the groups again at once */
	if (ep->ip)	/* announce ourselves: peers drop paths to our old LID */
		send_arp(ep, ARP_OP_REQUEST, ep->ip, NULL, ep->bcast_ah, IPOIB_BCAST_QPN);
	fprintf(stderr, "ipoib: %s port %u: rejoined the broadcast group after a port event "
		"(LID 0x%04x, MLID 0x%04x)\n", ep->dev, ep->port, ep->lid, ep->mlid);
}

void ipoib_ep_tick(struct ipoib_ep *ep, uint64_t now)
{
	ep->now = now;
	if (ep->rejoin)
		rejoin(ep);
	if (now >= ep->ip6_read + 1000 || !ep->ip6_read) {
		read_ip6(ep);
		ipoib_mc_sync(ep, now);
		ep->ip6_read = now;
	}
	neigh_expire(&ep->neigh, now);
	if (ep->cm.enabled)
		ipoib_cm_tick(ep, now);
	for (size_t i = 0; i < ep->neigh.cap; i++) {
		struct neigh *n = &ep->neigh.e[i];

		if (n->state != NEIGH_INCOMPLETE || now < n->expires)
			continue;
		if (n->probes >= IPOIB_ARP_PROBES) {	/* unreachable: drop it */
			ep->st.tx_dropped += n->qn;
			neigh_remove(&ep->neigh, n);
		} else {
			probe(ep, n, now);
		}
	}
}
