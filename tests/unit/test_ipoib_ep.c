/* SPDX-License-Identifier: MIT */
/*
 * The IPoIB endpoint (src/ipoib/ep.c) without a TUN, through the built
 * libibverbs.so.1 and libibumad.so.3 and a private softibd: two endpoints
 * (softib0 and softib1, port 1) join the broadcast group through the SA
 * (Q_Key 0x0B1B, MTU 2044 from it); an IPv4 datagram from one to the other
 * waits behind ARP, is delivered once the reply came, and both sides learnt
 * each other.  Then the case a bug hid: an ARP request that arrives while the
 * sender's send ring is full is handled when ipoib_ep_can_send reclaims the
 * slots, and the neighbour it teaches must live its full time (it was learnt
 * "at time 0" and expired at once).  No root needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon_fixture.h"
#include "ipoib/ep.h"

static struct ipoib_ep a, b;

struct got {
	unsigned int n;
	uint8_t last[64];
};
static struct got got_a, got_b;

static void deliver(void *arg, const uint8_t *pkt, size_t len)
{
	struct got *g = arg;

	g->n++;
	memcpy(g->last, pkt, len < sizeof(g->last) ? len : sizeof(g->last));
}

/* A minimal IPv4 datagram from src to dst (host order), tag in its payload. */
static size_t ipv4(uint8_t *p, uint32_t src, uint32_t dst, uint8_t tag)
{
	memset(p, 0, 28);
	p[0] = 0x45;
	p[3] = 28;
	p[8] = 64;
	p[9] = 17;
	for (int i = 0; i < 4; i++) {
		p[12 + i] = (uint8_t)(src >> (24 - 8 * i));
		p[16 + i] = (uint8_t)(dst >> (24 - 8 * i));
	}
	p[27] = tag;
	return 28;
}

static bool resolved(struct ipoib_ep *ep, uint32_t ip)
{
	uint8_t key[16];
	struct neigh *n;

	neigh_v4(ip, key);
	n = neigh_lookup(&ep->neigh, key, now_ms());
	return n && n->state == NEIGH_VALID;
}

static int setup(void **state)
{
	if (start_daemon(state))
		return -1;
	if (ipoib_ep_open(&a, "softib0", 1, 10000) || ipoib_ep_open(&b, "softib1", 1, 10000))
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

static void test_join_and_arp(void **state)
{
	uint8_t pkt[64];
	uint64_t end = now_ms() + 10000;

	(void)state;
	assert_int_equal(a.qkey, 0x0B1B);
	assert_int_equal(a.mtu, 2044);
	assert_int_equal(a.mlid, b.mlid);
	assert_int_equal(ipoib_ep_send_ip(&a, pkt, ipv4(pkt, a.ip, b.ip, 7), now_ms()), 0);
	while (!got_b.n && now_ms() < end) {
		ipoib_ep_poll(&a, now_ms());
		ipoib_ep_poll(&b, now_ms());
		ipoib_ep_tick(&a, now_ms());
		usleep(1000);
	}
	assert_int_equal(got_b.n, 1);
	assert_int_equal(got_b.last[27], 7);
	assert_true(resolved(&a, b.ip));
	assert_true(resolved(&b, a.ip));
	assert_true(a.st.arp_tx >= 1);
	assert_true(b.st.arp_tx >= 1);	/* the reply */
}

static void test_arp_while_ring_full(void **state)
{
	uint8_t pkt[64], key[16];
	(void)state;
	neigh_v4(b.ip, key);
	neigh_remove(&a.neigh, neigh_lookup(&a.neigh, key, now_ms()));
	neigh_v4(a.ip, key);
	neigh_remove(&b.neigh, neigh_lookup(&b.neigh, key, now_ms()));
	/* a's ring full of broadcasts, none reclaimed yet. */
	while (a.tx_nfree)
		assert_int_equal(ipoib_ep_send_ip(&a, pkt, ipv4(pkt, a.ip, 0x0A0000FF, 1), now_ms()), 0);
	/* b asks who a is; its request reaches a's CQ. */
	assert_int_equal(ipoib_ep_send_ip(&b, pkt, ipv4(pkt, b.ip, a.ip, 9), now_ms()), 0);
	assert_true(b.st.arp_tx >= 2);
	usleep(1000 * 1000);
	/* Reclaiming the slots (the CQ drained) handles the request too. */
	assert_int_equal(a.tx_nfree, 0);
	assert_true(ipoib_ep_can_send(&a));
	assert_true(resolved(&a, b.ip));
	usleep(50 * 1000);
	assert_true(resolved(&a, b.ip));	/* still: learnt now, not at 0 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join_and_arp),
		cmocka_unit_test(test_arp_while_ring_full),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
