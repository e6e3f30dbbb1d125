/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rdma_cm (src/subnet/cma.c, cma_conn.c) over the IB CM
 * (src/subnet/cm.c) and the MAD router of the default fabric, without
 * softibd: a fake host whose verbs devices 0..3 are the fabric's CAs in
 * order, whose clock is the test's, and which records every event.
 * Bind rules and default addresses, address and route resolution (the
 * PathRecord query answered by the built-in SA, counted), connect, accept,
 * RTU, reject, no listener, disconnect both ways, TimeWait, SIDR,
 * rdma_init_qp_attr's values, destroy during a handshake, owner cleanup,
 * REQs lost until UNREACHABLE, a route query nobody answers; multicast
 * joins through the SA (MGIDs, MFTs, leave, destroy, SA error, timeout);
 * AF_IB ids on a whole ServiceID outside rdma_cm's ranges (IPoIB-CM's).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "iba/mad.h"
#include "iba/sa.h"
#include "subnet/cm.h"
#include "subnet/cma.h"
#include "subnet/subnet_api.h"
#include "fake_subnet_host.h"

/* ---- the subnet's host: nothing but the router ---- */

/* ---- the rdma_cm's host ---- */

#define MAX_EV 256
struct rec {
	struct sib_cma_id *id;
	struct sib_ctl_cm_event ev;
};

static struct sib_fab_node *cas[8];
static unsigned int ncas;
static uint64_t now_ns = 1000000000ull;
static struct rec evs[MAX_EV];
static unsigned int nevs;
static int refuse_req;		/* the host refuses CONNECT_REQUESTs */
static bool in_call;

static int cma_event(void *ctx, struct sib_cma_id *id, struct sib_ctl_cm_event *ev)
{
	(void)ctx;
	assert_false(in_call);
	if (ev->event == SIB_CMA_EV_CONNECT_REQUEST && refuse_req)
		return 1;
	assert_true(nevs < MAX_EV);
	evs[nevs].id = id;
	evs[nevs].ev = *ev;
	nevs++;
	return 0;
}

static struct sib_fab_node *cma_device(void *ctx, uint32_t d, uint32_t *gen)
{
	(void)ctx;
	if (d >= ncas)
		return NULL;
	*gen = 1;
	return cas[d];
}

static uint64_t cma_now(void *ctx)
{
	(void)ctx;
	return now_ns;
}

static const struct sib_cma_host chost = {
	.event = cma_event, .device = cma_device, .now_ns = cma_now,
};

struct fx {
	struct sib_subnet *sn;
	struct sib_cma *cma;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sib_fab_node *n;
	char err[128];

	assert_non_null(f);
	f->sn = sib_subnet_new(&fake_subnet_host, NULL);
	assert_int_equal(sib_subnet_load(f->sn, NULL, err, sizeof(err)), 0);
	assert_int_equal(sib_mad_init(f->sn), 0);
	ncas = 0;
	for (unsigned int i = 0; (n = sib_subnet_node(f->sn, i)); i++)
		if (n->type == SIB_NODE_CA && ncas < 8)
			cas[ncas++] = n;
	assert_true(ncas >= 2);
	f->cma = sib_cma_new(f->sn, &chost, NULL);
	assert_non_null(f->cma);
	sib_cma_seed(f->cma, 42);
	nevs = 0;
	refuse_req = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	sib_cma_delete(f->cma);
	sib_mad_fini(f->sn);
	sib_subnet_unload(f->sn);
	sib_subnet_delete(f->sn);
	free(f);
	return 0;
}

/* ---- helpers ---- */

#define CALL(x) ({ in_call = true; __typeof__(x) r_ = (x); in_call = false; r_; })

static struct sockaddr_in sin4(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	return a;
}

static void run(struct fx *f)
{
	sib_cma_dispatch(f->cma);
}

/* The last event of id of type t since `from` (NULL: none). */
static struct rec *ev_of(struct sib_cma_id *id, uint32_t t)
{
	for (int i = (int)nevs - 1; i >= 0; i--)
		if ((!id || evs[i].id == id) && evs[i].ev.event == t)
			return &evs[i];
	return NULL;
}

static bool ud_ids; /* new_id makes UD ids in every port space */

static struct sib_cma_id *new_id(struct fx *f, uint64_t owner, uint64_t uid, uint32_t ps)
{
	struct sib_cma_id *id = NULL;

	assert_int_equal(CALL(sib_cma_create_id(f->cma, owner, uid, ps,
						 ps == SIB_CMA_PS_UDP || ud_ids ? IBV_QPT_UD
										 : IBV_QPT_RC,
						 &id)), 0);
	return id;
}

static int bind4(struct sib_cma_id *id, const char *ip, uint16_t port)
{
	struct sockaddr_in a = sin4(ip, port);

	return CALL(sib_cma_bind(id, &a, sizeof(a)));
}

static uint16_t bound_port(const struct sib_cma_id *id, uint32_t *dev)
{
	struct sib_ctl_cm q;

	memset(&q, 0, sizeof(q));
	sib_cma_query(id, &q);
	if (dev)
		*dev = q.dev_index;
	return (uint16_t)(q.src_addr[2] << 8 | q.src_addr[3]);
}

/* An id of owner that resolved addr and route to dst:port from src (NULL: none). */
static struct sib_cma_id *resolved(struct fx *f, uint64_t owner, uint32_t ps, const char *src,
				   const char *dst, uint16_t port)
{
	struct sib_cma_id *id = new_id(f, owner, 0xC0 + owner, ps);
	struct sockaddr_in s = src ? sin4(src, 0) : (struct sockaddr_in){ 0 };
	struct sockaddr_in d = sin4(dst, port);

	assert_int_equal(CALL(sib_cma_resolve_addr(id, &s, src ? sizeof(s) : 0, &d, sizeof(d),
						   2000)), 0);
	run(f);
	assert_non_null(ev_of(id, SIB_CMA_EV_ADDR_RESOLVED));
	assert_int_equal(CALL(sib_cma_resolve_route(id, 2000)), 0);
	run(f);
	assert_non_null(ev_of(id, SIB_CMA_EV_ROUTE_RESOLVED));
	return id;
}

static struct sib_cma_id *listener(struct fx *f, uint64_t owner, uint32_t ps, const char *ip,
				   uint16_t port)
{
	struct sib_cma_id *l = new_id(f, owner, 0x100 + owner, ps);

	assert_int_equal(bind4(l, ip, port), 0);
	assert_int_equal(CALL(sib_cma_listen(l, 8)), 0);
	return l;
}

static struct sib_cm_conn conn_of(uint32_t qpn)
{
	return (struct sib_cm_conn){ .qp_num = qpn, .responder_resources = 4,
				     .initiator_depth = 2, .retry_count = 7,
				     .rnr_retry_count = 6, .qp_type = IBV_QPT_RC };
}

/* A connection: client (owner 1, on softib1) to a listener (owner 2,
 * softib0) on 127.1.0.1:port, up to ESTABLISHED on both sides. */
static void connect_pair(struct fx *f, uint16_t port, struct sib_cma_id **cli,
			 struct sib_cma_id **srv)
{
	struct sib_cma_id *l = listener(f, 2, SIB_CMA_PS_TCP, "127.1.0.1", port);
	struct sib_cma_id *c = resolved(f, 1, SIB_CMA_PS_TCP, "127.1.1.1", "127.1.0.1", port);
	struct sib_cm_conn cc = conn_of(0x111), sc = conn_of(0x222);
	struct rec *r;

	(void)l;
	assert_int_equal(CALL(sib_cma_connect(c, &cc, (const uint8_t *)"hello", 5)), 0);
	run(f);
	r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST);
	assert_non_null(r);
	*srv = r->id;
	assert_int_equal(CALL(sib_cma_accept(*srv, &sc, (const uint8_t *)"world", 5)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_CONNECT_RESPONSE));
	assert_int_equal(CALL(sib_cma_accept(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(ev_of(*srv, SIB_CMA_EV_ESTABLISHED));
	*cli = c;
}

/* ---- tests ---- */

static void test_default_addresses(void **state)
{
	(void)state;
	assert_int_equal(sib_cma_default_ip4(0, 1), 0x7f010001u);
	assert_int_equal(sib_cma_default_ip4(3, 2), 0x7f010302u);
}

static void test_addr_add(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = sin4("10.1.0.1", 0);
	uint32_t dev;

	assert_int_equal(sib_cma_addr_add(f->cma, 1, 1, &a, sizeof(a), 24), 0);
	assert_int_equal(sib_cma_addr_add(f->cma, 2, 1, &a, sizeof(a), 24), -EEXIST);
	assert_int_equal(sib_cma_addr_add(f->cma, 1, 0, &a, sizeof(a), 24), -EINVAL);
	assert_int_equal(sib_cma_addr_add(f->cma, 1, 1, &a, sizeof(a), 33), -EINVAL);
	a = sin4("127.1.0.1", 0); /* softib0's default */
	assert_int_equal(sib_cma_addr_add(f->cma, 1, 1, &a, sizeof(a), 8), -EEXIST);
	a = sin4("0.0.0.0", 0);
	assert_int_equal(sib_cma_addr_add(f->cma, 1, 1, &a, sizeof(a), 8), -EINVAL);
	struct sib_cma_id *id = new_id(f, 1, 1, SIB_CMA_PS_TCP);
	assert_int_equal(bind4(id, "10.1.0.1", 1), 0);
	bound_port(id, &dev);
	assert_int_equal(dev, 1);
	/* and it resolves as a destination */
	id = resolved(f, 1, SIB_CMA_PS_TCP, "127.1.0.1", "10.1.0.1", 5);
	struct sib_ctl_cm q;
	memset(&q, 0, sizeof(q));
	sib_cma_query(id, &q);
	assert_int_equal(q.paths[0].dlid, cas[1]->mgmt->port[1].pi.lid);
}

static void test_bind_rules(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *a = new_id(f, 1, 1, SIB_CMA_PS_TCP), *b = new_id(f, 1, 2, SIB_CMA_PS_TCP);
	struct sib_cma_id *c = new_id(f, 1, 3, SIB_CMA_PS_TCP), *u = new_id(f, 1, 4, SIB_CMA_PS_UDP);
	struct sib_cma_id *e = new_id(f, 1, 5, SIB_CMA_PS_TCP), *lo = new_id(f, 1, 6, SIB_CMA_PS_TCP);
	struct sib_cma_id *x = new_id(f, 1, 7, SIB_CMA_PS_TCP);
	uint32_t dev;
	int one = 1;

	/* the default address of softib1 port 1 attaches that device */
	assert_int_equal(bind4(a, "127.1.1.1", 7000), 0);
	assert_int_equal(bound_port(a, &dev), 7000);
	assert_int_equal(dev, 1);
	assert_int_equal(bind4(a, "127.1.1.1", 7001), -EINVAL); /* bound already */
	assert_int_equal(bind4(b, "127.1.1.1", 7000), -EADDRINUSE);
	assert_int_equal(bind4(b, "0.0.0.0", 7000), -EADDRNOTAVAIL); /* wildcard beside it */
	assert_int_equal(bind4(b, "127.1.0.1", 7000), 0);             /* another address */
	/* another port space has its own table */
	assert_int_equal(bind4(u, "127.1.1.1", 7000), 0);
	/* REUSEADDR on both: shared */
	assert_int_equal(CALL(sib_cma_set_option(c, 0, 1, &one, sizeof(one))), 0);
	assert_int_equal(bind4(c, "127.1.1.1", 7000), -EADDRINUSE); /* a has none */
	assert_int_equal(CALL(sib_cma_set_option(e, 0, 1, &one, sizeof(one))), 0);
	assert_int_equal(bind4(e, "127.1.2.1", 7100), 0);
	assert_int_equal(bind4(c, "127.1.2.1", 7100), 0);
	/* loopback no port owns: bound, no device yet (cma_bind_loopback later) */
	assert_int_equal(bind4(lo, "127.0.0.1", 0), 0);
	assert_true(bound_port(lo, &dev) >= SIB_CMA_EPHEMERAL_LO);
	assert_true(bound_port(lo, NULL) <= SIB_CMA_EPHEMERAL_HI);
	assert_int_equal(dev, SIB_CM_NO_DEVICE);
	/* an address no port owns and not loopback */
	assert_int_equal(bind4(x, "10.1.2.3", 7000), -EADDRNOTAVAIL);
	assert_int_equal(bind4(x, "127.1.9.1", 7000), 0); /* no device 9: plain loopback */
	assert_int_equal(sib_cma_id_dev(x), SIB_CM_NO_DEVICE);
	/* AFONLY only before listening; a bad option length */
	assert_int_equal(CALL(sib_cma_set_option(x, 0, 2, &one, 1)), -EINVAL);
	assert_int_equal(CALL(sib_cma_set_option(x, 0, 9, &one, sizeof(one))), -ENOSYS);
	/* a destroyed id frees its port */
	sib_cma_destroy_id(a);
	assert_int_equal(bind4(new_id(f, 1, 8, SIB_CMA_PS_TCP), "127.1.1.1", 7000), 0);
	/* IPv6 ::1 */
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(7000),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	assert_int_equal(CALL(sib_cma_bind(new_id(f, 1, 9, SIB_CMA_PS_IB), &s6, sizeof(s6))), 0);
	/* a bad family, a short address */
	uint8_t junk[16] = { 99 };
	assert_int_equal(CALL(sib_cma_bind(new_id(f, 1, 10, SIB_CMA_PS_TCP), junk, 16)),
			 -EAFNOSUPPORT);
	assert_int_equal(CALL(sib_cma_bind(new_id(f, 1, 11, SIB_CMA_PS_TCP), junk, 1)), -EINVAL);
	sib_cma_destroy_owner(f->cma, 1);
	assert_int_equal(sib_cma_counters(f->cma)->ids, 0);
}

static void test_ephemeral_unique(void **state)
{
	struct fx *f = *state;
	uint16_t seen[64];

	for (int i = 0; i < 64; i++) {
		struct sib_cma_id *id = new_id(f, 1, (uint64_t)i, SIB_CMA_PS_TCP);

		assert_int_equal(bind4(id, "0.0.0.0", 0), 0);
		seen[i] = bound_port(id, NULL);
		assert_true(seen[i] >= SIB_CMA_EPHEMERAL_LO && seen[i] <= SIB_CMA_EPHEMERAL_HI);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(seen[i], seen[j]);
	}
}

static void test_resolve(void **state)
{
	struct fx *f = *state;
	uint64_t sa0 = sib_subnet_mad_counters(f->sn)->sa;
	struct sib_cma_id *id = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.0.0.1", 7471);
	struct sib_ctl_cm q;
	struct rec *r;

	/* the PathRecord query really went through the SA */
	assert_int_equal(sib_subnet_mad_counters(f->sn)->sa, sa0 + 1);
	assert_int_equal(sib_cma_counters(f->cma)->route_answers, 1);
	memset(&q, 0, sizeof(q));
	sib_cma_query(id, &q);
	/* loopback: the first ACTIVE port, DGID = SGID */
	assert_int_equal(q.dev_index, 0);
	assert_int_equal(q.port_num, 1);
	assert_memory_equal(q.sgid, q.dgid, 16);
	assert_int_equal(q.num_paths, 1);
	assert_int_equal(q.paths[0].slid, cas[0]->mgmt->port[1].pi.lid);
	assert_int_equal(q.paths[0].dlid, cas[0]->mgmt->port[1].pi.lid);
	assert_true(bound_port(id, NULL) >= SIB_CMA_EPHEMERAL_LO);
	r = ev_of(id, SIB_CMA_EV_ADDR_RESOLVED);
	assert_int_equal(r->ev.uid, 0xC1);
	assert_int_equal(r->ev.dev_index, 0);

	/* a default address of another device: that device's GID */
	id = resolved(f, 1, SIB_CMA_PS_TCP, "127.1.1.1", "127.1.0.1", 7471);
	sib_cma_query(id, &q);
	assert_int_equal(q.dev_index, 1);
	assert_int_equal(q.paths[0].slid, cas[1]->mgmt->port[1].pi.lid);
	assert_int_equal(q.paths[0].dlid, cas[0]->mgmt->port[1].pi.lid);

	/* an address nobody owns */
	struct sib_cma_id *bad = new_id(f, 1, 77, SIB_CMA_PS_TCP);
	struct sockaddr_in d = sin4("10.9.9.9", 1);
	assert_int_equal(CALL(sib_cma_resolve_addr(bad, NULL, 0, &d, sizeof(d), 100)), 0);
	run(f);
	assert_non_null(r = ev_of(bad, SIB_CMA_EV_ADDR_ERROR));
	assert_true(r->ev.status < 0);
	assert_int_equal(CALL(sib_cma_resolve_route(bad, 100)), -EINVAL);
	/* route before address */
	assert_int_equal(CALL(sib_cma_resolve_route(new_id(f, 1, 78, SIB_CMA_PS_TCP), 100)),
			 -EINVAL);
}

static void test_route_timeout(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *id = new_id(f, 1, 5, SIB_CMA_PS_TCP);
	struct sockaddr_in d = sin4("127.1.1.1", 9);
	struct rec *r;
	uint16_t sm = cas[1]->mgmt->port[1].pi.master_sm_lid;

	assert_int_equal(CALL(sib_cma_resolve_addr(id, NULL, 0, &d, sizeof(d), 100)), 0);
	run(f);
	cas[1]->mgmt->port[1].pi.master_sm_lid = 0xBFFF; /* an SM nobody is */
	assert_int_equal(CALL(sib_cma_resolve_route(id, 500)), 0);
	run(f);
	assert_null(ev_of(id, SIB_CMA_EV_ROUTE_RESOLVED));
	now_ns += 400000000ull;
	sib_cma_tick(f->cma, now_ns);
	assert_null(ev_of(id, SIB_CMA_EV_ROUTE_ERROR));
	now_ns += 200000000ull;
	sib_cma_tick(f->cma, now_ns);
	assert_non_null(r = ev_of(id, SIB_CMA_EV_ROUTE_ERROR));
	assert_int_equal(r->ev.status, -ETIMEDOUT);
	cas[1]->mgmt->port[1].pi.master_sm_lid = sm;
	/* RDMA_OPTION_IB_PATH: the path given, ROUTE_RESOLVED at once, no query */
	struct sib_cma_id *ip = new_id(f, 1, 6, SIB_CMA_PS_TCP);
	struct sib_cm_path path = { .dlid = 77, .slid = 78, .pkey = 0xffff, .mtu = 5 };
	uint64_t q0 = sib_cma_counters(f->cma)->route_queries;
	assert_int_equal(CALL(sib_cma_resolve_addr(ip, NULL, 0, &d, sizeof(d), 100)), 0);
	assert_int_equal(CALL(sib_cma_set_option(ip, 1, 1, &path, 20)), -EINVAL);
	assert_int_equal(CALL(sib_cma_set_option(ip, 1, 1, &path, sizeof(path))), 0);
	run(f);
	assert_non_null(ev_of(ip, SIB_CMA_EV_ROUTE_RESOLVED));
	assert_int_equal(sib_cma_counters(f->cma)->route_queries, q0);
	struct sib_ctl_cm q;
	memset(&q, 0, sizeof(q));
	sib_cma_query(ip, &q);
	assert_int_equal(q.paths[0].dlid, 77);
	assert_int_equal(q.num_paths, 1);
	/* and then it can be asked again */
	assert_int_equal(CALL(sib_cma_resolve_route(id, 500)), 0);
	run(f);
	assert_non_null(ev_of(id, SIB_CMA_EV_ROUTE_RESOLVED));
}

static void test_connect_accept(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s;
	struct sib_cm_qp_attr ci, cr, ct, si, sr, st;
	struct rec *r;

	connect_pair(f, 7471, &c, &s);
	/* the CONNECT_REQUEST: the user's data after the CMA header, 56 bytes */
	r = ev_of(s, SIB_CMA_EV_CONNECT_REQUEST);
	assert_int_equal(r->ev.pdata_len, 56);
	assert_memory_equal(r->ev.pdata, "hello", 5);
	assert_int_equal(r->ev.listen_uid, 0x102);
	assert_int_equal(r->ev.uid, 0);
	assert_int_equal(r->ev.conn.qp_num, 0x111);
	assert_int_equal(r->ev.conn.responder_resources, 2); /* the peer's turned round */
	assert_int_equal(r->ev.conn.initiator_depth, 4);
	assert_int_equal(r->ev.dev_index, 0);
	assert_int_equal(sib_cma_id_owner(s), 2);
	/* the passive id's addresses: the one asked for, and the client's */
	struct sib_ctl_cm q;
	memset(&q, 0, sizeof(q));
	sib_cma_query(s, &q);
	assert_int_equal(q.src_addr[2] << 8 | q.src_addr[3], 7471);
	assert_memory_equal(q.src_addr + 4, "\x7f\x01\x00\x01", 4);
	assert_memory_equal(q.dst_addr + 4, "\x7f\x01\x01\x01", 4);
	/* CONNECT_RESPONSE: the REP's data (196 bytes) and QPN */
	r = ev_of(c, SIB_CMA_EV_CONNECT_RESPONSE);
	assert_int_equal(r->ev.pdata_len, 196);
	assert_memory_equal(r->ev.pdata, "world", 5);
	assert_int_equal(r->ev.conn.qp_num, 0x222);
	/* rdma_init_qp_attr on both sides */
	assert_int_equal(sib_cma_init_qp_attr(c, IBV_QPS_INIT, &ci), 0);
	assert_int_equal(sib_cma_init_qp_attr(c, IBV_QPS_RTR, &cr), 0);
	assert_int_equal(sib_cma_init_qp_attr(c, IBV_QPS_RTS, &ct), 0);
	assert_int_equal(sib_cma_init_qp_attr(s, IBV_QPS_INIT, &si), 0);
	assert_int_equal(sib_cma_init_qp_attr(s, IBV_QPS_RTR, &sr), 0);
	assert_int_equal(sib_cma_init_qp_attr(s, IBV_QPS_RTS, &st), 0);
	assert_int_equal(ci.mask, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
			 IBV_QP_PORT);
	assert_int_equal(ci.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(ci.port_num, 1);
	assert_int_equal(cr.mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	assert_int_equal(cr.dest_qp_num, 0x222);
	assert_int_equal(sr.dest_qp_num, 0x111);
	assert_int_equal(cr.ah.dlid, cas[0]->mgmt->port[1].pi.lid);
	assert_int_equal(sr.ah.dlid, cas[1]->mgmt->port[1].pi.lid);
	assert_int_equal(cr.rq_psn, st.sq_psn); /* each side's own PSN is its rq_psn */
	assert_int_equal(sr.rq_psn, ct.sq_psn);
	assert_int_equal(cr.min_rnr_timer, 0);
	assert_int_equal(cr.path_mtu, sr.path_mtu);
	assert_int_equal(ct.mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	assert_int_equal(ct.retry_cnt, 7);
	assert_int_equal(st.retry_cnt, 7);
	assert_true(ct.timeout > 0 && st.timeout > 0);
	/* ACK_TIMEOUT overrides the RTS timeout */
	uint8_t t = 18;
	assert_int_equal(CALL(sib_cma_set_option(c, 0, 3, &t, 1)), 0);
	assert_int_equal(sib_cma_init_qp_attr(c, IBV_QPS_RTS, &ct), 0);
	assert_int_equal(ct.timeout, 18);
	assert_int_equal(sib_cma_init_qp_attr(c, 7, &ct), -EINVAL);
	assert_int_equal(sib_cma_counters(f->cma)->established, 2);
	/* accepting twice, connecting again: wrong state */
	struct sib_cm_conn cc = conn_of(0x111);
	assert_int_equal(CALL(sib_cma_accept(s, &cc, NULL, 0)), -EINVAL);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), -EINVAL);
}

/* AF_IB (libfabric's verbs provider when no IPoIB interface is seen:
 * vrb_get_sib): a listener bound to a GID with ServiceID "port space IB,
 * port 0" under a mask takes an ephemeral port, and its address (what
 * rdma_get_local_addr and fi_getname give) names that port in the
 * ServiceID (the kernel's cma_bind_port: (sid & mask) | port, mask all
 * ones).  A client resolving to that address reaches the listener; it
 * was rejected with reason 8 (no such ServiceID) when the port stayed 0. */
static void sib_ib(uint8_t out[48], const uint8_t gid[16], uint64_t sid, uint64_t mask)
{
	uint16_t fam = 27; /* AF_IB */

	memset(out, 0, 48);
	memcpy(out, &fam, 2);
	out[2] = 0xff, out[3] = 0xff; /* P_Key */
	memcpy(out + 8, gid, 16);
	for (int i = 0; i < 8; i++) {
		out[24 + i] = (uint8_t)(sid >> (56 - 8 * i));
		out[32 + i] = (uint8_t)(mask >> (56 - 8 * i));
	}
}

static uint64_t be64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void test_af_ib_ephemeral(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *g = new_id(f, 2, 0x90, SIB_CMA_PS_TCP);
	struct sib_ctl_cm q;
	uint8_t gid[16], a[48];

	assert_int_equal(bind4(g, "127.1.0.1", 0), 0);
	memset(&q, 0, sizeof(q));
	sib_cma_query(g, &q);
	memcpy(gid, q.sgid, 16);
	/* the listener: PS_IB, port 0 under libfabric's mask */
	struct sib_cma_id *l = new_id(f, 2, 0x91, SIB_CMA_PS_IB);
	sib_ib(a, gid, (uint64_t)SIB_CMA_PS_IB << 16, ~0ull);
	assert_int_equal(CALL(sib_cma_bind(l, a, sizeof(a))), 0);
	assert_int_equal(CALL(sib_cma_listen(l, 8)), 0);
	memset(&q, 0, sizeof(q));
	sib_cma_query(l, &q);
	uint64_t sid = be64_at(q.src_addr + 24);
	assert_int_equal(sid >> 16, SIB_CMA_PS_IB);
	assert_int_not_equal(sid & 0xffff, 0);
	assert_int_equal(be64_at(q.src_addr + 32), ~0ull);
	assert_memory_equal(q.src_addr + 8, gid, 16);
	/* a second such bind takes another port */
	struct sib_cma_id *l2 = new_id(f, 2, 0x92, SIB_CMA_PS_IB);
	assert_int_equal(CALL(sib_cma_bind(l2, a, sizeof(a))), 0);
	struct sib_ctl_cm q2;
	memset(&q2, 0, sizeof(q2));
	sib_cma_query(l2, &q2);
	assert_int_not_equal(be64_at(q2.src_addr + 24), sid);
	/* a ServiceID with a port but a zero mask: port 0 (cma_port masks it) */
	struct sib_cma_id *l3 = new_id(f, 2, 0x93, SIB_CMA_PS_IB);
	sib_ib(a, gid, (uint64_t)SIB_CMA_PS_IB << 16 | (sid & 0xffff), 0);
	assert_int_equal(CALL(sib_cma_bind(l3, a, sizeof(a))), 0);
	memset(&q2, 0, sizeof(q2));
	sib_cma_query(l3, &q2);
	assert_int_not_equal(be64_at(q2.src_addr + 24), sid);
	/* the client, from softib1, to the listener's own address */
	struct sib_cma_id *c = new_id(f, 1, 0x94, SIB_CMA_PS_IB);
	assert_int_equal(CALL(sib_cma_resolve_addr(c, NULL, 0, q.src_addr, 48, 2000)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_ADDR_RESOLVED));
	assert_int_equal(CALL(sib_cma_resolve_route(c, 2000)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_ROUTE_RESOLVED));
	struct sib_cm_conn cc = conn_of(0x333);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, (const uint8_t *)"ib", 2)), 0);
	run(f);
	assert_null(ev_of(c, SIB_CMA_EV_REJECTED));
	struct rec *r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST);
	assert_non_null(r);
	assert_int_equal(r->ev.listen_uid, 0x91);
	assert_memory_equal(r->ev.pdata, "ib", 2);
}

/* rdma_notify(IBV_EVENT_COMM_EST): the passive side established without
 * the RTU (its QP got a packet first). */
/* A REQ from a QPN that already has a connection here: the new one is
 * rejected as stale and the CM disconnects the old one (IBA 12.9.8.3.1);
 * both of the old ids hear DISCONNECTED (the server's only had TIMEWAIT_EXIT
 * before: hostile review). */
static void test_stale_disconnects(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s, *c2;
	struct sib_cm_conn cc = conn_of(0x111);

	connect_pair(f, 7480, &c, &s);
	c2 = resolved(f, 3, SIB_CMA_PS_TCP, "127.1.1.1", "127.1.0.1", 7480);
	assert_int_equal(CALL(sib_cma_connect(c2, &cc, (const uint8_t *)"again", 5)), 0);
	run(f);
	assert_non_null(ev_of(c2, SIB_CMA_EV_REJECTED));
	assert_non_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
	assert_null(ev_of(s, SIB_CMA_EV_DISCONNECTED));
	/* the old client answers as programs do (rdma_disconnect: the DREP) */
	assert_int_equal(CALL(sib_cma_disconnect(c)), 0);
	run(f);
	assert_non_null(ev_of(s, SIB_CMA_EV_DISCONNECTED));
	assert_int_equal(CALL(sib_cma_disconnect(s)), -EINVAL); /* already over */
}

static void test_notify(void **state)
{
	struct fx *f = *state;
	struct sib_cm_conn cc = conn_of(0x999);
	struct sib_cma_id *c, *s;
	struct rec *r;

	listener(f, 2, SIB_CMA_PS_TCP, "0.0.0.0", 7540);
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.0.1", 7540);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	s = r->id;
	assert_int_equal(CALL(sib_cma_notify(s, IBV_EVENT_COMM_EST)), 0); /* too early: nothing */
	run(f);
	assert_null(ev_of(s, SIB_CMA_EV_ESTABLISHED));
	assert_int_equal(CALL(sib_cma_accept(s, &cc, NULL, 0)), 0);
	run(f);
	assert_int_equal(CALL(sib_cma_notify(s, IBV_EVENT_COMM_EST)), 0);
	run(f);
	assert_non_null(ev_of(s, SIB_CMA_EV_ESTABLISHED));
	/* the RTU that comes later changes nothing */
	assert_int_equal(CALL(sib_cma_accept(c, &cc, NULL, 0)), 0);
	unsigned int n = nevs;
	run(f);
	for (unsigned int i = n; i < nevs; i++)
		assert_false(evs[i].id == s && evs[i].ev.event == SIB_CMA_EV_ESTABLISHED);
}

static void test_disconnect(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s;

	connect_pair(f, 7472, &c, &s);
	assert_int_equal(CALL(sib_cma_disconnect(c)), 0);
	run(f);
	assert_non_null(ev_of(s, SIB_CMA_EV_DISCONNECTED));
	assert_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
	assert_int_equal(CALL(sib_cma_disconnect(s)), 0); /* the DREP */
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
	assert_int_equal(CALL(sib_cma_disconnect(c)), -EINVAL);
	for (int i = 0; i < 100 && !(ev_of(c, SIB_CMA_EV_TIMEWAIT_EXIT) &&
				     ev_of(s, SIB_CMA_EV_TIMEWAIT_EXIT)); i++) {
		now_ns += 100000000ull;
		sib_cma_tick(f->cma, now_ns);
	}
	assert_non_null(ev_of(c, SIB_CMA_EV_TIMEWAIT_EXIT));
	assert_non_null(ev_of(s, SIB_CMA_EV_TIMEWAIT_EXIT));

	/* the other way round */
	connect_pair(f, 7473, &c, &s);
	assert_int_equal(CALL(sib_cma_disconnect(s)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
	assert_int_equal(CALL(sib_cma_disconnect(c)), 0);
	run(f);
	assert_non_null(ev_of(s, SIB_CMA_EV_DISCONNECTED));
}

static void test_reject(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s;
	struct sib_cm_conn cc = conn_of(0x333);
	struct rec *r;

	listener(f, 2, SIB_CMA_PS_TCP, "0.0.0.0", 7480);
	c = resolved(f, 1, SIB_CMA_PS_TCP, "127.1.1.1", "127.1.0.1", 7480);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	s = r->id;
	/* before ACCEPT the passive side moves its QP to RTR and RTS (rdma_accept) */
	struct sib_cm_qp_attr qa;
	assert_int_equal(sib_cma_init_qp_attr(s, IBV_QPS_RTR, &qa), 0);
	assert_int_equal(qa.dest_qp_num, 0x333);
	assert_int_equal(sib_cma_init_qp_attr(s, IBV_QPS_RTS, &qa), 0);
	assert_true(qa.mask & IBV_QP_SQ_PSN);
	assert_int_equal(CALL(sib_cma_reject(s, 0, (const uint8_t *)"no", 2)), 0);
	run(f);
	assert_non_null(r = ev_of(c, SIB_CMA_EV_REJECTED));
	assert_int_equal(r->ev.status, 28);
	assert_int_equal(r->ev.pdata_len, 148);
	assert_memory_equal(r->ev.pdata, "no", 2);
	assert_int_equal(CALL(sib_cma_reject(s, 0, NULL, 0)), -EINVAL);
	assert_int_equal(CALL(sib_cma_reject(s, 99, NULL, 0)), -EINVAL);

	/* no listener on that port: the CM's REJ 8 */
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.0.0.1", 7999);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(c, SIB_CMA_EV_REJECTED));
	assert_int_equal(r->ev.status, 8);

	/* a listener on another address of that port takes nothing */
	listener(f, 2, SIB_CMA_PS_TCP, "127.1.2.1", 7481);
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.0.1", 7481);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_REJECTED));
	assert_int_equal(sib_cma_counters(f->cma)->req_dropped, 1);

	/* the host refuses the new id (a budget): rejected, nothing leaks */
	uint64_t ids = sib_cma_counters(f->cma)->ids;
	refuse_req = 1;
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.0.0.1", 7480);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_REJECTED));
	assert_int_equal(sib_cma_counters(f->cma)->ids, ids + 1);
}

static void test_listener_match(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *l0 = listener(f, 2, SIB_CMA_PS_TCP, "127.1.0.1", 7490);
	struct sib_cma_id *l1 = listener(f, 3, SIB_CMA_PS_TCP, "127.1.1.1", 7490);
	struct sib_cma_id *c;
	struct sib_cm_conn cc = conn_of(0x444);
	struct rec *r;

	/* two listeners on one port and two addresses: the address picks */
	c = resolved(f, 1, SIB_CMA_PS_TCP, "127.1.0.1", "127.1.1.1", 7490);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	assert_int_equal(r->ev.listen_uid, 0x103);
	assert_ptr_equal(sib_cma_id_listener(r->id), l1);
	assert_int_equal(sib_cma_id_owner(r->id), 3);
	/* a listener on 127.0.0.1 takes any destination (cma_match_private_data) */
	listener(f, 4, SIB_CMA_PS_TCP, "127.0.0.1", 7491);
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.1.1", 7491);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	assert_int_equal(r->ev.listen_uid, 0x104);
	/* LISTEN twice on a shared port without REUSEADDR: refused */
	(void)l0;
	sib_cma_destroy_id(l0);
	sib_cma_destroy_id(l1);
}

static void test_sidr(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s;
	struct sib_cm_conn sc = { .qp_num = 0x555, .qp_type = IBV_QPT_UD };
	struct sib_cm_qp_attr a;
	struct rec *r;

	listener(f, 2, SIB_CMA_PS_UDP, "127.1.0.1", 7174);
	c = resolved(f, 1, SIB_CMA_PS_UDP, "127.1.1.1", "127.1.0.1", 7174);
	assert_int_equal(CALL(sib_cma_connect(c, &sc, (const uint8_t *)"udp", 3)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	s = r->id;
	assert_int_equal(r->ev.pdata_len, 180);
	assert_memory_equal(r->ev.pdata, "udp", 3);
	assert_int_equal(r->ev.ah.dlid, cas[1]->mgmt->port[1].pi.lid);
	assert_int_equal(CALL(sib_cma_accept(s, &sc, NULL, 0)), 0);
	run(f);
	assert_null(ev_of(s, SIB_CMA_EV_ESTABLISHED)); /* no passive event for UD */
	assert_non_null(r = ev_of(c, SIB_CMA_EV_ESTABLISHED));
	assert_int_equal(r->ev.ud_qp_num, 0x555);
	assert_int_equal(r->ev.ud_qkey, SIB_CMA_UDP_QKEY);
	assert_int_equal(r->ev.ah.dlid, cas[0]->mgmt->port[1].pi.lid);
	assert_int_equal(r->ev.pdata_len, 136);
	assert_int_equal(sib_cma_init_qp_attr(c, IBV_QPS_INIT, &a), 0);
	assert_int_equal(a.mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	assert_int_equal(a.qkey, SIB_CMA_UDP_QKEY);
	assert_int_equal(sib_cma_init_qp_attr(c, IBV_QPS_RTS, &a), 0);
	assert_int_equal(a.mask, IBV_QP_STATE | IBV_QP_SQ_PSN);
	assert_int_equal(a.sq_psn, 0);

	/* the IB port space: the Q_Key ACCEPT gives, never a controlled one */
	ud_ids = true;
	listener(f, 2, SIB_CMA_PS_IB, "127.1.0.1", 7175);
	c = resolved(f, 1, SIB_CMA_PS_IB, "127.1.1.1", "127.1.0.1", 7175);
	ud_ids = false;
	assert_int_equal(CALL(sib_cma_connect(c, &sc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	s = r->id;
	sc.qkey = 0x80000001u;
	assert_int_equal(CALL(sib_cma_accept(s, &sc, NULL, 0)), -EINVAL);
	sc.qkey = 0x1234;
	assert_int_equal(CALL(sib_cma_accept(s, &sc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(c, SIB_CMA_EV_ESTABLISHED));
	assert_int_equal(r->ev.ud_qkey, 0x1234);
	sc.qkey = 0;

	/* the IPOIB port space: the broadcast group's Q_Key */
	struct sib_cma_id *ipo = NULL;
	struct sockaddr_in d4 = sin4("127.0.0.1", 9);
	assert_int_equal(sib_cma_create_id(f->cma, 1, 1, SIB_CMA_PS_IPOIB, IBV_QPT_RC, &ipo),
			 -EINVAL);
	assert_int_equal(sib_cma_create_id(f->cma, 1, 1, SIB_CMA_PS_IPOIB, IBV_QPT_UD, &ipo), 0);
	assert_int_equal(CALL(sib_cma_resolve_addr(ipo, NULL, 0, &d4, sizeof(d4), 100)), 0);
	assert_int_equal(sib_cma_init_qp_attr(ipo, IBV_QPS_INIT, &a), 0);
	assert_int_equal(a.qkey, SIB_CMA_IPOIB_QKEY);

	/* a SIDR_REQ for no listener: UNREACHABLE with the SIDR_REP status */
	c = resolved(f, 1, SIB_CMA_PS_UDP, NULL, "127.1.0.1", 7999);
	assert_int_equal(CALL(sib_cma_connect(c, &sc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(c, SIB_CMA_EV_UNREACHABLE));
	assert_int_equal(r->ev.status, 1);
	/* rejected: status 2 */
	c = resolved(f, 1, SIB_CMA_PS_UDP, NULL, "127.1.0.1", 7174);
	assert_int_equal(CALL(sib_cma_connect(c, &sc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	assert_int_equal(CALL(sib_cma_reject(r->id, 0, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(c, SIB_CMA_EV_UNREACHABLE));
	assert_int_equal(r->ev.status, 2);
}

static void test_destroy_in_handshake(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s;
	struct sib_cm_conn cc = conn_of(0x666);
	struct rec *r;

	listener(f, 2, SIB_CMA_PS_TCP, "0.0.0.0", 7500);
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.0.1", 7500);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	s = r->id;
	sib_cma_destroy_id(s); /* the passive side goes: REJ */
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_REJECTED));

	/* the active side goes after the REP: the passive side's REJECTED */
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.0.1", 7500);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	s = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST)->id;
	assert_int_equal(CALL(sib_cma_accept(s, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_CONNECT_RESPONSE));
	unsigned int before = nevs;
	assert_true(sib_cma_destroy_id(c) >= 3);
	run(f);
	assert_true(nevs > before);
	assert_non_null(ev_of(s, SIB_CMA_EV_REJECTED));

	/* the active side goes right after its REQ, the passive side has its
	 * CONNECT_REQUEST and has not accepted: REJECTED there too (it waited
	 * forever), ACCEPT is EINVAL, and the listener's backlog frees */
	struct sib_cma_id *l1 = listener(f, 2, SIB_CMA_PS_TCP, "127.1.0.1", 7501);
	assert_int_equal(CALL(sib_cma_listen(l1, 1)), 0); /* backlog 1 */
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.0.1", 7501);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	s = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST)->id;
	assert_ptr_equal(sib_cma_id_listener(s), l1);
	sib_cma_destroy_id(c);
	run(f);
	assert_non_null(r = ev_of(s, SIB_CMA_EV_REJECTED));
	assert_null(sib_cma_id_listener(s));
	assert_int_equal(CALL(sib_cma_accept(s, &cc, NULL, 0)), -EINVAL);
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.0.1", 7501);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_null(ev_of(c, SIB_CMA_EV_REJECTED)); /* not REJ 28: the backlog is free */
	assert_ptr_not_equal(ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST)->id, s);
}

/* Randomized, replayable with CMA_DEATH_SEED=N: a client (owner 1) and a
 * server (owner 2: the listener and its new ids) connect; one of them dies
 * (sib_cma_destroy_owner, what softibd does when a process's connection
 * closes) at a random step of the handshake or after it.  The model: every
 * id of the survivor that saw the connection start ends with exactly one of
 * REJECTED, UNREACHABLE, DISCONNECTED (or, the client dying before its REQ
 * left, nothing at all), never stays waiting, once the CM's timers ran;
 * an ACCEPT after that end is EINVAL; the survivor's ids, then the CM's,
 * go back to zero. */
static bool terminal(uint32_t t)
{
	return t == SIB_CMA_EV_REJECTED || t == SIB_CMA_EV_UNREACHABLE ||
	       t == SIB_CMA_EV_DISCONNECTED;
}

static unsigned int count_terminal(struct sib_cma_id *id)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < nevs; i++)
		n += evs[i].id == id && terminal(evs[i].ev.event);
	return n;
}

static void test_death_random(void **state)
{
	struct fx *f = *state;
	const char *env = getenv("CMA_DEATH_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)time(NULL);

	printf("test_death_random: CMA_DEATH_SEED=%u\n", seed);
	srandom(seed);
	for (int round = 0; round < 200; round++) {
		struct sib_cm_conn cc = conn_of(0x100 + round), sc = conn_of(0x900 + round);
		struct sib_cma_id *c, *s = NULL;
		struct rec *r;
		int step = (int)(random() % 6), victim;

		nevs = 0;
		listener(f, 2, SIB_CMA_PS_TCP, "127.1.0.1", (uint16_t)(7600 + round % 50));
		c = resolved(f, 1, SIB_CMA_PS_TCP, (random() & 1) ? "127.1.1.1" : NULL, "127.1.0.1",
			     (uint16_t)(7600 + round % 50));
		assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
		/* steps: 0 REQ sent; 1 CONNECT_REQUEST seen; 2 ACCEPT sent (REP);
		 * 3 CONNECT_RESPONSE seen; 4 RTU sent; 5 ESTABLISHED both */
		for (int k = 1; k <= step; k++) {
			if (k == 1 || k == 3 || k == 5)
				run(f);
			if (k == 1) {
				assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
				s = r->id;
			} else if (k == 2) {
				assert_int_equal(CALL(sib_cma_accept(s, &sc, NULL, 0)), 0);
			} else if (k == 4) {
				assert_int_equal(CALL(sib_cma_accept(c, &cc, NULL, 0)), 0);
			}
		}
		victim = s && (random() & 1) ? 2 : 1;
		sib_cma_destroy_owner(f->cma, (uint64_t)victim);
		for (int t = 0; t < 400; t++) { /* the CM's timers: REQ, REP, DREQ retries */
			run(f);
			now_ns += 100000000ull;
			sib_cma_tick(f->cma, now_ns);
		}
		run(f);
		if (count_terminal(c) != 1 && victim == 2) {
			printf("round %d step %d victim %d nevs %u\n", round, step, victim, nevs);
			for (unsigned int i = 0; i < nevs; i++)
				printf("  ev %u id %s\n", evs[i].ev.event, evs[i].id == c ? "c" : "?");
		}
		if (victim == 2) {
			assert_int_equal(count_terminal(c), 1);
		} else if (!s && (s = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST) ?
					   ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST)->id : NULL)) {
			/* the REQ reached the server before the client went */
			assert_int_equal(count_terminal(s), 1);
		} else if (s) {
			assert_int_equal(count_terminal(s), 1);
			assert_int_equal(CALL(sib_cma_accept(s, &sc, NULL, 0)), -EINVAL);
		}
		sib_cma_destroy_owner(f->cma, (uint64_t)(3 - victim));
		assert_int_equal(sib_cma_counters(f->cma)->ids, 0);
	}
	for (int t = 0; t < 400; t++) {
		now_ns += 100000000ull;
		sib_cma_tick(f->cma, now_ns);
	}
}

static void test_owner_cleanup(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s;

	connect_pair(f, 7510, &c, &s);
	sib_cma_destroy_owner(f->cma, 2); /* the server's process died: DREQ */
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
	sib_cma_destroy_owner(f->cma, 1);
	assert_int_equal(sib_cma_counters(f->cma)->ids, 0);
}

static void test_node_gone(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s, *l;
	struct sib_cm_conn cc = conn_of(0x888);
	struct rec *r;

	connect_pair(f, 7530, &c, &s);
	sib_cma_node_gone(f->cma, cas[0]); /* softib0 unregistered */
	run(f);
	assert_non_null(ev_of(s, SIB_CMA_EV_DEVICE_REMOVAL));
	assert_non_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
	assert_int_equal(sib_cma_id_dev(s), SIB_CM_NO_DEVICE);
	assert_int_equal(CALL(sib_cma_disconnect(s)), -EINVAL);
	/* a wildcard listener still takes connections (its CM listener moved) */
	l = listener(f, 2, SIB_CMA_PS_TCP, "0.0.0.0", 7531);
	sib_cma_node_gone(f->cma, cas[0]);
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.1.1", 7531);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	run(f);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	assert_ptr_equal(sib_cma_id_listener(r->id), l);
}

static bool drop_all(void *ctx, const uint8_t *mad, uint16_t slid, uint16_t dlid)
{
	(void)ctx, (void)mad, (void)slid, (void)dlid;
	return true;
}

/* A DREQ nobody answers: DISCONNECTED with -ETIMEDOUT after its retries. */
static void test_dreq_timeout(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *c, *s;
	struct rec *r = NULL;

	connect_pair(f, 7550, &c, &s);
	sib_cm_set_tx_drop(f->sn, drop_all, NULL);
	assert_int_equal(CALL(sib_cma_disconnect(c)), 0);
	for (int i = 0; i < 2000 && !(r = ev_of(c, SIB_CMA_EV_DISCONNECTED)); i++) {
		now_ns += 100000000ull;
		sib_cma_tick(f->cma, now_ns);
	}
	sib_cm_set_tx_drop(f->sn, NULL, NULL);
	assert_non_null(r);
	assert_int_equal(r->ev.status, -ETIMEDOUT);
	assert_null(ev_of(s, SIB_CMA_EV_DISCONNECTED)); /* it never heard */
}

static void test_unreachable(void **state)
{
	struct fx *f = *state;
	struct sib_cm_conn cc = conn_of(0x777);
	struct sib_cma_id *c;
	struct rec *r = NULL;

	listener(f, 2, SIB_CMA_PS_TCP, "0.0.0.0", 7520);
	c = resolved(f, 1, SIB_CMA_PS_TCP, NULL, "127.1.0.1", 7520);
	sib_cm_set_tx_drop(f->sn, drop_all, NULL);
	assert_int_equal(CALL(sib_cma_connect(c, &cc, NULL, 0)), 0);
	for (int i = 0; i < 2000 && !(r = ev_of(c, SIB_CMA_EV_UNREACHABLE)); i++) {
		now_ns += 100000000ull;
		sib_cma_tick(f->cma, now_ns);
	}
	sib_cm_set_tx_drop(f->sn, NULL, NULL);
	assert_non_null(r);
	assert_int_equal(r->ev.status, -ETIMEDOUT);
}

/* ---- multicast (cma_mcast.c) ---- */

static unsigned int reach_n;
static const struct sib_fab_node *reach_node[16];

static void on_reach(void *ctx, const struct sib_fab_node *n, uint8_t port)
{
	(void)ctx, (void)port;
	if (reach_n < 16)
		reach_node[reach_n++] = n;
}

/* Does a packet from CA src to mlid reach CA dst (the MFTs the SA set)? */
static bool mc_reaches(struct fx *f, unsigned int src, uint16_t mlid, unsigned int dst)
{
	reach_n = 0;
	(void)sib_subnet_mcast_lookup(f->sn, cas[src], 1, mlid, on_reach, NULL);
	for (unsigned int i = 0; i < reach_n; i++)
		if (reach_node[i] == cas[dst])
			return true;
	return false;
}

/* A UD id of owner on CA dev (127.1.dev.1) in ps, ADDR_BOUND. */
static struct sib_cma_id *mc_id(struct fx *f, uint64_t owner, unsigned int dev, uint32_t ps)
{
	char ip[32];
	struct sib_cma_id *id;

	ud_ids = true;
	id = new_id(f, owner, 0x500 + owner, ps);
	ud_ids = false;
	snprintf(ip, sizeof(ip), "127.1.%u.1", dev);
	assert_int_equal(bind4(id, ip, 0), 0);
	return id;
}

static void test_mcast_mgid(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *u = mc_id(f, 1, 0, SIB_CMA_PS_UDP);
	struct sib_cma_id *i = mc_id(f, 1, 0, SIB_CMA_PS_IPOIB);
	struct sockaddr_in a = sin4("239.1.2.3", 0);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct rec *r;
	static const uint8_t udp4[16] = { 0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0,
					  0, 0, 0, 0, 0x0f, 0x01, 0x02, 0x03 };
	static const uint8_t ipoib4[16] = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
					    0, 0, 0, 0, 0x0f, 0x01, 0x02, 0x03 };
	uint8_t want6[16] = { 0xff, 0x12, 0x60, 0x01, 0xff, 0xff };

	/* IPv4, UDP port space: ff12:4001:PKEY::, the low 28 bits */
	assert_int_equal(CALL(sib_cma_join_mcast(u, 0xA1, &a, sizeof(a), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(u, SIB_CMA_EV_MULTICAST_JOIN));
	assert_memory_equal(r->ev.ah.dgid, udp4, 16);
	assert_int_equal(r->ev.listen_uid, 0xA1);
	assert_int_equal(r->ev.uid, 0x501);
	assert_int_equal(r->ev.ud_qp_num, 0xFFFFFF);
	assert_int_equal(r->ev.ud_qkey, SIB_CMA_UDP_QKEY);
	assert_int_equal(r->ev.ah.is_global, 1);
	assert_int_equal(r->ev.ah.port_num, 1);
	assert_true(r->ev.ah.dlid >= 0xC000);
	assert_int_equal(r->ev.status, 0);
	/* the IPoIB port space: ff12:401b, the broadcast group's Q_Key */
	assert_int_equal(CALL(sib_cma_join_mcast(i, 0xA2, &a, sizeof(a), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(i, SIB_CMA_EV_MULTICAST_JOIN));
	assert_memory_equal(r->ev.ah.dgid, ipoib4, 16);
	assert_int_equal(r->ev.ud_qkey, SIB_CMA_IPOIB_QKEY);
	/* IPv6: ff12:6001:PKEY and the address's last 10 bytes */
	inet_pton(AF_INET6, "ff0e::1:2:3:4:5", &a6.sin6_addr);
	memcpy(want6 + 6, a6.sin6_addr.s6_addr + 6, 10);
	struct sib_cma_id *u6 = new_id(f, 1, 0x600, SIB_CMA_PS_UDP);
	struct sockaddr_in6 b6 = { .sin6_family = AF_INET6 };
	struct sib_ctl_cm q;
	memset(&q, 0, sizeof(q));
	sib_cma_query(u, &q);
	memcpy(&b6.sin6_addr, q.sgid, 16); /* the port's IPv6 address is its GID */
	assert_int_equal(CALL(sib_cma_bind(u6, &b6, sizeof(b6))), 0);
	assert_int_equal(CALL(sib_cma_join_mcast(u6, 0xA3, &a6, sizeof(a6), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(u6, SIB_CMA_EV_MULTICAST_JOIN));
	assert_memory_equal(r->ev.ah.dgid, want6, 16);
	/* an SA-assigned MGID (ff12:a01b::) as an IPv6 address: as given */
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6 };
	inet_pton(AF_INET6, "ff12:a01b::77", &sa6.sin6_addr);
	assert_int_equal(CALL(sib_cma_join_mcast(u6, 0xA4, &sa6, sizeof(sa6), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(u6, SIB_CMA_EV_MULTICAST_JOIN));
	assert_memory_equal(r->ev.ah.dgid, sa6.sin6_addr.s6_addr, 16);
	/* AF_IB: the GID as given */
	uint8_t ib[48] = { 0 };
	uint16_t fam = 27;
	static const uint8_t ibgid[16] = { 0xff, 0x15, 0x12, 0x34, [15] = 9 };
	memcpy(ib, &fam, 2);
	memcpy(ib + 8, ibgid, 16);
	assert_int_equal(CALL(sib_cma_join_mcast(u, 0xA5, ib, sizeof(ib), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(u, SIB_CMA_EV_MULTICAST_JOIN));
	assert_int_equal(r->ev.listen_uid, 0xA5);
	assert_memory_equal(r->ev.ah.dgid, ibgid, 16);
	/* misuse: twice the same group, a unicast address, bad flags, an RC id */
	assert_int_equal(CALL(sib_cma_join_mcast(u, 0xA6, &a, sizeof(a), 0)), -EADDRINUSE);
	struct sockaddr_in uni = sin4("10.1.2.3", 0);
	assert_int_equal(CALL(sib_cma_join_mcast(u, 0xA6, &uni, sizeof(uni), 0)), -EINVAL);
	struct sockaddr_in a2 = sin4("239.9.9.9", 0);
	assert_int_equal(CALL(sib_cma_join_mcast(u, 0xA6, &a2, sizeof(a2), 2)), -EINVAL);
	assert_int_equal(CALL(sib_cma_join_mcast(u, 0xA6, &a2, 3, 0)), -EINVAL);
	struct sib_cma_id *rc = new_id(f, 1, 0x700, SIB_CMA_PS_TCP);
	assert_int_equal(bind4(rc, "127.1.0.1", 0), 0);
	assert_int_equal(CALL(sib_cma_join_mcast(rc, 0xA6, &a2, sizeof(a2), 0)), -EINVAL);
	/* not bound to a device */
	ud_ids = true;
	struct sib_cma_id *nb = new_id(f, 1, 0x701, SIB_CMA_PS_UDP);
	ud_ids = false;
	assert_int_equal(CALL(sib_cma_join_mcast(nb, 0xA6, &a2, sizeof(a2), 0)), -EINVAL);
	assert_int_equal(CALL(sib_cma_leave_mcast(u, &a2, sizeof(a2), NULL)), -EADDRNOTAVAIL);
}

static void test_mcast_join_leave(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *a = mc_id(f, 1, 0, SIB_CMA_PS_UDP);
	struct sib_cma_id *b = mc_id(f, 2, 1, SIB_CMA_PS_UDP);
	struct sockaddr_in g = sin4("224.0.0.1", 0);
	uint64_t sa0 = sib_subnet_mad_counters(f->sn)->sa;
	struct rec *r;
	uint16_t mlid;

	assert_int_equal(CALL(sib_cma_join_mcast(a, 1, &g, sizeof(g), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(a, SIB_CMA_EV_MULTICAST_JOIN));
	mlid = r->ev.ah.dlid;
	/* the join really went through the SA */
	assert_int_equal(sib_subnet_mad_counters(f->sn)->sa, sa0 + 1);
	assert_int_equal(sib_cma_counters(f->cma)->mc_joined, 1);
	/* a send-only member of the same group: same MLID, it does not receive */
	assert_int_equal(CALL(sib_cma_join_mcast(b, 2, &g, sizeof(g), 1)), 0);
	run(f);
	assert_non_null(r = ev_of(b, SIB_CMA_EV_MULTICAST_JOIN));
	assert_int_equal(r->ev.ah.dlid, mlid);
	assert_true(mc_reaches(f, 1, mlid, 0));
	assert_false(mc_reaches(f, 0, mlid, 1));
	/* leave: a Delete, the member goes from the MFTs */
	assert_int_equal(CALL(sib_cma_leave_mcast(a, &g, sizeof(g), NULL)), 0);
	run(f);
	assert_int_equal(sib_cma_counters(f->cma)->mc_leaves, 1);
	assert_false(mc_reaches(f, 1, mlid, 0));
	assert_int_equal(CALL(sib_cma_leave_mcast(a, &g, sizeof(g), NULL)), -EADDRNOTAVAIL);
	/* join again, then destroying the id leaves */
	assert_int_equal(CALL(sib_cma_join_mcast(a, 3, &g, sizeof(g), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(a, SIB_CMA_EV_MULTICAST_JOIN));
	mlid = r->ev.ah.dlid;
	assert_true(mc_reaches(f, 1, mlid, 0));
	sib_cma_destroy_id(a);
	assert_false(mc_reaches(f, 1, mlid, 0));
	/* the owner's connection closing leaves too */
	struct sib_cma_id *c = mc_id(f, 3, 0, SIB_CMA_PS_UDP);
	assert_int_equal(CALL(sib_cma_join_mcast(c, 4, &g, sizeof(g), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(c, SIB_CMA_EV_MULTICAST_JOIN));
	mlid = r->ev.ah.dlid;
	assert_true(mc_reaches(f, 1, mlid, 0));
	sib_cma_destroy_owner(f->cma, 3);
	assert_false(mc_reaches(f, 1, mlid, 0));
	/* the groups per id are bounded */
	struct sib_cma_id *m = mc_id(f, 4, 0, SIB_CMA_PS_UDP);
	for (unsigned int i = 0; i < SIB_CMA_MC_MAX; i++) {
		struct sockaddr_in gi = sin4("239.0.0.0", 0);

		gi.sin_addr.s_addr = htonl(0xEF000000u | (i + 1));
		assert_int_equal(CALL(sib_cma_join_mcast(m, 100 + i, &gi, sizeof(gi), 0)), 0);
	}
	struct sockaddr_in gx = sin4("239.0.1.0", 0);
	assert_int_equal(CALL(sib_cma_join_mcast(m, 99, &gx, sizeof(gx), 0)), -ENOBUFS);
	run(f);
	sib_cma_destroy_id(m);
}

/* Two processes on one port in one group (found by a hostile review: one
 * leaving cut the other out): the SA knows one membership per port, so a
 * leave sends a Delete only of the JoinState bits no other id on the port
 * still holds, as the kernel's multicast.c counts members per port. */
static void test_mcast_port_shared(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *a = mc_id(f, 1, 0, SIB_CMA_PS_UDP);
	struct sib_cma_id *b = mc_id(f, 2, 0, SIB_CMA_PS_UDP);
	struct sib_cma_id *s = mc_id(f, 3, 0, SIB_CMA_PS_UDP);
	struct sockaddr_in g = sin4("239.7.7.7", 0);
	uint64_t leaves0 = sib_cma_counters(f->cma)->mc_leaves;
	struct rec *r;
	uint16_t mlid;

	assert_int_equal(CALL(sib_cma_join_mcast(a, 1, &g, sizeof(g), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(a, SIB_CMA_EV_MULTICAST_JOIN));
	mlid = r->ev.ah.dlid;
	assert_int_equal(CALL(sib_cma_join_mcast(b, 2, &g, sizeof(g), 0)), 0);
	assert_int_equal(CALL(sib_cma_join_mcast(s, 3, &g, sizeof(g), 1)), 0); /* send-only */
	run(f);
	assert_non_null(ev_of(b, SIB_CMA_EV_MULTICAST_JOIN));
	assert_non_null(ev_of(s, SIB_CMA_EV_MULTICAST_JOIN));
	assert_true(mc_reaches(f, 1, mlid, 0));
	/* a leaves: b still holds the full membership, nothing is sent */
	assert_int_equal(CALL(sib_cma_leave_mcast(a, &g, sizeof(g), NULL)), 0);
	run(f);
	assert_int_equal(sib_cma_counters(f->cma)->mc_leaves, leaves0);
	assert_true(mc_reaches(f, 1, mlid, 0));
	/* b's owner goes: the full bit leaves, the send-only member stays */
	sib_cma_destroy_owner(f->cma, 2);
	run(f);
	assert_int_equal(sib_cma_counters(f->cma)->mc_leaves, leaves0 + 1);
	assert_false(mc_reaches(f, 1, mlid, 0));
	/* the last one: its send-only bit */
	sib_cma_destroy_id(s);
	assert_int_equal(sib_cma_counters(f->cma)->mc_leaves, leaves0 + 2);
	sib_cma_destroy_id(a);
}

static void test_mcast_errors(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *a = mc_id(f, 1, 1, SIB_CMA_PS_UDP);
	struct sib_cma_id *i = mc_id(f, 1, 1, SIB_CMA_PS_IPOIB);
	struct sockaddr_in g = sin4("239.5.5.5", 0);
	uint16_t sm = cas[1]->mgmt->port[1].pi.master_sm_lid;
	struct rec *r;

	/* the group exists with the UDP Q_Key: an IPoIB-space join of the
	 * same MGID... differs (ff12:401b), so make the SA refuse instead:
	 * an AF_IB group whose Q_Key contradicts an existing one */
	uint8_t ib[48] = { 0 };
	uint16_t fam = 27;
	static const uint8_t gid[16] = { 0xff, 0x12, 0x40, 0x01, 0xff, 0xff, [15] = 7 };
	memcpy(ib, &fam, 2);
	memcpy(ib + 8, gid, 16);
	assert_int_equal(CALL(sib_cma_join_mcast(a, 1, ib, sizeof(ib), 0)), 0);
	run(f);
	assert_non_null(ev_of(a, SIB_CMA_EV_MULTICAST_JOIN));
	assert_int_equal(CALL(sib_cma_join_mcast(i, 2, ib, sizeof(ib), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(i, SIB_CMA_EV_MULTICAST_ERROR));
	assert_int_equal(r->ev.status, -EINVAL);
	assert_int_equal(r->ev.listen_uid, 2);
	/* an SA nobody is: MULTICAST_ERROR -ETIMEDOUT after 3 s */
	cas[1]->mgmt->port[1].pi.master_sm_lid = 0xBFFF;
	assert_int_equal(CALL(sib_cma_join_mcast(a, 3, &g, sizeof(g), 0)), 0);
	run(f);
	assert_null(ev_of(a, SIB_CMA_EV_MULTICAST_ERROR));
	now_ns += 2900000000ull;
	assert_true(sib_cma_tick(f->cma, now_ns) != 0);
	assert_null(ev_of(a, SIB_CMA_EV_MULTICAST_ERROR));
	now_ns += 200000000ull;
	sib_cma_tick(f->cma, now_ns);
	assert_non_null(r = ev_of(a, SIB_CMA_EV_MULTICAST_ERROR));
	assert_int_equal(r->ev.status, -ETIMEDOUT);
	assert_int_equal(r->ev.listen_uid, 3);
	assert_int_equal(sib_cma_counters(f->cma)->mc_timeouts, 1);
	cas[1]->mgmt->port[1].pi.master_sm_lid = sm;
	/* it can be left and joined again */
	assert_int_equal(CALL(sib_cma_leave_mcast(a, &g, sizeof(g), NULL)), 0);
	assert_int_equal(CALL(sib_cma_join_mcast(a, 4, &g, sizeof(g), 0)), 0);
	run(f);
	assert_non_null(r = ev_of(a, SIB_CMA_EV_MULTICAST_JOIN));
	assert_int_equal(r->ev.listen_uid, 4);
}

/* A hostile SA answer to the join in flight (TID: the cma's first SA MAD). */
static void sa_answer(struct fx *f, uint16_t attr, uint16_t mlid, uint32_t qkey,
		      const uint8_t port_gid[16])
{
	struct sa_mcmember_record r = { .mlid = mlid, .qkey = qkey, .mgid = { 0xff, 0x12 } };
	struct mad_sa s;
	uint8_t wire[MAD_SIZE];
	mai_mad_t m;

	memcpy(r.port_gid, port_gid, 16);
	memset(&s, 0, sizeof(s));
	s.hdr.base_version = MAD_BASE_VERSION;
	s.hdr.mgmt_class = MAD_MGMT_CLASS_SUBN_ADM;
	s.hdr.class_version = MAD_SA_CLASS_VERSION;
	s.hdr.r = 1;
	s.hdr.method = MAD_METHOD_GET;
	s.hdr.tid = (uint64_t)SIB_MAD_CHAN_CMA << MAI_TID_CHAN_SHIFT | 1;
	s.hdr.attr_id = attr;
	sa_mcmember_record_encode(&r, s.data);
	mad_sa_encode(&s, wire);
	memset(&m, 0, sizeof(m));
	assert_int_equal(mai_fromwire(wire, MAD_SIZE, &m), MAD_SIZE);
	sib_cma_sa_receive(f->sn, cas[1], 1, &m);
}

static void test_mcast_hostile_sa(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *a = mc_id(f, 1, 1, SIB_CMA_PS_UDP);
	struct sockaddr_in g = sin4("239.5.5.6", 0);
	struct sib_ctl_cm q;
	struct rec *r;

	memset(&q, 0, sizeof(q));
	sib_cma_query(a, &q);
	cas[1]->mgmt->port[1].pi.master_sm_lid = 0xBFFF; /* only our answers come */
	assert_int_equal(CALL(sib_cma_join_mcast(a, 9, &g, sizeof(g), 0)), 0);
	/* another attribute: dropped, counted; the join still waits */
	sa_answer(f, SA_ATTR_PATH_RECORD, 0xC123, SIB_CMA_UDP_QKEY, q.sgid);
	run(f);
	assert_int_equal(sib_cma_counters(f->cma)->mc_bad_answers, 1);
	assert_null(ev_of(a, SIB_CMA_EV_MULTICAST_ERROR));
	/* a record whose MLID is no multicast LID: MULTICAST_ERROR -EINVAL */
	sa_answer(f, SA_ATTR_MCMEMBER_RECORD, 0x0012, SIB_CMA_UDP_QKEY, q.sgid);
	run(f);
	assert_non_null(r = ev_of(a, SIB_CMA_EV_MULTICAST_ERROR));
	assert_int_equal(r->ev.status, -EINVAL);
	assert_null(ev_of(a, SIB_CMA_EV_MULTICAST_JOIN));
	/* a late duplicate answer: nothing */
	sa_answer(f, SA_ATTR_MCMEMBER_RECORD, 0xC123, SIB_CMA_UDP_QKEY, q.sgid);
	run(f);
	assert_null(ev_of(a, SIB_CMA_EV_MULTICAST_JOIN));
	/* and no timeout later */
	unsigned int n = nevs;
	now_ns += 4000000000ull;
	sib_cma_tick(f->cma, now_ns);
	assert_int_equal(nevs, n);
}


/* ---- AF_IB ServiceIDs outside rdma_cm's ranges (IPoIB-CM's) ---- */

static void gid_of(const struct sib_fab_node *n, uint8_t gid[16])
{
	uint64_t pre = n->mgmt->port[1].pi.gid_prefix, guid = n->ports[1].guid;

	for (int i = 0; i < 8; i++) {
		gid[i] = (uint8_t)(pre >> (56 - 8 * i));
		gid[8 + i] = (uint8_t)(guid >> (56 - 8 * i));
	}
}

/* A sockaddr_ib (48 bytes): family 27, P_Key, GID, ServiceID, mask all ones. */
static void sib_addr(uint8_t out[48], const uint8_t gid[16], uint64_t sid)
{
	uint16_t fam = 27;

	memset(out, 0, 48);
	memcpy(out, &fam, 2);
	out[2] = out[3] = 0xff;
	memcpy(out + 8, gid, 16);
	for (int i = 0; i < 8; i++) {
		out[24 + i] = (uint8_t)(sid >> (56 - 8 * i));
		out[32 + i] = sid ? 0xff : 0;
	}
}

static uint64_t raw_req_sid;
static uint8_t raw_req_pdata[92];

static int raw_listener(struct sib_cm_id *cm, const struct sib_cm_event *ev, void *ctx)
{
	(void)cm;
	(void)ctx;
	if (ev->type != SIB_CM_REQ_RECEIVED)
		return 0;
	raw_req_sid = ev->u.req.service_id;
	memcpy(raw_req_pdata, ev->pdata, ev->pdata_len < 92 ? ev->pdata_len : 92);
	return 1; /* REJ */
}

/* An AF_IB RC id of owner on softib1 connects to sid at softib0's GID with
 * pdata: resolved and REQ sent. */
static struct sib_cma_id *ib_connect(struct fx *f, uint64_t owner, uint64_t sid,
				     const uint8_t *pdata, uint32_t len)
{
	struct sib_cma_id *c = new_id(f, owner, 0xC0 + owner, SIB_CMA_PS_IB);
	uint8_t g0[16], g1[16], s[48], d[48];
	struct sib_cm_conn cc = conn_of(0x330 + (uint32_t)owner); /* a QPN per REQ (else stale) */

	gid_of(cas[0], g0);
	gid_of(cas[1], g1);
	sib_addr(s, g1, 0);
	sib_addr(d, g0, sid);
	assert_int_equal(CALL(sib_cma_resolve_addr(c, s, 48, d, 48, 2000)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_ADDR_RESOLVED));
	assert_int_equal(CALL(sib_cma_resolve_route(c, 2000)), 0);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_ROUTE_RESOLVED));
	assert_int_equal(CALL(sib_cma_connect(c, &cc, pdata, len)), 0);
	run(f);
	return c;
}

/* IPoIB-CM through the rdma_cm: an AF_IB listener in RDMA_PS_IB on the whole
 * ServiceID 0x1000000000000000 | QPN (no CMA header: the 8-byte private data
 * raw both ways), a REQ on the wire with exactly that ServiceID, and
 * rdma_cm's own AF_IB range ((0x013F << 16) | port) as before, beside it on
 * the same low 16 bits. */
static void test_af_ib_raw_sid(void **state)
{
	struct fx *f = *state;
	const uint64_t sid = 0x1000000000000000ull | 0x4d0123;
	const uint8_t req[8] = { 0, 0x12, 0x34, 0x56, 0, 0, 0xff, 0xf0 };
	const uint8_t rep[8] = { 0, 0x4d, 0x01, 0x23, 0, 0, 0xff, 0xf0 };
	struct sib_cma_id *l = new_id(f, 2, 0x102, SIB_CMA_PS_IB), *l2, *c, *s;
	struct sib_cm_conn sc = conn_of(0x444);
	uint8_t g0[16], a[48];
	struct rec *r;

	gid_of(cas[0], g0);
	sib_addr(a, g0, sid);
	assert_int_equal(CALL(sib_cma_bind(l, a, 48)), 0);
	assert_int_equal(CALL(sib_cma_listen(l, 8)), 0);
	/* rdma_cm's own range on port 0x0123 is another bucket: no conflict */
	l2 = new_id(f, 2, 0x103, SIB_CMA_PS_IB);
	sib_addr(a, g0, (uint64_t)SIB_CMA_PS_IB << 16 | 0x0123);
	assert_int_equal(CALL(sib_cma_bind(l2, a, 48)), 0);
	assert_int_equal(CALL(sib_cma_listen(l2, 8)), 0);
	/* the same raw ServiceID and GID again: in use */
	struct sib_cma_id *dup = new_id(f, 3, 0x104, SIB_CMA_PS_IB);
	sib_addr(a, g0, sid);
	assert_int_equal(CALL(sib_cma_bind(dup, a, 48)), -EADDRINUSE);
	/* a ServiceID of the TCP or UDP space (port 7471) is not raw: it would
	 * listen beside that space's owner of the port and take its REQs
	 * (found by a hostile review); refused */
	sib_addr(a, g0, (uint64_t)SIB_CMA_PS_TCP << 16 | 7471);
	assert_int_equal(CALL(sib_cma_bind(dup, a, 48)), -EPROTONOSUPPORT);
	sib_addr(a, g0, (uint64_t)SIB_CMA_PS_UDP << 16 | 7471);
	assert_int_equal(CALL(sib_cma_bind(dup, a, 48)), -EPROTONOSUPPORT);

	c = ib_connect(f, 1, sid, req, sizeof(req));
	r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST);
	assert_non_null(r);
	assert_int_equal(r->ev.listen_uid, 0x102);
	assert_int_equal(r->ev.pdata_len, 92); /* the REQ's whole field, no header */
	assert_memory_equal(r->ev.pdata, req, 8);
	assert_int_equal(r->ev.conn.qp_num, 0x331);
	s = r->id;
	assert_int_equal(CALL(sib_cma_accept(s, &sc, rep, sizeof(rep))), 0);
	run(f);
	r = ev_of(c, SIB_CMA_EV_CONNECT_RESPONSE);
	assert_non_null(r);
	assert_memory_equal(r->ev.pdata, rep, 8);
	assert_int_equal(r->ev.conn.qp_num, 0x444);
	assert_int_equal(CALL(sib_cma_accept(c, &(struct sib_cm_conn){ .qp_num = 0x331, .qp_type = IBV_QPT_RC }, NULL, 0)), 0);
	run(f);
	assert_non_null(ev_of(s, SIB_CMA_EV_ESTABLISHED));

	/* rdma_cm's own AF_IB range: listened on (0x013F << 16) | 0x0123 as before */
	nevs = 0;
	c = ib_connect(f, 4, (uint64_t)SIB_CMA_PS_IB << 16 | 0x0123, req, sizeof(req));
	r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST);
	assert_non_null(r);
	assert_int_equal(r->ev.listen_uid, 0x103);
	assert_memory_equal(r->ev.pdata, req, 8);

	/* on the wire: a CM listener of its own on another raw ServiceID sees
	 * the REQ's ServiceID and private data exactly as IPoIB-CM's */
	struct sib_cm_id *raw = sib_cm_id_new(f->sn, cas[0], 1, raw_listener, NULL);
	assert_non_null(raw);
	assert_int_equal(sib_cm_listen(raw, sid + 1, ~0ull), 0);
	nevs = 0;
	c = ib_connect(f, 5, sid + 1, req, sizeof(req));
	assert_int_equal(raw_req_sid, sid + 1);
	assert_memory_equal(raw_req_pdata, req, 8);
	assert_memory_equal(raw_req_pdata + 8, (uint8_t[84]){ 0 }, 84);
	run(f);
	assert_non_null(ev_of(c, SIB_CMA_EV_REJECTED));
	sib_cm_id_destroy(raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_addresses),
		cmocka_unit_test_setup_teardown(test_addr_add, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ephemeral_unique, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_accept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_disconnects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_af_ib_ephemeral, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reject, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listener_match, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sidr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_in_handshake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_cleanup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_death_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreachable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dreq_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcast_mgid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcast_join_leave, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcast_port_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcast_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mcast_hostile_sa, setup, teardown),
		cmocka_unit_test_setup_teardown(test_af_ib_raw_sid, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
