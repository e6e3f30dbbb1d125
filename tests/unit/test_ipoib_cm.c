/* SPDX-License-Identifier: MIT */
/*
 * IPoIB connected mode (src/ipoib/cm.c, RFC 4755) without a TUN, through the
 * built libibverbs.so.1, libibumad.so.3 and librdmacm.so.1 and a private
 * softibd: two endpoints (softib0, softib1) in connected mode; a 60000-byte
 * datagram each way over the RC connections (one each way, the addresses
 * learnt with the RC flag); hostile peers through librdmacm: REQs with short
 * or garbage private data are rejected, a peer that never sends the RTU leaves
 * no QP once the deadline passed, a peer that sends a message larger than the
 * receive buffers gets its connection torn down (a local length error here,
 * counted) and the endpoint goes on, a peer that goes away leaves no QP; a
 * neighbour heard from a new LID loses its connection, a port event all; and a randomized run (seed from
 * SIB_IPOIB_CM_SEED, printed) of datagrams of random sizes both ways, idle
 * teardowns and hostile REQs, checked against a model: every datagram
 * delivered once, in order, intact; no QP beyond the live connections; a
 * neighbour with the RC flag that takes no connection: UD, ICMP too-big.
 * No root needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

#include "daemon_fixture.h"
#include "ipoib/ep.h"

static struct ipoib_ep a, b;

#define MAX_GOT 64
struct got {
	unsigned int n;
	size_t len[MAX_GOT];
	uint64_t hash[MAX_GOT];
};
static struct got got_a, got_b;

static uint64_t fnv(const uint8_t *p, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void deliver(void *arg, const uint8_t *pkt, size_t len)
{
	struct got *g = arg;

	if (g->n < MAX_GOT) {
		g->len[g->n] = len;
		g->hash[g->n] = fnv(pkt, len);
	}
	g->n++;
}

/* An IPv4/UDP datagram of len bytes (>= 28) from src to dst, its payload
 * from seed. */
static void ipv4(uint8_t *p, size_t len, uint32_t src, uint32_t dst, uint64_t seed)
{
	memset(p, 0, 28);
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[8] = 64;
	p[9] = 17;
	for (int i = 0; i < 4; i++) {
		p[12 + i] = (uint8_t)(src >> (24 - 8 * i));
		p[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
	}
	for (size_t i = 28; i < len; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(seed >> 56);
	}
}

static void pump_once(void)
{
	uint64_t t = now_ms();

	ipoib_ep_poll(&a, t);
	ipoib_ep_poll(&b, t);
	ipoib_cm_poll(&a, t);
	ipoib_cm_poll(&b, t);
	ipoib_cm_events(&a, t);
	ipoib_cm_events(&b, t);
	ipoib_ep_tick(&a, t);
	ipoib_ep_tick(&b, t);
	usleep(300);
}

/* Pump both endpoints until *n reaches want or ms passed; true if it did. */
static bool pump_until(const unsigned int *n, unsigned int want, unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (*n < want && now_ms() < end)
		pump_once();
	return *n >= want;
}

static void pump_for(unsigned int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end)
		pump_once();
}

/* RC QPs of ep that belong to no connection: must stay 0. */
static uint64_t stray_qps(const struct ipoib_ep *ep)
{
	uint64_t n = 0;

	for (int i = 0; i < IPOIB_CM_MAX_TX; i++)
		n += ep->cm.tx[i].qp != NULL;
	for (int i = 0; i < IPOIB_CM_MAX_RX; i++)
		n += ep->cm.rx[i].qp != NULL;
	return ipoib_cm_live_qps(ep) - n;
}

static int setup(void **state)
{
	if (start_daemon(state))
		return -1;
	if (ipoib_ep_open(&a, "softib0", 1, 10000) || ipoib_ep_open(&b, "softib1", 1, 10000) ||
	    ipoib_cm_open(&a) || ipoib_cm_open(&b))
		return -1;
	a.ip = 0x0A000001;
	b.ip = 0x0A000002;
	a.prefix_mask = b.prefix_mask = 0xFFFFFF00;
	a.deliver = b.deliver = deliver;
	a.deliver_arg = &got_a;
	b.deliver_arg = &got_b;
	return 0;
}

static int teardown(void **state)
{
	ipoib_ep_close(&a);
	ipoib_ep_close(&b);
	return stop_daemon(state);
}

static uint8_t big[IPOIB_CM_MTU];

static void test_connected(void **state)
{
	uint8_t key[16];
	struct neigh *n;

	(void)state;
	assert_true(a.cm.enabled);
	assert_int_equal(a.if_mtu, 65520);
	assert_int_equal(a.hw.flags, IPOIB_FLAGS_RC);
	ipoib_ep_close(&a);	/* closed and opened again: nothing left behind */
	assert_int_equal(ipoib_ep_open(&a, "softib0", 1, 10000), 0);
	assert_int_equal(ipoib_cm_open(&a), 0);
	a.ip = 0x0A000001;
	a.prefix_mask = 0xFFFFFF00;
	a.deliver = deliver;
	a.deliver_arg = &got_a;

	ipv4(big, 60000, a.ip, b.ip, 1);
	assert_int_equal(ipoib_ep_send_ip(&a, big, 60000, now_ms()), 0);
	assert_true(pump_until(&got_b.n, 1, 10000));
	assert_int_equal(got_b.len[0], 60000);
	assert_true(got_b.hash[0] == fnv(big, 60000));
	assert_int_equal(a.cm.st.tx_conns, 1);
	assert_int_equal(b.cm.st.rx_conns, 1);
	neigh_v4(b.ip, key);
	n = neigh_lookup(&a.neigh, key, now_ms());
	assert_non_null(n);
	assert_int_equal(n->hw.flags, IPOIB_FLAGS_RC);
	/* the other way: B's own TX connection */
	ipv4(big, 65520, b.ip, a.ip, 2);
	assert_int_equal(ipoib_ep_send_ip(&b, big, 65520, now_ms()), 0);
	assert_true(pump_until(&got_a.n, 1, 10000));
	assert_true(got_a.hash[0] == fnv(big, 65520));
	assert_int_equal(b.cm.st.tx_conns, 1);
	assert_int_equal(a.cm.st.rx_conns, 1);
	/* larger than the interface MTU: refused */
	assert_int_equal(ipoib_ep_send_ip(&b, big, 65521, now_ms()), -EMSGSIZE);
	assert_int_equal(stray_qps(&a), 0);
	assert_int_equal(stray_qps(&b), 0);
	got_a.n = got_b.n = 0;
}

/* ---- a hostile peer through librdmacm ---- */

struct peer {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
};

/* The next event of p (pumping the endpoints meanwhile): its type, or -1. */
static int peer_event(struct peer *p, unsigned int ms, uint8_t *pdata, size_t *plen)
{
	uint64_t end = now_ms() + ms;
	struct rdma_cm_event *ev;

	while (now_ms() < end) {
		if (!rdma_get_cm_event(p->ch, &ev)) {
			int t = ev->event;

			if (pdata && plen) {
				*plen = ev->param.conn.private_data_len;
				if (*plen > 8)
					*plen = 8;
				memcpy(pdata, ev->param.conn.private_data, *plen);
			}
			rdma_ack_cm_event(ev);
			return t;
		}
		pump_once();
	}
	return -1;
}

/* A peer that resolved its way to ep's ServiceID, with an RC QP of its own. */
static void peer_open(struct peer *p, const struct ipoib_ep *ep)
{
	struct sockaddr_ib dst = { .sib_family = AF_IB };
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	memset(p, 0, sizeof(*p));
	p->ch = rdma_create_event_channel();
	assert_non_null(p->ch);
	fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK);
	assert_int_equal(rdma_create_id(p->ch, &p->id, NULL, RDMA_PS_IB), 0);
	dst.sib_pkey = htons(ep->pkey | 0x8000);
	memcpy(&dst.sib_addr, ep->gid, 16);
	dst.sib_sid = htobe64(ipoib_cm_service_id(ep->qp->qp_num));
	dst.sib_sid_mask = htobe64(~0ull);
	assert_int_equal(rdma_resolve_addr(p->id, NULL, (struct sockaddr *)&dst, 2000), 0);
	assert_int_equal(peer_event(p, 5000, NULL, NULL), RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(p->id, 2000), 0);
	assert_int_equal(peer_event(p, 5000, NULL, NULL), RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(p->id, NULL, &ia), 0);
	p->buf = calloc(1, 70000);
	assert_non_null(p->buf);
	p->mr = ibv_reg_mr(p->id->pd, p->buf, 70000, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(p->mr);
}

static void peer_close(struct peer *p)
{
	ibv_dereg_mr(p->mr);
	free(p->buf);
	rdma_destroy_qp(p->id);
	rdma_destroy_id(p->id);
	rdma_destroy_event_channel(p->ch);
}

static int peer_connect(struct peer *p, const void *pd, uint8_t len)
{
	struct rdma_conn_param c = { .private_data = pd, .private_data_len = len,
				     .retry_count = 7, .rnr_retry_count = 7 };

	return rdma_connect(p->id, &c);
}

/* REQs with short or garbage private data: REJECTED, counted, no QP. */
static void test_bad_requests(void **state)
{
	static const uint8_t bad[][8] = {
		{ 0, 0, 0, 0, 0, 0, 0xff, 0xf4 },	/* QPN 0 */
		{ 0, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xf4 },	/* the broadcast QPN */
		{ 0, 0, 0, 7, 0, 0, 0, 4 },		/* buffers of 4 bytes */
	};
	uint64_t before = b.cm.st.rejected;
	struct peer p;

	(void)state;
	for (unsigned int i = 0; i < 5; i++) {
		peer_open(&p, &b);
		if (i < 3)
			assert_int_equal(peer_connect(&p, bad[i], 8), 0);
		else	/* 3 bytes; none at all */
			assert_int_equal(peer_connect(&p, i == 3 ? bad[2] : NULL, i == 3 ? 3 : 0), 0);
		assert_int_equal(peer_event(&p, 5000, NULL, NULL), RDMA_CM_EVENT_REJECTED);
		peer_close(&p);
	}
	assert_int_equal(b.cm.st.rejected, before + 5);
	assert_int_equal(stray_qps(&b), 0);
}

/* A peer that never sends the RTU: the RX connection goes at the deadline. */
static void test_no_rtu(void **state)
{
	struct ipoib_cm_data d = { .qpn = 0x77, .mtu = IPOIB_CM_BUF_SIZE };
	uint8_t pd[8], rep[8];
	size_t rlen = 0;
	uint64_t live = ipoib_cm_live_qps(&b), gone = b.cm.st.teardowns;
	struct ipoib_cm_data r;
	struct peer p;

	(void)state;
	b.cm.connect_ms = 300;
	ipoib_cm_data_encode(&d, pd);
	peer_open(&p, &b);
	/* an id whose QP is not the library's would wait for rdma_establish:
	 * take the QP away from the id, so the library sends no RTU */
	struct ibv_qp *qp = p.id->qp;
	struct rdma_conn_param c = { .private_data = pd, .private_data_len = 8,
				     .qp_num = qp->qp_num };
	p.id->qp = NULL;
	assert_int_equal(rdma_connect(p.id, &c), 0);
	assert_int_equal(peer_event(&p, 5000, rep, &rlen), RDMA_CM_EVENT_CONNECT_RESPONSE);
	/* the REP's private data: B's UD QPN and its buffers */
	assert_int_equal(rlen, 8);
	assert_int_equal(ipoib_cm_data_decode(rep, rlen, &r), 0);
	assert_int_equal(r.qpn, b.qp->qp_num);
	assert_int_equal(r.mtu, IPOIB_CM_BUF_SIZE);
	assert_int_equal(ipoib_cm_live_qps(&b), live + 1);
	pump_for(1500);
	assert_int_equal(ipoib_cm_live_qps(&b), live);
	assert_true(b.cm.st.teardowns > gone);
	assert_int_equal(stray_qps(&b), 0);
	p.id->qp = qp;
	peer_close(&p);
	b.cm.connect_ms = IPOIB_CM_CONNECT_MS;
}

/* A peer that sends more than the receive buffers hold: a local length error
 * on B's side, the connection torn down, B goes on. */
static void test_oversize(void **state)
{
	struct ipoib_cm_data d = { .qpn = 0x78, .mtu = IPOIB_CM_BUF_SIZE };
	uint8_t pd[8];
	uint64_t errs = b.cm.st.rx_errors, live = ipoib_cm_live_qps(&b);
	struct ibv_wc wc;
	struct peer p;

	(void)state;
	ipoib_cm_data_encode(&d, pd);
	peer_open(&p, &b);
	assert_int_equal(peer_connect(&p, pd, 8), 0);
	assert_int_equal(peer_event(&p, 5000, NULL, NULL), RDMA_CM_EVENT_ESTABLISHED);
	pump_for(200);
	assert_int_equal(ipoib_cm_live_qps(&b), live + 1);
	struct ibv_sge sge = { .addr = (uintptr_t)p.buf, .length = 70000, .lkey = p.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *badwr;
	assert_int_equal(ibv_post_send(p.id->qp, &wr, &badwr), 0);
	uint64_t end = now_ms() + 10000;
	int n = 0;
	while (now_ms() < end && (b.cm.st.rx_errors == errs || !n)) {
		pump_once();
		if (!n)
			n = ibv_poll_cq(p.id->send_cq, 1, &wc);
	}
	assert_int_equal(b.cm.st.rx_errors, errs + 1);
	assert_int_equal(n, 1);
	assert_int_not_equal(wc.status, IBV_WC_SUCCESS);
	pump_for(300);
	assert_int_equal(ipoib_cm_live_qps(&b), live);
	assert_int_equal(stray_qps(&b), 0);
	peer_close(&p);
	/* B still takes A's datagrams */
	got_b.n = 0;
	ipv4(big, 1000, a.ip, b.ip, 3);
	assert_int_equal(ipoib_ep_send_ip(&a, big, 1000, now_ms()), 0);
	assert_true(pump_until(&got_b.n, 1, 10000));
	assert_true(got_b.hash[0] == fnv(big, 1000));
}

/* A peer that goes away while connected (its id destroyed without a
 * disconnect, as when its process dies: the CM sends the DREQ): the RX
 * connection and its QP go. */
static void test_peer_gone(void **state)
{
	struct ipoib_cm_data d = { .qpn = 0x79, .mtu = IPOIB_CM_BUF_SIZE };
	uint8_t pd[8];
	uint64_t live = ipoib_cm_live_qps(&b), gone = b.cm.st.teardowns;
	struct peer p;

	(void)state;
	ipoib_cm_data_encode(&d, pd);
	peer_open(&p, &b);
	assert_int_equal(peer_connect(&p, pd, 8), 0);
	assert_int_equal(peer_event(&p, 5000, NULL, NULL), RDMA_CM_EVENT_ESTABLISHED);
	pump_for(100);
	assert_int_equal(ipoib_cm_live_qps(&b), live + 1);
	peer_close(&p);
	uint64_t end = now_ms() + 10000;
	while (ipoib_cm_live_qps(&b) != live && now_ms() < end)
		pump_once();
	assert_int_equal(ipoib_cm_live_qps(&b), live);
	assert_int_equal(b.cm.st.teardowns, gone + 1);
	assert_int_equal(stray_qps(&b), 0);
}

/* A neighbour heard from another LID (its port's LID changed: the ARP that
 * announces it) loses its TX connection, made on the old path; a port event
 * of our own (ipoib_cm_flush) takes every connection.  The next datagram
 * connects again.  (The LID change itself: ipoib_cm.sh, which needs root.) */
static void test_moved_peer(void **state)
{
	uint8_t frame[IPOIB_ENCAP_LEN + IPOIB_ARP_LEN];
	struct ipoib_arp arp = { .op = ARP_OP_REQUEST, .sha = a.hw, .spa = a.ip, .tpa = b.ip };
	uint64_t conns = b.cm.st.tx_conns;

	(void)state;
	got_a.n = 0;
	ipv4(big, 5000, b.ip, a.ip, 8);
	assert_int_equal(ipoib_ep_send_ip(&b, big, 5000, now_ms()), 0);
	assert_true(pump_until(&got_a.n, 1, 10000));
	conns = b.cm.st.tx_conns;
	/* A announces itself from LID 0x99 */
	ipoib_hdr_encode(ETH_P_ARP_, frame);
	ipoib_arp_encode(&arp, frame + IPOIB_ENCAP_LEN);
	ipoib_ep_rx_frame(&b, frame, sizeof(frame), 0x99, now_ms());
	for (int i = 0; i < IPOIB_CM_MAX_TX; i++)
		assert_int_not_equal(b.cm.tx[i].state, IPOIB_CM_UP);
	/* and from its real LID again: the path changes back, a new connection */
	ipoib_ep_rx_frame(&b, frame, sizeof(frame), a.lid, now_ms());
	ipv4(big, 5000, b.ip, a.ip, 9);
	assert_int_equal(ipoib_ep_send_ip(&b, big, 5000, now_ms()), 0);
	assert_true(pump_until(&got_a.n, 2, 10000));
	assert_true(got_a.hash[1] == fnv(big, 5000));
	assert_int_equal(b.cm.st.tx_conns, conns + 1);
	/* our own port event: every connection goes, both ways */
	ipoib_cm_flush(&b);
	assert_int_equal(ipoib_cm_live_qps(&b), 0);
	ipv4(big, 5000, b.ip, a.ip, 10);
	assert_int_equal(ipoib_ep_send_ip(&b, big, 5000, now_ms()), 0);
	assert_true(pump_until(&got_a.n, 3, 10000));
	assert_int_equal(b.cm.st.tx_conns, conns + 2);
	pump_for(100);
	assert_int_equal(stray_qps(&a), 0);
	assert_int_equal(stray_qps(&b), 0);
}

/* ---- randomized, against a model ---- */

static uint64_t rnd_state;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state >> 11);
}

static void test_random(void **state)
{
	const char *env = getenv("SIB_IPOIB_CM_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)now_ms();

	(void)state;
	printf("test_random: SIB_IPOIB_CM_SEED=%llu\n", (unsigned long long)seed);
	rnd_state = seed * 2654435761u + 1;
	for (int step = 0; step < 40; step++) {
		unsigned int op = rnd() % 8;
		bool ab = rnd() & 1;
		struct ipoib_ep *from = ab ? &a : &b, *to = ab ? &b : &a;
		struct got *g = ab ? &got_b : &got_a;

		if (op < 5) {	/* k datagrams of random sizes: all arrive, in order */
			unsigned int k = 1 + rnd() % 6;
			size_t len[6];
			uint64_t h[6];

			g->n = 0;
			for (unsigned int i = 0; i < k; i++) {
				len[i] = 28 + rnd() % (IPOIB_CM_MTU - 27);
				ipv4(big, len[i], from->ip, to->ip, rnd());
				h[i] = fnv(big, len[i]);
				assert_int_equal(ipoib_ep_send_ip(from, big, len[i], now_ms()), 0);
			}
			assert_true(pump_until(&g->n, k, 10000));
			pump_for(20);
			assert_int_equal(g->n, k);	/* once each */
			for (unsigned int i = 0; i < k; i++) {
				assert_int_equal(g->len[i], len[i]);
				assert_true(g->hash[i] == h[i]);
			}
		} else if (op < 7) {	/* the sender's connections idle long enough */
			ipoib_cm_tick(from, now_ms() + IPOIB_CM_TX_IDLE_MS + 1);
			pump_for(50);
		} else {	/* a hostile REQ: short private data */
			struct peer p;
			uint8_t pd[8];

			for (int i = 0; i < 8; i++)
				pd[i] = (uint8_t)rnd();
			peer_open(&p, to);
			assert_int_equal(peer_connect(&p, pd, (uint8_t)(rnd() % 8)), 0);
			assert_int_equal(peer_event(&p, 5000, NULL, NULL), RDMA_CM_EVENT_REJECTED);
			peer_close(&p);
		}
		assert_int_equal(stray_qps(&a), 0);
		assert_int_equal(stray_qps(&b), 0);
	}
	printf("test_random: A: tx connections %llu, rx %llu, teardowns %llu; B: tx %llu, rx %llu, "
	       "rejected %llu\n", (unsigned long long)a.cm.st.tx_conns,
	       (unsigned long long)a.cm.st.rx_conns, (unsigned long long)a.cm.st.teardowns,
	       (unsigned long long)b.cm.st.tx_conns, (unsigned long long)b.cm.st.rx_conns,
	       (unsigned long long)b.cm.st.rejected);
	got_a.n = got_b.n = 0;
}

/* A neighbour with the RC flag that takes no connection (B's connected mode
 * closed, its address unchanged): the REQ is rejected, A falls back to UD
 * (the waiting datagram goes that way), and a datagram over the UD MTU gets
 * an ICMP "fragmentation needed" back to A's IP stack. */
static void test_fallback(void **state)
{
	uint64_t fb = a.cm.st.fallbacks;

	(void)state;
	ipoib_cm_tick(&a, now_ms() + IPOIB_CM_TX_IDLE_MS + 1);	/* A's TX connections go */
	pump_for(100);
	ipoib_cm_close(&b);
	assert_int_equal(b.hw.flags, IPOIB_FLAGS_RC);
	got_a.n = got_b.n = 0;
	ipv4(big, 1500, a.ip, b.ip, 4);
	assert_int_equal(ipoib_ep_send_ip(&a, big, 1500, now_ms()), 0);
	assert_true(pump_until(&got_b.n, 1, 10000));
	assert_true(got_b.hash[0] == fnv(big, 1500));
	assert_int_equal(a.cm.st.fallbacks, fb + 1);
	assert_int_equal(stray_qps(&a), 0);
	/* UD while the fallback lasts; too big for it: ICMP back */
	ipv4(big, 3000, a.ip, b.ip, 5);
	big[6] = 0x40;	/* DF */
	assert_int_equal(ipoib_ep_send_ip(&a, big, 3000, now_ms()), -EMSGSIZE);
	assert_int_equal(got_a.n, 1);
	assert_int_equal(got_a.len[0], 20 + 8 + 28);
	assert_int_equal(got_b.n, 1);
	/* B's connected mode again: after the retry time A connects */
	assert_int_equal(ipoib_cm_open(&b), 0);
	ipoib_cm_tick(&a, now_ms() + IPOIB_CM_RETRY_MS + 1);
	uint64_t conns = a.cm.st.tx_conns;
	ipv4(big, 3000, a.ip, b.ip, 6);
	assert_int_equal(ipoib_ep_send_ip(&a, big, 3000, now_ms()), 0);
	assert_true(pump_until(&got_b.n, 2, 10000));
	assert_true(got_b.hash[1] == fnv(big, 3000));
	assert_int_equal(a.cm.st.tx_conns, conns + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connected),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_no_rtu),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_peer_gone),
		cmocka_unit_test(test_moved_peer),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_fallback),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
