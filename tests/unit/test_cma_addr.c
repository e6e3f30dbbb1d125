/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the rdma_cm's address table (src/subnet/cma.c,
 * sib_cma_addr_add/_del/_get/_flush; docs/rdmacm.md "Addresses") over the
 * default fabric with a fake host (verbs devices 0..3 are the fabric's CAs):
 * add and delete with the errors `ip addr` gives, the list with the
 * defaults first, IPv6, a full table, a bind after a delete fails with
 * EADDRNOTAVAIL while an id bound before keeps its address, an established
 * connection and a listener survive the delete (as on Linux), a device's
 * addresses go with it; and a randomized run against a model, replayable
 * with CMA_ADDR_SEED=N.
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
#include <sys/socket.h>
#include <time.h>
#include <cmocka.h>

#include "subnet/cma.h"
#include "subnet/subnet_api.h"
#include "fake_subnet_host.h"

#define MAX_EV 256
struct rec {
	struct sib_cma_id *id;
	uint32_t event;
};

static struct sib_fab_node *cas[8];
static unsigned int ncas;
static struct rec evs[MAX_EV];
static unsigned int nevs;

static int cma_event(void *ctx, struct sib_cma_id *id, struct sib_ctl_cm_event *ev)
{
	(void)ctx;
	assert_true(nevs < MAX_EV);
	evs[nevs].id = id;
	evs[nevs].event = ev->event;
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
	return 1000000000ull;
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

static struct sockaddr_in sin4(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	return a;
}

static struct sockaddr_in6 sin6(const char *ip)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 };

	assert_int_equal(inet_pton(AF_INET6, ip, &a.sin6_addr), 1);
	return a;
}

static int add4(struct fx *f, uint32_t dev, uint8_t port, const char *ip, uint8_t prefix)
{
	struct sockaddr_in a = sin4(ip, 0);

	return sib_cma_addr_add(f->cma, dev, port, &a, sizeof(a), prefix);
}

static int del4(struct fx *f, uint32_t dev, uint8_t port, const char *ip, uint8_t prefix)
{
	struct sockaddr_in a = sin4(ip, 0);

	return sib_cma_addr_del(f->cma, dev, port, &a, sizeof(a), prefix);
}

static struct rec *ev_of(struct sib_cma_id *id, uint32_t t)
{
	for (int i = (int)nevs - 1; i >= 0; i--)
		if ((!id || evs[i].id == id) && evs[i].event == t)
			return &evs[i];
	return NULL;
}

static struct sib_cma_id *new_id(struct fx *f, uint64_t owner)
{
	struct sib_cma_id *id = NULL;

	assert_int_equal(sib_cma_create_id(f->cma, owner, owner, SIB_CMA_PS_TCP, IBV_QPT_RC, &id),
			 0);
	return id;
}

static int bind4(struct sib_cma_id *id, const char *ip, uint16_t port)
{
	struct sockaddr_in a = sin4(ip, port);

	return sib_cma_bind(id, &a, sizeof(a));
}

static struct sib_cm_conn conn_of(uint32_t qpn)
{
	return (struct sib_cm_conn){ .qp_num = qpn, .responder_resources = 4,
				     .initiator_depth = 2, .retry_count = 7,
				     .rnr_retry_count = 6, .qp_type = IBV_QPT_RC };
}

/* ---- tests ---- */

static void test_add_del_errors(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = sin4("10.9.0.1", 0);
	uint8_t ib[48] = { 27 }; /* AF_IB */
	struct sib_cma_addr_info in;

	assert_int_equal(add4(f, 0, 1, "10.9.0.1", 24), 0);
	assert_int_equal(add4(f, 0, 1, "10.9.0.1", 24), -EEXIST);
	assert_int_equal(add4(f, 1, 1, "10.9.0.1", 16), -EEXIST); /* another port has it */
	/* delete: the port's own, with its prefix or any */
	assert_int_equal(del4(f, 1, 1, "10.9.0.1", 24), -EADDRNOTAVAIL);
	assert_int_equal(del4(f, 0, 1, "10.9.0.1", 16), -EADDRNOTAVAIL);
	assert_int_equal(del4(f, 0, 1, "10.9.0.2", 24), -EADDRNOTAVAIL);
	assert_int_equal(del4(f, 0, 1, "10.9.0.1", 33), -EINVAL);
	assert_int_equal(del4(f, 0, 0, "10.9.0.1", 24), -EINVAL);
	assert_int_equal(del4(f, 0, 1, "0.0.0.0", 24), -EINVAL);
	assert_int_equal(sib_cma_addr_del(f->cma, 0, 1, ib, sizeof(ib), 64), -EINVAL);
	assert_int_equal(sib_cma_addr_del(f->cma, 0, 1, &a, 8, 24), -EINVAL); /* short */
	/* the defaults are not deletable */
	assert_int_equal(del4(f, 0, 1, "127.1.0.1", 8), -EPERM);
	assert_int_equal(del4(f, 0, 1, "127.1.0.1", SIB_CMA_PREFIX_ANY), -EPERM);
	assert_int_equal(sib_cma_addr_get(f->cma, 0, 1, 1, &in), 0);
	struct sockaddr_in6 g = { .sin6_family = AF_INET6 };
	memcpy(&g.sin6_addr, in.addr, 16);
	assert_int_equal(sib_cma_addr_del(f->cma, 0, 1, &g, sizeof(g), 64), -EPERM);
	/* a default address of another port: not this port's */
	assert_int_equal(del4(f, 0, 1, "127.1.1.1", 8), -EADDRNOTAVAIL);
	assert_int_equal(sib_cma_addr_count(f->cma), 1);
	assert_int_equal(del4(f, 0, 1, "10.9.0.1", 24), 0);
	assert_int_equal(del4(f, 0, 1, "10.9.0.1", 24), -EADDRNOTAVAIL);
	assert_int_equal(sib_cma_addr_count(f->cma), 0);
	/* without a prefix: whatever it has */
	assert_int_equal(add4(f, 0, 1, "10.9.0.1", 20), 0);
	assert_int_equal(del4(f, 0, 1, "10.9.0.1", SIB_CMA_PREFIX_ANY), 0);
	/* now softib1 may take it */
	assert_int_equal(add4(f, 1, 1, "10.9.0.1", 16), 0);
	/* not a unicast address a port may get (hostile review): the default
	 * range of devices that come later, multicast, broadcast, prefix 0 */
	assert_int_equal(add4(f, 0, 1, "127.1.5.1", 8), -EINVAL);
	assert_int_equal(add4(f, 0, 1, "127.1.1.1", 32), -EEXIST); /* softib1's default */
	assert_int_equal(add4(f, 0, 1, "224.0.0.1", 32), -EINVAL);
	assert_int_equal(add4(f, 0, 1, "239.1.2.3", 32), -EINVAL);
	assert_int_equal(add4(f, 0, 1, "255.255.255.255", 32), -EINVAL);
	assert_int_equal(add4(f, 0, 1, "10.9.9.9", 0), -EINVAL);
	assert_int_equal(add4(f, 0, 1, "127.2.0.1", 8), -EINVAL); /* loopback: the first port's */
	assert_int_equal(add4(f, 0, 1, "0.0.0.1", 32), -EINVAL);
	assert_int_equal(add4(f, 0, 1, "169.254.1.1", 16), 0);
	struct sockaddr_in6 m = { .sin6_family = AF_INET6 };
	inet_pton(AF_INET6, "::ffff:127.1.1.1", &m.sin6_addr);
	assert_int_equal(sib_cma_addr_add(f->cma, 0, 1, &m, sizeof(m), 128), -EINVAL);
	inet_pton(AF_INET6, "::ffff:10.1.1.1", &m.sin6_addr);
	assert_int_equal(sib_cma_addr_add(f->cma, 0, 1, &m, sizeof(m), 128), -EINVAL);
	inet_pton(AF_INET6, "::127.1.0.1", &m.sin6_addr); /* IPv4-compatible */
	assert_int_equal(sib_cma_addr_add(f->cma, 0, 1, &m, sizeof(m), 128), -EINVAL);
	inet_pton(AF_INET6, "::1", &m.sin6_addr);
	assert_int_equal(sib_cma_addr_add(f->cma, 0, 1, &m, sizeof(m), 128), -EINVAL);
	/* the GID of a device added later (review: it bound to softib0) */
	inet_pton(AF_INET6, "fe80::5eed:0:0:10e", &m.sin6_addr);
	assert_int_equal(sib_cma_addr_add(f->cma, 0, 1, &m, sizeof(m), 64), -EINVAL);
	inet_pton(AF_INET6, "ff02::1", &m.sin6_addr);
	assert_int_equal(sib_cma_addr_add(f->cma, 0, 1, &m, sizeof(m), 128), -EINVAL);
	inet_pton(AF_INET6, "fd00::1", &m.sin6_addr);
	assert_int_equal(sib_cma_addr_add(f->cma, 0, 1, &m, sizeof(m), 64), 0);
}

static void test_ipv6(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in6 a = sin6("2001:db8::1");
	struct sib_cma_addr_info in;

	assert_int_equal(sib_cma_addr_add(f->cma, 2, 1, &a, sizeof(a), 64), 0);
	assert_int_equal(sib_cma_addr_add(f->cma, 2, 1, &a, sizeof(a), 64), -EEXIST);
	assert_int_equal(sib_cma_addr_get(f->cma, 2, 1, 2, &in), 0);
	assert_int_equal(in.family, AF_INET6);
	assert_int_equal(in.prefix, 64);
	assert_false(in.is_default);
	assert_memory_equal(in.addr, &a.sin6_addr, 16);
	assert_int_equal(sib_cma_addr_del(f->cma, 2, 1, &a, sizeof(a), 129), -EINVAL);
	assert_int_equal(sib_cma_addr_del(f->cma, 2, 1, &a, sizeof(a), 48), -EADDRNOTAVAIL);
	assert_int_equal(sib_cma_addr_del(f->cma, 2, 1, &a, sizeof(a), 64), 0);
	assert_int_equal(sib_cma_addr_get(f->cma, 2, 1, 2, &in), -ENOENT);
}

static void test_get(void **state)
{
	struct fx *f = *state;
	struct sib_cma_addr_info in;
	const uint8_t v4[4] = { 127, 1, 1, 1 };

	assert_int_equal(add4(f, 1, 1, "10.9.0.1", 24), 0);
	assert_int_equal(add4(f, 0, 1, "10.9.9.9", 32), 0); /* another port's: not listed */
	assert_int_equal(add4(f, 1, 1, "10.9.0.2", 25), 0);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 1, 0, &in), 0);
	assert_int_equal(in.family, AF_INET);
	assert_int_equal(in.prefix, 8);
	assert_true(in.is_default);
	assert_memory_equal(in.addr, v4, 4);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 1, 1, &in), 0);
	assert_int_equal(in.family, AF_INET6);
	assert_int_equal(in.prefix, 64);
	assert_true(in.is_default);
	assert_int_equal(in.addr[0], 0xfe);
	assert_int_equal(in.addr[1], 0x80);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 1, 2, &in), 0);
	assert_int_equal(in.prefix, 24);
	assert_false(in.is_default);
	assert_int_equal(in.addr[3], 1);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 1, 3, &in), 0);
	assert_int_equal(in.prefix, 25);
	assert_int_equal(in.addr[3], 2);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 1, 4, &in), -ENOENT);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 1, 0xffffffffu, &in), -ENOENT);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 0, 0, &in), -EINVAL);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 2, 0, &in), -EINVAL);
	assert_int_equal(sib_cma_addr_get(f->cma, 7, 1, 0, &in), -EINVAL);
	/* a device's addresses go with it */
	sib_cma_addr_flush(f->cma, 1);
	assert_int_equal(sib_cma_addr_get(f->cma, 1, 1, 2, &in), -ENOENT);
	assert_int_equal(sib_cma_addr_count(f->cma), 1);
	assert_int_equal(sib_cma_addr_get(f->cma, 0, 1, 2, &in), 0);
}

static void test_full(void **state)
{
	struct fx *f = *state;
	char ip[32];

	for (unsigned int i = 0; i < SIB_CMA_ADDRS_MAX; i++) {
		snprintf(ip, sizeof(ip), "10.%u.%u.1", 10 + i / 200, i % 200);
		assert_int_equal(add4(f, i % 4, 1, ip, 24), 0);
	}
	assert_int_equal(add4(f, 0, 1, "10.200.0.1", 24), -ENOSPC);
	assert_int_equal(del4(f, 1, 1, "10.10.1.1", 24), 0);
	assert_int_equal(add4(f, 0, 1, "10.200.0.1", 24), 0);
	assert_int_equal(add4(f, 0, 1, "10.200.0.2", 24), -ENOSPC);
}

/* A bind after the delete fails; an id bound before keeps its address. */
static void test_bind_after_del(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *a, *b;
	struct sib_ctl_cm q;

	assert_int_equal(add4(f, 1, 1, "10.9.0.1", 24), 0);
	a = new_id(f, 1);
	assert_int_equal(bind4(a, "10.9.0.1", 4000), 0);
	assert_int_equal(sib_cma_id_dev(a), 1);
	assert_int_equal(del4(f, 1, 1, "10.9.0.1", 24), 0);
	b = new_id(f, 1);
	assert_int_equal(bind4(b, "10.9.0.1", 4001), -EADDRNOTAVAIL);
	memset(&q, 0, sizeof(q));
	sib_cma_query(a, &q);
	assert_int_equal(q.dev_index, 1);
	assert_int_equal(q.src_addr[4], 10);
	assert_int_equal(q.src_addr[7], 1);
	/* added again: binds again */
	assert_int_equal(add4(f, 1, 1, "10.9.0.1", 24), 0);
	b = new_id(f, 1);
	assert_int_equal(bind4(b, "10.9.0.1", 4001), 0);
}

/* An established connection and a listener on a deleted address stay. */
static void test_conn_survives(void **state)
{
	struct fx *f = *state;
	struct sib_cma_id *l, *c, *s;
	struct sib_cm_conn cc = conn_of(0x111), sc = conn_of(0x222);
	struct sockaddr_in src = sin4("127.1.1.1", 0), dst = sin4("10.9.0.1", 7000);
	struct rec *r;

	assert_int_equal(add4(f, 0, 1, "10.9.0.1", 24), 0);
	l = new_id(f, 2);
	assert_int_equal(bind4(l, "10.9.0.1", 7000), 0);
	assert_int_equal(sib_cma_listen(l, 8), 0);
	c = new_id(f, 1);
	assert_int_equal(sib_cma_resolve_addr(c, &src, sizeof(src), &dst, sizeof(dst), 2000), 0);
	sib_cma_dispatch(f->cma);
	assert_non_null(ev_of(c, SIB_CMA_EV_ADDR_RESOLVED));
	assert_int_equal(sib_cma_resolve_route(c, 2000), 0);
	sib_cma_dispatch(f->cma);
	assert_non_null(ev_of(c, SIB_CMA_EV_ROUTE_RESOLVED));
	assert_int_equal(sib_cma_connect(c, &cc, NULL, 0), 0);
	sib_cma_dispatch(f->cma);
	assert_non_null(r = ev_of(NULL, SIB_CMA_EV_CONNECT_REQUEST));
	s = r->id;
	assert_int_equal(sib_cma_accept(s, &sc, NULL, 0), 0);
	sib_cma_dispatch(f->cma);
	assert_non_null(ev_of(c, SIB_CMA_EV_CONNECT_RESPONSE));
	assert_int_equal(sib_cma_accept(c, &cc, NULL, 0), 0);
	sib_cma_dispatch(f->cma);
	assert_non_null(ev_of(s, SIB_CMA_EV_ESTABLISHED));

	assert_int_equal(del4(f, 0, 1, "10.9.0.1", 24), 0);
	sib_cma_dispatch(f->cma);
	assert_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
	assert_null(ev_of(s, SIB_CMA_EV_DISCONNECTED));
	assert_null(ev_of(NULL, SIB_CMA_EV_ADDR_CHANGE));
	assert_int_equal(sib_cma_listening(f->cma), 1);
	/* the connection still works to its end: DREQ, DREP */
	assert_int_equal(sib_cma_disconnect(c), 0);
	sib_cma_dispatch(f->cma);
	assert_non_null(ev_of(s, SIB_CMA_EV_DISCONNECTED));
	assert_int_equal(sib_cma_disconnect(s), 0);
	sib_cma_dispatch(f->cma);
	assert_non_null(ev_of(c, SIB_CMA_EV_DISCONNECTED));
}

/*
 * Randomized against a model, replayable with CMA_ADDR_SEED=N: adds,
 * deletes (exact prefix, any prefix, a wrong one, a default, another
 * port's), flushes of a device and binds on a few addresses of 4 devices;
 * after each step the table's list per port, the count and what a bind
 * gives match the model.
 */
#define M_IPS 24
struct m_addr {
	bool used;
	uint32_t dev;
	uint8_t prefix;
};

static uint64_t rnd_state;

static uint32_t rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

/* Address i leaves the model's table. */
static void forget(struct m_addr *m, uint32_t *order, uint32_t *norder, uint32_t i)
{
	uint32_t j = 0;

	m[i].used = false;
	for (uint32_t o = 0; o < *norder; o++)
		if (order[o] != i)
			order[j++] = order[o];
	*norder = j;
}

static void model_check(struct fx *f, const struct m_addr *m, const uint32_t *order,
			uint32_t norder)
{
	struct sib_cma_addr_info in;
	uint32_t count = 0;

	for (uint32_t d = 0; d < 4 && d < ncas; d++) {
		uint32_t k = 2;

		for (uint32_t o = 0; o < norder; o++) {
			uint32_t i = order[o];

			if (m[i].dev != d)
				continue;
			assert_int_equal(sib_cma_addr_get(f->cma, d, 1, k++, &in), 0);
			assert_int_equal(in.addr[0], 10);
			assert_int_equal(in.addr[3], i + 1);
			assert_int_equal(in.prefix, m[i].prefix);
		}
		assert_int_equal(sib_cma_addr_get(f->cma, d, 1, k, &in), -ENOENT);
	}
	for (uint32_t i = 0; i < M_IPS; i++)
		count += m[i].used;
	assert_int_equal(sib_cma_addr_count(f->cma), count);
}

static void test_random(void **state)
{
	struct fx *f = *state;
	const char *env = getenv("CMA_ADDR_SEED");
	unsigned int seed = env ? (unsigned int)strtoul(env, NULL, 0) : (unsigned int)time(NULL);
	struct m_addr m[M_IPS] = { 0 };
	uint32_t order[M_IPS], norder = 0; /* the table: indices in the order added */
	char ip[32];

	printf("test_random: CMA_ADDR_SEED=%u\n", seed);
	rnd_state = seed * 2654435761ull + 1;
	for (int step = 0; step < 2000; step++) {
		uint32_t i = rnd(M_IPS), d = rnd(ncas < 4 ? ncas : 4), op = rnd(10);
		uint8_t prefix = (uint8_t)(8 + rnd(25));
		int want, got;

		snprintf(ip, sizeof(ip), "10.9.0.%u", i + 1);
		if (op < 4) {
			want = m[i].used ? -EEXIST : 0;
			got = add4(f, d, 1, ip, prefix);
			if (!want) {
				m[i] = (struct m_addr){ true, d, prefix };
				order[norder++] = i;
			}
		} else if (op < 8) {
			uint8_t p = op == 4 ? SIB_CMA_PREFIX_ANY : op == 5 ? prefix : m[i].prefix;

			if (op == 7) /* another port's (or nobody's) */
				d = m[i].used ? (m[i].dev + 1) % (ncas < 4 ? ncas : 4) : d;
			want = m[i].used && m[i].dev == d &&
			       (p == SIB_CMA_PREFIX_ANY || p == m[i].prefix) ? 0 : -EADDRNOTAVAIL;
			got = del4(f, d, 1, ip, p);
			if (!want)
				forget(m, order, &norder, i);
		} else if (op == 8) {
			snprintf(ip, sizeof(ip), "127.1.%u.1", d);
			want = -EPERM;
			got = del4(f, d, 1, ip, SIB_CMA_PREFIX_ANY);
		} else {
			struct sib_cma_id *id = new_id(f, 9);

			want = m[i].used ? 0 : -EADDRNOTAVAIL;
			got = bind4(id, ip, 0);
			if (!got)
				assert_int_equal(sib_cma_id_dev(id), m[i].dev);
			sib_cma_destroy_id(id);
			if (rnd(20) == 0) { /* a device goes */
				sib_cma_addr_flush(f->cma, d);
				for (uint32_t k = 0; k < M_IPS; k++)
					if (m[k].used && m[k].dev == d)
						forget(m, order, &norder, k);
			}
		}
		if (got != want)
			fail_msg("step %d op %u %s dev %u: got %d, want %d (CMA_ADDR_SEED=%u)", step, op,
				 ip, d, got, want, seed);
		model_check(f, m, order, norder);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_add_del_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipv6, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_after_del, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conn_survives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
